// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, each one kernel.
//
// The input is viewed as [N, C, D] (D the product of the trailing dims, 1 without them) and
// the target as [N, D]. The loss of one element is -input[n, target[n, d], d] * weight[target],
// an indirect load along the class axis; a target equal to ignore_index contributes 0 and no
// weight. Its index is clamped, so an ignored (or invalid) target still reads inside the
// input. "mean" divides the sum of the losses by the sum of the weights that counted.
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// The [N, C, D] view of a loss's input.
Shape class_view(const Value* x) {
  const Shape& s = *x->type.shape;
  int64_t d = 1;
  for (size_t i = 2; i < s.size(); ++i)
    d *= s[i].value();
  return {s[0], s[1], d};
}

struct LossOperands {
  int input = -1; // [N, C, D], of type "input_type"
  DType input_type = DType::kF32;
  int target = -1; // [N, D]
  DType target_type = DType::kI64;
  int weight = -1; // [C], or -1
  DType weight_type = DType::kF32;
};

// Per element of the [N, D] domain: {loss, weight that counts}, in "t".
std::pair<int, int> element_loss(StatementBuilder& b, const LossOperands& o, const LossAttrs& a,
                                 DType t) {
  std::vector<AffineExpr> nd = {AffineExpr::iterator(0), AffineExpr::iterator(1)};
  int target = b.load(o.target, nd, o.target_type);
  int x = b.gather(o.input, {AffineExpr::iterator(0), AffineExpr::constant_of(0), nd[1]},
                   {{1, target, IndexWrap::kClamp}}, o.input_type);
  if (o.input_type != t) x = b.op(ExprOp::kCast, t, {x});
  int w = b.constant(1, t);
  if (o.weight >= 0) {
    w = b.gather(o.weight, {AffineExpr::constant_of(0)}, {{0, target, IndexWrap::kClamp}},
                 o.weight_type);
    if (o.weight_type != t) w = b.op(ExprOp::kCast, t, {w});
  }
  if (a.ignore_index) {
    int ignored = b.op(ExprOp::kEq, DType::kBool,
                       {target, b.constant(static_cast<double>(*a.ignore_index), o.target_type)});
    w = b.op(ExprOp::kSelect, t, {ignored, b.constant(0, t), w});
  }
  return {b.op(ExprOp::kNeg, t, {b.op(ExprOp::kMul, t, {x, w})}), w};
}

// Statements computing the loss into "out" (of "out_type"; [N, D] without reduction, a
// scalar with).
void add_nll(KernelBuilder& k, const Shape& view, const LossOperands& o, const LossAttrs& a,
             int out, DType out_type) {
  DType t = accumulator_type(out_type);
  Shape nd = {view[0], view[2]};
  auto finish = [&](StatementBuilder& b, int v) {
    return out_type == t ? v : b.op(ExprOp::kCast, out_type, {v});
  };
  if (a.reduction == LossReduction::kNone) {
    StatementBuilder b("nll", nd);
    k.add(b.store(finish(b, element_loss(b, o, a, t).first), out, iterators(2)));
    return;
  }
  int sum = k.temp(t, {});
  int weights = k.temp(t, {});
  for (int acc : {sum, weights}) {
    if (acc == weights && a.reduction == LossReduction::kSum) continue;
    StatementBuilder init(acc == sum ? "init_sum" : "init_weights", {});
    k.add(init.store(init.constant(0, t), acc, {}));
    StatementBuilder b(acc == sum ? "sum_loss" : "sum_weights", nd);
    auto [loss, w] = element_loss(b, o, a, t);
    k.add(b.store(acc == sum ? loss : w, acc, {}, Combine::kSum));
  }
  StatementBuilder b("reduce_loss", {});
  int r = b.load(sum, {}, t);
  if (a.reduction == LossReduction::kMean) r = b.op(ExprOp::kDiv, t, {r, b.load(weights, {}, t)});
  k.add(b.store(finish(b, r), out, {}));
}

LossOperands operands(const Node& n, KernelBuilder& k, int input, DType input_type) {
  const Shape view = class_view(n.inputs[0]);
  LossOperands o;
  o.input = input;
  o.input_type = input_type;
  o.target = k.buffer(n.inputs[1], BufferRole::kInput, {view[0], view[2]});
  o.target_type = n.inputs[1]->type.dtype;
  if (const Value* w = n.input(2)) {
    o.weight = k.buffer(w, BufferRole::kInput);
    o.weight_type = w->type.dtype;
  }
  return o;
}

// The loss output's view: [N, D] without reduction, a scalar with.
Shape loss_view(const Node& n) {
  const Shape view = class_view(n.inputs[0]);
  if (n.attrs_as<LossAttrs>().reduction == LossReduction::kNone) return {view[0], view[2]};
  return {};
}

} // namespace

Result<LoweredNode> lower_nll_loss(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  KernelBuilder k(name);
  int input = k.buffer(x, BufferRole::kInput, class_view(x));
  LossOperands o = operands(n, k, input, x->type.dtype);
  int out = k.buffer(y, BufferRole::kOutput, loss_view(n));
  add_nll(k, class_view(x), o, n.attrs_as<LossAttrs>(), out, y->type.dtype);
  return k.lowered();
}

// log_prob = x - max_c x - log(sum_c exp(x - max_c x)) along the class axis, then the
// negative log-likelihood of log_prob. log_prob is the second output when asked for.
Result<LoweredNode> lower_softmax_cross_entropy(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Value* log_prob_out = n.outputs.size() > 1 ? n.outputs[1] : nullptr;
  Shape view = class_view(x);
  DType t = accumulator_type(x->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view);
  int log_prob = log_prob_out ? k.buffer(log_prob_out, BufferRole::kOutput, view) : k.temp(t, view);
  DType log_prob_type = log_prob_out ? log_prob_out->type.dtype : t;
  int m = k.temp(t, {view[0], view[2]});
  int s = k.temp(t, {view[0], view[2]});
  std::vector<AffineExpr> all = iterators(3);
  std::vector<AffineExpr> row = {AffineExpr::iterator(0), AffineExpr::iterator(2)};
  Shape nd = {view[0], view[2]};
  StatementBuilder init_max("init_max", nd);
  k.add(
      init_max.store(init_max.constant(combine_identity(Combine::kShiftMax), t), m, iterators(2)));
  StatementBuilder max("max", view);
  k.add(max.store(load_as(max, in, all, x->type.dtype, t), m, row, Combine::kShiftMax));
  auto shifted = [&](StatementBuilder& b) {
    return b.op(ExprOp::kSub, t, {load_as(b, in, all, x->type.dtype, t), b.load(m, row, t)});
  };
  StatementBuilder init_sum("init_sum", nd);
  k.add(init_sum.store(init_sum.constant(0, t), s, iterators(2)));
  StatementBuilder sum("sum_exp", view);
  k.add(sum.store(sum.op(ExprOp::kShiftedExp, t, {shifted(sum)}), s, row, Combine::kSum));
  StatementBuilder lp("log_prob", view);
  int r = lp.op(ExprOp::kSub, t, {shifted(lp), lp.op(ExprOp::kLog, t, {lp.load(s, row, t)})});
  if (log_prob_type != t) r = lp.op(ExprOp::kCast, log_prob_type, {r});
  k.add(lp.store(r, log_prob, all));
  LossOperands o = operands(n, k, log_prob, log_prob_type);
  int out = k.buffer(y, BufferRole::kOutput, loss_view(n));
  add_nll(k, view, o, n.attrs_as<LossAttrs>(), out, y->type.dtype);
  return k.lowered();
}

} // namespace weft::kernel
