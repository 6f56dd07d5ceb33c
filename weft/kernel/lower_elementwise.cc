// Elementwise ops: one statement over the output's domain, with numpy broadcasting.
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

const std::map<Op, ExprOp>& unary_ops() {
  static const std::map<Op, ExprOp> ops = {
      {Op::kAbs, ExprOp::kAbs},         {Op::kNeg, ExprOp::kNeg},
      {Op::kExp, ExprOp::kExp},         {Op::kLog, ExprOp::kLog},
      {Op::kSqrt, ExprOp::kSqrt},       {Op::kTanh, ExprOp::kTanh},
      {Op::kSigmoid, ExprOp::kSigmoid}, {Op::kErf, ExprOp::kErf},
      {Op::kFloor, ExprOp::kFloor},     {Op::kCeil, ExprOp::kCeil},
      {Op::kRound, ExprOp::kRound},     {Op::kSin, ExprOp::kSin},
      {Op::kCos, ExprOp::kCos},         {Op::kTan, ExprOp::kTan},
      {Op::kAsin, ExprOp::kAsin},       {Op::kAcos, ExprOp::kAcos},
      {Op::kAtan, ExprOp::kAtan},       {Op::kSinh, ExprOp::kSinh},
      {Op::kCosh, ExprOp::kCosh},       {Op::kAsinh, ExprOp::kAsinh},
      {Op::kAcosh, ExprOp::kAcosh},     {Op::kAtanh, ExprOp::kAtanh},
      {Op::kNot, ExprOp::kNot},         {Op::kBitwiseNot, ExprOp::kNot},
  };
  return ops;
}

const std::map<Op, ExprOp>& binary_ops() {
  static const std::map<Op, ExprOp> ops = {
      {Op::kAdd, ExprOp::kAdd},
      {Op::kSub, ExprOp::kSub},
      {Op::kMul, ExprOp::kMul},
      {Op::kDiv, ExprOp::kDiv},
      {Op::kPow, ExprOp::kPow},
      {Op::kAnd, ExprOp::kAnd},
      {Op::kOr, ExprOp::kOr},
      {Op::kXor, ExprOp::kXor},
      // On integers kAnd, kOr, kXor and kNot are bitwise (codegen/dialect.cc).
      {Op::kBitwiseAnd, ExprOp::kAnd},
      {Op::kBitwiseOr, ExprOp::kOr},
      {Op::kBitwiseXor, ExprOp::kXor},
  };
  return ops;
}

const std::map<Op, ExprOp>& comparison_ops() {
  static const std::map<Op, ExprOp> ops = {{Op::kEqual, ExprOp::kEq},
                                           {Op::kLess, ExprOp::kLt},
                                           {Op::kGreater, ExprOp::kGt},
                                           {Op::kLessOrEqual, ExprOp::kLe},
                                           {Op::kGreaterOrEqual, ExprOp::kGe}};
  return ops;
}

const std::map<Op, ExprOp>& variadic_ops() {
  static const std::map<Op, ExprOp> ops = {{Op::kMax, ExprOp::kMax},
                                           {Op::kMin, ExprOp::kMin},
                                           {Op::kSum, ExprOp::kAdd},
                                           {Op::kMean, ExprOp::kAdd}};
  return ops;
}

bool is_activation(Op op) {
  static const std::set<Op> ops = {
      Op::kRelu,        Op::kReciprocal, Op::kSign,      Op::kIsNaN,
      Op::kIsInf,       Op::kSoftplus,   Op::kSoftsign,  Op::kElu,
      Op::kCelu,        Op::kSelu,       Op::kLeakyRelu, Op::kThresholdedRelu,
      Op::kHardSigmoid, Op::kHardSwish,  Op::kPRelu,     Op::kClip,
      Op::kCast,        Op::kCastLike,   Op::kWhere,     Op::kMod,
      Op::kIdentity,    Op::kExpand,     Op::kDropout,   Op::kBitShift,
      Op::kShrink,      Op::kGelu,       Op::kMish,      Op::kSwish};
  return ops.contains(op);
}

// The value of "n" at one point, from its loaded operands "x" (-1 for an absent input);
// "t" is the dtype of the first operand.
int activation(const Node& n, StatementBuilder& b, const std::vector<int>& x, DType t) {
  Op op = n.op_type.id();
  auto c = [&](double v) { return b.constant(v, t); };
  auto un = [&](ExprOp o, int a) { return b.op(o, t, {a}); };
  auto bin = [&](ExprOp o, int a, int d) { return b.op(o, t, {a, d}); };
  auto cmp = [&](ExprOp o, int a, int d) { return b.op(o, DType::kBool, {a, d}); };
  auto sel = [&](int cond, int a, int d) { return b.op(ExprOp::kSelect, t, {cond, a, d}); };
  int v = x[0];
  if (op == Op::kRelu) return bin(ExprOp::kMax, v, c(0));
  if (op == Op::kReciprocal) return bin(ExprOp::kDiv, c(1), v);
  if (op == Op::kSign)
    return sel(cmp(ExprOp::kGt, v, c(0)), c(1), sel(cmp(ExprOp::kLt, v, c(0)), c(-1), c(0)));
  if (op == Op::kIsNaN) return b.op(ExprOp::kIsNan, DType::kBool, {v});
  if (op == Op::kIsInf) {
    const auto& a = n.attrs_as<IsInfAttrs>();
    int inf = b.op(ExprOp::kIsInf, DType::kBool, {v});
    int side = a.detect_positive && a.detect_negative ? -1
               : a.detect_positive                    ? cmp(ExprOp::kGt, v, c(0))
               : a.detect_negative                    ? cmp(ExprOp::kLt, v, c(0))
                                                      : b.constant(0, DType::kBool);
    return side < 0 ? inf : b.op(ExprOp::kAnd, DType::kBool, {inf, side});
  }
  // Softplus, log(1 + e^x), as log1p(e) = log(w) e / (w - 1) with w = 1 + e (e itself where w
  // rounds to 1): 1 + e alone loses e's low bits, and with them all of the result's precision
  // as x goes below -17 (ONNX's reference, np.log(np.exp(x) + 1), gives 0 there; PyTorch's
  // log1p does not). x from 20 on (36 in f64), where the result rounds to x, as PyTorch's
  // threshold: e^x would overflow to inf past 88.7 in f32.
  if (op == Op::kSoftplus) {
    int e = un(ExprOp::kExp, v);
    int w = bin(ExprOp::kAdd, c(1), e);
    int d = bin(ExprOp::kSub, w, c(1));
    int log1p = sel(cmp(ExprOp::kEq, d, c(0)), e,
                    bin(ExprOp::kMul, un(ExprOp::kLog, w), bin(ExprOp::kDiv, e, d)));
    return sel(cmp(ExprOp::kGt, v, c(t == DType::kF64 ? 36 : 20)), v, log1p);
  }
  if (op == Op::kSoftsign)
    return bin(ExprOp::kDiv, v, bin(ExprOp::kAdd, c(1), un(ExprOp::kAbs, v)));
  if (op == Op::kElu) {
    double alpha = n.attrs_as<AlphaAttrs>().alpha;
    return sel(cmp(ExprOp::kLt, v, c(0)),
               bin(ExprOp::kMul, c(alpha), bin(ExprOp::kSub, un(ExprOp::kExp, v), c(1))), v);
  }
  if (op == Op::kCelu) {
    double alpha = n.attrs_as<AlphaAttrs>().alpha;
    int neg = bin(ExprOp::kMul, c(alpha),
                  bin(ExprOp::kSub, un(ExprOp::kExp, bin(ExprOp::kDiv, v, c(alpha))), c(1)));
    return bin(ExprOp::kAdd, bin(ExprOp::kMax, c(0), v), bin(ExprOp::kMin, c(0), neg));
  }
  if (op == Op::kSelu) {
    const auto& a = n.attrs_as<SeluAttrs>();
    int neg = bin(ExprOp::kSub, bin(ExprOp::kMul, c(a.alpha), un(ExprOp::kExp, v)), c(a.alpha));
    return bin(ExprOp::kMul, c(a.gamma), sel(cmp(ExprOp::kLe, v, c(0)), neg, v));
  }
  if (op == Op::kLeakyRelu) {
    return sel(cmp(ExprOp::kLt, v, c(0)), bin(ExprOp::kMul, c(n.attrs_as<AlphaAttrs>().alpha), v),
               v);
  }
  if (op == Op::kThresholdedRelu)
    return sel(cmp(ExprOp::kGt, v, c(n.attrs_as<AlphaAttrs>().alpha)), v, c(0));
  if (op == Op::kHardSigmoid) {
    const auto& a = n.attrs_as<HardSigmoidAttrs>();
    int lin = bin(ExprOp::kAdd, bin(ExprOp::kMul, c(a.alpha), v), c(a.beta));
    return bin(ExprOp::kMax, c(0), bin(ExprOp::kMin, c(1), lin));
  }
  if (op == Op::kHardSwish) {
    int lin = bin(ExprOp::kAdd, bin(ExprOp::kMul, c(1.0 / 6), v), c(0.5));
    return bin(ExprOp::kMul, v, bin(ExprOp::kMax, c(0), bin(ExprOp::kMin, c(1), lin)));
  }
  if (op == Op::kGelu) {
    // With tanh: 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), computed as the
    // equal x sigmoid(2 u): one exp and one division, where tanh takes a polynomial besides
    // (4096x1024: 1.23 -> 0.64 ms).
    if (n.attrs_as<GeluAttrs>().tanh) {
      int cube = bin(ExprOp::kMul, v, bin(ExprOp::kMul, v, v));
      int u2 = bin(ExprOp::kMul, c(2 * 0.7978845608028654),
                   bin(ExprOp::kAdd, v, bin(ExprOp::kMul, c(0.044715), cube)));
      return bin(ExprOp::kMul, v, un(ExprOp::kSigmoid, u2));
    }
    // 0.5 x (1 + erf(x / sqrt 2))
    int inner = un(ExprOp::kErf, bin(ExprOp::kMul, v, c(0.7071067811865476)));
    return bin(ExprOp::kMul, bin(ExprOp::kMul, c(0.5), v), bin(ExprOp::kAdd, c(1), inner));
  }
  // Mish, x tanh(softplus(x)), as x n / (n + 2) with n = e^x (e^x + 2), which equals it
  // (tanh(log(1 + e^x)) = ((1 + e^x)^2 - 1) / ((1 + e^x)^2 + 1)): one exp and a division
  // where log and tanh take two polynomials, whose selects one after the other GCC did not
  // vectorize ([1, 64, 256, 256]: 65 -> 1.3 ms, 2 threads). From 20 on it is x (the tanh
  // rounds to 1 there), which also leaves out n's overflow past 44. canonicalize.h rewrites
  // Tanh(Softplus(x)), as the TorchScript exporter writes Mish, the same way.
  if (op == Op::kMish) {
    int e = un(ExprOp::kExp, v);
    int n2 = bin(ExprOp::kMul, e, bin(ExprOp::kAdd, e, c(2)));
    int ratio = bin(ExprOp::kDiv, n2, bin(ExprOp::kAdd, n2, c(2)));
    return sel(cmp(ExprOp::kGt, v, c(20)), v, bin(ExprOp::kMul, v, ratio));
  }
  if (op == Op::kSwish) // x sigmoid(alpha x)
    return bin(ExprOp::kMul, v,
               un(ExprOp::kSigmoid, bin(ExprOp::kMul, c(n.attrs_as<AlphaAttrs>().alpha), v)));
  if (op == Op::kPRelu) return sel(cmp(ExprOp::kLt, v, c(0)), bin(ExprOp::kMul, x[1], v), v);
  if (op == Op::kClip) {
    const auto& a = n.attrs_as<ClipAttrs>();
    int lo = a.min ? c(*a.min) : x.size() > 1 ? x[1] : -1;
    int hi = a.max ? c(*a.max) : x.size() > 2 ? x[2] : -1;
    if (lo >= 0) v = bin(ExprOp::kMax, v, lo);
    if (hi >= 0) v = bin(ExprOp::kMin, v, hi);
    return v;
  }
  if (op == Op::kCast || op == Op::kCastLike) {
    DType to = op == Op::kCast ? n.attrs_as<CastAttrs>().to : n.inputs[1]->type.dtype;
    // A saturating cast to float8 clamps to the largest finite value (NaN stays NaN).
    std::optional<MiniFloat> f = dtype_minifloat(to);
    if (f && f->kind != MiniFloatKind::kFinite && n.attrs_as<CastAttrs>().saturate) {
      DType ct = dtype_is_float(t) ? t : DType::kF32;
      if (ct != t) v = b.op(ExprOp::kCast, ct, {v});
      double max = minifloat_max(*f);
      v = b.op(ExprOp::kMin, ct,
               {b.op(ExprOp::kMax, ct, {v, b.constant(-max, ct)}), b.constant(max, ct)});
    }
    return b.op(ExprOp::kCast, to, {v});
  }
  if (op == Op::kWhere) return b.op(ExprOp::kSelect, b.dtype_of(x[1]), {x[0], x[1], x[2]});
  if (op == Op::kMod)
    return bin(n.attrs_as<ModAttrs>().fmod ? ExprOp::kFmod : ExprOp::kMod, v, x[1]);
  if (op == Op::kBitShift) {
    return bin(n.attrs_as<BitShiftAttrs>().left ? ExprOp::kShiftLeft : ExprOp::kShiftRight, v,
               x[1]);
  }
  if (op == Op::kShrink) {
    const auto& a = n.attrs_as<ShrinkAttrs>();
    return sel(cmp(ExprOp::kLt, v, c(-a.lambd)), bin(ExprOp::kAdd, v, c(a.bias)),
               sel(cmp(ExprOp::kGt, v, c(a.lambd)), bin(ExprOp::kSub, v, c(a.bias)), c(0)));
  }
  return v; // Identity, Expand, Dropout: a copy
}

} // namespace

bool is_elementwise(const Node& n) {
  Op op = n.op_type.id();
  return unary_ops().contains(op) || binary_ops().contains(op) || comparison_ops().contains(op) ||
         variadic_ops().contains(op) || is_activation(op);
}

Result<LoweredNode> lower_elementwise(const Node& n, const std::string& name) {
  KernelBuilder k(name);
  const Value* out = n.outputs[0];
  const Shape& shape = *out->type.shape;
  StatementBuilder b(std::string(n.op_type.name()), shape);
  std::vector<int> x;
  // Expand's shape, Dropout's ratio and CastLike's "like" are not loaded (CastLike's type is).
  bool first_only =
      n.op_type == Op::kExpand || n.op_type == Op::kDropout || n.op_type == Op::kCastLike;
  size_t inputs = first_only ? 1 : n.inputs.size();
  for (size_t i = 0; i < inputs; ++i) {
    const Value* in = n.inputs[i];
    if (!in) {
      x.push_back(-1);
      continue;
    }
    int buf = k.buffer(in, BufferRole::kInput);
    x.push_back(b.load(buf, broadcast_index(*in->type.shape, shape), in->type.dtype));
  }
  DType t = n.inputs[0]->type.dtype;
  Op op = n.op_type.id();
  int value;
  if (auto it = unary_ops().find(op); it != unary_ops().end()) {
    value = b.op(it->second, op == Op::kNot ? DType::kBool : t, {x[0]});
  } else if (op == Op::kPow && dtype_is_float(t) && n.inputs[1]->is_constant() &&
             n.inputs[1]->constant->num_elements() == 1 &&
             n.inputs[1]->constant->get_double(0) == 2.0) {
    // x ** 2 (expanded LayerNorms' variance): one multiplication, exactly as pow rounds it,
    // and vectorized, where pow is a libm call per element.
    value = b.op(ExprOp::kMul, t, {x[0], x[0]});
  } else if (auto bi = binary_ops().find(op); bi != binary_ops().end()) {
    int rhs = b.dtype_of(x[1]) == t ? x[1] : b.op(ExprOp::kCast, t, {x[1]}); // Pow's exponent
    value = b.op(bi->second, t, {x[0], rhs});
  } else if (auto cm = comparison_ops().find(op); cm != comparison_ops().end()) {
    value = b.op(cm->second, DType::kBool, {x[0], x[1]});
  } else if (auto va = variadic_ops().find(op); va != variadic_ops().end()) {
    value = x[0];
    for (size_t i = 1; i < x.size(); ++i)
      value = b.op(va->second, t, {value, x[i]});
    if (op == Op::kMean)
      value = b.op(ExprOp::kDiv, t, {value, b.constant(static_cast<double>(x.size()), t)});
  } else {
    value = activation(n, b, x, t);
  }
  if (b.dtype_of(value) != out->type.dtype) value = b.op(ExprOp::kCast, out->type.dtype, {value});
  int y = k.buffer(out, BufferRole::kOutput);
  k.add(b.store(value, y, iterators(shape.size())));
  if (op == Op::kDropout && n.outputs.size() > 1 &&
      n.outputs[1]) { // at inference, the mask is all true
    const Value* mask = n.outputs[1];
    StatementBuilder m("mask", shape);
    k.add(m.store(m.constant(1, mask->type.dtype), k.buffer(mask, BufferRole::kOutput),
                  iterators(shape.size())));
  }
  return k.lowered();
}

} // namespace weft::kernel
