// Gathers: copies whose source index along some axes is loaded from an index tensor (an
// indirect load, see kernel.h). Negative indices count from the end, as ONNX says; an index
// out of range is clamped into the data (ONNX leaves it undefined).
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

const Shape& shape_of(const Value* v) { return *v->type.shape; }
int rank_of(const Value* v) { return static_cast<int>(v->type.shape->size()); }
int positive_axis(int64_t axis, int rank) {
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

} // namespace

// y[a..., j..., b...] = x[a..., idx[j...], b...], the index tensor's dims at "axis".
Result<LoweredNode> lower_gather(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* y = n.outputs[0];
  int axis = positive_axis(n.attrs_as<AxisAttrs>().axis, rank_of(x));
  int idx_rank = rank_of(idx);
  KernelBuilder k(name);
  int data = k.buffer(x, BufferRole::kInput);
  int indices = k.buffer(idx, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  StatementBuilder b("gather", shape_of(y));
  std::vector<AffineExpr> idx_index;
  for (int j = 0; j < idx_rank; ++j)
    idx_index.push_back(AffineExpr::iterator(axis + j));
  int i = b.load(indices, idx_index, idx->type.dtype);
  std::vector<AffineExpr> x_index;
  for (int d = 0; d < rank_of(x); ++d) {
    x_index.push_back(d < axis    ? AffineExpr::iterator(d)
                      : d == axis ? AffineExpr::constant_of(0)
                                  : AffineExpr::iterator(d - 1 + idx_rank));
  }
  int v = b.gather(data, x_index, {{axis, i, IndexWrap::kNegative}}, x->type.dtype);
  k.add(b.store(v, out, iterators(shape_of(y).size())));
  return k.lowered();
}

// y[p] = x[p with p[axis] replaced by idx[p]].
Result<LoweredNode> lower_gather_elements(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* y = n.outputs[0];
  int axis = positive_axis(n.attrs_as<AxisAttrs>().axis, rank_of(x));
  KernelBuilder k(name);
  int data = k.buffer(x, BufferRole::kInput);
  int indices = k.buffer(idx, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  StatementBuilder b("gather_elements", shape_of(y));
  std::vector<AffineExpr> all = iterators(shape_of(y).size());
  int i = b.load(indices, all, idx->type.dtype);
  std::vector<AffineExpr> x_index = all;
  x_index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
  int v = b.gather(data, x_index, {{axis, i, IndexWrap::kNegative}}, x->type.dtype);
  k.add(b.store(v, out, all));
  return k.lowered();
}

// With b batch dims and index tuples of length q (the index tensor's last dim):
// y[B..., J..., T...] = x[B..., idx[B..., J..., 0], ..., idx[B..., J..., q-1], T...].
Result<LoweredNode> lower_gather_nd(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* y = n.outputs[0];
  int batch = static_cast<int>(n.attrs_as<BatchDimsAttrs>().batch_dims);
  int idx_rank = rank_of(idx);
  int q = static_cast<int>(shape_of(idx).back().value());
  KernelBuilder k(name);
  int data = k.buffer(x, BufferRole::kInput);
  int indices = k.buffer(idx, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  StatementBuilder b("gather_nd", shape_of(y));
  // The output's first idx_rank - 1 iterators run over the index tuples.
  std::vector<AffineExpr> x_index = iterators(static_cast<size_t>(batch));
  std::vector<IndirectIndex> indirect;
  for (int j = 0; j < q; ++j) {
    std::vector<AffineExpr> tuple = iterators(static_cast<size_t>(idx_rank - 1));
    tuple.push_back(AffineExpr::constant_of(j));
    indirect.push_back({batch + j, b.load(indices, tuple, idx->type.dtype), IndexWrap::kNegative});
    x_index.push_back(AffineExpr::constant_of(0));
  }
  for (int d = batch + q; d < rank_of(x); ++d)
    x_index.push_back(AffineExpr::iterator(idx_rank - 1 + d - batch - q));
  int v = b.gather(data, x_index, indirect, x->type.dtype);
  k.add(b.store(v, out, iterators(shape_of(y).size())));
  return k.lowered();
}

} // namespace weft::kernel
