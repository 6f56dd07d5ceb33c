// Gathers and scatters: copies whose source (gather) or target (scatter) index along some
// axes is loaded from an index tensor (an indirect access, see kernel.h). Negative indices
// count from the end, as ONNX says; an index out of range is clamped into the data (ONNX
// leaves it undefined). Scattered updates that meet at one element apply in order: the last
// wins, or they add or multiply, as the node's reduction says.
#include <algorithm>
#include <optional>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

const Shape& shape_of(const Value* v) { return *v->type.shape; }
int rank_of(const Value* v) { return static_cast<int>(v->type.shape->size()); }
int positive_axis(int64_t axis, int rank) {
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The combine of a scatter's reduction.
Combine scatter_combine(const Node& n) {
  switch (n.attrs_as<ScatterAttrs>().reduction) {
    case ScatterReduction::kNone: return Combine::kNone;
    case ScatterReduction::kAdd: return Combine::kSum;
    case ScatterReduction::kMul: return Combine::kProd;
    case ScatterReduction::kMax: return Combine::kMax;
    case ScatterReduction::kMin: return Combine::kMin;
  }
  return Combine::kNone;
}

// y = x: the copy every scatter starts from.
void add_data_copy(KernelBuilder& k, const Value* x, int data, int out) {
  StatementBuilder b("copy", shape_of(x));
  std::vector<AffineExpr> all = iterators(shape_of(x).size());
  k.add(b.store(b.load(data, all, x->type.dtype), out, all));
}

// The index along a gather's axis as an affine expression of the output's iterator there,
// when the index tensor is a constant scalar or a constant 1-D run of evenly stepped
// positions (PyTorch's select, a strided slice), wrapped and clamped as the gather would;
// the load is then a plain one that fusion can view through.
std::optional<AffineExpr> constant_position(const Value* idx, int axis, int64_t extent) {
  if (!idx->is_constant() || rank_of(idx) > 1 || idx->constant->num_elements() == 0)
    return std::nullopt;
  auto position = [&](int64_t j) {
    int64_t i = idx->constant->get_int64(j);
    return std::clamp<int64_t>(i < 0 ? i + extent : i, 0, extent - 1);
  };
  int64_t count = idx->constant->num_elements();
  int64_t first = position(0);
  int64_t step = count > 1 ? position(1) - first : 0;
  for (int64_t j = 2; j < count; ++j) {
    if (position(j) != first + step * j) return std::nullopt;
  }
  AffineExpr e = AffineExpr::constant_of(first);
  if (step != 0) e.terms.push_back({axis, step});
  return e;
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
  const Dim& extent = shape_of(x)[axis];
  if (std::optional<AffineExpr> position = extent.is_static() && extent.value() > 0
                                               ? constant_position(idx, axis, extent.value())
                                               : std::nullopt) {
    int out = k.buffer(y, BufferRole::kOutput);
    StatementBuilder b("gather", shape_of(y));
    std::vector<AffineExpr> x_index;
    for (int d = 0; d < rank_of(x); ++d) {
      x_index.push_back(d < axis    ? AffineExpr::iterator(d)
                        : d == axis ? *position
                                    : AffineExpr::iterator(d - 1 + idx_rank));
    }
    k.add(b.store(b.load(data, x_index, x->type.dtype), out, iterators(shape_of(y).size())));
    return k.lowered();
  }
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

// y = x, then y[p with p[axis] replaced by idx[p]] (op)= updates[p].
Result<LoweredNode> lower_scatter_elements(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* updates = n.inputs[2];
  int axis = positive_axis(n.attrs_as<ScatterAttrs>().axis, rank_of(x));
  KernelBuilder k(name);
  int data = k.buffer(x, BufferRole::kInput);
  int indices = k.buffer(idx, BufferRole::kInput);
  int upd = k.buffer(updates, BufferRole::kInput);
  int out = k.buffer(n.outputs[0], BufferRole::kOutput);
  add_data_copy(k, x, data, out);
  StatementBuilder b("scatter_elements", shape_of(updates));
  std::vector<AffineExpr> all = iterators(shape_of(updates).size());
  int i = b.load(indices, all, idx->type.dtype);
  int v = b.load(upd, all, x->type.dtype);
  std::vector<AffineExpr> y_index = all;
  y_index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
  Statement s = b.store(v, out, y_index, scatter_combine(n));
  s.write.indirect = {{axis, i, IndexWrap::kNegative}};
  k.add(std::move(s));
  return k.lowered();
}

// y = x, then y[idx[J..., 0], ..., idx[J..., q-1], T...] (op)= updates[J..., T...].
Result<LoweredNode> lower_scatter_nd(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* updates = n.inputs[2];
  int idx_rank = rank_of(idx);
  int q = static_cast<int>(shape_of(idx).back().value());
  KernelBuilder k(name);
  int data = k.buffer(x, BufferRole::kInput);
  int indices = k.buffer(idx, BufferRole::kInput);
  int upd = k.buffer(updates, BufferRole::kInput);
  int out = k.buffer(n.outputs[0], BufferRole::kOutput);
  add_data_copy(k, x, data, out);
  StatementBuilder b("scatter_nd", shape_of(updates));
  std::vector<AffineExpr> y_index;
  std::vector<IndirectIndex> indirect;
  for (int j = 0; j < q; ++j) {
    std::vector<AffineExpr> tuple = iterators(static_cast<size_t>(idx_rank - 1));
    tuple.push_back(AffineExpr::constant_of(j));
    indirect.push_back({j, b.load(indices, tuple, idx->type.dtype), IndexWrap::kNegative});
    y_index.push_back(AffineExpr::constant_of(0));
  }
  for (int d = q; d < rank_of(x); ++d)
    y_index.push_back(AffineExpr::iterator(idx_rank - 1 + d - q));
  int v = b.load(upd, iterators(shape_of(updates).size()), x->type.dtype);
  Statement s = b.store(v, out, y_index, scatter_combine(n));
  s.write.indirect = std::move(indirect);
  k.add(std::move(s));
  return k.lowered();
}

// y[t, b] = x[t < len[b] ? len[b] - 1 - t : t, b] (batch and time axes in either order):
// the first len[b] steps of each sequence reversed, through a computed indirect index.
Result<LoweredNode> lower_reverse_sequence(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ReverseSequenceAttrs>();
  const Value* x = n.inputs[0];
  const Value* lens = n.inputs[1];
  const Shape& shape = *x->type.shape;
  int time = static_cast<int>(a.time_axis), batch = static_cast<int>(a.batch_axis);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int bl = k.buffer(lens, BufferRole::kInput);
  StatementBuilder b("reverse_sequence", shape);
  constexpr DType kI64 = DType::kI64;
  int len = load_as(b, bl, {AffineExpr::iterator(batch)}, lens->type.dtype, kI64);
  int t = b.iterator(time);
  int reversed =
      b.op(ExprOp::kSub, kI64, {b.op(ExprOp::kSub, kI64, {len, b.constant(1, kI64)}), t});
  int source =
      b.op(ExprOp::kSelect, kI64, {b.op(ExprOp::kLt, DType::kBool, {t, len}), reversed, t});
  std::vector<AffineExpr> index = iterators(shape.size());
  index[static_cast<size_t>(time)] = AffineExpr::constant_of(0);
  int v = b.gather(in, index, {{time, source, IndexWrap::kClamp}}, x->type.dtype);
  k.add(b.store(v, k.buffer(n.outputs[0], BufferRole::kOutput), iterators(shape.size())));
  return k.lowered();
}

} // namespace weft::kernel
