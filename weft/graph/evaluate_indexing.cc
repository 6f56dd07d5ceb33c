#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "weft/graph/evaluate_ops.h"
#include "weft/graph/shape_functions.h"

namespace weft::evaluate_ops {

namespace {

// "a" combined with "b" as a scatter's reduction: b itself for none.
double combine(ScatterReduction r, double a, double b) {
  switch (r) {
    case ScatterReduction::kNone: return b;
    case ScatterReduction::kAdd: return a + b;
    case ScatterReduction::kMul: return a * b;
    case ScatterReduction::kMax: return std::max(a, b);
    case ScatterReduction::kMin: return std::min(a, b);
  }
  return b;
}
int64_t combine(ScatterReduction r, int64_t a, int64_t b) {
  switch (r) {
    case ScatterReduction::kNone: return b;
    case ScatterReduction::kAdd: // wrapping, as the integer types do
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case ScatterReduction::kMul:
      return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case ScatterReduction::kMax: return std::max(a, b);
    case ScatterReduction::kMin: return std::min(a, b);
  }
  return b;
}

// out[to] combined with updates[from] by the reduction, in the element type's arithmetic.
void scatter_element(Tensor& out, int64_t to, const Tensor& updates, int64_t from,
                     ScatterReduction r) {
  if (r == ScatterReduction::kNone) {
    copy_element(updates, from, out, to);
  } else if (dtype_is_float(out.dtype())) {
    out.set_double(to, combine(r, out.get_double(to), updates.get_double(from)));
  } else {
    out.set_int64(to, combine(r, out.get_int64(to), updates.get_int64(from)));
  }
}

// An index into an extent, negative ones from its end; none when out of range.
std::optional<int64_t> in_extent(int64_t i, int64_t extent) {
  if (i < 0) i += extent;
  if (i < 0 || i >= extent) return std::nullopt;
  return i;
}

// The flat positions in data of dims "dd" that an elementwise index addresses along "axis"
// (GatherElements, ScatterElements): each index element's coordinates, its value the axis's
// (negative ones from the end); an error naming "op" for one out of range.
Result<std::vector<int64_t>> element_positions(const Tensor& idx, const std::vector<int64_t>& dd,
                                               int64_t axis, std::string_view op) {
  std::vector<int64_t> strides = strides_of(dd), at(static_cast<size_t>(idx.num_elements()));
  int64_t extent = dd[static_cast<size_t>(axis)];
  for (int64_t j = 0; j < idx.num_elements(); ++j) {
    std::optional<int64_t> i = in_extent(idx.get_int64(j), extent);
    if (!i) {
      return Status::error(
          fmt::format("{} index {} is out of range for extent {}", op, idx.get_int64(j), extent));
    }
    int64_t rest = j, to = 0;
    for (size_t d = dd.size(); d-- > 0;) {
      int64_t coord = static_cast<int64_t>(d) == axis ? *i : rest % idx.dims()[d];
      to += coord * strides[d];
      rest /= idx.dims()[d];
    }
    at[static_cast<size_t>(j)] = to;
  }
  return at;
}

} // namespace

Outputs eval_gather(const Node& node) {
  const Tensor& data = arg(node, 0);
  const Tensor& idx = arg(node, 1);
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, data.rank()));
  std::vector<int64_t> out_dims(data.dims().begin(), data.dims().begin() + axis);
  out_dims.insert(out_dims.end(), idx.dims().begin(), idx.dims().end());
  out_dims.insert(out_dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  int64_t outer = std::accumulate(data.dims().begin(), data.dims().begin() + axis, int64_t{1},
                                  std::multiplies<>());
  int64_t extent = data.dims()[static_cast<size_t>(axis)];
  int64_t inner = data.num_elements() / std::max<int64_t>(outer * extent, 1);
  Tensor out(data.dtype(), out_dims);
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < idx.num_elements(); ++j) {
      std::optional<int64_t> i = in_extent(idx.get_int64(j), extent);
      if (!i) {
        return Status::error(
            fmt::format("Gather index {} is out of range for extent {}", idx.get_int64(j), extent));
      }
      for (int64_t in = 0; in < inner; ++in)
        copy_element(data, (o * extent + *i) * inner + in, out, k++);
    }
  }
  return single(std::move(out));
}

// GatherND with batch_dims 0: each index row [i0, ..., ik] picks data[i0, ..., ik, ...].
// With batch dims: not folded (no outputs).
Outputs eval_gather_nd(const Node& node) {
  const Tensor& data = arg(node, 0);
  const Tensor& idx = arg(node, 1);
  if (node.attrs_as<BatchDimsAttrs>().batch_dims != 0 || idx.rank() < 1)
    return std::vector<Tensor>{};
  const std::vector<int64_t>& dd = data.dims();
  int64_t k = idx.dims().back();
  if (k < 1 || k > data.rank()) return std::vector<Tensor>{};
  std::vector<int64_t> out_dims(idx.dims().begin(), idx.dims().end() - 1);
  out_dims.insert(out_dims.end(), dd.begin() + k, dd.end());
  int64_t inner = std::accumulate(dd.begin() + k, dd.end(), int64_t{1}, std::multiplies<>());
  Tensor out(data.dtype(), out_dims);
  int64_t rows = idx.num_elements() / k, n = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t extent = dd[static_cast<size_t>(d)];
      std::optional<int64_t> i = in_extent(idx.get_int64(r * k + d), extent);
      if (!i) {
        return Status::error(fmt::format("GatherND index {} is out of range for extent {}",
                                         idx.get_int64(r * k + d), extent));
      }
      at = at * extent + *i;
    }
    for (int64_t in = 0; in < inner; ++in)
      copy_element(data, at * inner + in, out, n++);
  }
  return single(std::move(out));
}

// GatherElements: out[..., j, ...] = data[..., index[..., j, ...], ...] along the axis, the
// index of the output's shape. Funnel-Transformer's and Electra's position tables are such
// gathers of constants.
Outputs eval_gather_elements(const Node& node) {
  const Tensor &data = arg(node, 0), &idx = arg(node, 1);
  const std::vector<int64_t>& dd = data.dims();
  if (idx.rank() != data.rank() || data.rank() == 0) return std::vector<Tensor>{};
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, data.rank()));
  for (size_t d = 0; d < dd.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idx.dims()[d] > dd[d]) return std::vector<Tensor>{};
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> from,
                        element_positions(idx, dd, axis, node.op_type.name()));
  Tensor out(data.dtype(), idx.dims());
  for (int64_t j = 0; j < idx.num_elements(); ++j)
    copy_element(data, from[static_cast<size_t>(j)], out, j);
  return single(std::move(out));
}

// Tile: the input repeated along each axis by the constant repeats (not the symbolic ones of
// fold_shape_values). WavLM's position bias is such a Tile of constants.
Outputs eval_tile(const Node& node) {
  if (node.attrs_as<TileAttrs>().symbolic_repeats || !node.input(1)) return std::vector<Tensor>{};
  const Tensor& x = arg(node, 0);
  Ints repeats = arg(node, 1).to_int64_vector(), dims = x.dims();
  if (repeats.size() != dims.size()) return std::vector<Tensor>{};
  for (size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0) return std::vector<Tensor>{};
    dims[d] *= repeats[d];
  }
  Tensor out(x.dtype(), dims);
  std::vector<int64_t> in_strides = strides_of(x.dims());
  for (int64_t j = 0; j < out.num_elements(); ++j) {
    int64_t rest = j, from = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      from += rest % dims[d] % x.dims()[d] * in_strides[d];
      rest /= dims[d];
    }
    copy_element(x, from, out, j);
  }
  return single(std::move(out));
}

// ScatterElements (and Scatter): data with each update written (or combined) at its own
// position, the axis's coordinate taken from the index. torch.onnx's dynamo exporter writes an
// index table built in forward (x[..., 0] = ...) so: BEiT's relative positions, two
// 196x196x2 tables a layer, ran every inference (0.83 ms each of 2.5). Not folded where the
// shapes do not fit (the kernel's checks report it) or bools are reduced.
Outputs eval_scatter_elements(const Node& node) {
  const Tensor &data = arg(node, 0), &idx = arg(node, 1), &updates = arg(node, 2);
  const auto& a = node.attrs_as<ScatterAttrs>();
  const std::vector<int64_t>& dd = data.dims();
  if (idx.dims() != updates.dims() || idx.rank() != data.rank() || data.rank() == 0 ||
      updates.dtype() != data.dtype() ||
      (data.dtype() == DType::kBool && a.reduction != ScatterReduction::kNone))
    return std::vector<Tensor>{};
  for (size_t d = 0; d < dd.size(); ++d)
    if (idx.dims()[d] > dd[d]) return std::vector<Tensor>{};
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, data.rank()));
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> to,
                        element_positions(idx, dd, axis, node.op_type.name()));
  Tensor out = data;
  for (int64_t j = 0; j < idx.num_elements(); ++j)
    scatter_element(out, to[static_cast<size_t>(j)], updates, j, a.reduction);
  return single(std::move(out));
}

// ScatterND: data with each index row's slice (data[i0, ..., ik, ...]) replaced by (or
// combined with) its slice of the updates.
Outputs eval_scatter_nd(const Node& node) {
  const Tensor &data = arg(node, 0), &idx = arg(node, 1), &updates = arg(node, 2);
  ScatterReduction r = node.attrs_as<ScatterAttrs>().reduction;
  const std::vector<int64_t>& dd = data.dims();
  int64_t k = idx.rank() >= 1 ? idx.dims().back() : 0;
  if (k < 1 || k > data.rank() || updates.dtype() != data.dtype() ||
      (data.dtype() == DType::kBool && r != ScatterReduction::kNone))
    return std::vector<Tensor>{};
  std::vector<int64_t> want(idx.dims().begin(), idx.dims().end() - 1);
  want.insert(want.end(), dd.begin() + k, dd.end());
  if (updates.dims() != want) return std::vector<Tensor>{};
  int64_t inner = std::accumulate(dd.begin() + k, dd.end(), int64_t{1}, std::multiplies<>());
  Tensor out = data;
  int64_t rows = idx.num_elements() / k;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t at = 0;
    for (int64_t d = 0; d < k; ++d) {
      std::optional<int64_t> i = in_extent(idx.get_int64(row * k + d), dd[static_cast<size_t>(d)]);
      if (!i) {
        return Status::error(fmt::format("ScatterND index {} is out of range for extent {}",
                                         idx.get_int64(row * k + d), dd[static_cast<size_t>(d)]));
      }
      at = at * dd[static_cast<size_t>(d)] + *i;
    }
    for (int64_t in = 0; in < inner; ++in)
      scatter_element(out, at * inner + in, updates, row * inner + in, r);
  }
  return single(std::move(out));
}

} // namespace weft::evaluate_ops
