// Reductions, softmax and layer normalization, on the canonical views of coalesce.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "weft/kernel/coalesce.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"
#include "weft/support/check.h"

namespace weft::kernel {

namespace {

// One canonical step as loop extents: the input's view, which of its dims are reduced,
// and the view of the result (the kept dims).
struct StepView {
  Shape in;
  std::vector<bool> reduced;
  Shape out;
  Dim count = 1; // elements reduced per result
  // Accumulators shaped as "out", indexed by the kept iterators: for kept dims with symbols
  // inside, where a row-major position would need a symbolic stride.
  bool shaped = false;

  // Accumulators are flat: the row-major position of the kept iterators in "out".
  std::vector<AffineExpr> out_index() const {
    if (!shaped) return {linear(false)};
    std::vector<AffineExpr> at;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!reduced[i]) at.push_back(AffineExpr::iterator(static_cast<int>(i)));
    }
    return at;
  }
  // The row-major position of all iterators in "in", for reading a flat accumulator.
  std::vector<AffineExpr> in_index() const { return {linear(true)}; }
  Shape flat_out() const { return shaped ? out : Shape{num_elements(out)}; }
  // Statements over the results (inits, finishing touches) run over "out" itself, so that
  // loop fusion can line their loops up with the reduction's kept loops; their accumulator
  // index is the row-major position of those iterators.
  Shape result_domain() const { return out.size() > 1 ? out : flat_out(); }
  std::vector<AffineExpr> result_index() const {
    if (shaped) return iterators(out.size());
    if (out.size() <= 1) return {AffineExpr::iterator(0)};
    return {row_major(out, std::vector<bool>(out.size(), true))};
  }
  // Can the flat positions above be written: is every stride they use static?
  bool flat_positions_static() const {
    if (shaped) return true;
    std::vector<bool> kept(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      kept[i] = !reduced[i];
    return strides_static(in, std::vector<bool>(in.size(), true)) && strides_static(in, kept) &&
           strides_static(out, std::vector<bool>(out.size(), true));
  }

private:
  AffineExpr linear(bool all) const {
    std::vector<bool> keep(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      keep[i] = all || !reduced[i];
    return row_major(in, keep);
  }
  // Does row_major(shape, keep) use static strides only?
  static bool strides_static(const Shape& shape, const std::vector<bool>& keep) {
    Dim stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (!keep[i]) continue;
      if (shape[i] != Dim(1) && !stride.is_static()) return false;
      stride = dim_mul(stride, shape[i]);
    }
    return true;
  }
  // The row-major position of the iterators "keep" selects within "shape". Strides are
  // static: only the outermost dim may be symbolic (lower_node admits no other). Outside an
  // inner dim of extent 0 the stride is 0: there are no positions, and no term.
  static AffineExpr row_major(const Shape& shape, const std::vector<bool>& keep) {
    AffineExpr e;
    Dim stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (!keep[i]) continue;
      if (shape[i] != Dim(1)) {
        WEFT_CHECK(stride.is_static(), "a symbolic dim inside a reduction's view");
        if (stride.value() != 0)
          e.terms.insert(e.terms.begin(), {static_cast<int>(i), stride.value()});
      }
      stride = dim_mul(stride, shape[i]);
    }
    return e;
  }
};

// One canonical step; an error where its flat accumulators would need a symbolic stride
// (a kept or reduced dim with symbols inside another of its kind).
Result<StepView> view_of(const CanonicalReduction& r) {
  static const bool kReduced[4][3] = {{true}, {false, true}, {true, false}, {false, true, false}};
  StepView v;
  for (size_t i = 0; i < r.axes.size(); ++i) {
    bool red = kReduced[static_cast<int>(r.form)][i];
    v.in.push_back(r.axes[i].extent);
    v.reduced.push_back(red);
    if (red) {
      v.count = r.axes[i].extent;
    } else {
      v.out.push_back(r.axes[i].extent);
    }
  }
  if (!v.flat_positions_static()) {
    return Status::error(fmt::format("reducing [{}] in steps over these symbolic dims is not "
                                     "lowered yet",
                                     shape_to_string(v.in)));
  }
  return v;
}

// Accumulate f16 and bf16 in f32.
struct ReduceRecipe {
  Combine combine;
  ExprOp pre;  // applied to each input element in the first step (kCast: none)
  ExprOp post; // applied to the result (kCast: none); kDiv divides by the count
};

Result<ReduceRecipe> recipe(Op op) {
  if (op == Op::kReduceSum) return ReduceRecipe{Combine::kSum, ExprOp::kCast, ExprOp::kCast};
  if (op == Op::kReduceMean) return ReduceRecipe{Combine::kSum, ExprOp::kCast, ExprOp::kDiv};
  if (op == Op::kReduceMax) return ReduceRecipe{Combine::kMax, ExprOp::kCast, ExprOp::kCast};
  if (op == Op::kReduceMin) return ReduceRecipe{Combine::kMin, ExprOp::kCast, ExprOp::kCast};
  if (op == Op::kReduceProd) return ReduceRecipe{Combine::kProd, ExprOp::kCast, ExprOp::kCast};
  if (op == Op::kReduceL1) return ReduceRecipe{Combine::kSum, ExprOp::kAbs, ExprOp::kCast};
  if (op == Op::kReduceL2) return ReduceRecipe{Combine::kSum, ExprOp::kMul, ExprOp::kSqrt};
  if (op == Op::kReduceSumSquare) return ReduceRecipe{Combine::kSum, ExprOp::kMul, ExprOp::kCast};
  if (op == Op::kReduceLogSum) return ReduceRecipe{Combine::kSum, ExprOp::kCast, ExprOp::kLog};
  return Status::error(fmt::format("{} is not lowered yet", op));
}

// f(x) of a recipe's "pre" on a loaded element.
int apply_pre(StatementBuilder& b, ExprOp pre, int x, DType t) {
  if (pre == ExprOp::kCast) return x;
  if (pre == ExprOp::kMul) return b.op(ExprOp::kMul, t, {x, x});
  return b.op(pre, t, {x});
}

// Statements reducing buffer "in" (view v.in, or flat when "in_flat") into the flat
// accumulator "acc": init, then update.
void add_reduction(KernelBuilder& k, const StepView& v, int in, bool in_flat, DType in_type,
                   int acc, DType t, Combine c, ExprOp pre) {
  StatementBuilder init("init", v.result_domain());
  k.add(init.store(init.constant(combine_identity(c), t), acc, v.result_index()));
  StatementBuilder update("update", v.in);
  int x = apply_pre(
      update, pre, load_as(update, in, in_flat ? v.in_index() : iterators(v.in.size()), in_type, t),
      t);
  k.add(update.store(x, acc, v.out_index(), c));
}

// One step over "shape" itself, reducing "axes" (in range) into an accumulator shaped as
// the kept dims: for symbolic dims that no canonical view can take (view_of).
StepView own_view(const Shape& shape, const Ints& axes) {
  StepView v;
  v.in = shape;
  v.shaped = true;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool red = std::any_of(axes.begin(), axes.end(), [&](int64_t a) {
      return (a < 0 ? a + static_cast<int64_t>(shape.size()) : a) == static_cast<int64_t>(i);
    });
    v.reduced.push_back(red);
    if (red) {
      v.count = dim_mul(v.count, shape[i]);
    } else {
      v.out.push_back(shape[i]);
    }
  }
  return v;
}

// The single canonical step of reducing "x" over "axes", or none when only unit axes are
// reduced. Non-adjacent axes, and symbolic dims that no canonical view can take, give
// own_view's one step instead.
Result<std::optional<StepView>> single_step(const Value* x, const Ints& axes) {
  WEFT_ASSIGN_OR_RETURN(std::vector<CanonicalReduction> steps,
                        coalesce_reduction(*x->type.shape, axes));
  if (steps.empty()) return std::optional<StepView>();
  if (steps.size() > 1) return std::optional<StepView>(own_view(*x->type.shape, axes));
  Result<StepView> v = view_of(steps[0]);
  if (!v.ok()) return std::optional<StepView>(own_view(*x->type.shape, axes));
  return std::optional<StepView>(*v);
}

// A ROW view over "shape" itself: its leading dims kept as they are instead of merged into
// one row dim, and the reduced dims "first" to "last" (every dim after them is 1) merged
// into one. Producers of the input index it that way (a scaled and masked attention score,
// a GroupNorm's reshaped activations, a BatchNorm's deviation from its per-channel mean),
// so that loop fusion can run them in the same rows, and fusion can inline them: with a
// merged row dim between, the two would index one buffer through two shapes, and a
// per-channel operand would need a quotient. With symbols in the shape, the accumulators
// are shaped. None otherwise.
std::optional<StepView> own_row_view(const Shape& shape, int64_t first, int64_t last) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (first <= 0 || last < first || last >= rank) return std::nullopt;
  for (int64_t i = last + 1; i < rank; ++i) {
    if (!(shape[static_cast<size_t>(i)] == Dim(1))) return std::nullopt;
  }
  StepView v;
  v.count = 1;
  for (int64_t i = first; i <= last; ++i)
    v.count = dim_mul(v.count, shape[static_cast<size_t>(i)]);
  if (v.count == Dim(1)) return std::nullopt;
  v.out.assign(shape.begin(), shape.begin() + first);
  v.in = v.out;
  v.in.push_back(v.count);
  v.reduced.assign(static_cast<size_t>(first), false);
  v.reduced.push_back(true);
  v.shaped = !shape_is_static(shape);
  return v;
}

// own_row_view for a canonical ROW step of reducing "shape".
std::optional<StepView> own_row_view(const Shape& shape, const CanonicalReduction& r) {
  if (r.form != ReductionForm::kRow) return std::nullopt;
  const std::vector<int>& axes = r.axes[1].axes;
  return own_row_view(shape, axes.front(), axes.back());
}

Ints axes_from(int64_t first, int64_t rank) {
  Ints axes(static_cast<size_t>(rank - first));
  std::iota(axes.begin(), axes.end(), first);
  return axes;
}

// The canonical view of the axes a softmax-like op normalizes over: the axis alone from
// opset 13 on; before, the input is coerced to 2-D at the axis, so every axis from it on.
// An axis of extent 1 is viewed as [elements, 1].
Result<StepView> softmax_view(const Node& n) {
  const Value* x = n.inputs[0];
  int64_t rank = static_cast<int64_t>(x->type.shape->size());
  int64_t axis = n.attrs_as<SoftmaxAttrs>().axis;
  if (axis < 0) axis += rank;
  Ints axes = n.opset >= 13 ? Ints{axis} : axes_from(axis, rank);
  WEFT_ASSIGN_OR_RETURN(std::optional<StepView> v, single_step(x, axes));
  Dim total = num_elements(*x->type.shape);
  if (!v) return StepView{{total, 1}, {false, true}, {total}, 1};
  if (n.opset >= 13 && v->reduced == std::vector<bool>{false, true}) {
    if (std::optional<StepView> own = own_row_view(*x->type.shape, axis, axis)) return *own;
  }
  return *v;
}

// idx[k] = the first (or last) r where x[k, r] equals the max (or min) m[k]; a NaN matches
// a NaN, so the first NaN wins, as in NumPy.
void add_arg_reduction(KernelBuilder& k, const StepView& v, int in, DType x_type, int idx,
                       bool is_max, bool select_last) {
  DType t = accumulator_type(x_type);
  int m = k.temp(t, v.flat_out());
  add_reduction(k, v, in, false, x_type, m, t, is_max ? Combine::kMax : Combine::kMin,
                ExprOp::kCast);
  // No index yet: -1 below every index, or the extent (symbolic or not) above every index.
  auto none = [&](StatementBuilder& b) {
    return select_last ? b.constant(-1, DType::kI64) : b.extent(v.count, DType::kI64);
  };
  StatementBuilder init("init_index", v.result_domain());
  k.add(init.store(none(init), idx, v.result_index()));
  StatementBuilder find("find_index", v.in);
  int x = load_as(find, in, iterators(v.in.size()), x_type, t);
  int mv = find.load(m, v.out_index(), t);
  int hit = find.op(ExprOp::kEq, DType::kBool, {x, mv});
  if (dtype_is_float(t)) {
    int both_nan = find.op(
        ExprOp::kAnd, DType::kBool,
        {find.op(ExprOp::kIsNan, DType::kBool, {x}), find.op(ExprOp::kIsNan, DType::kBool, {mv})});
    hit = find.op(ExprOp::kOr, DType::kBool, {hit, both_nan});
  }
  int r = static_cast<int>(std::find(v.reduced.begin(), v.reduced.end(), true) - v.reduced.begin());
  int candidate = find.op(ExprOp::kSelect, DType::kI64, {hit, find.iterator(r), none(find)});
  k.add(find.store(candidate, idx, v.out_index(), select_last ? Combine::kMax : Combine::kMin));
}

} // namespace

Result<LoweredNode> lower_arg_reduce(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ArgReduceAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  WEFT_ASSIGN_OR_RETURN(std::optional<StepView> v, single_step(x, {a.axis}));
  KernelBuilder k(name);
  if (!v) { // the axis has extent 1: every index is 0
    Shape flat = {num_elements(*y->type.shape)};
    int out = k.buffer(y, BufferRole::kOutput, flat);
    StatementBuilder zero("zero", flat);
    k.add(zero.store(zero.constant(0, DType::kI64), out, iterators(1)));
  } else {
    // (The view's kept dims: shaped, not flat, where symbols keep them apart.)
    int out = k.buffer(y, BufferRole::kOutput, v->flat_out());
    int in = k.buffer(x, BufferRole::kInput, v->in);
    add_arg_reduction(k, *v, in, x->type.dtype, out, n.op_type == Op::kArgMax, a.select_last_index);
  }
  return k.lowered();
}

// y = 1 where the first max along the axes is, 0 elsewhere.
Result<LoweredNode> lower_hardmax(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  WEFT_ASSIGN_OR_RETURN(StepView view, softmax_view(n));
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view.in);
  int out = k.buffer(y, BufferRole::kOutput, view.in);
  int idx = k.temp(DType::kI64, view.flat_out());
  add_arg_reduction(k, view, in, x->type.dtype, idx, true, false);
  StatementBuilder b("one_hot", view.in);
  int r = static_cast<int>(std::find(view.reduced.begin(), view.reduced.end(), true) -
                           view.reduced.begin());
  int is_max =
      b.op(ExprOp::kEq, DType::kBool, {b.iterator(r), b.load(idx, view.out_index(), DType::kI64)});
  DType t = y->type.dtype;
  k.add(b.store(b.op(ExprOp::kSelect, t, {is_max, b.constant(1, t), b.constant(0, t)}), out,
                iterators(view.in.size())));
  return k.lowered();
}

Result<LoweredNode> lower_reduce(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const auto& a = n.attrs_as<ReduceAttrs>();
  if (!a.axes) return Status::error("reduction axes known only at run time are not supported yet");
  if (n.op_type == Op::kReduceLogSumExp) {
    // log(sum(exp(x - m))) + m, with m the max: one kernel, two passes over x. An infinite m
    // shifts by 0 instead, as in PyTorch: a row of -inf (or of NaN, which the shift max
    // ignores) gives -inf (or NaN), one holding +inf gives +inf (NaN with a NaN), as in
    // ONNX's reference, not inf - inf = NaN. x - 0 may then pass 88.7: the full exp.
    WEFT_ASSIGN_OR_RETURN(std::optional<StepView> v, single_step(x, *a.axes));
    KernelBuilder k(name);
    DType t = accumulator_type(y->type.dtype);
    StepView view =
        v ? *v
          : StepView{{num_elements(*x->type.shape)}, {false}, {num_elements(*x->type.shape)}, 1};
    int in = k.buffer(x, BufferRole::kInput, view.in);
    int m = k.temp(t, view.flat_out());
    int s = k.temp(t, view.flat_out());
    int out = k.buffer(y, BufferRole::kOutput, view.flat_out());
    add_reduction(k, view, in, false, x->type.dtype, m, t, Combine::kShiftMax, ExprOp::kCast);
    StatementBuilder init("init_sum", view.result_domain());
    k.add(init.store(init.constant(0, t), s, view.result_index()));
    auto shift = [&](StatementBuilder& b, const std::vector<AffineExpr>& at) {
      int max = b.load(m, at, t);
      int infinite = b.op(ExprOp::kIsInf, DType::kBool, {max});
      return b.op(ExprOp::kSelect, t, {infinite, b.constant(0, t), max});
    };
    StatementBuilder sum("sum_exp", view.in);
    int d = sum.op(ExprOp::kSub, t,
                   {load_as(sum, in, iterators(view.in.size()), x->type.dtype, t),
                    shift(sum, view.out_index())});
    k.add(sum.store(sum.op(ExprOp::kExp, t, {d}), s, view.out_index(), Combine::kSum));
    StatementBuilder fin("finish", view.result_domain());
    std::vector<AffineExpr> idx = view.result_index();
    int r =
        fin.op(ExprOp::kAdd, t, {fin.op(ExprOp::kLog, t, {fin.load(s, idx, t)}), shift(fin, idx)});
    if (t != y->type.dtype) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
    k.add(fin.store(r, out, idx));
    return k.lowered();
  }
  WEFT_ASSIGN_OR_RETURN(ReduceRecipe rec, recipe(n.op_type));
  WEFT_ASSIGN_OR_RETURN(std::vector<CanonicalReduction> steps,
                        coalesce_reduction(*x->type.shape, *a.axes));
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  // The result as the recipe finishes it, from the reduced value "r" of "count" elements.
  auto finish = [&](StatementBuilder& fin, int r, Dim count) {
    if (rec.post == ExprOp::kDiv) {
      r = fin.op(ExprOp::kDiv, t, {r, fin.extent(count, t)});
    } else if (rec.post != ExprOp::kCast) {
      r = fin.op(rec.post, t, {r});
    }
    return t != y->type.dtype ? fin.op(ExprOp::kCast, y->type.dtype, {r}) : r;
  };
  std::optional<StepView> own;
  if (!steps.empty()) own = own_row_view(*x->type.shape, steps[0]);
  if (own && steps.size() == 1) { // one ROW over the input's own dims, into y's own shape
    int in = k.buffer(x, BufferRole::kInput, own->in);
    int acc = k.temp(t, own->flat_out());
    add_reduction(k, *own, in, false, x->type.dtype, acc, t, rec.combine, rec.pre);
    StatementBuilder fin("finish", own->result_domain());
    // y's index, a dim for each of x's that y has (all with keepdims): the view's leading
    // dims by their iterators, except the reduced ones among them (of extent 1: coalescing
    // skips them), which like the row's dims and the trailing unit dims are 1 in y.
    std::vector<AffineExpr> at;
    for (size_t i = 0; i < x->type.shape->size(); ++i) {
      bool reduced = std::count(a.axes->begin(), a.axes->end(), static_cast<int64_t>(i)) > 0;
      if (reduced && !a.keepdims) continue;
      at.push_back(i < own->out.size() && !reduced ? AffineExpr::iterator(static_cast<int>(i))
                                                   : AffineExpr::constant_of(0));
    }
    int out = k.buffer(y, BufferRole::kOutput, *y->type.shape);
    k.add(fin.store(finish(fin, fin.load(acc, own->result_index(), t), own->count), out, at));
    return k.lowered();
  }
  if (std::any_of(steps.begin(), steps.end(),
                  [](const CanonicalReduction& r) { return !view_of(r).ok(); })) {
    // Symbolic dims that canonical steps cannot take: one step over the input's own dims,
    // into y viewed as the kept dims.
    StepView v = own_view(*x->type.shape, *a.axes);
    int in = k.buffer(x, BufferRole::kInput, v.in);
    int acc = k.temp(t, v.flat_out());
    add_reduction(k, v, in, false, x->type.dtype, acc, t, rec.combine, rec.pre);
    StatementBuilder fin("finish", v.result_domain());
    int out = k.buffer(y, BufferRole::kOutput, v.out);
    k.add(
        fin.store(finish(fin, fin.load(acc, v.result_index(), t), v.count), out, v.result_index()));
    return k.lowered();
  }
  Shape flat = {num_elements(*y->type.shape)};
  int out = k.buffer(y, BufferRole::kOutput, flat);
  // Step by step, into accumulators; the last one is finished into the output.
  int current = -1;
  DType current_type = x->type.dtype;
  Dim count = 1;
  // The finish runs over the last step's result domain, so that it shares that step's kept
  // loops (one parallel region for a MIDDLE's init, update and finish).
  StepView last{flat, {false}, flat, 1};
  for (size_t i = 0; i < steps.size(); ++i) {
    StepView v;
    if (i == 0 && own) {
      v = *own;
    } else {
      WEFT_ASSIGN_OR_RETURN(v, view_of(steps[i]));
    }
    last = v;
    int in = i == 0 ? k.buffer(x, BufferRole::kInput, v.in) : current;
    int acc = k.temp(t, v.flat_out());
    add_reduction(k, v, in, i > 0, current_type, acc, t, rec.combine,
                  i == 0 ? rec.pre : ExprOp::kCast);
    current = acc;
    current_type = t;
    count = dim_mul(count, v.count);
  }
  StatementBuilder fin("finish", last.result_domain());
  int r;
  if (current < 0) { // only unit axes reduced: each output is one input element
    r = apply_pre(
        fin, rec.pre,
        load_as(fin, k.buffer(x, BufferRole::kInput, flat), iterators(1), x->type.dtype, t), t);
  } else {
    r = fin.load(current, last.result_index(), t);
  }
  k.add(fin.store(finish(fin, r, count), out, last.result_index()));
  return k.lowered();
}

Result<LoweredNode> lower_softmax(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  WEFT_ASSIGN_OR_RETURN(StepView view, softmax_view(n));
  DType t = accumulator_type(y->type.dtype);
  bool log = n.op_type == Op::kLogSoftmax;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view.in);
  int out = k.buffer(y, BufferRole::kOutput, view.in);
  int m = k.temp(t, view.flat_out());
  int s = k.temp(t, view.flat_out());
  add_reduction(k, view, in, false, x->type.dtype, m, t, Combine::kShiftMax, ExprOp::kCast);
  StatementBuilder init("init_sum", view.result_domain());
  k.add(init.store(init.constant(0, t), s, view.result_index()));
  auto shifted = [&](StatementBuilder& b) {
    return b.op(ExprOp::kSub, t,
                {load_as(b, in, iterators(view.in.size()), x->type.dtype, t),
                 b.load(m, view.out_index(), t)});
  };
  if (!log && t == y->type.dtype) {
    // exp once per element, into y; then the sum, and y divided in place. Loop fusion
    // keeps each row in cache between the three.
    StatementBuilder e("exp", view.in);
    k.add(e.store(e.op(ExprOp::kShiftedExp, t, {shifted(e)}), out, iterators(view.in.size())));
    StatementBuilder sum("sum_exp", view.in);
    k.add(
        sum.store(sum.load(out, iterators(view.in.size()), t), s, view.out_index(), Combine::kSum));
    // One division per row, then a multiplication per element (within an ulp of dividing).
    StatementBuilder inv("reciprocal", view.result_domain());
    k.add(inv.store(
        inv.op(ExprOp::kDiv, t, {inv.constant(1, t), inv.load(s, view.result_index(), t)}), s,
        view.result_index()));
    StatementBuilder norm("normalize", view.in);
    int q =
        norm.op(ExprOp::kMul, t,
                {norm.load(out, iterators(view.in.size()), t), norm.load(s, view.out_index(), t)});
    k.add(norm.store(q, out, iterators(view.in.size())));
    return k.lowered();
  }
  StatementBuilder sum("sum_exp", view.in);
  k.add(sum.store(sum.op(ExprOp::kShiftedExp, t, {shifted(sum)}), s, view.out_index(),
                  Combine::kSum));
  StatementBuilder norm("normalize", view.in);
  int d = shifted(norm);
  int sv = norm.load(s, view.out_index(), t);
  int r = log ? norm.op(ExprOp::kSub, t, {d, norm.op(ExprOp::kLog, t, {sv})})
              : norm.op(ExprOp::kDiv, t, {norm.op(ExprOp::kShiftedExp, t, {d}), sv});
  if (t != y->type.dtype) r = norm.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(norm.store(r, out, iterators(view.in.size())));
  return k.lowered();
}

namespace {

int64_t layer_norm_axis(const Node& n) {
  int64_t axis = n.attrs_as<LayerNormAttrs>().axis;
  return axis < 0 ? axis + static_cast<int64_t>(n.inputs[0]->type.shape->size()) : axis;
}

} // namespace

bool layer_norm_params_flat(const Node& n) {
  const Shape& x = *n.inputs[0]->type.shape;
  const size_t axis = static_cast<size_t>(layer_norm_axis(n));
  Dim cols = 1;
  for (size_t d = axis; d < x.size(); ++d)
    cols = dim_mul(cols, x[d]);
  for (const Value* p : {n.input(1), n.input(2)}) {
    if (!p) continue;
    const Shape& s = *p->type.shape;
    if (!(num_elements(s) == cols)) return false;
    for (size_t d = 0; d + x.size() < s.size() + axis; ++d) { // dims before the axis
      if (!(s[d].is_static() && s[d].value() == 1)) return false;
    }
  }
  return true;
}

// y = (x - mean) / sqrt(var + epsilon) * scale + bias over the axes from "axis" on;
// mean and variance in two passes (as oneDNN does), in f32 for 16-bit inputs. The view is
// [rows, cols], the scale and bias read by column; where they broadcast to the input another
// way (layer_norm_params_flat: ONNX's function body multiplies and adds them with numpy's
// broadcasting, as ONNX Runtime does), the input's own shape, each indexed as it broadcasts
// (a scale of [1, 5] for [4, 5] was read as 20 elements, past its end).
Result<LoweredNode> lower_layer_norm(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<LayerNormAttrs>();
  const Value* x = n.inputs[0];
  int64_t rank = static_cast<int64_t>(x->type.shape->size());
  Shape shape = *x->type.shape;
  const int64_t axis = layer_norm_axis(n);
  Dim rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i) {
    Dim& target = i < axis ? rows : cols;
    target = dim_mul(target, shape[static_cast<size_t>(i)]);
  }
  const bool flat = layer_norm_params_flat(n);
  StepView v{{rows, cols}, {false, true}, {rows}, cols};
  if (!flat) {
    v.in = shape;
    v.reduced.clear();
    for (int64_t i = 0; i < rank; ++i)
      v.reduced.push_back(i >= axis);
  }
  auto param_index = [&](const Value* p) {
    return flat ? std::vector<AffineExpr>{AffineExpr::iterator(1)}
                : broadcast_index(*p->type.shape, shape);
  };
  auto param_shape = [&](const Value* p) { return flat ? Shape{cols} : *p->type.shape; };
  DType t = accumulator_type(n.outputs[0]->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, v.in);
  int scale = k.buffer(n.inputs[1], BufferRole::kInput, param_shape(n.inputs[1]));
  int bias = n.input(2) ? k.buffer(n.inputs[2], BufferRole::kInput, param_shape(n.inputs[2])) : -1;
  int out = k.buffer(n.outputs[0], BufferRole::kOutput, v.in);
  int mean = k.temp(t, {rows});
  int var = k.temp(t, {rows});
  const size_t dims = v.in.size();
  auto load_x = [&](StatementBuilder& b) {
    return load_as(b, in, iterators(dims), x->type.dtype, t);
  };
  auto centered = [&](StatementBuilder& b) {
    return b.op(ExprOp::kSub, t, {load_x(b), b.load(mean, v.out_index(), t)});
  };
  add_reduction(k, v, in, false, x->type.dtype, mean, t, Combine::kSum, ExprOp::kCast);
  StatementBuilder m("mean", {rows});
  k.add(m.store(m.op(ExprOp::kDiv, t, {m.load(mean, iterators(1), t), m.extent(cols, t)}), mean,
                iterators(1)));
  StatementBuilder vi("init_var", {rows});
  k.add(vi.store(vi.constant(0, t), var, iterators(1)));
  StatementBuilder vs("sum_squares", v.in);
  int c = centered(vs);
  k.add(vs.store(vs.op(ExprOp::kMul, t, {c, c}), var, v.out_index(), Combine::kSum));
  StatementBuilder rs("inv_std", {rows});
  int var_n = rs.op(ExprOp::kDiv, t, {rs.load(var, iterators(1), t), rs.extent(cols, t)});
  k.add(rs.store(
      rs.op(ExprOp::kRsqrt, t, {rs.op(ExprOp::kAdd, t, {var_n, rs.constant(a.epsilon, t)})}), var,
      iterators(1)));
  StatementBuilder y("normalize", v.in);
  int r = y.op(ExprOp::kMul, t, {centered(y), y.load(var, v.out_index(), t)});
  r = y.op(ExprOp::kMul, t,
           {r, load_as(y, scale, param_index(n.inputs[1]), n.inputs[1]->type.dtype, t)});
  if (bias >= 0) {
    r = y.op(ExprOp::kAdd, t,
             {r, load_as(y, bias, param_index(n.inputs[2]), n.inputs[2]->type.dtype, t)});
  }
  if (t != n.outputs[0]->type.dtype) r = y.op(ExprOp::kCast, n.outputs[0]->type.dtype, {r});
  k.add(y.store(r, out, iterators(dims)));
  // The optional Mean and InvStdDev outputs.
  for (size_t i = 1; i < n.outputs.size() && i < 3; ++i) {
    const Value* stat = n.outputs[i];
    if (!stat) continue;
    int buf = k.buffer(stat, BufferRole::kOutput, {rows});
    StatementBuilder w(i == 1 ? "write_mean" : "write_inv_std", {rows});
    int sv = w.load(i == 1 ? mean : var, iterators(1), t);
    if (t != stat->type.dtype) sv = w.op(ExprOp::kCast, stat->type.dtype, {sv});
    k.add(w.store(sv, buf, iterators(1)));
  }
  return k.lowered();
}

// GlobalAveragePool and GlobalMaxPool: ReduceMean and ReduceMax over the spatial axes.
Result<LoweredNode> lower_global_pool(const Node& n, const std::string& name) {
  Node reduce = n;
  reduce.op_type = n.op_type == Op::kGlobalAveragePool ? Op::kReduceMean : Op::kReduceMax;
  Ints axes;
  for (size_t i = 2; i < n.inputs[0]->type.shape->size(); ++i)
    axes.push_back(static_cast<int64_t>(i));
  reduce.attrs = ReduceAttrs{axes, true, false};
  return lower_reduce(reduce, name);
}

} // namespace weft::kernel

namespace weft::kernel {

// y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], with the statistics of each
// (n, c) over the spatial dims: the view [N, C, D], in two passes as layer normalization.
Result<LoweredNode> lower_instance_norm(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& s = *x->type.shape;
  Dim d = 1;
  for (size_t i = 2; i < s.size(); ++i)
    d = dim_mul(d, s[i]);
  Shape view = {s[0], s[1], d};
  Shape rows = {s[0], s[1]};
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view);
  int scale = k.buffer(n.inputs[1], BufferRole::kInput);
  int bias = k.buffer(n.inputs[2], BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput, view);
  int mean = k.temp(t, rows);
  int var = k.temp(t, rows);
  std::vector<AffineExpr> all = iterators(3);
  std::vector<AffineExpr> row = iterators(2);
  std::vector<AffineExpr> channel = {AffineExpr::iterator(1)};
  auto load_x = [&](StatementBuilder& b) { return load_as(b, in, all, x->type.dtype, t); };
  auto centered = [&](StatementBuilder& b) {
    return b.op(ExprOp::kSub, t, {load_x(b), b.load(mean, row, t)});
  };
  auto divide_by_count = [&](StatementBuilder& b, int v) {
    return b.op(ExprOp::kDiv, t, {v, b.extent(d, t)});
  };
  StatementBuilder mi("init_mean", rows);
  k.add(mi.store(mi.constant(0, t), mean, row));
  StatementBuilder ms("sum", view);
  k.add(ms.store(load_x(ms), mean, row, Combine::kSum));
  StatementBuilder m("mean", rows);
  k.add(m.store(divide_by_count(m, m.load(mean, row, t)), mean, row));
  StatementBuilder vi("init_var", rows);
  k.add(vi.store(vi.constant(0, t), var, row));
  StatementBuilder vs("sum_squares", view);
  int c = centered(vs);
  k.add(vs.store(vs.op(ExprOp::kMul, t, {c, c}), var, row, Combine::kSum));
  StatementBuilder rs("inv_std", rows);
  int var_n = divide_by_count(rs, rs.load(var, row, t));
  k.add(rs.store(
      rs.op(ExprOp::kRsqrt, t,
            {rs.op(ExprOp::kAdd, t, {var_n, rs.constant(n.attrs_as<EpsilonAttrs>().epsilon, t)})}),
      var, row));
  StatementBuilder b("normalize", view);
  int r = b.op(ExprOp::kMul, t, {centered(b), b.load(var, row, t)});
  r = b.op(ExprOp::kMul, t, {r, load_as(b, scale, channel, n.inputs[1]->type.dtype, t)});
  r = b.op(ExprOp::kAdd, t, {r, load_as(b, bias, channel, n.inputs[2]->type.dtype, t)});
  if (t != y->type.dtype) r = b.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(b.store(r, out, all));
  return k.lowered();
}

} // namespace weft::kernel

namespace weft::kernel {

namespace {

// The row-major position, in a flat buffer over the dims of "shape" that "keep" marks, of
// the point given by iterators over all of "shape".
AffineExpr flat_position(const Shape& shape, const std::vector<bool>& keep) {
  AffineExpr e;
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (!keep[i]) continue;
    if (shape[i].value() != 1) e.terms.insert(e.terms.begin(), {static_cast<int>(i), stride});
    stride *= shape[i].value();
  }
  return e;
}

// Sums the flat buffer "in" (holding "shape" row-major, stored as "in_type") over "axes"
// into a new flat temporary of "t" over the kept dims, one canonical step at a time.
Result<int> add_sum_over(KernelBuilder& k, const Shape& shape, const Ints& axes, int in,
                         DType in_type, DType t) {
  WEFT_ASSIGN_OR_RETURN(std::vector<CanonicalReduction> steps, coalesce_reduction(shape, axes));
  if (steps.empty()) { // only unit axes: each sum is one element
    Shape flat = {num_elements(shape)};
    int acc = k.temp(t, flat);
    StatementBuilder b("copy", flat);
    k.add(b.store(load_as(b, in, iterators(1), in_type, t), acc, iterators(1)));
    return acc;
  }
  int current = in;
  for (const CanonicalReduction& step : steps) {
    WEFT_ASSIGN_OR_RETURN(StepView v, view_of(step));
    int acc = k.temp(t, v.flat_out());
    add_reduction(k, v, current, true, current == in ? in_type : t, acc, t, Combine::kSum,
                  ExprOp::kCast);
    current = acc;
  }
  return current;
}

// Statistics over "axes" of a normalization: flat temporaries of "t" over the kept dims,
// and how a statement over the whole shape indexes them and the input.
struct Moments {
  int mean = -1;
  int var = -1;                       // biased (divided by the count), as ONNX's normalizations use
  Shape kept;                         // flat: {elements of the kept dims}
  std::vector<AffineExpr> kept_index; // from iterators over the whole shape
  std::vector<AffineExpr> all_index;  // into the flat input
};

// Mean, then the mean squared deviation from it (two passes, as lower_layer_norm), of the
// flat buffer "x" holding "shape" row-major; "axes" are non-negative and unique.
Result<Moments> add_moments(KernelBuilder& k, const Shape& shape, const Ints& axes, int x,
                            DType x_type, DType t) {
  std::vector<bool> keep(shape.size(), true);
  int64_t count = 1;
  for (int64_t a : axes) {
    keep[static_cast<size_t>(a)] = false;
    count *= shape[static_cast<size_t>(a)].value();
  }
  Moments m;
  m.kept = {num_elements(shape).value() / std::max<int64_t>(count, 1)};
  m.kept_index = {flat_position(shape, keep)};
  m.all_index = {flat_position(shape, std::vector<bool>(shape.size(), true))};
  auto divide_by_count = [&](int sum, const char* what) {
    StatementBuilder b(what, m.kept);
    int q = b.op(ExprOp::kDiv, t,
                 {b.load(sum, iterators(1), t), b.constant(static_cast<double>(count), t)});
    k.add(b.store(q, sum, iterators(1)));
  };
  WEFT_ASSIGN_OR_RETURN(m.mean, add_sum_over(k, shape, axes, x, x_type, t));
  divide_by_count(m.mean, "mean");
  int squares = k.temp(t, {num_elements(shape)});
  StatementBuilder d("square_deviation", shape);
  int c = d.op(ExprOp::kSub, t,
               {load_as(d, x, m.all_index, x_type, t), d.load(m.mean, m.kept_index, t)});
  k.add(d.store(d.op(ExprOp::kMul, t, {c, c}), squares, m.all_index));
  WEFT_ASSIGN_OR_RETURN(m.var, add_sum_over(k, shape, axes, squares, t, t));
  divide_by_count(m.var, "variance");
  return m;
}

// "axes" checked against "rank": non-negative (canonicalize made them so) and unique.
Status check_axes(const Ints& axes, size_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(a)])
      return Status::error(fmt::format("axes {} do not fit rank {}", fmt::join(axes, ","), rank));
    seen[static_cast<size_t>(a)] = true;
  }
  return Status();
}

} // namespace

// y = (x - mean) / (sqrt(var) + 1e-9) with the statistics over "axes" (ONNX's function
// body: its epsilon is fixed).
Result<LoweredNode> lower_mvn(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *x->type.shape;
  Ints axes = *n.attrs_as<AxesAttrs>().axes;
  std::sort(axes.begin(), axes.end());
  WEFT_RETURN_IF_ERROR(check_axes(axes, shape.size()));
  DType t = accumulator_type(y->type.dtype);
  Shape flat = {num_elements(shape)};
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, flat);
  int out = k.buffer(y, BufferRole::kOutput, flat);
  WEFT_ASSIGN_OR_RETURN(Moments m, add_moments(k, shape, axes, in, x->type.dtype, t));
  StatementBuilder s("inv_std", m.kept);
  int sd = s.op(ExprOp::kAdd, t,
                {s.op(ExprOp::kSqrt, t, {s.load(m.var, iterators(1), t)}), s.constant(1e-9, t)});
  k.add(s.store(s.op(ExprOp::kDiv, t, {s.constant(1, t), sd}), m.var, iterators(1)));
  StatementBuilder b("normalize", shape);
  int c = b.op(ExprOp::kSub, t,
               {load_as(b, in, m.all_index, x->type.dtype, t), b.load(m.mean, m.kept_index, t)});
  int r = b.op(ExprOp::kMul, t, {c, b.load(m.var, m.kept_index, t)});
  if (t != y->type.dtype) r = b.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(b.store(r, out, m.all_index));
  return k.lowered();
}

// BatchNormalization with training_mode (opset 14 on): y normalized with the statistics of
// each channel over the batch and spatial dims; the running mean and variance outputs are
// input * momentum + current * (1 - momentum), the current variance biased.
Result<LoweredNode> lower_batch_norm_training(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<BatchNormAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *x->type.shape;
  if (shape.size() < 2) return Status::error("the input must have rank 2 or more (N, C, ...)");
  Ints axes = {0};
  for (size_t i = 2; i < shape.size(); ++i)
    axes.push_back(static_cast<int64_t>(i));
  DType t = accumulator_type(y->type.dtype);
  Shape flat = {num_elements(shape)};
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, flat);
  std::vector<int> params; // scale, bias, input mean, input var
  for (size_t i = 1; i <= 4; ++i)
    params.push_back(k.buffer(n.inputs[i], BufferRole::kInput));
  auto param = [&](StatementBuilder& b, size_t i, const AffineExpr& channel) {
    return load_as(b, params[i], {channel}, n.inputs[i + 1]->type.dtype, t);
  };
  int out = k.buffer(y, BufferRole::kOutput, flat);
  WEFT_ASSIGN_OR_RETURN(Moments m, add_moments(k, shape, axes, in, x->type.dtype, t));
  // The running statistics, before the variance becomes an inverse deviation.
  float momentum = a.momentum;
  for (size_t i = 1; i <= 2 && i < n.outputs.size(); ++i) {
    const Value* running = n.outputs[i];
    if (!running) continue;
    int buf = k.buffer(running, BufferRole::kOutput, m.kept);
    StatementBuilder b(i == 1 ? "running_mean" : "running_var", m.kept);
    int old =
        b.op(ExprOp::kMul, t, {param(b, i + 1, AffineExpr::iterator(0)), b.constant(momentum, t)});
    int current = b.op(ExprOp::kMul, t,
                       {b.load(i == 1 ? m.mean : m.var, iterators(1), t),
                        b.constant(1.0 - static_cast<double>(momentum), t)});
    int r = b.op(ExprOp::kAdd, t, {old, current});
    if (t != running->type.dtype) r = b.op(ExprOp::kCast, running->type.dtype, {r});
    k.add(b.store(r, buf, iterators(1)));
  }
  StatementBuilder s("inv_std", m.kept);
  k.add(s.store(
      s.op(ExprOp::kRsqrt, t,
           {s.op(ExprOp::kAdd, t, {s.load(m.var, iterators(1), t), s.constant(a.epsilon, t)})}),
      m.var, iterators(1)));
  StatementBuilder b("normalize", shape);
  AffineExpr channel = AffineExpr::iterator(1);
  int c = b.op(ExprOp::kSub, t,
               {load_as(b, in, m.all_index, x->type.dtype, t), b.load(m.mean, m.kept_index, t)});
  int r = b.op(ExprOp::kMul, t,
               {c, b.op(ExprOp::kMul, t, {b.load(m.var, m.kept_index, t), param(b, 0, channel)})});
  r = b.op(ExprOp::kAdd, t, {r, param(b, 1, channel)});
  if (t != y->type.dtype) r = b.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(b.store(r, out, m.all_index));
  return k.lowered();
}

} // namespace weft::kernel
