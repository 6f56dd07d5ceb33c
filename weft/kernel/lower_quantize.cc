// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. Quantizing
// rounds half to even and saturates to the integer type, as ONNX says.
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

constexpr DType kF32 = DType::kF32;

// A scale or zero point, loaded as "t" at the domain's point: per tensor (a scalar, viewed
// as [1]), per slice along the axis (a vector), or per block along the axis (the input's
// rank; the index there is the iterator over the block size).
int load_param(KernelBuilder& k, StatementBuilder& b, const Node& n, const Value* param, DType t) {
  const auto& a = n.attrs_as<QuantizeAttrs>();
  size_t rank = n.inputs[0]->type.shape->size();
  int64_t axis = a.axis < 0 ? a.axis + static_cast<int64_t>(rank) : a.axis;
  if (param->type.shape->empty() || num_elements(*param->type.shape) == Dim(1)) {
    int buf = k.buffer(param, BufferRole::kInput, Shape{1});
    return load_as(b, buf, {AffineExpr::constant_of(0)}, param->type.dtype, t);
  }
  int buf = k.buffer(param, BufferRole::kInput);
  if (a.block_size == 0)
    return load_as(b, buf, {AffineExpr::iterator(static_cast<int>(axis))}, param->type.dtype, t);
  std::vector<AffineExpr> index = iterators(rank);
  index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
  int block = b.op(ExprOp::kDiv, DType::kI64,
                   {b.iterator(static_cast<int>(axis)),
                    b.constant(static_cast<double>(a.block_size), DType::kI64)});
  int v = b.gather(buf, index, {IndirectIndex{static_cast<int>(axis), block}}, param->type.dtype);
  return param->type.dtype == t ? v : b.op(ExprOp::kCast, t, {v});
}

// The range of the integer types a quantization can produce.
std::optional<std::pair<double, double>> integer_range(DType t) {
  switch (t) {
    case DType::kU8: return std::pair{0.0, 255.0};
    case DType::kI8: return std::pair{-128.0, 127.0};
    case DType::kU16: return std::pair{0.0, 65535.0};
    case DType::kI16: return std::pair{-32768.0, 32767.0};
    case DType::kU4: return std::pair{0.0, 15.0};
    case DType::kI4: return std::pair{-8.0, 7.0};
    case DType::kU2: return std::pair{0.0, 3.0};
    case DType::kI2: return std::pair{-2.0, 1.0};
    default: return std::nullopt;
  }
}

bool can_quantize_to(DType t) {
  return integer_range(t) || (dtype_is_float8_or_4(t) && t != DType::kF8E8M0);
}

// Into an integer type: saturate(round_half_even(x / scale) + zero_point). Into float8 and
// float4: x / scale + zero_point, rounded to nearest even by the cast; a saturating float8
// quantization clamps to its largest finite value first (float4 always saturates).
int quantize(StatementBuilder& b, int x, int scale, int zero_point, DType to, bool saturate) {
  int q = b.op(ExprOp::kDiv, kF32, {x, scale});
  std::optional<std::pair<double, double>> range = integer_range(to);
  if (range) q = b.op(ExprOp::kRound, kF32, {q});
  q = b.op(ExprOp::kAdd, kF32, {q, zero_point});
  std::optional<MiniFloat> f = dtype_minifloat(to);
  if (!range && f && f->kind != MiniFloatKind::kFinite && saturate)
    range =
        std::pair{-static_cast<double>(minifloat_max(*f)), static_cast<double>(minifloat_max(*f))};
  if (range) {
    q = b.op(ExprOp::kMin, kF32,
             {b.op(ExprOp::kMax, kF32, {q, b.constant(range->first, kF32)}),
              b.constant(range->second, kF32)});
  }
  return b.op(ExprOp::kCast, to, {q});
}

} // namespace

Result<LoweredNode> lower_quantize_linear(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  if (!can_quantize_to(y->type.dtype))
    return Status::error(
        fmt::format("QuantizeLinear to {} is not supported", dtype_name(y->type.dtype)));
  const Shape& shape = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("quantize", shape);
  int xv =
      load_as(b, k.buffer(x, BufferRole::kInput), iterators(shape.size()), x->type.dtype, kF32);
  int scale = load_param(k, b, n, n.inputs[1], kF32);
  int zp = n.input(2) ? load_param(k, b, n, n.inputs[2], kF32) : b.constant(0, kF32);
  k.add(b.store(quantize(b, xv, scale, zp, y->type.dtype, n.attrs_as<QuantizeAttrs>().saturate),
                k.buffer(y, BufferRole::kOutput), iterators(shape.size())));
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
  // An all-zero (or empty) x has range 0: its scale is 1, as in ONNX Runtime and PyTorch's
  // dynamic quantization, not the formula's 0 (onnx/onnx#8437; docs/status.md).
  StatementBuilder s("scale", {});
  int range = s.op(ExprOp::kSub, kF32, {s.load(hi, scalar, kF32), s.load(lo, scalar, kF32)});
  int empty = s.op(ExprOp::kEq, DType::kBool, {range, s.constant(0, kF32)});
  k.add(s.store(
      s.op(ExprOp::kSelect, kF32,
           {empty, s.constant(1, kF32), s.op(ExprOp::kDiv, kF32, {range, s.constant(255, kF32)})}),
      scale, scalar));
  StatementBuilder z("zero_point", {});
  k.add(z.store(quantize(z, z.op(ExprOp::kNeg, kF32, {z.load(lo, scalar, kF32)}),
                         z.load(scale, scalar, kF32), z.constant(0, kF32), DType::kU8, true),
                zp, scalar));
  StatementBuilder q("quantize", flat);
  int xv = load_as(q, in, iterators(1), x->type.dtype, kF32);
  int zpv = q.op(ExprOp::kCast, kF32, {q.load(zp, scalar, DType::kU8)});
  k.add(q.store(quantize(q, xv, q.load(scale, scalar, kF32), zpv, DType::kU8, true),
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
  if (n.op_type == Op::kHammingWindow) a0 = 25.0 / 46, a1 = 1 - a0;
  if (n.op_type == Op::kBlackmanWindow) a0 = 0.42, a1 = 0.5, a2 = 0.08;
  constexpr DType kF64 = DType::kF64;
  constexpr double kPi = 3.14159265358979323846;
  KernelBuilder k(name);
  StatementBuilder b(std::string(n.op_type.name()), *y->type.shape);
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
