#include "weft/library/resize_taps_call.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "weft/graph/resize_taps.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dynamic_call.h"

namespace weft::library {

namespace {

// Less work than this (output elements) runs on one thread.
constexpr int64_t kParallelWork = 32768;

// One resized axis: the data as [outer, in, inner] becomes [outer, out, inner]. Its taps are
// tap-major: position t of output position q at [t * out + q].
template <typename T> struct Pass {
  int64_t outer = 1, in = 1, out = 1, inner = 1, taps = 1;
  std::vector<int64_t> at;
  std::vector<T> weight;
  bool unweighted = false; // nearest: one tap of weight 1

  void run(const T* x, T* y) const {
    if (inner == 1) {
      along_rows(x, y);
      return;
    }
    int64_t rows = outer * out;
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t o = r / out, q = r % out;
      const T* from = x + o * in * inner;
      T* to = y + r * inner;
      if (unweighted) {
        std::memcpy(to, from + at[static_cast<size_t>(q)] * inner, sizeof(T) * inner);
        continue;
      }
      const T* a = from + at[static_cast<size_t>(q)] * inner;
      T w = weight[static_cast<size_t>(q)];
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i)
        to[i] = w * a[i];
      for (int64_t t = 1; t < taps; ++t) {
        const T* b = from + at[static_cast<size_t>(t * out + q)] * inner;
        T v = weight[static_cast<size_t>(t * out + q)];
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i)
          to[i] += v * b[i];
      }
    }
  }

  // The last axis: each output row gathers from its input row.
  void along_rows(const T* x, T* y) const {
    const int64_t* p = at.data();
    const T* w = weight.data();
#pragma omp parallel for schedule(static) if (outer * out >= kParallelWork)
    for (int64_t o = 0; o < outer; ++o) {
      const T* from = x + o * in;
      T* to = y + o * out;
      if (unweighted) {
#pragma omp simd
        for (int64_t q = 0; q < out; ++q)
          to[q] = from[p[q]];
        continue;
      }
#pragma omp simd
      for (int64_t q = 0; q < out; ++q)
        to[q] = w[q] * from[p[q]];
      for (int64_t t = 1; t < taps; ++t) {
        const int64_t* pt = p + t * out;
        const T* wt = w + t * out;
#pragma omp simd
        for (int64_t q = 0; q < out; ++q)
          to[q] += wt[q] * from[pt[q]];
      }
    }
  }
};

template <typename T> class ResizeKernel final : public runtime::LibraryKernel {
public:
  // No passes: a copy of "elements" (a dynamic call at extents that resize nothing).
  ResizeKernel(std::vector<Pass<T>> passes, int64_t elements)
      : passes_(std::move(passes)), elements_(elements) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    const T* x = static_cast<const T*>(buffers[0]);
    T* y = static_cast<T*>(buffers[1]);
    if (passes_.empty()) std::memcpy(y, x, sizeof(T) * static_cast<size_t>(elements_));
    // The passes' intermediate results, alternating; kept, so that a run touches no new pages.
    thread_local std::vector<T> between[2];
    for (size_t i = 0; i < passes_.size(); ++i) {
      const Pass<T>& p = passes_[i];
      T* to = y;
      if (i + 1 < passes_.size()) {
        std::vector<T>& b = between[i % 2];
        b.resize(std::max(b.size(), static_cast<size_t>(p.outer * p.out * p.inner)));
        to = b.data();
      }
      p.run(x, to);
      x = to;
    }
    return Status();
  }

  std::string describe() const override {
    return fmt::format("Weft's resize, one pass per resized axis ({})", passes_.size());
  }

private:
  std::vector<Pass<T>> passes_;
  int64_t elements_ = 0;
};

template <typename T>
std::shared_ptr<runtime::LibraryKernel>
kernel_of(const ResizeAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
          const std::vector<double>& scales) {
  // Passes that shrink the data first, then the last axis's (a gather, the slowest per
  // element), then the other axes' (sums of contiguous rows): bilinear [21, 32, 32] ->
  // [21, 256, 256] gathers 32 rows then, not 256.
  std::vector<size_t> order;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out[d] || scales[d] != 1) order.push_back(d);
  }
  auto rank = [&](size_t d) { return (out[d] < in[d] ? 0 : 2) + (d + 1 == in.size() ? 0 : 1); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return rank(i) < rank(j); });
  std::vector<Pass<T>> passes;
  std::vector<int64_t> dims = in;
  for (size_t d : order) {
    AxisTaps taps = resize_taps(a, dims[d], out[d], scales[d]);
    Pass<T> p;
    for (size_t e = 0; e < dims.size(); ++e) {
      if (e < d) p.outer *= dims[e];
      if (e > d) p.inner *= dims[e];
    }
    p.in = dims[d];
    p.out = out[d];
    p.taps = static_cast<int64_t>(taps.front().size());
    p.unweighted = a.mode == ResizeMode::kNearest;
    p.at.resize(static_cast<size_t>(p.taps * p.out));
    p.weight.resize(p.at.size());
    for (int64_t q = 0; q < p.out; ++q) {
      for (int64_t t = 0; t < p.taps; ++t) {
        auto [at, w] = taps[static_cast<size_t>(q)][static_cast<size_t>(t)];
        p.at[static_cast<size_t>(t * p.out + q)] = at;
        p.weight[static_cast<size_t>(t * p.out + q)] = static_cast<T>(w);
      }
    }
    passes.push_back(std::move(p));
    dims[d] = out[d];
  }
  int64_t elements = std::accumulate(in.begin(), in.end(), int64_t{1}, std::multiplies<>());
  return std::make_shared<ResizeKernel<T>>(std::move(passes), elements);
}

// The call at static shapes; "or_copy": also where it resizes nothing (a dynamic call's
// extents).
std::optional<LibraryCall> static_taps_call(const Node& node, bool or_copy) {
  const Value *x = node.inputs[0], *y = node.outputs[0];
  const auto& a = node.attrs_as<ResizeAttrs>();
  DType t = x->type.dtype;
  std::optional<std::vector<double>> scales = resize_scales(node);
  if ((t != DType::kF32 && t != DType::kF64) || y->type.dtype != t || !resize_taps_cover(a) ||
      !scales || !x->type.has_static_shape() || !y->type.has_static_shape())
    return std::nullopt;
  std::vector<int64_t> in = shape_static_dims(*x->type.shape),
                       out = shape_static_dims(*y->type.shape);
  bool resized = false;
  for (size_t d = 0; d < in.size() && in.size() == out.size() && in.size() == scales->size(); ++d)
    resized = resized || in[d] != out[d] || (*scales)[d] != 1;
  if ((!resized && !or_copy) || std::count(in.begin(), in.end(), 0) > 0 ||
      std::count(out.begin(), out.end(), 0) > 0)
    return std::nullopt; // (generated code copies, or writes nothing)
  LibraryCall call;
  call.kernel = t == DType::kF32 ? kernel_of<float>(a, in, out, *scales)
                                 : kernel_of<double>(a, in, out, *scales);
  call.values = {x, y};
  call.nodes = {&node};
  return call;
}

} // namespace

std::optional<LibraryCall> resize_taps_call(const Node& node) {
  if ((node.op_type != Op::kResize && node.op_type != Op::kUpsample) || node.outputs.empty())
    return std::nullopt;
  if (!has_symbolic_shapes(node)) return static_taps_call(node, false);
  std::string why_not; // its passes built per run's extents (dynamic_call.h)
  return dynamic_call(
      node, [](const Value*) { return nullptr; }, [](const Node*) { return false; }, &why_not,
      [](const Node& n, const SoleReader&, const std::function<bool(const Node*)>&, std::string*,
         bool) { return static_taps_call(n, true); });
}

} // namespace weft::library
