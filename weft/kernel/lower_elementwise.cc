// Elementwise ops: one statement over the output's domain, with numpy broadcasting.
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

const std::map<std::string_view, ExprOp>& unary_ops() {
  static const std::map<std::string_view, ExprOp> ops = {
      {"Abs", ExprOp::kAbs},         {"Neg", ExprOp::kNeg},     {"Exp", ExprOp::kExp},
      {"Log", ExprOp::kLog},         {"Sqrt", ExprOp::kSqrt},   {"Tanh", ExprOp::kTanh},
      {"Sigmoid", ExprOp::kSigmoid}, {"Erf", ExprOp::kErf},     {"Floor", ExprOp::kFloor},
      {"Ceil", ExprOp::kCeil},       {"Round", ExprOp::kRound}, {"Sin", ExprOp::kSin},
      {"Cos", ExprOp::kCos},         {"Tan", ExprOp::kTan},     {"Asin", ExprOp::kAsin},
      {"Acos", ExprOp::kAcos},       {"Atan", ExprOp::kAtan},   {"Sinh", ExprOp::kSinh},
      {"Cosh", ExprOp::kCosh},       {"Asinh", ExprOp::kAsinh}, {"Acosh", ExprOp::kAcosh},
      {"Atanh", ExprOp::kAtanh},     {"Not", ExprOp::kNot},     {"BitwiseNot", ExprOp::kNot},
  };
  return ops;
}

const std::map<std::string_view, ExprOp>& binary_ops() {
  static const std::map<std::string_view, ExprOp> ops = {
      {"Add", ExprOp::kAdd},
      {"Sub", ExprOp::kSub},
      {"Mul", ExprOp::kMul},
      {"Div", ExprOp::kDiv},
      {"Pow", ExprOp::kPow},
      {"And", ExprOp::kAnd},
      {"Or", ExprOp::kOr},
      {"Xor", ExprOp::kXor},
      // On integers kAnd, kOr, kXor and kNot are bitwise (codegen/dialect.cc).
      {"BitwiseAnd", ExprOp::kAnd},
      {"BitwiseOr", ExprOp::kOr},
      {"BitwiseXor", ExprOp::kXor},
  };
  return ops;
}

const std::map<std::string_view, ExprOp>& comparison_ops() {
  static const std::map<std::string_view, ExprOp> ops = {{"Equal", ExprOp::kEq},
                                                         {"Less", ExprOp::kLt},
                                                         {"Greater", ExprOp::kGt},
                                                         {"LessOrEqual", ExprOp::kLe},
                                                         {"GreaterOrEqual", ExprOp::kGe}};
  return ops;
}

const std::map<std::string_view, ExprOp>& variadic_ops() {
  static const std::map<std::string_view, ExprOp> ops = {
      {"Max", ExprOp::kMax}, {"Min", ExprOp::kMin}, {"Sum", ExprOp::kAdd}, {"Mean", ExprOp::kAdd}};
  return ops;
}

bool is_activation(std::string_view op) {
  static const std::set<std::string_view> ops = {
      "Relu",        "Reciprocal", "Sign",     "IsNaN",  "IsInf",     "Softplus",
      "Softsign",    "Elu",        "Celu",     "Selu",   "LeakyRelu", "ThresholdedRelu",
      "HardSigmoid", "HardSwish",  "PRelu",    "Clip",   "Cast",      "CastLike",
      "Where",       "Mod",        "Identity", "Expand", "Dropout",   "BitShift",
      "Shrink",      "Gelu",       "Mish",     "Swish"};
  return ops.contains(op);
}

// The value of "n" at one point, from its loaded operands "x" (-1 for an absent input);
// "t" is the dtype of the first operand.
int activation(const Node& n, StatementBuilder& b, const std::vector<int>& x, DType t) {
  const std::string& op = n.op_type;
  auto c = [&](double v) { return b.constant(v, t); };
  auto un = [&](ExprOp o, int a) { return b.op(o, t, {a}); };
  auto bin = [&](ExprOp o, int a, int d) { return b.op(o, t, {a, d}); };
  auto cmp = [&](ExprOp o, int a, int d) { return b.op(o, DType::kBool, {a, d}); };
  auto sel = [&](int cond, int a, int d) { return b.op(ExprOp::kSelect, t, {cond, a, d}); };
  int v = x[0];
  if (op == "Relu") return bin(ExprOp::kMax, v, c(0));
  if (op == "Reciprocal") return bin(ExprOp::kDiv, c(1), v);
  if (op == "Sign")
    return sel(cmp(ExprOp::kGt, v, c(0)), c(1), sel(cmp(ExprOp::kLt, v, c(0)), c(-1), c(0)));
  if (op == "IsNaN") return b.op(ExprOp::kIsNan, DType::kBool, {v});
  if (op == "IsInf") {
    const auto& a = n.attrs_as<IsInfAttrs>();
    int inf = b.op(ExprOp::kIsInf, DType::kBool, {v});
    int side = a.detect_positive && a.detect_negative ? -1
               : a.detect_positive                    ? cmp(ExprOp::kGt, v, c(0))
               : a.detect_negative                    ? cmp(ExprOp::kLt, v, c(0))
                                                      : b.constant(0, DType::kBool);
    return side < 0 ? inf : b.op(ExprOp::kAnd, DType::kBool, {inf, side});
  }
  if (op == "Softplus") return un(ExprOp::kLog, bin(ExprOp::kAdd, un(ExprOp::kExp, v), c(1)));
  if (op == "Softsign") return bin(ExprOp::kDiv, v, bin(ExprOp::kAdd, c(1), un(ExprOp::kAbs, v)));
  if (op == "Elu") {
    double alpha = n.attrs_as<AlphaAttrs>().alpha;
    return sel(cmp(ExprOp::kLt, v, c(0)),
               bin(ExprOp::kMul, c(alpha), bin(ExprOp::kSub, un(ExprOp::kExp, v), c(1))), v);
  }
  if (op == "Celu") {
    double alpha = n.attrs_as<AlphaAttrs>().alpha;
    int neg = bin(ExprOp::kMul, c(alpha),
                  bin(ExprOp::kSub, un(ExprOp::kExp, bin(ExprOp::kDiv, v, c(alpha))), c(1)));
    return bin(ExprOp::kAdd, bin(ExprOp::kMax, c(0), v), bin(ExprOp::kMin, c(0), neg));
  }
  if (op == "Selu") {
    const auto& a = n.attrs_as<SeluAttrs>();
    int neg = bin(ExprOp::kSub, bin(ExprOp::kMul, c(a.alpha), un(ExprOp::kExp, v)), c(a.alpha));
    return bin(ExprOp::kMul, c(a.gamma), sel(cmp(ExprOp::kLe, v, c(0)), neg, v));
  }
  if (op == "LeakyRelu") {
    return sel(cmp(ExprOp::kLt, v, c(0)), bin(ExprOp::kMul, c(n.attrs_as<AlphaAttrs>().alpha), v),
               v);
  }
  if (op == "ThresholdedRelu")
    return sel(cmp(ExprOp::kGt, v, c(n.attrs_as<AlphaAttrs>().alpha)), v, c(0));
  if (op == "HardSigmoid") {
    const auto& a = n.attrs_as<HardSigmoidAttrs>();
    int lin = bin(ExprOp::kAdd, bin(ExprOp::kMul, c(a.alpha), v), c(a.beta));
    return bin(ExprOp::kMax, c(0), bin(ExprOp::kMin, c(1), lin));
  }
  if (op == "HardSwish") {
    int lin = bin(ExprOp::kAdd, bin(ExprOp::kMul, c(1.0 / 6), v), c(0.5));
    return bin(ExprOp::kMul, v, bin(ExprOp::kMax, c(0), bin(ExprOp::kMin, c(1), lin)));
  }
  if (op == "Gelu") {
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
  if (op == "Mish") { // x tanh(softplus(x))
    int softplus = un(ExprOp::kLog, bin(ExprOp::kAdd, un(ExprOp::kExp, v), c(1)));
    return bin(ExprOp::kMul, v, un(ExprOp::kTanh, softplus));
  }
  if (op == "Swish") // x sigmoid(alpha x)
    return bin(ExprOp::kMul, v,
               un(ExprOp::kSigmoid, bin(ExprOp::kMul, c(n.attrs_as<AlphaAttrs>().alpha), v)));
  if (op == "PRelu") return sel(cmp(ExprOp::kLt, v, c(0)), bin(ExprOp::kMul, x[1], v), v);
  if (op == "Clip") {
    const auto& a = n.attrs_as<ClipAttrs>();
    int lo = a.min ? c(*a.min) : x.size() > 1 ? x[1] : -1;
    int hi = a.max ? c(*a.max) : x.size() > 2 ? x[2] : -1;
    if (lo >= 0) v = bin(ExprOp::kMax, v, lo);
    if (hi >= 0) v = bin(ExprOp::kMin, v, hi);
    return v;
  }
  if (op == "Cast" || op == "CastLike") {
    DType to = op == "Cast" ? n.attrs_as<CastAttrs>().to : n.inputs[1]->type.dtype;
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
  if (op == "Where") return b.op(ExprOp::kSelect, b.dtype_of(x[1]), {x[0], x[1], x[2]});
  if (op == "Mod") return bin(n.attrs_as<ModAttrs>().fmod ? ExprOp::kFmod : ExprOp::kMod, v, x[1]);
  if (op == "BitShift") {
    return bin(n.attrs_as<BitShiftAttrs>().left ? ExprOp::kShiftLeft : ExprOp::kShiftRight, v,
               x[1]);
  }
  if (op == "Shrink") {
    const auto& a = n.attrs_as<ShrinkAttrs>();
    return sel(cmp(ExprOp::kLt, v, c(-a.lambd)), bin(ExprOp::kAdd, v, c(a.bias)),
               sel(cmp(ExprOp::kGt, v, c(a.lambd)), bin(ExprOp::kSub, v, c(a.bias)), c(0)));
  }
  return v; // Identity, Expand, Dropout: a copy
}

} // namespace

bool is_elementwise(const Node& n) {
  const std::string& op = n.op_type;
  return unary_ops().contains(op) || binary_ops().contains(op) || comparison_ops().contains(op) ||
         variadic_ops().contains(op) || is_activation(op);
}

Result<LoweredNode> lower_elementwise(const Node& n, const std::string& name) {
  KernelBuilder k(name);
  const Value* out = n.outputs[0];
  const Shape& shape = *out->type.shape;
  StatementBuilder b(n.op_type, shape);
  std::vector<int> x;
  // Expand's shape, Dropout's ratio and CastLike's "like" are not loaded (CastLike's type is).
  bool first_only = n.op_type == "Expand" || n.op_type == "Dropout" || n.op_type == "CastLike";
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
  const std::string& op = n.op_type;
  int value;
  if (auto it = unary_ops().find(op); it != unary_ops().end()) {
    value = b.op(it->second, op == "Not" ? DType::kBool : t, {x[0]});
  } else if (op == "Pow" && dtype_is_float(t) && n.inputs[1]->is_constant() &&
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
    if (op == "Mean")
      value = b.op(ExprOp::kDiv, t, {value, b.constant(static_cast<double>(x.size()), t)});
  } else {
    value = activation(n, b, x, t);
  }
  if (b.dtype_of(value) != out->type.dtype) value = b.op(ExprOp::kCast, out->type.dtype, {value});
  int y = k.buffer(out, BufferRole::kOutput);
  k.add(b.store(value, y, iterators(shape.size())));
  if (op == "Dropout" && n.outputs.size() > 1 &&
      n.outputs[1]) { // at inference, the mask is all true
    const Value* mask = n.outputs[1];
    StatementBuilder m("mask", shape);
    k.add(m.store(m.constant(1, mask->type.dtype), k.buffer(mask, BufferRole::kOutput),
                  iterators(shape.size())));
  }
  return k.lowered();
}

} // namespace weft::kernel
