#include "weft/library/gemv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <omp.h>

#include "weft/support/cpu_clones.h"

namespace weft::library {

namespace {

// acc[0, n) += sum over r < rows of x[r] * w[r * stride, + n): eight rows at a time, each a
// stream of its own (more streams in flight: 28 -> 34 GB/s against one row at a time).
WEFT_CPU_CLONES void accumulate_rows(float* __restrict acc, const float* __restrict w,
                                     int64_t stride, const float* __restrict x, int64_t rows,
                                     int64_t n) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    const float* p = w + r * stride;
    const float *p0 = p, *p1 = p + stride, *p2 = p + 2 * stride, *p3 = p + 3 * stride,
                *p4 = p + 4 * stride, *p5 = p + 5 * stride, *p6 = p + 6 * stride,
                *p7 = p + 7 * stride;
    float x0 = x[r], x1 = x[r + 1], x2 = x[r + 2], x3 = x[r + 3], x4 = x[r + 4], x5 = x[r + 5],
          x6 = x[r + 6], x7 = x[r + 7];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      acc[j] += x0 * p0[j] + x1 * p1[j] + x2 * p2[j] + x3 * p3[j] + x4 * p4[j] + x5 * p5[j] +
                x6 * p6[j] + x7 * p7[j];
    }
  }
  for (; r < rows; ++r) {
    const float* p = w + r * stride;
    float xr = x[r];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      acc[j] += xr * p[j];
  }
}

// The dot product of x and w, k long (a row of transposed weights).
WEFT_CPU_CLONES float dot(const float* __restrict x, const float* __restrict w, int64_t k) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < k; ++i)
    sum += x[i] * w[i];
  return sum;
}

// The dot products of x with eight rows of w, k long and "stride" apart, into out[0, 8): eight
// streams in flight and x loaded once for them (AlexNet's 9216 x 4096 weights: 20 GB/s one row
// at a time, 25 four at a time, 28-30 eight at a time; sixteen no faster).
WEFT_CPU_CLONES void dot8(const float* __restrict x, const float* __restrict w, int64_t stride,
                          int64_t k, float* __restrict out) {
  const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride,
              *w4 = w + 4 * stride, *w5 = w + 5 * stride, *w6 = w + 6 * stride,
              *w7 = w + 7 * stride;
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5, s6, s7)
  for (int64_t i = 0; i < k; ++i) {
    float xi = x[i];
    s0 += xi * w0[i];
    s1 += xi * w1[i];
    s2 += xi * w2[i];
    s3 += xi * w3[i];
    s4 += xi * w4[i];
    s5 += xi * w5[i];
    s6 += xi * w6[i];
    s7 += xi * w7[i];
  }
  for (float s : {s0, s1, s2, s3, s4, s5, s6, s7})
    *out++ = s;
}

// One post-op on "v"; "s" is its src1 element where it has one.
float apply(const PostOp& p, float v, float s) {
  using A = dnnl::algorithm;
  switch (p.algorithm) {
    case A::eltwise_relu: return v > 0 ? v : p.alpha * v;
    case A::eltwise_logistic: return 1.0f / (1.0f + std::exp(-v));
    case A::eltwise_tanh: return std::tanh(v);
    case A::eltwise_hardswish: return v * std::min(std::max(v / 6.0f + 0.5f, 0.0f), 1.0f);
    case A::eltwise_clip: return std::min(std::max(v, p.alpha), p.beta);
    case A::binary_add: return v + s;
    case A::binary_mul: return v * s;
    case A::binary_sub: return v - s;
    case A::binary_div: return v / s;
    default: return v; // (gemv_call takes no other)
  }
}

bool applies(const PostOp& p) {
  using A = dnnl::algorithm;
  for (A a : {A::eltwise_relu, A::eltwise_logistic, A::eltwise_tanh, A::eltwise_hardswish,
              A::eltwise_clip, A::binary_add, A::binary_mul, A::binary_sub, A::binary_div}) {
    if (p.algorithm == a) return true;
  }
  return false;
}

// Product of all dims but the last, and the last.
std::pair<int64_t, int64_t> rows_and_columns(const Value* v) {
  Dims d = dims_of(v);
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < d.size(); ++i)
    rows *= d[i];
  return {rows, d.empty() ? 1 : d.back()};
}

// How the kernel finds W's element (k, n): row-major with rows "stride" apart ([K, N], or
// [N, K] "transposed"), or in oneDNN's blocked layout of [K, N] (BA16a64b and the like):
// blocks of "block" columns, each [K padded, block] row-major, "stride" apart.
struct WeightsLayout {
  enum Kind { kRows, kTransposed, kBlocked } kind = kRows;
  int64_t stride = 0;
  int64_t block = 0;
};

// The layout of the packed weights "md" of [K, N], where the kernel reads it.
std::optional<WeightsLayout> layout_of(const memory::desc& md, int64_t k, int64_t n) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 2 || d.offset0 != 0 || d.data_type != dnnl_f32 ||
      d.dims[0] != k || d.dims[1] != n)
    return std::nullopt;
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks == 0 && b.strides[1] == 1 && b.strides[0] >= n)
    return WeightsLayout{WeightsLayout::kRows, b.strides[0]};
  if (b.inner_nblks == 0 && b.strides[0] == 1 && b.strides[1] >= k)
    return WeightsLayout{WeightsLayout::kTransposed, b.strides[1]};
  if (b.inner_nblks == 2 && b.inner_idxs[0] == 0 && b.inner_idxs[1] == 1) {
    int64_t rows = b.inner_blks[0], block = b.inner_blks[1];
    if (b.strides[0] == rows * block && b.strides[1] == d.padded_dims[0] * block)
      return WeightsLayout{WeightsLayout::kBlocked, b.strides[1], block};
  }
  return std::nullopt;
}

class GemvKernel final : public runtime::LibraryKernel {
public:
  struct Op {
    PostOp op;
    int src1 = -1;      // buffer, for a binary one
    bool spans = false; // src1 has N elements (else one)
  };

  // W is buffer "w" laid out as "layout", or "packed" where given.
  GemvKernel(int64_t k, int64_t n, WeightsLayout layout, std::shared_ptr<const memory> packed,
             int x, int w, int bias, int y, std::vector<Op> ops)
      : k_(k), n_(n), layout_(layout), packed_(std::move(packed)), x_(x), w_(w), bias_(bias), y_(y),
        ops_(std::move(ops)) {}

  // y[j] from its sum: plus the bias, then the post-ops.
  float finish(void* const* buffers, const float* bias, int64_t j, float v) const {
    if (bias) v += bias[j];
    for (const Op& o : ops_) {
      const float* s = o.src1 < 0 ? nullptr : static_cast<const float*>(buffers[o.src1]);
      v = apply(o.op, v, s ? s[o.spans ? j : 0] : 0.0f);
    }
    return v;
  }

  Status run(void* const* buffers, const int64_t*) const override {
    const auto* x = static_cast<const float*>(buffers[x_]);
    const auto* w = static_cast<const float*>(packed_ ? packed_->get_data_handle() : buffers[w_]);
    const float* bias = bias_ < 0 ? nullptr : static_cast<const float*>(buffers[bias_]);
    auto* y = static_cast<float*>(buffers[y_]);
    const int64_t stride = layout_.stride;
    if (layout_.kind == WeightsLayout::kTransposed) { // each output a dot product with a row
      int64_t blocks = n_ / 8;
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < blocks; ++b) {
        float sums[8];
        dot8(x, w + 8 * b * stride, stride, k_, sums);
        for (int64_t j = 8 * b; j < 8 * b + 8; ++j)
          y[j] = finish(buffers, bias, j, sums[j - 8 * b]);
      }
      for (int64_t j = 8 * blocks; j < n_; ++j)
        y[j] = finish(buffers, bias, j, dot(x, w + j * stride, k_));
      return Status();
    }
    if (layout_.kind == WeightsLayout::kBlocked) { // each block of columns one stream
      const int64_t block = layout_.block, blocks = (n_ + block - 1) / block;
#pragma omp parallel for schedule(static)
      for (int64_t b = 0; b < blocks; ++b) {
        alignas(64) float acc[kMaxBlock] = {};
        accumulate_rows(acc, w + b * stride, block, x, k_, block);
        for (int64_t j = b * block; j < std::min(n_, (b + 1) * block); ++j)
          y[j] = finish(buffers, bias, j, acc[j - b * block]);
      }
      return Status();
    }
    int threads = std::max(1, omp_get_max_threads());
    // Kept from call to call (per calling thread): a vocabulary-sized row, 150,000 floats
    // per thread, would be fresh pages every call.
    thread_local std::vector<float> partials;
    partials.resize(std::max(partials.size(), static_cast<size_t>(threads * n_)));
    float* all = partials.data();
#pragma omp parallel num_threads(threads)
    {
      int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
      int64_t first = k_ * t / count, last = k_ * (t + 1) / count;
      float* acc = all + t * n_;
      std::fill(acc, acc + n_, 0.0f);
      accumulate_rows(acc, w + first * stride, stride, x + first, last - first, n_);
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t j = 0; j < n_; ++j) {
        float v = all[j];
        for (int64_t u = 1; u < count; ++u)
          v += all[u * n_ + j];
        y[j] = finish(buffers, bias, j, v);
      }
    }
    return Status();
  }

  std::string describe() const override {
    std::string how = layout_.kind == WeightsLayout::kBlocked
                          ? fmt::format(", packed weights in blocks of {} columns", layout_.block)
                      : packed_ ? ", packed weights"
                                : "";
    return fmt::format("Weft matrix-vector product 1x{}x{} (constant weights{}{})", k_, n_,
                       layout_.kind == WeightsLayout::kTransposed ? ", transposed" : "", how);
  }

  // The widest block of columns the kernel reads (oneDNN's brgemm takes 64 at most).
  static constexpr int64_t kMaxBlock = 64;

private:
  int64_t k_, n_;
  WeightsLayout layout_;
  std::shared_ptr<const memory> packed_;
  int x_, w_, bias_, y_;
  std::vector<Op> ops_;
};

} // namespace

bool gemv_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("WEFT_GEMV");
    return !v || std::string(v) != "0";
  }();
  return enabled;
}

std::optional<LibraryCall> gemv_call(const Value* x, const Value* w, const Value* bias,
                                     const Value* y, const std::vector<PostOp>& ops,
                                     bool transposed) {
  for (const Value* v : {x, w, y}) {
    if (v->type.dtype != DType::kF32 || !v->type.has_static_shape()) return std::nullopt;
  }
  if (w->type.shape->size() < 2) return std::nullopt;
  auto [x_rows, k] = rows_and_columns(x);
  auto [w_rows, w_columns] = rows_and_columns(w);
  auto [y_rows, n] = rows_and_columns(y);
  if (x_rows != 1 || y_rows != 1 ||
      (transposed ? w_rows != n || w_columns != k : w_rows != k || w_columns != n))
    return std::nullopt;
  return gemv_call_flat(x, w, bias, y, ops, k, n, transposed);
}

std::optional<LibraryCall> gemv_call_flat(const Value* x, const Value* w, const Value* bias,
                                          const Value* y, const std::vector<PostOp>& ops, int64_t k,
                                          int64_t n, bool transposed) {
  auto elements = [](const Value* v) -> int64_t {
    if (v->type.dtype != DType::kF32 || !v->type.has_static_shape()) return -1;
    return shape_num_elements(*v->type.shape).value_or(-1);
  };
  if (!w->is_constant() || elements(x) != k || elements(y) != n || elements(w) != k * n ||
      k * n < kGemvMinWeights || (bias && elements(bias) != n))
    return std::nullopt;
  LibraryCall call;
  int xi = position(call.values, x), wi = position(call.values, w);
  int bi = bias ? position(call.values, bias) : -1;
  std::vector<GemvKernel::Op> kernel_ops;
  for (const PostOp& p : ops) {
    if (!applies(p)) return std::nullopt;
    GemvKernel::Op o{p};
    if (p.binary) {
      int64_t count = elements(p.src1);
      if (count != n && count != 1) return std::nullopt;
      o.src1 = position(call.values, p.src1);
      o.spans = count == n && n != 1;
    }
    kernel_ops.push_back(o);
  }
  int yi = position(call.values, y);
  WeightsLayout layout{transposed ? WeightsLayout::kTransposed : WeightsLayout::kRows,
                       transposed ? k : n};
  // Weights mapped from a file are read in the form a prompt's matmul packs them in: their
  // pages then go (Tensor::derived), and the model holds one copy of them, not two.
  std::shared_ptr<const memory> packed;
  if (w->constant->is_mapped()) {
    memory::desc wanted = prompt_weights_layout({k, n});
    std::optional<WeightsLayout> read = layout_of(wanted, k, n);
    if (read && (read->kind != WeightsLayout::kBlocked || read->block <= GemvKernel::kMaxBlock)) {
      layout = *read;
      packed = reordered_constant(
          w, memory::desc({k, n}, memory::data_type::f32, transposed ? Dims{1, k} : Dims{n, 1}),
          wanted);
    }
  }
  call.kernel = std::make_shared<GemvKernel>(k, n, layout, std::move(packed), xi, wi, bi, yi,
                                             std::move(kernel_ops));
  return call;
}

} // namespace weft::library
