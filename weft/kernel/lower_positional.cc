// Ops whose values depend on element positions: Trilu, EyeLike, Range, OneHot, the scan
// CumSum and CumProd (a reduction over a triangular, guarded domain), and TopK (ranks, then a
// scatter).
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

int rank_of(const Value* v) { return static_cast<int>(v->type.shape->size()); }

// A scalar operand: a one-element buffer loaded as "t".
int load_scalar(KernelBuilder& k, StatementBuilder& b, const Value* v, DType t) {
  int buf = k.buffer(v, BufferRole::kInput, {1});
  return load_as(b, buf, {AffineExpr::constant_of(0)}, v->type.dtype, t);
}

// "column - row" of the last two iterators of a statement of rank "rank", as an i64.
int diagonal_offset(StatementBuilder& b, int rank) {
  return b.op(ExprOp::kSub, DType::kI64, {b.iterator(rank - 1), b.iterator(rank - 2)});
}

} // namespace

// y = x on and above (upper) or on and below (lower) the k-th diagonal of the last two dims,
// 0 elsewhere; k is read at run time.
Result<LoweredNode> lower_trilu(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  int rank = rank_of(y);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  StatementBuilder b("trilu", *y->type.shape);
  int diag = n.input(1) ? load_scalar(k, b, n.inputs[1], DType::kI64) : b.constant(0, DType::kI64);
  int offset = diagonal_offset(b, rank);
  int keep = n.attrs_as<TriluAttrs>().upper ? b.op(ExprOp::kGe, DType::kBool, {offset, diag})
                                            : b.op(ExprOp::kLe, DType::kBool, {offset, diag});
  DType t = x->type.dtype;
  int v = b.op(ExprOp::kSelect, t,
               {keep, b.load(in, iterators(static_cast<size_t>(rank)), t), b.constant(0, t)});
  int out = k.buffer(y, BufferRole::kOutput);
  k.add(b.store(v, out, iterators(static_cast<size_t>(rank))));
  return k.lowered();
}

// y[i, j] = 1 where j - i = k, 0 elsewhere.
Result<LoweredNode> lower_eye_like(const Node& n, const std::string& name) {
  const Value* y = n.outputs[0];
  DType t = y->type.dtype;
  KernelBuilder k(name);
  StatementBuilder b("eye", *y->type.shape);
  int on = b.op(ExprOp::kEq, DType::kBool,
                {diagonal_offset(b, 2),
                 b.constant(static_cast<double>(n.attrs_as<EyeLikeAttrs>().k), DType::kI64)});
  int v = b.op(ExprOp::kSelect, t, {on, b.constant(1, t), b.constant(0, t)});
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(2)));
  return k.lowered();
}

// y = the attribute's value everywhere: a ConstantOfShape too large to fold (a detection
// head's zeros of [rois, 256, 7, 7], torch.zeros of a computed shape), over static or
// symbolic dims.
Result<LoweredNode> lower_constant_of_shape(const Node& n, const std::string& name) {
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("fill", shape);
  int v = b.constant(n.attrs_as<ConstantOfShapeAttrs>().value->get_double(0), y->type.dtype);
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(shape.size())));
  return k.lowered();
}

// y[i] = start + i * delta, with start and delta read at run time (the length was fixed
// when the shapes were specialized).
Result<LoweredNode> lower_range(const Node& n, const std::string& name) {
  const Value* y = n.outputs[0];
  DType t = y->type.dtype;
  KernelBuilder k(name);
  StatementBuilder b("range", *y->type.shape);
  int start = load_scalar(k, b, n.inputs[0], t);
  int delta = load_scalar(k, b, n.inputs[2], t);
  int i = b.op(ExprOp::kCast, t, {b.iterator(0)});
  int v = b.op(ExprOp::kAdd, t, {start, b.op(ExprOp::kMul, t, {i, delta})});
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(1)));
  return k.lowered();
}

// y[..., c at axis, ...] = on where c equals the index at the other positions (negative
// indices count from the end of "depth"), off elsewhere.
Result<LoweredNode> lower_one_hot(const Node& n, const std::string& name) {
  const Value* idx = n.inputs[0];
  const Value* values = n.inputs[2];
  const Value* y = n.outputs[0];
  int rank = rank_of(y);
  int64_t axis = n.attrs_as<AxisAttrs>().axis;
  if (axis < 0) axis += rank;
  int64_t depth = (*y->type.shape)[static_cast<size_t>(axis)].value();
  KernelBuilder k(name);
  int bi = k.buffer(idx, BufferRole::kInput);
  int bv = k.buffer(values, BufferRole::kInput, {2});
  StatementBuilder b("one_hot", *y->type.shape);
  std::vector<AffineExpr> idx_index;
  for (int d = 0; d < rank; ++d) {
    if (d != axis) idx_index.push_back(AffineExpr::iterator(d));
  }
  int i = load_as(b, bi, idx_index, idx->type.dtype, DType::kI64);
  int negative = b.op(ExprOp::kLt, DType::kBool, {i, b.constant(0, DType::kI64)});
  i = b.op(
      ExprOp::kSelect, DType::kI64,
      {negative,
       b.op(ExprOp::kAdd, DType::kI64, {i, b.constant(static_cast<double>(depth), DType::kI64)}),
       i});
  int hot = b.op(ExprOp::kEq, DType::kBool, {b.iterator(static_cast<int>(axis)), i});
  DType t = values->type.dtype;
  int v = b.op(ExprOp::kSelect, t,
               {hot, b.load(bv, {AffineExpr::constant_of(1)}, t),
                b.load(bv, {AffineExpr::constant_of(0)}, t)});
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(static_cast<size_t>(rank))));
  return k.lowered();
}

// y[..., j, ...] = sum (CumSum) or product (CumProd) of x[..., r, ...] over r <= j (r < j
// exclusive; r >= j, r > j in reverse): a reduction over the domain [..., j, r, ...] cut by
// that guard.
Result<LoweredNode> lower_cum_sum(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<CumSumAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  int rank = rank_of(y);
  // (Canonicalize normalizes the axis where it knows the rank; over symbols it may not yet.)
  int64_t given = *a.axis < 0 ? *a.axis + rank : *a.axis;
  if (given < 0 || given >= rank) {
    return Status::error(
        fmt::format("axis {} is out of range for input rank {}", *a.axis, rank));
  }
  int axis = static_cast<int>(given);
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = t == y->type.dtype ? out : k.temp(t, shape);
  Combine combine = n.op_type == Op::kCumProd ? Combine::kProd : Combine::kSum;
  StatementBuilder init("init", shape);
  k.add(init.store(init.constant(combine_identity(combine), t), acc,
                   iterators(static_cast<size_t>(rank))));
  // Iterators: the output's, with r inserted after j (= the axis).
  Shape domain = shape;
  domain.insert(domain.begin() + axis + 1, shape[static_cast<size_t>(axis)]);
  std::vector<AffineExpr> y_index, x_index;
  for (int d = 0; d < rank; ++d) {
    int it = d <= axis ? d : d + 1;
    y_index.push_back(AffineExpr::iterator(it));
    x_index.push_back(AffineExpr::iterator(d == axis ? axis + 1 : it));
  }
  StatementBuilder update("scan", domain);
  Statement s = update.store(load_as(update, in, x_index, x->type.dtype, t), acc, y_index, combine);
  // j - r >= 0 (or r - j >= 0 in reverse), minus 1 when exclusive.
  int64_t sign = a.reverse ? -1 : 1;
  s.guards.push_back({a.exclusive ? -1 : 0, {{axis, sign}, {axis + 1, -sign}}});
  k.add(std::move(s));
  if (acc != out) {
    StatementBuilder fin("finish", shape);
    int v = fin.op(ExprOp::kCast, y->type.dtype,
                   {fin.load(acc, iterators(static_cast<size_t>(rank)), t)});
    k.add(fin.store(v, out, iterators(static_cast<size_t>(rank))));
  }
  return k.lowered();
}

// TopK over the view [A, N, B] (N the axis): each element's rank is the number of elements
// that come before it (larger, or smaller for !largest; equal ones by lower index, so ranks
// are a permutation); each element is scattered to its rank, and the first K ranks copied
// out. Quadratic in N, which suits the small axes TopK usually sees.
Result<LoweredNode> lower_top_k(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* values = n.outputs[0];
  const Value* indices = n.outputs.size() > 1 ? n.outputs[1] : nullptr;
  const Shape& xs = *x->type.shape;
  int axis = static_cast<int>(n.attrs_as<TopKAttrs>().axis);
  if (axis < 0) axis += rank_of(x);
  int64_t a = 1, b = 1;
  for (int d = 0; d < rank_of(x); ++d) {
    if (d < axis) a *= xs[static_cast<size_t>(d)].value();
    if (d > axis) b *= xs[static_cast<size_t>(d)].value();
  }
  Dim len = xs[static_cast<size_t>(axis)];
  Dim k_len = (*values->type.shape)[static_cast<size_t>(axis)];
  Shape view = {a, len, b};
  DType t = x->type.dtype;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view);
  int rank = k.temp(DType::kI64, view);
  int sorted = k.temp(t, view);
  int order = k.temp(DType::kI64, view);
  std::vector<AffineExpr> all = iterators(3);
  StatementBuilder init("init_rank", view);
  k.add(init.store(init.constant(0, DType::kI64), rank, all));
  // Domain [a, i, j, b]: does element j come before element i?
  StatementBuilder count("count_before", {a, len, len, b});
  int xi = count.load(
      in, {AffineExpr::iterator(0), AffineExpr::iterator(1), AffineExpr::iterator(3)}, t);
  int xj = count.load(
      in, {AffineExpr::iterator(0), AffineExpr::iterator(2), AffineExpr::iterator(3)}, t);
  ExprOp beats = n.attrs_as<TopKAttrs>().largest ? ExprOp::kGt : ExprOp::kLt;
  int tie = count.op(ExprOp::kAnd, DType::kBool,
                     {count.op(ExprOp::kEq, DType::kBool, {xj, xi}),
                      count.op(ExprOp::kLt, DType::kBool, {count.iterator(2), count.iterator(1)})});
  int before = count.op(ExprOp::kOr, DType::kBool, {count.op(beats, DType::kBool, {xj, xi}), tie});
  k.add(count.store(count.op(ExprOp::kCast, DType::kI64, {before}), rank,
                    {AffineExpr::iterator(0), AffineExpr::iterator(1), AffineExpr::iterator(3)},
                    Combine::kSum));
  // Scatter each element, and its index, to its rank.
  for (int target : {sorted, order}) {
    StatementBuilder place(target == sorted ? "place_value" : "place_index", view);
    int r = place.load(rank, all, DType::kI64);
    int v = target == sorted ? place.load(in, all, t) : place.iterator(1);
    std::vector<AffineExpr> at = all;
    at[1] = AffineExpr::constant_of(0);
    Statement st = place.store(v, target, at);
    st.write.indirect = {{1, r, IndexWrap::kClamp}};
    k.add(std::move(st));
  }
  Shape out_view = {a, k_len, b};
  for (const Value* out : {values, indices}) {
    if (!out) continue;
    int buf = k.buffer(out, BufferRole::kOutput, out_view);
    int from = out == values ? sorted : order;
    StatementBuilder copy(out == values ? "copy_values" : "copy_indices", out_view);
    k.add(copy.store(copy.load(from, all, out->type.dtype), buf, all));
  }
  return k.lowered();
}

} // namespace weft::kernel
