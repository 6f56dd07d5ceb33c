#include "weft/library/attention_call.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/support/cpu_clones.h"
#include "weft/support/vector_exp.h"

namespace weft::library {

namespace {

constexpr int64_t kMinScoresBytes = int64_t{4} << 20;
// The most query rows in a block, and the most bytes their scores take. sgemm packs K^T and V
// anew for every block, so larger blocks pack less: on an AMD EPYC (AVX-512, 1 MB of L2 a
// core), 2 threads, blocks of 256 rows ran 1,856 keys of 64 dims 1.2x as fast as blocks of 64,
// and 4,096 keys (4 MB of scores a block) 1.1x, though their scores leave the L2. Without a
// mask, blocks of 1,024 rows ran 8 heads of 1,024 keys in 11.8-12.0 ms against 12.3-13.3 with
// 256 (700 and 1,500 keys: even); with one, smaller blocks leave out more of the keys that a causal
// mask hides (256 rows: 10.4 ms, 1,024: 14.3-14.8), so masked blocks stay at 256 rows.
constexpr int64_t kMaxBlockRows = 256;
constexpr int64_t kMaxUnmaskedBlockRows = 1024;
constexpr int64_t kMaxBlockBytes = int64_t{4} << 20;

// Softmax's numerator for a row of scores, in place: exp(s - max(s)). Returns the row's sum,
// which the row of the product with V is divided by afterwards: two passes over the scores
// instead of oneDNN's softmax's three (its division), 2.7x as fast as it on that EPYC.
WEFT_CPU_CLONES float exp_row(float* __restrict s, int64_t n) {
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

// Whether a mask row (column c at c * column_stride) is -inf at every one of its columns.
bool all_negative_infinity(const float* row, int64_t column_stride, int64_t columns) {
  for (int64_t c = 0; c < columns; ++c) {
    float m = row[c * column_stride];
    if (!(std::isinf(m) && m < 0)) return false;
  }
  return true;
}

// What the call does with rows that attend to nothing, after the guard it absorbs.
enum class Guard {
  kNone,
  kNanRowsZero,    // Where(IsNaN(p), 0, p): rows whose softmax is NaN (every key at -inf, or a
                   // NaN or infinite score) give 0 (PyTorch's export)
  kMaskedRowsZero, // Where(Equal(ReduceMax(mask, -1), -inf), 0, p): rows whose mask is -inf at
                   // every key give 0 (ONNX's Attention with a mask, as decompose.cc expands it)
};

// A matrix operand, the result or the mask as the product sees it at a run's extents: dims
// and the strides of its buffer, aligned to the scores' rank (leading unit dims, and dims of 1
// that broadcast, at stride 0).
struct Matrix {
  std::vector<int64_t> dims, strides;

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

// A matrix as the call binds it: its buffer value's dims (symbolic in a dynamic-shape compile)
// and the dims the product sees, as positions among them (view dim k is dim view[k]).
struct Bound {
  Shape dims;
  Ints view;
  int buffer = 0;

  // The matrix at a run's extents, aligned to "rank"; none where a dim has no extent.
  std::optional<Matrix> at(const std::map<std::string, int64_t>& extents, size_t rank) const {
    std::vector<int64_t> extent;
    for (const Dim& d : dims) {
      std::optional<int64_t> e = eval_dim(d, extents);
      if (!e) return std::nullopt;
      extent.push_back(*e);
    }
    std::vector<int64_t> strides = row_major_strides(extent);
    Matrix m;
    m.dims.assign(rank - view.size(), 1);
    m.strides.assign(rank - view.size(), 0);
    for (int64_t k : view) {
      int64_t e = extent[static_cast<size_t>(k)];
      m.dims.push_back(e);
      m.strides.push_back(e == 1 ? 0 : strides[static_cast<size_t>(k)]);
    }
    return m;
  }
  // Whether the matrix the product sees keeps its buffer's rows (view's second last dim is
  // the buffer's last) or columns (view's last) contiguous, whatever the extents: sgemm's
  // forms.
  bool readable() const {
    auto last = static_cast<int64_t>(dims.size()) - 1;
    return view.back() == last || (view.size() >= 2 && view[view.size() - 2] == last);
  }
};

// An operand in sgemm's form at a run.
struct Operand {
  Matrix m;
  char trans = 'N';
  int64_t ld = 0;
};

class AttentionKernel final : public runtime::LibraryKernel {
public:
  AttentionKernel(Bound q, Bound kt, Bound v, Bound y, std::optional<Bound> mask, float alpha,
                  Guard guard, std::vector<std::string> symbols)
      : q_(std::move(q)), kt_(std::move(kt)), v_(std::move(v)), y_(std::move(y)),
        mask_(std::move(mask)), alpha_(alpha), guard_(guard), symbols_(std::move(symbols)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    std::map<std::string, int64_t> bound;
    for (size_t i = 0; i < symbols_.size(); ++i)
      bound[symbols_[i]] = extents[i];
    size_t rank = y_.view.size();
    std::optional<Matrix> ym = y_.at(bound, rank), mm;
    Operand q, kt, v;
    for (auto [from, to] : {std::pair{&q_, &q}, std::pair{&kt_, &kt}, std::pair{&v_, &v}}) {
      std::optional<Matrix> m = from->at(bound, rank);
      std::optional<std::pair<char, int64_t>> form = m ? m->form() : std::nullopt;
      if (!form) return Status::error("attention: an operand has no extent or layout at this run");
      to->m = std::move(*m);
      std::tie(to->trans, to->ld) = *form;
    }
    if (mask_ && !(mm = mask_->at(bound, rank)))
      return Status::error("attention: the mask has no extent at this run's shapes");
    if (!ym) return Status::error("attention: the result has no extent at this run's shapes");
    const Matrix& y = *ym;
    const Matrix* mask_m = mm ? &*mm : nullptr;
    int64_t sq = y.dims[rank - 2], dv = y.dims[rank - 1], sk = kt.m.dims[rank - 1],
            d = q.m.dims[rank - 1];
    // An operand's batch dims, and the mask's every dim, are the scores' or 1 (read at stride
    // 0): a dynamic-shape compile checks that here.
    std::vector<int64_t> batch(y.dims.begin(), y.dims.end() - 2);
    std::vector<int64_t> scores = batch;
    scores.insert(scores.end(), {sq, sk});
    for (size_t i = 0; i < rank; ++i) {
      for (const Matrix* x : std::initializer_list<const Matrix*>{&q.m, &kt.m, &v.m, mask_m}) {
        bool checked = i + 2 < rank || x == mask_m;
        if (x && checked && x->dims[i] != 1 && x->dims[i] != scores[i])
          return Status::error("attention: operands whose dims do not broadcast at this run");
      }
    }
    int64_t batches = 1;
    for (int64_t e : batch)
      batches *= e;
    auto* py = static_cast<float*>(buffers[y_.buffer]);
    int64_t ldy = std::max<int64_t>({y.rows_stride(), dv, 1});
    if (sq == 0 || dv == 0 || batches == 0) return {};
    const auto* pq = static_cast<const float*>(buffers[q_.buffer]);
    const auto* pk = static_cast<const float*>(buffers[kt_.buffer]);
    const auto* pv = static_cast<const float*>(buffers[v_.buffer]);
    const float* mask = mask_ ? static_cast<const float*>(buffers[mask_->buffer]) : nullptr;
    int threads = omp_get_max_threads();
    // Blocks of up to max_block rows, but at least 4 per thread where the batch has fewer.
    int64_t per_batch = std::max<int64_t>(1, (4 * threads + batches - 1) / batches);
    int64_t block = std::clamp<int64_t>(((sq + per_batch - 1) / per_batch + 15) & ~int64_t{15}, 16,
                                        max_block(sk, mask_.has_value()));
    int64_t blocks = (sq + block - 1) / block, items = batches * blocks;
    std::atomic<bool> failed{false};
    // A block of scores per thread (uninitialized: the product writes them first).
    std::unique_ptr<float[]> scratch(new float[static_cast<size_t>(threads * block * sk)]);
#pragma omp parallel num_threads(threads)
    {
      float* s = scratch.get() + omp_get_thread_num() * block * sk;
      std::vector<float> inverse_sums(static_cast<size_t>(block));
#pragma omp for schedule(static)
      for (int64_t item = 0; item < items; ++item) {
        int64_t r0 = item % blocks * block, rows = std::min(block, sq - r0);
        int64_t oq = r0 * q.m.rows_stride(), ok = 0, ov = 0, oy = r0 * ldy,
                om = mask ? r0 * mask_m->rows_stride() : 0;
        for (int64_t index = item / blocks, i = static_cast<int64_t>(batch.size()); i-- > 0;) {
          int64_t c = index % batch[static_cast<size_t>(i)];
          index /= batch[static_cast<size_t>(i)];
          oq += c * q.m.strides[static_cast<size_t>(i)];
          ok += c * kt.m.strides[static_cast<size_t>(i)];
          ov += c * v.m.strides[static_cast<size_t>(i)];
          oy += c * y.strides[static_cast<size_t>(i)];
          if (mask) om += c * mask_m->strides[static_cast<size_t>(i)];
        }
        if (sk == 0) { // the weighted sum of no values (sgemm leaves a product over K = 0
          for (int64_t r = 0; r < rows; ++r) // unwritten)
            std::fill_n(py + oy + r * ldy, dv, 0.0f);
          continue;
        }
        // Keys that every row of the block masks (a causal mask's later keys, a sliding
        // window's earlier ones, padding) are left out of the products and the softmax.
        auto [lo, hi] = mask ? kept_columns(mask + om, rows, mask_m->rows_stride(),
                                            mask_m->columns_stride(), sk)
                             : std::pair<int64_t, int64_t>{0, sk};
        int64_t width = hi - lo;
        for (int64_t r = 0; mask && r < rows; ++r) { // the mask's rows, which the product adds to
          const float* from = mask + om + r * mask_m->rows_stride();
          float* to = s + r * width;
          if (mask_m->columns_stride() == 1)
            std::memcpy(to, from + lo, sizeof(float) * static_cast<size_t>(width));
          else
            std::fill_n(to, width, *from);
        }
        if (d == 0 && !mask) { // heads of no dims: scores of 0
          std::fill_n(s, rows * width, 0.0f);
        } else if (d > 0 && dnnl_sgemm(q.trans, kt.trans, rows, width, d, alpha_, pq + oq, q.ld,
                                       pk + ok + lo * kt.m.columns_stride(), kt.ld,
                                       mask ? 1.0f : 0.0f, s, width) != dnnl_success) {
          failed = true;
          continue;
        }
        for (int64_t r = 0; r < rows; ++r)
          inverse_sums[static_cast<size_t>(r)] = 1.0f / exp_row(s + r * width, width);
        if (dnnl_sgemm('N', v.trans, rows, dv, width, 1.0f, s, width,
                       pv + ov + lo * v.m.rows_stride(), v.ld, 0.0f, py + oy,
                       ldy) != dnnl_success) {
          failed = true;
          continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* row = py + oy + r * ldy;
          float inverse = inverse_sums[static_cast<size_t>(r)];
          bool zero = guard_ == Guard::kNanRowsZero
                          ? std::isnan(inverse)
                          : guard_ == Guard::kMaskedRowsZero &&
                                all_negative_infinity(mask + om + r * mask_m->rows_stride(),
                                                      mask_m->columns_stride(), sk);
          if (zero) {
            std::fill_n(row, dv, 0.0f);
            continue;
          }
          for (int64_t c = 0; c < dv; ++c)
            row[c] *= inverse;
        }
      }
    }
    if (failed) return Status::error("attention: a oneDNN call failed");
    return {};
  }

  std::string describe() const override {
    const Dim& keys = kt_.dims[static_cast<size_t>(kt_.view.back())];
    return fmt::format("Weft attention, blocks of up to {} query rows (oneDNN sgemm{}{}{})",
                       max_block(keys.is_static() ? keys.value() : 1, mask_.has_value()),
                       mask_ ? ", mask added" : "",
                       guard_ == Guard::kNanRowsZero      ? ", rows of NaN zeroed"
                       : guard_ == Guard::kMaskedRowsZero ? ", fully masked rows zeroed"
                                                          : "",
                       symbols_.empty() ? "" : ", dims at run time");
  }

private:
  // The most rows of a block whose scores have "keys" columns.
  static int64_t max_block(int64_t keys, bool masked) {
    return std::clamp<int64_t>(kMaxBlockBytes / (4 * std::max<int64_t>(keys, 1)) / 16 * 16, 16,
                               masked ? kMaxBlockRows : kMaxUnmaskedBlockRows);
  }

  Bound q_, kt_, v_, y_;
  std::optional<Bound> mask_;
  float alpha_ = 1.0f;
  Guard guard_ = Guard::kNone;
  std::vector<std::string> symbols_;
};

// The constant scalar "v" holds, if it is one (f32, one element).
std::optional<float> scalar(const Value* v) {
  if (!v || !v->is_constant() || v->type.dtype != DType::kF32 || v->constant->num_elements() != 1)
    return std::nullopt;
  return static_cast<float>(v->constant->get_double(0));
}

// "dims" aligned to "rank" with leading unit dims.
std::vector<Dim> aligned(std::vector<Dim> dims, size_t rank) {
  dims.insert(dims.begin(), rank - dims.size(), Dim(1));
  return dims;
}

// Whether a dim of an operand ("x") can broadcast to the result's ("to"): 1 or equal; a
// symbolic one that differs is checked when the call runs.
bool broadcasts(const Dim& x, const Dim& to) {
  return x == Dim(1) || x == to || !x.is_static() || !to.is_static();
}

} // namespace

std::optional<LibraryCall>
attention_call(const Node& node, const SoleReader& sole_reader,
               const std::function<std::vector<const Node*>(const Value*)>& readers,
               const std::function<bool(const Node*)>& free) {
  static const bool enabled = [] { // WEFT_ATTENTION=0: the products and softmax as before
    const char* v = std::getenv("WEFT_ATTENTION");
    return !v || std::string(v) != "0";
  }();
  if (!enabled || node.op_type != Op::kMatMul || node.inputs.size() != 2) return std::nullopt;
  const Value* v = node.outputs[0];
  if (!v || v->type.dtype != DType::kF32 || !v->type.shape || v->type.shape->size() < 2)
    return std::nullopt;
  std::vector<Dim> scores = *v->type.shape;
  size_t rank = scores.size();
  // Static scores under kMinScoresBytes stay in the cache; symbolic ones are taken whatever
  // their size (the products are sgemm's per matrix either way).
  if (v->type.has_static_shape()) {
    Dims extents = dims_of(v);
    int64_t elements = std::accumulate(extents.begin(), extents.end(), int64_t{1},
                                       [](int64_t a, int64_t e) { return a * e; });
    if (elements * 4 < kMinScoresBytes) return std::nullopt;
  }
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
    const Shape* ms =
        mask && mask->type.dtype == DType::kF32 && mask->type.shape ? &*mask->type.shape : nullptr;
    if (!ms || ms->size() > rank || mask == v) return std::nullopt;
    std::vector<Dim> m = aligned(*ms, rank);
    for (size_t i = 0; i < rank; ++i) {
      if (m[i] != Dim(1) && m[i] != scores[i]) return std::nullopt;
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
  Guard guard = Guard::kNone;
  if (second && second->op_type == Op::kWhere && mask) { // ONNX's Attention as decompose.cc
    // expands it with a mask: Where(Equal(ReduceMax(mask, -1), -inf), 0, p)
    const Node* where = second;
    const Value* none = where->inputs.size() == 3 ? where->inputs[0] : nullptr;
    const Node* equal = none ? none->producer : nullptr;
    const Node* max = nullptr;
    if (equal && equal->op_type == Op::kEqual && equal->inputs.size() == 2 && next(none) == where &&
        free(equal)) {
      for (size_t i = 0; i < 2; ++i) {
        const Node* p = equal->inputs[i] ? equal->inputs[i]->producer : nullptr;
        std::optional<float> c = scalar(equal->inputs[1 - i]);
        if (p && p->op_type == Op::kReduceMax && c && std::isinf(*c) && *c < 0) max = p;
      }
    }
    std::optional<float> zero = none ? scalar(where->inputs[1]) : std::nullopt;
    bool row_max = false;
    if (max && max->inputs[0] == mask && next(max->outputs[0]) == equal && free(max)) {
      const auto& a = max->attrs_as<ReduceAttrs>();
      auto last = static_cast<int64_t>(mask->type.shape->size()) - 1;
      row_max = a.keepdims && a.axes && a.axes->size() == 1 &&
                ((*a.axes)[0] == -1 || (*a.axes)[0] == last) && max->inputs.size() == 1;
    }
    if (!row_max || !none || where->inputs[2] != v || zero != 0.0f) return std::nullopt;
    chain.insert(chain.end(), {max, equal, where});
    v = where->outputs[0];
    second = next(v);
    guard = Guard::kMaskedRowsZero;
  } else if (!second) { // Where(IsNaN(p), 0, p), PyTorch's guard for rows that mask every key
    std::vector<const Node*> r = readers(v);
    if (r.size() != 2) return std::nullopt;
    const Node* is_nan = r[0]->op_type == Op::kIsNaN ? r[0] : r[1];
    const Node* where = next(is_nan->outputs[0]);
    std::optional<float> zero =
        where && where->inputs.size() == 3 ? scalar(where->inputs[1]) : std::nullopt;
    if (is_nan->op_type != Op::kIsNaN || !free(is_nan) || !where || where == is_nan ||
        (where != r[0] && where != r[1]) || where->op_type != Op::kWhere ||
        where->inputs.size() != 3 || where->inputs[0] != is_nan->outputs[0] ||
        where->inputs[2] != v || zero != 0.0f)
      return std::nullopt;
    chain.insert(chain.end(), {is_nan, where});
    v = where->outputs[0];
    second = next(v);
    guard = Guard::kNanRowsZero;
  }
  if (!second || second->op_type != Op::kMatMul || second->inputs[0] != v ||
      !second->outputs[0]->type.shape || second->outputs[0]->type.shape->size() != rank)
    return std::nullopt;
  for (const Value* x : {node.inputs[0], node.inputs[1], second->inputs[1]}) {
    if (!x->type.shape || x->type.shape->size() < 2) return std::nullopt; // (a vector's product)
  }

  LibraryCall call;
  std::vector<const Node*> before;
  // An operand, through the Transpose before it where sgemm can read that one's input.
  auto operand = [&](const Node& product, size_t i) {
    const Value* x = product.inputs[i];
    Ints view = identity_perm(x->type.shape->size());
    if (std::optional<Ints> perm = operand_transpose(x, product, sole_reader, free)) {
      before.push_back(x->producer);
      x = x->producer->inputs[0];
      view = *perm;
    }
    return Bound{*x->type.shape, view, position(call.values, x)};
  };
  Bound q = operand(node, 0), kt = operand(node, 1), vs = operand(*second, 1);
  std::optional<Bound> m;
  if (mask)
    m = Bound{*mask->type.shape, identity_perm(mask->type.shape->size()),
              position(call.values, mask)};
  // The result, through a Transpose after it that keeps its last dim last.
  const Value* out = second->outputs[0];
  const Node* after = next(out);
  std::optional<Ints> view = result_view(after, free);
  if (view && view->size() == rank && after->outputs[0]->type.shape) {
    out = after->outputs[0];
  } else {
    view = identity_perm(rank);
    after = nullptr;
  }
  Bound y{*out->type.shape, *view, position(call.values, out)};
  if (y.view.back() != static_cast<int64_t>(rank) - 1) return std::nullopt;
  auto seen = [&](const Bound& b) { // the dims the product sees, aligned to the scores' rank
    std::vector<Dim> dims;
    for (int64_t k : b.view)
      dims.push_back(b.dims[static_cast<size_t>(k)]);
    return aligned(dims, rank);
  };
  std::vector<Dim> yd = seen(y);
  for (const Bound* x : {&q, &kt, &vs}) {
    if (!x->readable()) return std::nullopt;
    // Batch dims broadcast only where an operand has 1; the result has them all.
    std::vector<Dim> xd = seen(*x);
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (!broadcasts(xd[i], yd[i])) return std::nullopt;
    }
  }
  std::set<std::string> symbols;
  for (const Value* x : call.values) {
    for (const Dim& d : *x->type.shape) {
      if (d.is_unknown()) return std::nullopt;
      if (d.is_static() && d.value() == 0) return std::nullopt; // (nothing to gain)
      for (std::string& symbol : dim_symbols(d))
        symbols.insert(std::move(symbol));
    }
  }
  for (const std::string& symbol : symbols)
    call.symbols.push_back(Dim::symbol(symbol));
  call.kernel = std::make_shared<AttentionKernel>(
      q, kt, vs, y, m, alpha, guard, std::vector<std::string>(symbols.begin(), symbols.end()));
  call.nodes = before;
  call.nodes.insert(call.nodes.end(), chain.begin(), chain.end());
  call.nodes.push_back(second);
  if (after) call.nodes.push_back(after);
  return call;
}

} // namespace weft::library
