// Det: Gaussian elimination with partial pivoting, per matrix, on a working copy. The
// kernel IR has no sequential loop around statements, so the elimination is unrolled over
// the columns: each column k is a few statements (find the pivot row, fold the pivot into
// the determinant, swap the rows, eliminate below), and matrices are limited to
// kMaxDetOrder rows.
#include <fmt/format.h>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

constexpr int64_t kMaxDetOrder = 16;

AffineExpr shifted(int i, int64_t by) { return {by, {{i, 1}}}; }

} // namespace

// det = product of the pivots, negated once per row swap. A zero pivot column gives 0:
// its multipliers are 0 instead of a division by zero.
Result<LoweredNode> lower_det(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& s = *x->type.shape;
  int64_t order = s.back().value();
  if (order > kMaxDetOrder) {
    return Status::error(fmt::format(
        "matrices of {} rows are not supported: the elimination is unrolled, up to {} rows", order,
        kMaxDetOrder));
  }
  Dim batch = num_elements(Shape(s.begin(), s.end() - 2));
  DType t = accumulator_type(y->type.dtype);
  constexpr DType kI64 = DType::kI64;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, {batch, order, order});
  int out = k.buffer(y, BufferRole::kOutput, {batch});
  int a = k.temp(t, {batch, order, order});
  int det = k.temp(t, {batch});
  int largest = k.temp(t, {batch});
  int pivot = k.temp(kI64, {batch});
  int saved = k.temp(t, {batch, order});
  AffineExpr b0 = AffineExpr::iterator(0);
  AffineExpr zero = AffineExpr::constant_of(0);
  StatementBuilder copy("copy", {batch, order, order});
  k.add(copy.store(load_as(copy, in, iterators(3), x->type.dtype, t), a, iterators(3)));
  StatementBuilder one("init_det", {batch});
  k.add(one.store(one.constant(1, t), det, {b0}));
  for (int64_t c = 0; c < order; ++c) {
    int64_t rows = order - c; // rows c.. and columns c.. still in play
    auto at = [&](StatementBuilder& b, AffineExpr row, AffineExpr col) {
      return b.load(a, {b0, std::move(row), std::move(col)}, t);
    };
    // The pivot row: the first row from c on whose |a[r, c]| is largest.
    StatementBuilder init_max(fmt::format("init_max{}", c), {batch});
    k.add(init_max.store(init_max.constant(-1, t), largest, {b0}));
    StatementBuilder max(fmt::format("max{}", c), {batch, rows});
    k.add(max.store(max.op(ExprOp::kAbs, t, {at(max, shifted(1, c), AffineExpr::constant_of(c))}),
                    largest, {b0}, Combine::kMax));
    // A NaN is a candidate too, so that some row always is.
    StatementBuilder reset(fmt::format("init_pivot{}", c), {batch});
    k.add(reset.store(reset.constant(static_cast<double>(order), kI64), pivot, {b0}));
    StatementBuilder find(fmt::format("pivot{}", c), {batch, rows});
    int v = find.op(ExprOp::kAbs, t, {at(find, shifted(1, c), AffineExpr::constant_of(c))});
    int hit = find.op(ExprOp::kOr, DType::kBool,
                      {find.op(ExprOp::kEq, DType::kBool, {v, find.load(largest, {b0}, t)}),
                       find.op(ExprOp::kIsNan, DType::kBool, {v})});
    int row = find.op(ExprOp::kSelect, kI64,
                      {hit, find.op(ExprOp::kAdd, kI64, {find.iterator(1), find.constant(c, kI64)}),
                       find.constant(static_cast<double>(order), kI64)});
    k.add(find.store(row, pivot, {b0}, Combine::kMin));
    // det *= a[p, c], negated when rows p and c swap.
    StatementBuilder fold(fmt::format("fold_pivot{}", c), {batch});
    int p = fold.load(pivot, {b0}, kI64);
    int value =
        fold.gather(a, {b0, zero, AffineExpr::constant_of(c)}, {{1, p, IndexWrap::kClamp}}, t);
    int swapped = fold.op(ExprOp::kLt, DType::kBool, {fold.constant(c, kI64), p});
    int sign = fold.op(ExprOp::kSelect, t, {swapped, fold.constant(-1, t), fold.constant(1, t)});
    k.add(fold.store(fold.op(ExprOp::kMul, t,
                             {fold.load(det, {b0}, t), fold.op(ExprOp::kMul, t, {value, sign})}),
                     det, {b0}));
    if (rows == 1) break;
    // Swap rows c and p over columns c..: save row c, copy row p into it, then the saved
    // row into row p (a no-op pair when p is c).
    std::vector<AffineExpr> col = {b0, shifted(1, c)};
    StatementBuilder save(fmt::format("save_row{}", c), {batch, rows});
    k.add(save.store(at(save, AffineExpr::constant_of(c), shifted(1, c)), saved, col));
    StatementBuilder up(fmt::format("swap_up{}", c), {batch, rows});
    int from = up.gather(a, {b0, zero, shifted(1, c)},
                         {{1, up.load(pivot, {b0}, kI64), IndexWrap::kClamp}}, t);
    k.add(up.store(from, a, {b0, AffineExpr::constant_of(c), shifted(1, c)}));
    StatementBuilder down(fmt::format("swap_down{}", c), {batch, rows});
    int p_down = down.load(pivot, {b0}, kI64);
    Statement st = down.store(down.load(saved, col, t), a, {b0, zero, shifted(1, c)});
    st.write.indirect = {{1, p_down, IndexWrap::kClamp}};
    k.add(std::move(st));
    // Rows below c: a[r, j] -= a[r, c] / a[c, c] * a[c, j] for r, j > c.
    StatementBuilder elim(fmt::format("eliminate{}", c), {batch, rows - 1, rows - 1});
    AffineExpr r = shifted(1, c + 1), j = shifted(2, c + 1), cc = AffineExpr::constant_of(c);
    int diag = at(elim, cc, cc);
    int is_zero = elim.op(ExprOp::kEq, DType::kBool, {diag, elim.constant(0, t)});
    int factor =
        elim.op(ExprOp::kSelect, t,
                {is_zero, elim.constant(0, t), elim.op(ExprOp::kDiv, t, {at(elim, r, cc), diag})});
    int updated = elim.op(ExprOp::kSub, t,
                          {at(elim, r, j), elim.op(ExprOp::kMul, t, {factor, at(elim, cc, j)})});
    k.add(elim.store(updated, a, {b0, r, j}));
  }
  StatementBuilder fin("finish", {batch});
  int d = fin.load(det, {b0}, t);
  if (t != y->type.dtype) d = fin.op(ExprOp::kCast, y->type.dtype, {d});
  k.add(fin.store(d, out, {b0}));
  return k.lowered();
}

} // namespace weft::kernel
