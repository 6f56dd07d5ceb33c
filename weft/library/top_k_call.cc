#include "weft/library/top_k_call.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "weft/library/shape_call.h"

namespace weft::library {

namespace {

// Does u come before v? Larger first ("largest") or smaller first, NaN above every number;
// equal values are left to the caller (the lower index first).
template <typename T> bool ahead(T u, T v, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    bool nu = std::isnan(u), nv = std::isnan(v);
    if (nu || nv) return largest ? nu && !nv : nv && !nu;
  }
  return largest ? u > v : u < v;
}

// The input viewed as [A, N, B] with N the axis; outputs [A, K, B].
template <typename T>
void top_k_rows(const T* x, T* values, int64_t* indices, int64_t a, int64_t n, int64_t b, int64_t k,
                bool largest) {
  int64_t rows = a * b;
  auto before = [largest](const std::pair<T, int64_t>& p, const std::pair<T, int64_t>& q) {
    if (ahead(p.first, q.first, largest)) return true;
    if (ahead(q.first, p.first, largest)) return false;
    return p.second < q.second;
  };
#pragma omp parallel if (rows > 1 && rows * n >= 16384)
  {
    std::vector<std::pair<T, int64_t>> row(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = r / b, j = r % b;
      const T* in = x + i * n * b + j;
      for (int64_t e = 0; e < n; ++e)
        row[static_cast<size_t>(e)] = {in[e * b], e};
      // The order is total (ties by index), so selecting then sorting the K first gives
      // what a full sort would.
      auto first = row.begin(), kth = row.begin() + k;
      if (k < n) std::nth_element(first, kth, row.end(), before);
      std::sort(first, kth, before);
      int64_t out = i * k * b + j;
      for (int64_t e = 0; e < k; ++e) {
        const auto& [value, index] = row[static_cast<size_t>(e)];
        values[out + e * b] = value;
        if (indices) indices[out + e * b] = index;
      }
    }
  }
}

class TopKKernel final : public runtime::LibraryKernel {
public:
  TopKKernel(DType dtype, CallExtent a, CallExtent n, CallExtent b, CallExtent k, bool largest,
             bool indices)
      : dtype_(dtype), a_(a), n_(n), b_(b), k_(k), largest_(largest), indices_(indices) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    int64_t a = a_.at(extents), n = n_.at(extents), b = b_.at(extents), k = k_.at(extents);
    if (k > n)
      return Status::error(
          fmt::format("TopK: K = {} is larger than the axis, of {} elements", k, n));
    void* values = buffers[1];
    auto* indices = indices_ ? static_cast<int64_t*>(buffers[2]) : nullptr;
    auto go = [&]<typename T>(T*) {
      top_k_rows(static_cast<const T*>(buffers[0]), static_cast<T*>(values), indices, a, n, b, k,
                 largest_);
    };
    switch (dtype_) {
      case DType::kF32: go(static_cast<float*>(nullptr)); break;
      case DType::kF64: go(static_cast<double*>(nullptr)); break;
      case DType::kI8: go(static_cast<int8_t*>(nullptr)); break;
      case DType::kI16: go(static_cast<int16_t*>(nullptr)); break;
      case DType::kI32: go(static_cast<int32_t*>(nullptr)); break;
      case DType::kI64: go(static_cast<int64_t*>(nullptr)); break;
      case DType::kU8: go(static_cast<uint8_t*>(nullptr)); break;
      case DType::kU16: go(static_cast<uint16_t*>(nullptr)); break;
      case DType::kU32: go(static_cast<uint32_t*>(nullptr)); break;
      case DType::kU64: go(static_cast<uint64_t*>(nullptr)); break;
      default: return Status::error("TopK: no selection for this element type");
    }
    return Status();
  }

  std::string describe() const override { return "partial sort per row"; }

private:
  DType dtype_;
  CallExtent a_, n_, b_, k_;
  bool largest_, indices_;
};

bool selectable(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF64:
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64: return true;
    default: return false;
  }
}

} // namespace

std::optional<TopKView> top_k_view(const Node& node, LibraryCall& call) {
  if (node.op_type != Op::kTopK) return std::nullopt;
  const Value* x = node.inputs[0];
  const Value* values = node.outputs.empty() ? nullptr : node.outputs[0];
  const Value* indices = node.outputs.size() > 1 ? node.outputs[1] : nullptr;
  if (!values || !x->type.shape || !values->type.shape) return std::nullopt;
  const Shape& xs = *x->type.shape;
  auto rank = static_cast<int64_t>(xs.size());
  int64_t axis = node.attrs_as<TopKAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const Dim& len = xs[static_cast<size_t>(axis)];
  const Dim& k = (*values->type.shape)[static_cast<size_t>(axis)];
  // (Generated code takes a short axis over static shapes only.)
  if (k.is_unknown() || (len.is_static() && len.value() <= kGeneratedTopKMaxAxis &&
                         shape_is_static(xs) && shape_is_static(*values->type.shape)))
    return std::nullopt;
  for (const Dim& d : xs)
    if (d.is_unknown()) return std::nullopt;
  Dim a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) a = dim_mul(a, xs[static_cast<size_t>(d)]);
    if (d > axis) b = dim_mul(b, xs[static_cast<size_t>(d)]);
  }
  call.values = {x, values};
  if (indices) call.values.push_back(indices);
  call.nodes = {&node};
  return TopKView{call_extent(a, call.symbols), call_extent(len, call.symbols),
                  call_extent(b, call.symbols), call_extent(k, call.symbols), k,
                  node.attrs_as<TopKAttrs>().largest, indices != nullptr};
}

std::optional<LibraryCall> top_k_call(const Node& node) {
  LibraryCall call;
  std::optional<TopKView> v = top_k_view(node, call);
  if (!v || !selectable(node.inputs[0]->type.dtype)) return std::nullopt;
  call.kernel = std::make_shared<TopKKernel>(node.inputs[0]->type.dtype, v->a, v->n, v->b, v->k,
                                             v->largest, v->indices);
  return call;
}

} // namespace weft::library
