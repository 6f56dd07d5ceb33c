#include "weft/library/dnnl_sgemm.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dynamic_call.h"

namespace weft::library {

namespace {

// A matrix operand or the result as its buffer holds it: the buffer value's dims, and the
// dims the product sees, as positions among them (view dim k is buffer dim view[k]): an
// absorbed Transpose's permutation for an operand, its inverse for the result.
struct Operand {
  Shape dims;
  Ints view;
  int buffer = 0; // in the call's values
};

// An operand at a run's extents: the dims the product sees and their strides, aligned to
// "rank" with leading unit dims.
struct Strided {
  std::vector<int64_t> dims, strides;
};

std::optional<Strided> at(const Operand& o, const std::map<std::string, int64_t>& extents,
                          size_t rank) {
  std::vector<int64_t> dims;
  for (const Dim& d : o.dims) {
    std::optional<int64_t> e = eval_dim(d, extents);
    if (!e) return std::nullopt;
    dims.push_back(*e);
  }
  std::vector<int64_t> strides = row_major_strides(dims);
  Strided s;
  s.dims.assign(rank - o.view.size(), 1);
  s.strides.assign(rank - o.view.size(), 0);
  for (int64_t k : o.view) {
    s.dims.push_back(dims[static_cast<size_t>(k)]);
    s.strides.push_back(strides[static_cast<size_t>(k)]);
  }
  return s;
}

class SgemmKernel final : public runtime::LibraryKernel {
public:
  SgemmKernel(Operand a, Operand b, Operand y, std::vector<std::string> symbols)
      : a_(std::move(a)), b_(std::move(b)), y_(std::move(y)), symbols_(std::move(symbols)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    std::map<std::string, int64_t> bound;
    for (size_t i = 0; i < symbols_.size(); ++i)
      bound[symbols_[i]] = extents[i];
    size_t rank = y_.view.size();
    std::optional<Strided> a = at(a_, bound, rank), b = at(b_, bound, rank),
                           y = at(y_, bound, rank);
    if (!a || !b || !y) return Status::error("sgemm: a dim has no extent at this run's shapes");
    int64_t m = y->dims[rank - 2], n = y->dims[rank - 1], k = a->dims[rank - 1];
    if (m == 0 || n == 0) return {};
    // Batch dims, with numpy's broadcasting: an operand's unit dim is read at stride 0.
    std::vector<int64_t> batch(y->dims.begin(), y->dims.end() - 2);
    for (Strided* s : {&*a, &*b}) {
      for (size_t i = 0; i + 2 < rank; ++i) {
        if (s->dims[i] == 1) s->strides[i] = 0;
      }
    }
    int64_t batches = std::accumulate(batch.begin(), batch.end(), int64_t{1},
                                      [](int64_t x, int64_t e) { return x * e; });
    // A matrix is read by rows (its columns contiguous, 'N') or by columns ('T'); the leading
    // dimension is the other stride, at least the contiguous extent whatever a unit dim's
    // stride is.
    auto lead = [](const Strided& s, size_t r, bool by_columns) {
      int64_t extent = by_columns ? s.dims[r - 2] : s.dims[r - 1];
      return std::max<int64_t>({by_columns ? s.strides[r - 1] : s.strides[r - 2], extent, 1});
    };
    char ta = a_trans() ? 'T' : 'N', tb = b_trans() ? 'T' : 'N';
    int64_t lda = lead(*a, rank, a_trans()), ldb = lead(*b, rank, b_trans());
    int64_t ldc = std::max<int64_t>({y->strides[rank - 2], n, 1});
    const auto* pa = static_cast<const float*>(buffers[a_.buffer]);
    const auto* pb = static_cast<const float*>(buffers[b_.buffer]);
    auto* py = static_cast<float*>(buffers[y_.buffer]);
    std::atomic<bool> failed{false};
    auto one = [&](int64_t index) {
      int64_t oa = 0, ob = 0, oy = 0;
      for (size_t i = batch.size(); i-- > 0;) {
        int64_t c = index % batch[i];
        index /= batch[i];
        oa += c * a->strides[i];
        ob += c * b->strides[i];
        oy += c * y->strides[i];
      }
      if (k == 0) { // sgemm would leave the result unwritten
        for (int64_t r = 0; r < m; ++r)
          std::fill_n(py + oy + r * ldc, n, 0.0f);
        return;
      }
      if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, pa + oa, lda, pb + ob, ldb, 0.0f, py + oy, ldc) !=
          dnnl_success)
        failed = true;
    };
    // Matrices one per thread (each sgemm then runs on one); fewer than the threads, one
    // after the other, each on all of them.
    if (batches >= omp_get_max_threads() && batches > 1) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < batches; ++i)
        one(i);
    } else {
      for (int64_t i = 0; i < batches; ++i)
        one(i);
    }
    if (failed)
      return Status::error(
          fmt::format("oneDNN's sgemm failed: {}{} m {} n {} k {}, lda {} ldb {} ldc {}", ta, tb, m,
                      n, k, lda, ldb, ldc));
    return {};
  }

  std::string describe() const override {
    std::string t = a_trans() && b_trans() ? "A and B transposed"
                    : a_trans()            ? "A transposed"
                    : b_trans()            ? "B transposed"
                                           : "";
    return fmt::format("oneDNN sgemm per matrix, dims at run time{}", t.empty() ? "" : ", " + t);
  }

private:
  // An operand whose rows are its buffer's contiguous dim is read by columns.
  static bool transposed(const Operand& o) {
    return o.view[o.view.size() - 2] == static_cast<int64_t>(o.dims.size()) - 1;
  }
  bool a_trans() const { return transposed(a_); }
  bool b_trans() const { return transposed(b_); }

  Operand a_, b_, y_;
  std::vector<std::string> symbols_;
};

} // namespace

std::optional<LibraryCall> sgemm_call(const Node& node, const SoleReader& sole_reader,
                                      const std::function<bool(const Node*)>& free) {
  if (node.op_type != Op::kMatMul || node.inputs.size() != 2 || node.outputs.size() != 1 ||
      !has_symbolic_shapes(node))
    return std::nullopt;
  for (const Value* v : {node.inputs[0], node.inputs[1], node.outputs[0]}) {
    if (!v || v->type.dtype != DType::kF32 || !v->type.shape || v->type.shape->size() < 2)
      return std::nullopt;
  }
  if (node.inputs[0]->is_constant() || node.inputs[1]->is_constant())
    return std::nullopt; // constant weights: a primitive over packed weights is faster
  LibraryCall call;
  std::vector<const Node*> before;
  Operand in[2];
  for (size_t i = 0; i < 2; ++i) {
    const Value* v = node.inputs[i];
    if (std::optional<Ints> perm = operand_transpose(v, node, sole_reader, free)) {
      before.push_back(v->producer);
      v = v->producer->inputs[0];
      in[i].view = *perm;
    } else {
      in[i].view = identity_perm(v->type.shape->size());
    }
    in[i].dims = *v->type.shape;
    in[i].buffer = position(call.values, v);
  }
  Operand y;
  const Value* out = node.outputs[0];
  const Node* after = sole_reader(out);
  std::optional<Ints> view = result_view(after, free);
  y.view = view ? *view : identity_perm(out->type.shape->size());
  out = view ? after->outputs[0] : out;
  if (!view) after = nullptr;
  if (!out->type.shape) return std::nullopt;
  y.dims = *out->type.shape;
  y.buffer = position(call.values, out);
  std::set<std::string> symbols;
  for (const Value* v : call.values) {
    for (const Dim& d : *v->type.shape) {
      for (std::string& s : dim_symbols(d))
        symbols.insert(std::move(s));
    }
  }
  call.nodes = before;
  call.nodes.push_back(&node);
  if (after) call.nodes.push_back(after);
  for (const std::string& s : symbols)
    call.symbols.push_back(Dim::symbol(s));
  call.kernel = std::make_shared<SgemmKernel>(
      in[0], in[1], y, std::vector<std::string>(symbols.begin(), symbols.end()));
  return call;
}

} // namespace weft::library
