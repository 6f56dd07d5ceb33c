// The optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum): one update step of
// each optimized tensor X, elementwise over X, with the scalars R (learning rate) and T
// (update count). Each output is one statement that computes what it needs from the
// inputs; arithmetic is in X's accumulator type. The formulas are ONNX's.
#include <map>

#include "weft/graph/op_table.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// The kernel's buffer of each value, made on first use.
class Buffers {
public:
  explicit Buffers(KernelBuilder& k) : k_(k) {}
  KernelBuilder& kernel() { return k_; }
  int of(const Value* v, BufferRole role) {
    auto [it, added] = buffers_.emplace(v, 0);
    if (added) it->second = k_.buffer(v, role);
    return it->second;
  }

private:
  KernelBuilder& k_;
  std::map<const Value*, int> buffers_;
};

// One statement over an optimized tensor, with its operands loaded on first use.
class Update {
public:
  Update(Buffers& buffers, const Node& n, size_t tensor, const std::string& name)
      : buffers_(buffers), n_(n), tensor_(tensor), groups_(n.op_type == Op::kAdam ? 4 : 3),
        count_((n.inputs.size() - 2) / groups_), x_(n.inputs[2 + tensor]),
        t_(accumulator_type(x_->type.dtype)), b_(name, *x_->type.shape) {}

  // Input "group" of this tensor: 0 X, 1 G, then V and/or H.
  int in(size_t group) {
    const Value* v = n_.inputs[2 + group * count_ + tensor_];
    return load_as(b_, buffers_.of(v, BufferRole::kInput), all(), v->type.dtype, t_);
  }
  int rate() {
    return load_as(b_, buffers_.of(n_.inputs[0], BufferRole::kInput), {}, r_type(), t_);
  }
  int steps() { return b_.load(buffers_.of(n_.inputs[1], BufferRole::kInput), {}, DType::kI64); }
  // The gradient with the L2 regularization term: norm_coefficient * X + G.
  int gradient(float norm_coefficient) {
    return op(ExprOp::kAdd, {op(ExprOp::kMul, {c(norm_coefficient), in(0)}), in(1)});
  }

  int c(double v) { return b_.constant(v, t_); }
  // Operands in braces are built left to right, so that loads keep a fixed order.
  int op(ExprOp o, std::vector<int> operands) { return b_.op(o, t_, std::move(operands)); }
  int as_float(int x) { return b_.op(ExprOp::kCast, t_, {x}); }
  // "then" after the first step (T > 0), "first" at it.
  int after_first_step(int then, int first) {
    int later = b_.op(ExprOp::kGt, DType::kBool, {steps(), b_.constant(0, DType::kI64)});
    return b_.op(ExprOp::kSelect, t_, {later, then, first});
  }

  // Adds the statement storing "value" into "out".
  void store(int value, const Value* out) {
    if (out->type.dtype != t_) value = b_.op(ExprOp::kCast, out->type.dtype, {value});
    int buf = buffers_.of(out, BufferRole::kOutput);
    buffers_.kernel().add(b_.store(value, buf, all()));
  }

private:
  std::vector<AffineExpr> all() const { return iterators(x_->type.shape->size()); }
  DType r_type() const { return n_.inputs[0]->type.dtype; }

  Buffers& buffers_;
  const Node& n_;
  size_t tensor_;
  size_t groups_;
  size_t count_;
  const Value* x_;
  DType t_;
  StatementBuilder b_;
};

constexpr ExprOp kAdd = ExprOp::kAdd, kSub = ExprOp::kSub, kMul = ExprOp::kMul, kDiv = ExprOp::kDiv,
                 kSqrt = ExprOp::kSqrt, kPow = ExprOp::kPow;

// Adagrad: H' = H + g^2; X' = X - R / (1 + T * decay_factor) * g / (sqrt(H') + epsilon).
int adagrad(Update& u, const OptimizerAttrs& a, size_t output) {
  int g = u.gradient(a.norm_coefficient);
  int h_new = u.op(kAdd, {u.in(2), u.op(kMul, {g, g})});
  if (output == 1) return h_new;
  int rate =
      u.op(kDiv, {u.rate(),
                  u.op(kAdd, {u.c(1), u.op(kMul, {u.as_float(u.steps()), u.c(a.decay_factor)})})});
  int scale = u.op(kAdd, {u.op(kSqrt, {h_new}), u.c(a.epsilon)});
  return u.op(kSub, {u.in(0), u.op(kDiv, {u.op(kMul, {rate, g}), scale})});
}

// Adam: V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2; X' = (1 -
// norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon)), r = R sqrt(1 - beta^T) /
// (1 - alpha^T) after the first step and R at it.
int adam(Update& u, const OptimizerAttrs& a, size_t output) {
  int g = u.gradient(a.norm_coefficient);
  auto v_new = [&] {
    return u.op(kAdd, {u.op(kMul, {u.c(a.alpha), u.in(2)}), u.op(kMul, {u.c(1.0 - a.alpha), g})});
  };
  auto h_new = [&] {
    return u.op(kAdd, {u.op(kMul, {u.c(a.beta), u.in(3)}),
                       u.op(kMul, {u.c(1.0 - a.beta), u.op(kMul, {g, g})})});
  };
  if (output == 1) return v_new();
  if (output == 2) return h_new();
  int steps = u.as_float(u.steps());
  int r = u.rate();
  int corrected = u.op(
      kDiv, {u.op(kMul, {r, u.op(kSqrt, {u.op(kSub, {u.c(1), u.op(kPow, {u.c(a.beta), steps})})})}),
             u.op(kSub, {u.c(1), u.op(kPow, {u.c(a.alpha), steps})})});
  int rate = u.after_first_step(corrected, r);
  int v = v_new();
  int scale = u.op(kAdd, {u.op(kSqrt, {h_new()}), u.c(a.epsilon)});
  int x_new = u.op(kSub, {u.in(0), u.op(kDiv, {u.op(kMul, {rate, v}), scale})});
  return u.op(kMul, {u.c(1.0 - a.norm_coefficient_post), x_new});
}

// Momentum: V' = alpha V + b g, b = beta after the first step and 1 at it; X' = X - R V'
// ("standard"), or X - R (g + alpha V') ("nesterov").
int momentum(Update& u, const OptimizerAttrs& a, size_t output) {
  int g = u.gradient(a.norm_coefficient);
  int v_new = u.op(kAdd, {u.op(kMul, {u.c(a.alpha), u.in(2)}),
                          u.op(kMul, {u.after_first_step(u.c(a.beta), u.c(1)), g})});
  if (output == 1) return v_new;
  int direction = a.nesterov ? u.op(kAdd, {g, u.op(kMul, {u.c(a.alpha), v_new})}) : v_new;
  return u.op(kSub, {u.in(0), u.op(kMul, {u.rate(), direction})});
}

} // namespace

// Outputs come by group: X' for every tensor, then V' (Adam, Momentum), then H' (Adagrad,
// Adam); the shape function checked the counts.
Result<LoweredNode> lower_optimizer(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<OptimizerAttrs>();
  size_t groups = n.op_type == Op::kAdam ? 4 : 3;
  size_t count = (n.inputs.size() - 2) / groups;
  static const char* const kAdagradNames[] = {"x_new", "h_new"};
  static const char* const kAdamNames[] = {"x_new", "v_new", "h_new"};
  static const char* const kMomentumNames[] = {"x_new", "v_new"};
  const char* const* names = n.op_type == Op::kAdagrad ? kAdagradNames
                             : n.op_type == Op::kAdam  ? kAdamNames
                                                       : kMomentumNames;
  KernelBuilder k(name);
  Buffers buffers(k);
  for (size_t output = 0; output < groups - 1; ++output) {
    for (size_t i = 0; i < count; ++i) {
      const Value* out = n.outputs[output * count + i];
      if (!out) continue;
      Update u(buffers, n, i, names[output]);
      int value = n.op_type == Op::kAdagrad ? adagrad(u, a, output)
                  : n.op_type == Op::kAdam  ? adam(u, a, output)
                                            : momentum(u, a, output);
      u.store(value, out);
    }
  }
  return k.lowered();
}

} // namespace weft::kernel
