// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. Quantizing
// rounds half to even and saturates to the integer type, as ONNX says.
#include <limits>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

constexpr DType kF32 = DType::kF32;

// The index of a scale or zero point: per tensor (a scalar, viewed as [1]) or per slice
// along the axis (a vector).
std::vector<AffineExpr> param_index(const Value* param, const Node& n) {
  if (param->type.shape->empty()) return {AffineExpr::constant_of(0)};
  int64_t axis = n.attrs_as<QuantizeAttrs>().axis;
  if (axis < 0) axis += static_cast<int64_t>(n.inputs[0]->type.shape->size());
  return {AffineExpr::iterator(static_cast<int>(axis))};
}

int load_param(KernelBuilder& k, StatementBuilder& b, const Node& n, const Value* param, DType t) {
  int buf = k.buffer(param, BufferRole::kInput, param->type.shape->empty() ? Shape{1} : Shape{});
  return load_as(b, buf, param_index(param, n), param->type.dtype, t);
}

// saturate(round_half_even(x / scale) + zero_point), into "to".
int quantize(StatementBuilder& b, int x, int scale, int zero_point, DType to) {
  double lo = to == DType::kU8 ? 0 : std::numeric_limits<int8_t>::min();
  double hi = to == DType::kU8 ? 255 : std::numeric_limits<int8_t>::max();
  int q = b.op(ExprOp::kRound, kF32, {b.op(ExprOp::kDiv, kF32, {x, scale})});
  q = b.op(ExprOp::kAdd, kF32, {q, zero_point});
  q = b.op(ExprOp::kMin, kF32,
           {b.op(ExprOp::kMax, kF32, {q, b.constant(lo, kF32)}), b.constant(hi, kF32)});
  return b.op(ExprOp::kCast, to, {q});
}

} // namespace

Result<LoweredNode> lower_quantize_linear(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  if (y->type.dtype != DType::kU8 && y->type.dtype != DType::kI8)
    return Status::error("QuantizeLinear to other types than u8 and i8 is not supported");
  const Shape& shape = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("quantize", shape);
  int xv =
      load_as(b, k.buffer(x, BufferRole::kInput), iterators(shape.size()), x->type.dtype, kF32);
  int scale = load_param(k, b, n, n.inputs[1], kF32);
  int zp = n.input(2) ? load_param(k, b, n, n.inputs[2], kF32) : b.constant(0, kF32);
  k.add(b.store(quantize(b, xv, scale, zp, y->type.dtype), k.buffer(y, BufferRole::kOutput),
                iterators(shape.size())));
  return k.lowered();
}

// y = (x - zero_point) * scale, in f32, then in y's type (the scale's from opset 19 on).
Result<LoweredNode> lower_dequantize_linear(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("dequantize", shape);
  int xv =
      load_as(b, k.buffer(x, BufferRole::kInput), iterators(shape.size()), x->type.dtype, kF32);
  if (n.input(2)) xv = b.op(ExprOp::kSub, kF32, {xv, load_param(k, b, n, n.inputs[2], kF32)});
  int v = b.op(ExprOp::kMul, kF32, {xv, load_param(k, b, n, n.inputs[1], kF32)});
  if (y->type.dtype != kF32) v = b.op(ExprOp::kCast, y->type.dtype, {v});
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(shape.size())));
  return k.lowered();
}

// The range [min(x, 0), max(x, 0)] mapped onto [0, 255]: scale = range / 255, zero point =
// saturate(round(-min / scale)); then y = QuantizeLinear(x, scale, zero point).
Result<LoweredNode> lower_dynamic_quantize_linear(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  Shape flat = {num_elements(*x->type.shape)};
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, flat);
  int lo = k.temp(kF32, {1}), hi = k.temp(kF32, {1});
  std::vector<AffineExpr> scalar = {AffineExpr::constant_of(0)};
  for (int acc : {lo, hi}) {
    StatementBuilder init(acc == lo ? "init_min" : "init_max", {});
    k.add(init.store(init.constant(0, kF32), acc, scalar));
    StatementBuilder r(acc == lo ? "min" : "max", flat);
    k.add(r.store(load_as(r, in, iterators(1), x->type.dtype, kF32), acc, scalar,
                  acc == lo ? Combine::kMin : Combine::kMax));
  }
  const Value* scale_out = n.outputs[1];
  const Value* zp_out = n.outputs[2];
  int scale = scale_out ? k.buffer(scale_out, BufferRole::kOutput, {1}) : k.temp(kF32, {1});
  int zp = zp_out ? k.buffer(zp_out, BufferRole::kOutput, {1}) : k.temp(DType::kU8, {1});
  StatementBuilder s("scale", {});
  k.add(
      s.store(s.op(ExprOp::kDiv, kF32,
                   {s.op(ExprOp::kSub, kF32, {s.load(hi, scalar, kF32), s.load(lo, scalar, kF32)}),
                    s.constant(255, kF32)}),
              scale, scalar));
  StatementBuilder z("zero_point", {});
  k.add(z.store(quantize(z, z.op(ExprOp::kNeg, kF32, {z.load(lo, scalar, kF32)}),
                         z.load(scale, scalar, kF32), z.constant(0, kF32), DType::kU8),
                zp, scalar));
  StatementBuilder q("quantize", flat);
  int xv = load_as(q, in, iterators(1), x->type.dtype, kF32);
  int zpv = q.op(ExprOp::kCast, kF32, {q.load(zp, scalar, DType::kU8)});
  k.add(q.store(quantize(q, xv, q.load(scale, scalar, kF32), zpv, DType::kU8),
                k.buffer(n.outputs[0], BufferRole::kOutput, flat), iterators(1)));
  return k.lowered();
}

// HannWindow, HammingWindow, BlackmanWindow: a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N),
// N the size (periodic) or the size - 1 (symmetric), in f64.
Result<LoweredNode> lower_window_function(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<WindowAttrs>();
  const Value* y = n.outputs[0];
  int64_t size = (*y->type.shape)[0].value();
  double len = static_cast<double>(a.periodic ? size : size - 1);
  double a0 = 0.5, a1 = 0.5, a2 = 0;
  if (n.op_type == "HammingWindow") a0 = 25.0 / 46, a1 = 1 - a0;
  if (n.op_type == "BlackmanWindow") a0 = 0.42, a1 = 0.5, a2 = 0.08;
  constexpr DType kF64 = DType::kF64;
  constexpr double kPi = 3.14159265358979323846;
  KernelBuilder k(name);
  StatementBuilder b(n.op_type, *y->type.shape);
  int i = b.op(ExprOp::kCast, kF64, {b.iterator(0)});
  auto cosine = [&](double times) {
    return b.op(ExprOp::kCos, kF64,
                {b.op(ExprOp::kMul, kF64, {i, b.constant(times * kPi / len, kF64)})});
  };
  int v = b.op(ExprOp::kSub, kF64,
               {b.constant(a0, kF64), b.op(ExprOp::kMul, kF64, {b.constant(a1, kF64), cosine(2)})});
  if (a2 != 0)
    v = b.op(ExprOp::kAdd, kF64, {v, b.op(ExprOp::kMul, kF64, {b.constant(a2, kF64), cosine(4)})});
  if (y->type.dtype != kF64) v = b.op(ExprOp::kCast, y->type.dtype, {v});
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(1)));
  return k.lowered();
}

} // namespace weft::kernel
