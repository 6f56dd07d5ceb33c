#include "weft/library/attention_call.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/library/dynamic_call.h"
#include "weft/support/vector_exp.h"

namespace weft::library {

namespace {

constexpr int64_t kMinScoresBytes = int64_t{4} << 20;
// The most query rows in a block, and the most bytes their scores take. sgemm packs K^T and V
// anew for every block, so larger blocks pack less: on an AMD EPYC (AVX-512, 1 MB of L2 a
// core), 2 threads, blocks of 256 rows ran 1,856 keys of 64 dims 1.2x as fast as blocks of 64,
// and 4,096 keys (4 MB of scores a block) 1.1x, though their scores leave the L2.
constexpr int64_t kMaxBlockRows = 256;
constexpr int64_t kMaxBlockBytes = int64_t{4} << 20;

// Softmax's numerator for a row of scores, in place: exp(s - max(s)). Returns the row's sum,
// which the row of the product with V is divided by afterwards: two passes over the scores
// instead of oneDNN's softmax's three (its division), 2.7x as fast as it on that EPYC.
__attribute__((target_clones("avx512f", "avx2", "default"))) float
exp_row(float* __restrict s, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i)
    m = s[i] > m ? s[i] : m;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    float e = shifted_exp(s[i] - m);
    s[i] = e;
    sum += e;
  }
  return sum;
}

// A mask value at or below this leaves its key out of the softmax: -inf, and the most negative
// floats that exporters write for it (Hugging Face's torch.finfo(float32).min). With any key
// of the row kept, exp(s + mask - max) of such a key is 0 unless the scores differ by 1e30.
constexpr float kMaskedAtOrBelow = -1e30f;

// The columns [lo, hi) of a block's mask rows (row r at mask + r * row_stride, column c at
// c * column_stride) outside which every row masks every key, so that the products and the
// softmax can leave them out; all columns where a row masks every key (its softmax is then
// the reference's: uniform, or NaN for -inf).
std::pair<int64_t, int64_t> kept_columns(const float* mask, int64_t rows, int64_t row_stride,
                                         int64_t column_stride, int64_t columns) {
  auto kept = [](float m) { return !(m <= kMaskedAtOrBelow); };
  if (column_stride == 0) return {0, columns}; // one value a row: all its keys or none
  int64_t lo = columns, hi = 0;
  for (int64_t r = 0; r < (row_stride == 0 ? 1 : rows); ++r) {
    const float* row = mask + r * row_stride;
    int64_t first = 0, last = columns;
    while (first < columns && !kept(row[first * column_stride]))
      ++first;
    if (first == columns) return {0, columns};
    while (!kept(row[(last - 1) * column_stride]))
      --last;
    lo = std::min(lo, first);
    hi = std::max(hi, last);
  }
  return {lo, hi};
}

// A matrix operand, the result or the mask as the product sees it: dims and the strides of
// its buffer, aligned to the scores' rank (leading unit dims, and dims of 1 that broadcast, at
// stride 0).
struct Matrix {
  std::vector<int64_t> dims, strides;
  int buffer = 0;

  int64_t rows_stride() const { return strides[strides.size() - 2]; }
  int64_t columns_stride() const { return strides.back(); }
  // sgemm's form: rows contiguous ('T', leading dimension the columns' stride) or columns
  // contiguous ('N'); none when neither is (a Transpose that moved the last dim away).
  std::optional<std::pair<char, int64_t>> form() const {
    int64_t rows = dims[dims.size() - 2], columns = dims.back();
    if (columns_stride() == 1 || columns == 1)
      return std::pair{'N', std::max<int64_t>({rows_stride(), columns, 1})};
    if (rows_stride() == 1 || rows == 1)
      return std::pair{'T', std::max<int64_t>({columns_stride(), rows, 1})};
    return std::nullopt;
  }
};

// "dims" with row-major strides, viewed through "view" (view dim k is dim view[k]) and aligned
// to "rank".
Matrix viewed(const Dims& dims, const Ints& view, size_t rank, int buffer) {
  Dims strides = row_major_strides(dims);
  Matrix m;
  m.dims.assign(rank - view.size(), 1);
  m.strides.assign(rank - view.size(), 0);
  for (int64_t k : view) {
    m.dims.push_back(dims[static_cast<size_t>(k)]);
    m.strides.push_back(dims[static_cast<size_t>(k)] == 1 ? 0 : strides[static_cast<size_t>(k)]);
  }
  m.buffer = buffer;
  return m;
}

// An operand of a product in sgemm's form.
struct Operand {
  Matrix m;
  char trans = 'N';
  int64_t ld = 0;
};

class AttentionKernel final : public runtime::LibraryKernel {
public:
  AttentionKernel(Operand q, Operand kt, Operand v, Matrix y, std::optional<Matrix> mask,
                  float alpha)
      : q_(std::move(q)), kt_(std::move(kt)), v_(std::move(v)), y_(std::move(y)),
        mask_(std::move(mask)), alpha_(alpha) {
    sq_ = y_.dims[y_.dims.size() - 2];
    dv_ = y_.dims.back();
    sk_ = kt_.m.dims.back();
    d_ = q_.m.dims.back();
    batch_.assign(y_.dims.begin(), y_.dims.end() - 2);
    max_block_ = std::clamp<int64_t>(kMaxBlockBytes / (4 * sk_) / 16 * 16, 16, kMaxBlockRows);
  }

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    auto f = [&](const Matrix& m) { return static_cast<float*>(buffers[m.buffer]); };
    const float *q = f(q_.m), *kt = f(kt_.m), *v = f(v_.m);
    const float* mask = mask_ ? f(*mask_) : nullptr;
    float* y = f(y_);
    int64_t batches = 1;
    for (int64_t e : batch_)
      batches *= e;
    int threads = omp_get_max_threads();
    // Blocks of up to max_block_ rows, but at least 4 per thread where the batch has fewer.
    int64_t per_batch = std::max<int64_t>(1, (4 * threads + batches - 1) / batches);
    int64_t block = std::clamp<int64_t>(((sq_ + per_batch - 1) / per_batch + 15) & ~int64_t{15}, 16,
                                        max_block_);
    int64_t blocks = (sq_ + block - 1) / block, items = batches * blocks;
    std::atomic<bool> failed{false};
    // A block of scores per thread (uninitialized: the product writes them first).
    std::unique_ptr<float[]> scratch(new float[static_cast<size_t>(threads * block * sk_)]);
#pragma omp parallel num_threads(threads)
    {
      float* s = scratch.get() + omp_get_thread_num() * block * sk_;
      std::vector<float> inverse_sums(static_cast<size_t>(block));
#pragma omp for schedule(static)
      for (int64_t item = 0; item < items; ++item) {
        int64_t r0 = item % blocks * block, rows = std::min(block, sq_ - r0);
        int64_t oq = r0 * q_.m.rows_stride(), ok = 0, ov = 0, oy = r0 * y_.rows_stride(),
                om = mask ? r0 * mask_->rows_stride() : 0;
        for (int64_t index = item / blocks, i = static_cast<int64_t>(batch_.size()); i-- > 0;) {
          int64_t c = index % batch_[static_cast<size_t>(i)];
          index /= batch_[static_cast<size_t>(i)];
          oq += c * q_.m.strides[static_cast<size_t>(i)];
          ok += c * kt_.m.strides[static_cast<size_t>(i)];
          ov += c * v_.m.strides[static_cast<size_t>(i)];
          oy += c * y_.strides[static_cast<size_t>(i)];
          if (mask) om += c * mask_->strides[static_cast<size_t>(i)];
        }
        // Keys that every row of the block masks (a causal mask's later keys, a sliding
        // window's earlier ones, padding) are left out of the products and the softmax.
        auto [lo, hi] =
            mask ? kept_columns(mask + om, rows, mask_->rows_stride(), mask_->columns_stride(), sk_)
                 : std::pair<int64_t, int64_t>{0, sk_};
        int64_t width = hi - lo;
        for (int64_t r = 0; mask && r < rows; ++r) { // the mask's rows, which the product adds to
          const float* from = mask + om + r * mask_->rows_stride();
          float* to = s + r * width;
          if (mask_->columns_stride() == 1)
            std::memcpy(to, from + lo, sizeof(float) * static_cast<size_t>(width));
          else
            std::fill_n(to, width, *from);
        }
        if (dnnl_sgemm(q_.trans, kt_.trans, rows, width, d_, alpha_, q + oq, q_.ld,
                       kt + ok + lo * kt_.m.columns_stride(), kt_.ld, mask ? 1.0f : 0.0f, s,
                       width) != dnnl_success) {
          failed = true;
          continue;
        }
        for (int64_t r = 0; r < rows; ++r)
          inverse_sums[static_cast<size_t>(r)] = 1.0f / exp_row(s + r * width, width);
        if (dnnl_sgemm('N', v_.trans, rows, dv_, width, 1.0f, s, width,
                       v + ov + lo * v_.m.rows_stride(), v_.ld, 0.0f, y + oy,
                       y_.rows_stride()) != dnnl_success) {
          failed = true;
          continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* row = y + oy + r * y_.rows_stride();
          float inverse = inverse_sums[static_cast<size_t>(r)];
          for (int64_t c = 0; c < dv_; ++c)
            row[c] *= inverse;
        }
      }
    }
    if (failed) return Status::error("attention: a oneDNN call failed");
    return {};
  }

  std::string describe() const override {
    return fmt::format("Weft attention, blocks of up to {} query rows (oneDNN sgemm{})",
                       max_block_, mask_ ? ", mask added" : "");
  }

private:
  Operand q_, kt_, v_;
  Matrix y_;
  std::optional<Matrix> mask_;
  float alpha_ = 1.0f;
  int64_t max_block_ = 0, sq_ = 0, sk_ = 0, d_ = 0, dv_ = 0;
  std::vector<int64_t> batch_;
};

// The constant scalar "v" holds, if it is one (f32, one element).
std::optional<float> scalar(const Value* v) {
  if (!v || !v->is_constant() || v->type.dtype != DType::kF32 || v->constant->num_elements() != 1)
    return std::nullopt;
  return static_cast<float>(v->constant->get_double(0));
}

} // namespace

std::optional<LibraryCall> attention_call(const Node& node, const SoleReader& sole_reader,
                                          const std::function<bool(const Node*)>& free) {
  static const bool enabled = [] { // WEFT_ATTENTION=0: the products and softmax as before
    const char* v = std::getenv("WEFT_ATTENTION");
    return !v || std::string(v) != "0";
  }();
  if (!enabled || node.op_type != Op::kMatMul || node.inputs.size() != 2 ||
      has_symbolic_shapes(node))
    return std::nullopt;
  const Value* v = node.outputs[0];
  if (!v || v->type.dtype != DType::kF32 || !v->type.has_static_shape() ||
      v->type.shape->size() < 2)
    return std::nullopt;
  Dims scores = dims_of(v);
  size_t rank = scores.size();
  int64_t elements = std::accumulate(scores.begin(), scores.end(), int64_t{1},
                                     [](int64_t a, int64_t e) { return a * e; });
  if (elements * 4 < kMinScoresBytes) return std::nullopt;
  auto next = [&](const Value* of) -> const Node* {
    const Node* r = sole_reader(of);
    return r && free(r) && r->outputs.size() == 1 ? r : nullptr;
  };
  auto other = [&](const Node* e, const Value* of) {
    return e->inputs.size() == 2 ? (e->inputs[0] == of ? e->inputs[1] : e->inputs[0]) : nullptr;
  };
  std::vector<const Node*> chain = {&node};
  float alpha = 1.0f;
  const Node* e = next(v);
  if (e && (e->op_type == Op::kMul || (e->op_type == Op::kDiv && e->inputs[0] == v))) {
    std::optional<float> c = scalar(other(e, v));
    if (c && *c != 0.0f) {
      alpha = e->op_type == Op::kMul ? *c : 1.0f / *c;
      chain.push_back(e);
      v = e->outputs[0];
      e = next(v);
    }
  }
  const Value* mask = nullptr;
  if (e && e->op_type == Op::kAdd) {
    mask = other(e, v);
    const Shape* ms = mask && mask->type.dtype == DType::kF32 && mask->type.has_static_shape()
                          ? &*mask->type.shape
                          : nullptr;
    if (!ms || ms->size() > rank || mask == v) return std::nullopt;
    for (size_t i = 0; i < ms->size(); ++i) {
      int64_t d = (*ms)[i].value();
      if (d != 1 && d != scores[rank - ms->size() + i]) return std::nullopt;
    }
    chain.push_back(e);
    v = e->outputs[0];
    e = next(v);
  }
  if (!e || e->op_type != Op::kSoftmax) return std::nullopt;
  int64_t axis = e->attrs_as<SoftmaxAttrs>().axis;
  if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return std::nullopt;
  chain.push_back(e);
  v = e->outputs[0];
  const Node* second = next(v);
  if (!second || second->op_type != Op::kMatMul || second->inputs[0] != v ||
      !second->outputs[0]->type.has_static_shape() ||
      second->outputs[0]->type.shape->size() != rank)
    return std::nullopt;

  LibraryCall call;
  std::vector<const Node*> before;
  // An operand, through the Transpose before it where sgemm can read that one's input.
  auto operand = [&](const Node& product, size_t i) {
    const Value* x = product.inputs[i];
    if (std::optional<Ints> perm = operand_transpose(x, product, sole_reader, free)) {
      before.push_back(x->producer);
      x = x->producer->inputs[0];
      return viewed(dims_of(x), *perm, rank, position(call.values, x));
    }
    return viewed(dims_of(x), identity_perm(x->type.shape->size()), rank, position(call.values, x));
  };
  Operand q{operand(node, 0)}, kt{operand(node, 1)}, vs{operand(*second, 1)};
  for (Operand* x : {&q, &kt, &vs}) {
    std::optional<std::pair<char, int64_t>> form = x->m.form();
    if (!form) return std::nullopt;
    std::tie(x->trans, x->ld) = *form;
  }
  std::optional<Matrix> m;
  if (mask)
    m = viewed(dims_of(mask), identity_perm(mask->type.shape->size()), rank,
               position(call.values, mask));
  // The result, through a Transpose after it that keeps its last dim last.
  const Value* out = second->outputs[0];
  const Node* after = next(out);
  std::optional<Ints> view = result_view(after, free);
  if (view && view->size() == rank && after->outputs[0]->type.has_static_shape()) {
    out = after->outputs[0];
  } else {
    view = identity_perm(rank);
    after = nullptr;
  }
  Matrix y = viewed(dims_of(out), *view, rank, position(call.values, out));
  if (y.columns_stride() != 1) return std::nullopt;
  // Batch dims broadcast only where an operand has 1; the result has them all.
  for (size_t i = 0; i + 2 < rank; ++i) {
    for (const Matrix* x : {&q.m, &kt.m, &vs.m}) {
      if (x->dims[i] != 1 && x->dims[i] != y.dims[i]) return std::nullopt;
    }
  }
  int64_t sk = scores.back();
  if (sk == 0 || scores[rank - 2] == 0 || q.m.dims.back() == 0 || y.dims.back() == 0)
    return std::nullopt; // (sgemm leaves a product over K = 0 unwritten)
  call.kernel = std::make_shared<AttentionKernel>(q, kt, vs, y, m, alpha);
  call.nodes = before;
  call.nodes.insert(call.nodes.end(), chain.begin(), chain.end());
  call.nodes.push_back(second);
  if (after) call.nodes.push_back(after);
  return call;
}

} // namespace weft::library
