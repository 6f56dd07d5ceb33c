#include "weft/graph/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/graph/evaluate_ops.h"
#include "weft/graph/resize_taps.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace evaluate_ops {

Outputs single(Tensor t) {
  std::vector<Tensor> out;
  out.push_back(std::move(t));
  return out;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

void copy_element(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  int size = dtype_size(src.dtype());
  std::memcpy(dst.data() + to * size, src.data() + from * size, static_cast<size_t>(size));
}

int64_t broadcast_index(int64_t out_index, const std::vector<int64_t>& out_dims,
                        const std::vector<int64_t>& in_dims) {
  int64_t in_index = 0, in_stride = 1;
  size_t offset = out_dims.size() - in_dims.size();
  for (size_t i = out_dims.size(); i-- > 0;) {
    int64_t coord = out_index % out_dims[i];
    out_index /= out_dims[i];
    if (i >= offset) {
      int64_t d = in_dims[i - offset];
      if (d != 1) in_index += coord * in_stride;
      in_stride *= d;
    }
  }
  return in_index;
}

} // namespace evaluate_ops

namespace {

using namespace evaluate_ops; // NOLINT(google-build-using-namespace)

// Numpy-broadcast elementwise op over the node's inputs, with "fn" on int64 or double.
Outputs elementwise(const Node& node, DType out_type,
                    const std::function<int64_t(const std::vector<int64_t>&)>& int_fn,
                    const std::function<double(const std::vector<double>&)>& float_fn) {
  std::vector<Shape> shapes;
  for (const Value* v : node.inputs)
    shapes.push_back(v->constant->type().shape.value());
  WEFT_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes(shapes));
  std::vector<int64_t> dims = shape_static_dims(shape);
  Tensor out(out_type, dims);
  bool as_int = !dtype_is_float(node.inputs[0]->constant->dtype());
  std::vector<int64_t> ints(node.inputs.size());
  std::vector<double> floats(node.inputs.size());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Tensor& t = arg(node, k);
      int64_t j = broadcast_index(i, dims, t.dims());
      if (as_int) {
        ints[k] = t.get_int64(j);
      } else {
        floats[k] = t.get_double(j);
      }
    }
    if (as_int) {
      if (!int_fn) return std::vector<Tensor>{};
      out.set_int64(i, int_fn(ints));
    } else {
      if (!float_fn) return std::vector<Tensor>{};
      out.set_double(i, float_fn(floats));
    }
  }
  return single(std::move(out));
}

using IntFn = std::function<int64_t(const std::vector<int64_t>&)>;
using FloatFn = std::function<double(const std::vector<double>&)>;
struct ElementwiseFns {
  IntFn int_fn;
  FloatFn float_fn;
  bool to_bool = false;
};

const std::unordered_map<Op, ElementwiseFns>& elementwise_table() {
  static const std::unordered_map<Op, ElementwiseFns> table = {
      {Op::kAdd, {[](auto& a) { return a[0] + a[1]; }, [](auto& a) { return a[0] + a[1]; }}},
      {Op::kSub, {[](auto& a) { return a[0] - a[1]; }, [](auto& a) { return a[0] - a[1]; }}},
      {Op::kMul, {[](auto& a) { return a[0] * a[1]; }, [](auto& a) { return a[0] * a[1]; }}},
      {Op::kDiv,
       {[](auto& a) { return a[1] == 0 ? int64_t{0} : a[0] / a[1]; },
        [](auto& a) { return a[0] / a[1]; }}},
      {Op::kNeg, {[](auto& a) { return -a[0]; }, [](auto& a) { return -a[0]; }}},
      {Op::kAbs, {[](auto& a) { return std::abs(a[0]); }, [](auto& a) { return std::fabs(a[0]); }}},
      {Op::kFloor, {nullptr, [](auto& a) { return std::floor(a[0]); }}},
      {Op::kCeil, {nullptr, [](auto& a) { return std::ceil(a[0]); }}},
      {Op::kSqrt, {nullptr, [](auto& a) { return std::sqrt(a[0]); }}},
      {Op::kExp, {nullptr, [](auto& a) { return std::exp(a[0]); }}},
      {Op::kLog, {nullptr, [](auto& a) { return std::log(a[0]); }}},
      {Op::kSin, {nullptr, [](auto& a) { return std::sin(a[0]); }}},
      {Op::kCos, {nullptr, [](auto& a) { return std::cos(a[0]); }}},
      {Op::kReciprocal, {nullptr, [](auto& a) { return 1.0 / a[0]; }}},
      {Op::kPow, {nullptr, [](auto& a) { return std::pow(a[0], a[1]); }}},
      {Op::kMax,
       {[](auto& a) { return *std::max_element(a.begin(), a.end()); },
        [](auto& a) { return *std::max_element(a.begin(), a.end()); }}},
      {Op::kMin,
       {[](auto& a) { return *std::min_element(a.begin(), a.end()); },
        [](auto& a) { return *std::min_element(a.begin(), a.end()); }}},
      {Op::kEqual,
       {[](auto& a) { return int64_t{a[0] == a[1]}; }, [](auto& a) { return double(a[0] == a[1]); },
        true}},
      {Op::kLess,
       {[](auto& a) { return int64_t{a[0] < a[1]}; }, [](auto& a) { return double(a[0] < a[1]); },
        true}},
      {Op::kGreater,
       {[](auto& a) { return int64_t{a[0] > a[1]}; }, [](auto& a) { return double(a[0] > a[1]); },
        true}},
      {Op::kNot, {[](auto& a) { return int64_t{a[0] == 0}; }, nullptr, true}},
      {Op::kIsNaN, {nullptr, [](auto& a) { return double(std::isnan(a[0])); }, true}},
      {Op::kAnd, {[](auto& a) { return int64_t{a[0] != 0 && a[1] != 0}; }, nullptr, true}},
      {Op::kOr, {[](auto& a) { return int64_t{a[0] != 0 || a[1] != 0}; }, nullptr, true}},
      {Op::kXor, {[](auto& a) { return int64_t{(a[0] != 0) != (a[1] != 0)}; }, nullptr, true}},
      {Op::kLessOrEqual,
       {[](auto& a) { return int64_t{a[0] <= a[1]}; }, [](auto& a) { return double(a[0] <= a[1]); },
        true}},
      {Op::kGreaterOrEqual,
       {[](auto& a) { return int64_t{a[0] >= a[1]}; }, [](auto& a) { return double(a[0] >= a[1]); },
        true}},
  };
  return table;
}

Outputs eval_shape(const Node& node) {
  std::vector<int64_t> dims = shape_static_dims(*node.inputs[0]->type.shape);
  const auto& a = node.attrs_as<ShapeAttrs>();
  int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(a.start), end = std::max(start, clamp(a.end.value_or(rank)));
  return single(Tensor::vector_i64(std::vector<int64_t>(dims.begin() + start, dims.begin() + end)));
}

// As the kernels' Cast (kernel/lower_elementwise.cc): a saturating cast to float8 clamps
// to the largest finite value first.
Outputs eval_cast(const Node& node, DType to) {
  const Tensor& x = arg(node, 0);
  Tensor out(to, x.dims());
  bool as_int = !dtype_is_float(x.dtype()) && !dtype_is_float(to);
  std::optional<MiniFloat> f = dtype_minifloat(to);
  double max = f && f->kind != MiniFloatKind::kFinite && node.attrs_as<CastAttrs>().saturate
                   ? minifloat_max(*f)
                   : std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (as_int) {
      out.set_int64(i, x.get_int64(i));
    } else {
      double v = x.get_double(i);
      out.set_double(i, std::isnan(v) ? v : std::clamp(v, -max, max));
    }
  }
  return single(std::move(out));
}

// BitCast: the same bytes, read as "to" (as wide as the input's type).
Outputs eval_bit_cast(const Node& node, DType to) {
  const Tensor& x = arg(node, 0);
  Tensor out(to, x.dims());
  std::memcpy(out.data(), x.data(), x.num_bytes());
  return single(std::move(out));
}

Outputs eval_concat(const Node& node) {
  const Tensor& first = arg(node, 0);
  WEFT_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(node.attrs_as<AxisAttrs>().axis, first.rank()));
  std::vector<int64_t> dims = first.dims();
  dims[static_cast<size_t>(axis)] = 0;
  for (const Value* v : node.inputs)
    dims[static_cast<size_t>(axis)] += v->constant->dims()[static_cast<size_t>(axis)];
  int64_t outer =
      std::accumulate(dims.begin(), dims.begin() + axis, int64_t{1}, std::multiplies<>());
  Tensor out = Tensor::uninitialized(first.dtype(), dims); // every element is written
  std::byte* to = out.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Value* v : node.inputs) { // each input's o-th block is contiguous
      const Tensor& t = *v->constant;
      size_t chunk = t.num_bytes() / static_cast<size_t>(std::max<int64_t>(outer, 1));
      if (t.num_elements() == 0) continue;
      std::memcpy(to, t.data() + static_cast<size_t>(o) * chunk, chunk);
      to += chunk;
    }
  }
  return single(std::move(out));
}

// Same data under new dims (Reshape, Squeeze, Unsqueeze, Flatten, Identity).
Outputs eval_with_type(const Node& node) {
  const Tensor& x = arg(node, 0);
  const TensorType& t = node.outputs[0]->type;
  if (!t.has_static_shape()) return std::vector<Tensor>{};
  Tensor out(x.dtype(), shape_static_dims(*t.shape));
  if (out.num_elements() != x.num_elements()) return Status::error("element count changes");
  std::memcpy(out.data(), x.data(), x.num_bytes());
  return single(std::move(out));
}

Outputs eval_slice(const Node& node) {
  const Tensor& x = arg(node, 0);
  const auto& a = node.attrs_as<SliceAttrs>();
  if (a.symbolic_ends) return std::vector<Tensor>{}; // a size each run binds
  bool from_inputs = node.opset >= 10 && !a.starts;
  Ints starts = from_inputs ? arg(node, 1).to_int64_vector() : *a.starts;
  Ints ends = from_inputs ? arg(node, 2).to_int64_vector() : *a.ends;
  Ints axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (from_inputs && node.input(3)) axes = arg(node, 3).to_int64_vector();
  if (!from_inputs && a.axes) axes = *a.axes;
  Ints steps = from_inputs && node.input(4) ? arg(node, 4).to_int64_vector()
                                            : a.steps.value_or(Ints(starts.size(), 1));
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0), step(begin.size(), 1);
  if (!node.outputs[0]->type.has_static_shape()) return std::vector<Tensor>{};
  std::vector<int64_t> out_dims = shape_static_dims(*node.outputs[0]->type.shape);
  for (size_t i = 0; i < starts.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], x.rank()));
    int64_t n = x.dims()[static_cast<size_t>(axis)];
    int64_t s = starts[i] < 0 ? starts[i] + n : starts[i];
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, n) : std::clamp<int64_t>(s, -1, n - 1);
    begin[static_cast<size_t>(axis)] = s;
    step[static_cast<size_t>(axis)] = steps[i];
  }
  Tensor out(x.dtype(), out_dims);
  std::vector<int64_t> in_strides = strides_of(x.dims());
  // Row by row along the last axis, which is one copy where its step is 1 (a host Loop slices
  // Mask R-CNN's masks of up to the image's size).
  int64_t row = out_dims.empty() ? 1 : out_dims.back();
  size_t size = static_cast<size_t>(dtype_size(x.dtype()));
  bool contiguous = out_dims.empty() || step.back() == 1;
  for (int64_t i = 0; i < out.num_elements(); i += std::max<int64_t>(row, 1)) {
    int64_t rem = i, src = 0;
    for (size_t d = out_dims.size(); d-- > 0;) {
      int64_t coord = rem % out_dims[d];
      rem /= out_dims[d];
      src += (begin[d] + coord * step[d]) * in_strides[d];
    }
    if (contiguous) {
      std::memcpy(out.data() + static_cast<size_t>(i) * size,
                  x.data() + static_cast<size_t>(src) * size, static_cast<size_t>(row) * size);
      continue;
    }
    for (int64_t j = 0; j < row; ++j)
      copy_element(x, src + j * step.back(), out, i + j);
  }
  return single(std::move(out));
}

// out[b, i, j] = in[base(b) + i * row_step + j * column_step] for "outer" blocks b of
// rows x columns elements of type T: the rows and columns in 32 x 32 tiles, so that reading
// down a large weight's columns (x @ W.T, folded at compile time) stays in cache.
template <typename T>
void copy_tiles(const T* in, T* out, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& steps) {
  constexpr int64_t kTile = 32;
  size_t r = dims.size();
  int64_t rows = dims[r - 2], columns = dims[r - 1], row_step = steps[r - 2],
          column_step = steps[r - 1];
  int64_t outer = std::accumulate(dims.begin(), dims.end() - 2, int64_t{1}, std::multiplies<>());
  std::vector<int64_t> index(r - 2, 0);
  int64_t base = 0;
  for (int64_t b = 0; b < outer; ++b, out += rows * columns) {
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      for (int64_t j0 = 0; j0 < columns; j0 += kTile) {
        for (int64_t i = i0; i < std::min(i0 + kTile, rows); ++i) {
          for (int64_t j = j0; j < std::min(j0 + kTile, columns); ++j)
            out[i * columns + j] = in[base + i * row_step + j * column_step];
        }
      }
    }
    for (size_t d = r - 2; d-- > 0;) { // the next block's first element
      base += steps[d];
      if (++index[d] < dims[d]) break;
      base -= steps[d] * dims[d];
      index[d] = 0;
    }
  }
}

Outputs eval_transpose(const Node& node) {
  const Tensor& x = arg(node, 0);
  if (!node.outputs[0]->type.has_static_shape()) return std::vector<Tensor>{};
  Ints perm = node.attrs_as<TransposeAttrs>().perm.value_or(Ints{});
  if (perm.empty()) {
    for (int64_t i = x.rank(); i-- > 0;)
      perm.push_back(i);
  }
  std::vector<int64_t> out_dims = shape_static_dims(*node.outputs[0]->type.shape);
  std::vector<int64_t> in_strides = strides_of(x.dims());
  Tensor out = Tensor::uninitialized(x.dtype(), out_dims); // every element is written
  if (out.num_elements() == 0) return single(std::move(out));
  std::vector<int64_t> dims = out_dims, steps; // of the input, per output dim
  for (int64_t p : perm)
    steps.push_back(in_strides[static_cast<size_t>(p)]);
  while (dims.size() < 2) {
    dims.insert(dims.begin(), 1);
    steps.insert(steps.begin(), 0);
  }
  switch (dtype_size(x.dtype())) {
    case 1:
      copy_tiles(reinterpret_cast<const uint8_t*>(x.data()), reinterpret_cast<uint8_t*>(out.data()),
                 dims, steps);
      break;
    case 2:
      copy_tiles(reinterpret_cast<const uint16_t*>(x.data()),
                 reinterpret_cast<uint16_t*>(out.data()), dims, steps);
      break;
    case 4:
      copy_tiles(reinterpret_cast<const uint32_t*>(x.data()),
                 reinterpret_cast<uint32_t*>(out.data()), dims, steps);
      break;
    default:
      copy_tiles(reinterpret_cast<const uint64_t*>(x.data()),
                 reinterpret_cast<uint64_t*>(out.data()), dims, steps);
      break;
  }
  return single(std::move(out));
}

Outputs eval_expand(const Node& node) {
  const Tensor& x = arg(node, 0);
  if (!node.outputs[0]->type.has_static_shape()) return std::vector<Tensor>{};
  std::vector<int64_t> dims = shape_static_dims(*node.outputs[0]->type.shape);
  Tensor out(x.dtype(), dims);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    copy_element(x, broadcast_index(i, dims, x.dims()), out, i);
  }
  return single(std::move(out));
}

Outputs eval_where(const Node& node) {
  const Tensor& c = arg(node, 0);
  const Tensor& a = arg(node, 1);
  const Tensor& b = arg(node, 2);
  if (!node.outputs[0]->type.has_static_shape()) return std::vector<Tensor>{};
  std::vector<int64_t> dims = shape_static_dims(*node.outputs[0]->type.shape);
  Tensor out(a.dtype(), dims);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    bool pick_a = c.get_int64(broadcast_index(i, dims, c.dims())) != 0;
    const Tensor& src = pick_a ? a : b;
    copy_element(src, broadcast_index(i, dims, src.dims()), out, i);
  }
  return single(std::move(out));
}

Outputs eval_range(const Node& node) {
  const Tensor& start = arg(node, 0);
  const TensorType& t = node.outputs[0]->type;
  if (!t.has_static_shape()) return std::vector<Tensor>{};
  Tensor out(start.dtype(), shape_static_dims(*t.shape));
  bool as_int = !dtype_is_float(start.dtype());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (as_int) {
      out.set_int64(i, start.get_int64(0) + i * arg(node, 2).get_int64(0));
    } else {
      out.set_double(i, start.get_double(0) + static_cast<double>(i) * arg(node, 2).get_double(0));
    }
  }
  return single(std::move(out));
}

Outputs eval_constant_of_shape(const Node& node) {
  const auto& a = node.attrs_as<ConstantOfShapeAttrs>();
  const Tensor& value = *a.value;
  const TensorType& t = node.outputs[0]->type;
  if (a.symbolic_shape && !t.has_static_shape()) return std::vector<Tensor>{}; // bound per run
  std::vector<int64_t> dims =
      a.symbolic_shape ? shape_static_dims(*t.shape) : arg(node, 0).to_int64_vector();
  int64_t count = 0;
  if (!dims_are_allocatable(value.dtype(), dims, &count)) {
    return Status::error(fmt::format("the shape [{}] has a negative dim or is too large",
                                     fmt::join(dims, ", ")));
  }
  Tensor out(value.dtype(), dims); // zero-filled
  bool zero = std::all_of(value.data(), value.data() + value.num_bytes(),
                          [](std::byte b) { return b == std::byte{0}; });
  for (int64_t i = 0; i < out.num_elements() && !zero; ++i)
    copy_element(value, 0, out, i);
  return single(std::move(out));
}

// ReduceSum, ReduceMean, ReduceProd, ReduceMin, ReduceMax, ReduceSumSquare, ReduceL1 and
// ReduceL2 over the attribute's axes (all of them when there are none), in int64 for integers
// (a mean truncated, as the reference's cast) and in double for floats (NaN wins min and max).
// The axes are the attribute's or (opset 18) the input's. Inputs larger than
// kMaxReducedElements are left to the kernels.
constexpr int64_t kMaxReducedElements = int64_t{1} << 24;

Outputs eval_reduce(const Node& node, Op op) {
  const Tensor& x = arg(node, 0);
  const auto& a = node.attrs_as<ReduceAttrs>();
  if (x.num_elements() > kMaxReducedElements) return std::vector<Tensor>{};
  std::optional<Ints> axes = node.input(1) ? arg(node, 1).to_int64_vector() : a.axes;
  bool all = !axes || axes->empty();
  if (all && a.noop_with_empty_axes) return single(x);
  std::vector<int64_t> dims = x.dims();
  std::vector<bool> reduced(dims.size(), all);
  for (int64_t axis : axes.value_or(Ints{})) {
    WEFT_ASSIGN_OR_RETURN(int64_t n, normalize_axis(axis, static_cast<int64_t>(dims.size())));
    reduced[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> kept = dims, out_dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
    if (!reduced[d] || a.keepdims) out_dims.push_back(kept[d]);
  }
  bool as_int = !dtype_is_float(x.dtype());
  int64_t count = std::accumulate(kept.begin(), kept.end(), int64_t{1}, std::multiplies<>());
  double inf = std::numeric_limits<double>::infinity();
  // ReduceSumSquare, ReduceL1 and ReduceL2 sum squares or magnitudes (L2 takes the root last).
  bool squares = op == Op::kReduceSumSquare || op == Op::kReduceL2;
  bool sums = op == Op::kReduceSum || op == Op::kReduceMean || squares || op == Op::kReduceL1;
  int64_t per_output = count == 0 ? 0 : x.num_elements() / count; // (the mean's divisor)
  double start = sums ? 0 : op == Op::kReduceProd ? 1 : op == Op::kReduceMin ? inf : -inf;
  std::vector<int64_t> ints(static_cast<size_t>(count),
                            std::isinf(start) ? (start > 0 ? std::numeric_limits<int64_t>::max()
                                                           : std::numeric_limits<int64_t>::min())
                                              : static_cast<int64_t>(start));
  std::vector<double> floats(static_cast<size_t>(count), start);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    auto o = static_cast<size_t>(broadcast_index(i, dims, kept)); // the kept coordinates
    if (as_int) {
      int64_t v = x.get_int64(i);
      if (squares) v *= v;
      if (op == Op::kReduceL1) v = v < 0 ? -v : v;
      int64_t& acc = ints[o];
      acc = sums                    ? acc + v
            : op == Op::kReduceProd ? acc * v
            : op == Op::kReduceMin  ? std::min(acc, v)
                                    : std::max(acc, v);
    } else {
      double v = x.get_double(i);
      if (squares) v *= v;
      if (op == Op::kReduceL1) v = std::fabs(v);
      double& acc = floats[o];
      acc = sums                               ? acc + v
            : op == Op::kReduceProd            ? acc * v
            : std::isnan(acc) || std::isnan(v) ? std::numeric_limits<double>::quiet_NaN()
            : op == Op::kReduceMin             ? std::min(acc, v)
                                               : std::max(acc, v);
    }
  }
  Tensor out(x.dtype(), out_dims);
  for (int64_t i = 0; i < count; ++i) {
    auto u = static_cast<size_t>(i);
    bool mean = op == Op::kReduceMean;
    if (as_int) {
      out.set_int64(i, op == Op::kReduceL2
                           ? static_cast<int64_t>(std::sqrt(static_cast<double>(ints[u])))
                       : mean && per_output > 0 ? ints[u] / per_output
                                                : ints[u]);
    } else {
      out.set_double(i, op == Op::kReduceL2 ? std::sqrt(floats[u])
                        : mean              ? floats[u] / static_cast<double>(per_output)
                                            : floats[u]);
    }
  }
  return single(std::move(out));
}

// ArgMax and ArgMin: the first (or last) position of the largest (smallest) element along the
// axis; a NaN wins, as numpy's does.
Outputs eval_arg_reduce(const Node& node) {
  const Tensor& x = arg(node, 0);
  const auto& a = node.attrs_as<ArgReduceAttrs>();
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, x.rank()));
  std::vector<int64_t> dims = x.dims();
  int64_t extent = dims[static_cast<size_t>(axis)];
  if (extent == 0) return Status::error("ArgMax or ArgMin over an empty axis");
  int64_t outer =
      std::accumulate(dims.begin(), dims.begin() + axis, int64_t{1}, std::multiplies<>());
  int64_t inner = x.num_elements() / (outer * extent);
  std::vector<int64_t> out_dims = dims;
  if (a.keepdims) {
    out_dims[static_cast<size_t>(axis)] = 1;
  } else {
    out_dims.erase(out_dims.begin() + axis);
  }
  Tensor out(DType::kI64, out_dims);
  bool max = node.op_type == Op::kArgMax, floats = dtype_is_float(x.dtype());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t at = o * extent * inner + i, best = 0;
      for (int64_t k = 1; k < extent; ++k) {
        int64_t p = at + k * inner, q = at + best * inner;
        bool better = false, tie = false;
        if (floats) {
          double v = x.get_double(p), b = x.get_double(q);
          if (std::isnan(b)) continue;
          better = std::isnan(v) || (max ? v > b : v < b);
          tie = v == b;
        } else {
          int64_t v = x.get_int64(p), b = x.get_int64(q);
          better = max ? v > b : v < b;
          tie = v == b;
        }
        if (better || (tie && a.select_last_index)) best = k;
      }
      out.set_int64(o * inner + i, best);
    }
  }
  return single(std::move(out));
}

// Resize, one axis at a time in f64 (nearest, linear and cubic are separable). Not evaluated:
// antialias and tf_crop_and_resize (left to the kernels).
Outputs eval_resize(const Node& node) {
  const auto& a = node.attrs_as<ResizeAttrs>();
  const Tensor& x = arg(node, 0);
  std::optional<std::vector<double>> scales = resize_scales(node);
  if (!resize_taps_cover(a) || !scales || !node.outputs[0]->type.has_static_shape())
    return std::vector<Tensor>{};
  std::vector<int64_t> out_dims = shape_static_dims(*node.outputs[0]->type.shape);
  std::vector<int64_t> dims = x.dims();
  std::vector<double> values(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i)
    values[static_cast<size_t>(i)] = x.get_double(i);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == out_dims[d] && (*scales)[d] == 1) continue;
    if (dims[d] == 0) return Status::error("Resize of an empty axis");
    AxisTaps taps = resize_taps(a, dims[d], out_dims[d], (*scales)[d]);
    int64_t outer = std::accumulate(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(d),
                                    int64_t{1}, std::multiplies<>());
    int64_t inner = std::accumulate(dims.begin() + static_cast<std::ptrdiff_t>(d) + 1, dims.end(),
                                    int64_t{1}, std::multiplies<>());
    std::vector<double> next(static_cast<size_t>(outer * out_dims[d] * inner), 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < out_dims[d]; ++j) {
        double* to = &next[static_cast<size_t>((o * out_dims[d] + j) * inner)];
        for (const auto& [p, w] : taps[static_cast<size_t>(j)]) {
          const double* from = &values[static_cast<size_t>((o * dims[d] + p) * inner)];
          for (int64_t i = 0; i < inner; ++i)
            to[i] += w * from[i];
        }
      }
    }
    values = std::move(next);
    dims[d] = out_dims[d];
  }
  Tensor out = Tensor::uninitialized(x.dtype(), out_dims); // every element is written
  for (int64_t i = 0; i < out.num_elements(); ++i)
    out.set_double(i, values[static_cast<size_t>(i)]);
  return single(std::move(out));
}

} // namespace

namespace {

using Evaluator = Outputs (*)(const Node&);

// DequantizeLinear of integers, per tensor or per axis (a 1-D scale), in the output's type:
// (x - zero_point) * scale, rounded once, as the kernels compute it (an integer difference
// times an f32 is exact in f64). Blocked scales and other inputs are not folded.
Outputs eval_dequantize_linear(const Node& node) {
  const Tensor& x = arg(node, 0);
  const Tensor& scale = arg(node, 1);
  const Tensor* zero = node.input(2) ? &arg(node, 2) : nullptr;
  const auto& a = node.attrs_as<QuantizeAttrs>();
  static const std::set<DType> kInts = {DType::kI8, DType::kU8, DType::kI16, DType::kU16,
                                        DType::kI32};
  DType to = node.outputs[0]->type.dtype;
  if (!kInts.contains(x.dtype()) || (zero && zero->dtype() != x.dtype()) || a.block_size != 0 ||
      !dtype_is_float(to) || scale.rank() > 1 || (zero && zero->rank() != scale.rank()))
    return std::vector<Tensor>{};
  int64_t inner = 1, extent = 1;
  if (scale.num_elements() != 1 || scale.rank() == 1) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, x.rank()));
    extent = x.dims()[static_cast<size_t>(axis)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.dims().size(); ++d)
      inner *= x.dims()[d];
    if (scale.num_elements() != extent || (zero && zero->num_elements() != extent))
      return std::vector<Tensor>{};
  }
  Tensor out(to, x.dims());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t c = extent == 1 ? 0 : (i / inner) % extent;
    int64_t q = x.get_int64(i) - (zero ? zero->get_int64(c) : 0);
    out.set_double(i, static_cast<double>(q) * scale.get_double(c));
  }
  return single(std::move(out));
}

// CumSum along the axis (the attribute canonicalize sets, or the constant input), inclusive
// or exclusive, forward or reversed; in int64 for integers and in double for floats, each
// partial sum rounded to the type as the kernels' running sum is. DETR's sine position
// embedding is a CumSum of a constant mask.
Outputs eval_cum_sum(const Node& node) {
  const Tensor& x = arg(node, 0);
  const auto& a = node.attrs_as<CumSumAttrs>();
  std::optional<int64_t> at = a.axis;
  if (!at && node.input(1) && arg(node, 1).num_elements() == 1) at = arg(node, 1).get_int64(0);
  if (!at || x.rank() == 0) return std::vector<Tensor>{};
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(*at, x.rank()));
  if (x.num_elements() == 0) return single(Tensor(x.dtype(), x.dims()));
  int64_t extent = x.dims()[static_cast<size_t>(axis)];
  int64_t inner = strides_of(x.dims())[static_cast<size_t>(axis)];
  int64_t outer = x.num_elements() / (extent * inner);
  bool floats = dtype_is_float(x.dtype());
  Tensor out(x.dtype(), x.dims()), partial(x.dtype(), {});
  auto rounded = [&](double v) { // to the element type, as a stored partial sum is
    partial.set_double(0, v);
    return partial.get_double(0);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      double sum = 0;
      int64_t isum = 0;
      for (int64_t step = 0; step < extent; ++step) {
        int64_t k = a.reverse ? extent - 1 - step : step, i = (o * extent + k) * inner + in;
        if (a.exclusive) floats ? out.set_double(i, sum) : out.set_int64(i, isum);
        if (floats) {
          sum = rounded(sum + x.get_double(i));
        } else { // wrapping, as the integer types do
          isum = static_cast<int64_t>(static_cast<uint64_t>(isum) +
                                      static_cast<uint64_t>(x.get_int64(i)));
        }
        if (!a.exclusive) floats ? out.set_double(i, sum) : out.set_int64(i, isum);
      }
    }
  }
  return single(std::move(out));
}

// Mod on integers takes the divisor's sign (fmod=0) or the dividend's (fmod=1).
Outputs eval_mod(const Node& node) {
  if (node.attrs_as<ModAttrs>().fmod) {
    return elementwise(
        node, node.outputs[0]->type.dtype,
        [](auto& a) { return a[1] == 0 ? int64_t{0} : a[0] % a[1]; },
        [](auto& a) { return std::fmod(a[0], a[1]); });
  }
  return elementwise(
      node, node.outputs[0]->type.dtype,
      [](auto& a) {
        if (a[1] == 0) return int64_t{0};
        int64_t r = a[0] % a[1];
        return r != 0 && (r < 0) != (a[1] < 0) ? r + a[1] : r;
      },
      nullptr);
}

// BatchNormalization in inference: (x - mean) / sqrt(var + epsilon) * scale + B along axis
// 1, in double. A weight-standardized convolution's weights are one, made at export from the
// weights themselves (timm's NF-ResNets).
Outputs eval_batch_norm(const Node& node) {
  const Tensor& x = arg(node, 0);
  if (node.attrs_as<BatchNormAttrs>().training_mode || node.inputs.size() != 5 ||
      node.outputs.size() != 1 || x.rank() < 2 || !dtype_is_float(x.dtype()))
    return std::vector<Tensor>{};
  double epsilon = node.attrs_as<BatchNormAttrs>().epsilon;
  int64_t channels = x.dims()[1], inner = strides_of(x.dims())[1];
  for (size_t i = 1; i < 5; ++i) {
    if (arg(node, i).num_elements() != channels) return std::vector<Tensor>{};
  }
  Tensor out(x.dtype(), x.dims());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t c = i / inner % channels;
    double scale = arg(node, 1).get_double(c), bias = arg(node, 2).get_double(c);
    double mean = arg(node, 3).get_double(c), var = arg(node, 4).get_double(c);
    out.set_double(i, (x.get_double(i) - mean) / std::sqrt(var + epsilon) * scale + bias);
  }
  return single(std::move(out));
}

// The ops folding evaluates besides the elementwise table's: one entry each.
const std::unordered_map<Op, Evaluator>& evaluators() {
  static const std::unordered_map<Op, Evaluator> table = {
      {Op::kShape, eval_shape},
      {Op::kSize,
       [](const Node& n) {
         return single(Tensor::scalar_i64(shape_num_elements(*n.inputs[0]->type.shape).value()));
       }},
      {Op::kConstant, [](const Node& n) { return single(*n.attrs_as<ConstantAttrs>().value); }},
      {Op::kCast, [](const Node& n) { return eval_cast(n, n.attrs_as<CastAttrs>().to); }},
      // Only the second input's dtype: it need not be constant.
      {Op::kCastLike, [](const Node& n) { return eval_cast(n, n.inputs[1]->type.dtype); }},
      {Op::kBitCast, [](const Node& n) { return eval_bit_cast(n, n.attrs_as<CastAttrs>().to); }},
      {Op::kGather, eval_gather},
      {Op::kGatherND, eval_gather_nd},
      {Op::kGatherElements, eval_gather_elements},
      {Op::kTile, eval_tile},
      {Op::kScatter, eval_scatter_elements},
      {Op::kScatterElements, eval_scatter_elements},
      {Op::kScatterND, eval_scatter_nd},
      {Op::kConcat, eval_concat},
      {Op::kIdentity, eval_with_type},
      {Op::kReshape, eval_with_type},
      {Op::kSqueeze, eval_with_type},
      {Op::kUnsqueeze, eval_with_type},
      {Op::kFlatten, eval_with_type},
      {Op::kSlice, eval_slice},
      {Op::kTranspose, eval_transpose},
      {Op::kExpand, eval_expand},
      {Op::kWhere, eval_where},
      {Op::kMod, eval_mod},
      {Op::kCumSum, eval_cum_sum},
      {Op::kRange, eval_range},
      {Op::kConstantOfShape, eval_constant_of_shape},
      {Op::kMatMul, eval_matmul},
      {Op::kSoftmax, eval_softmax},
      {Op::kReduceProd, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceSum, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceMean, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceMin, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceMax, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceSumSquare, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceL1, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kReduceL2, [](const Node& n) { return eval_reduce(n, n.op_type); }},
      {Op::kArgMax, eval_arg_reduce},
      {Op::kArgMin, eval_arg_reduce},
      {Op::kResize, eval_resize},
      {Op::kDequantizeLinear, eval_dequantize_linear},
      {Op::kBatchNormalization, eval_batch_norm},
  };
  return table;
}

} // namespace

bool can_evaluate(const Node& node) {
  return evaluators().contains(node.op_type) ||
         (elementwise_table().contains(node.op_type) &&
          !std::holds_alternative<LegacyBroadcastAttrs>(node.attrs));
}

Result<std::vector<Tensor>> evaluate_node(const Node& node) {
  if (auto it = evaluators().find(node.op_type); it != evaluators().end()) return it->second(node);
  const ElementwiseFns& fns = elementwise_table().at(node.op_type);
  DType out_type = fns.to_bool ? DType::kBool : arg(node, 0).dtype();
  return elementwise(node, out_type, fns.int_fn, fns.float_fn);
}

} // namespace weft
