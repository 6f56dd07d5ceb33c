// DeformConv (2-D): a grouped convolution whose taps read the input bilinearly at positions
// moved by per-output-position offsets, each tap weighted by the mask (1 when absent).
//
// y[n, m, oh, ow] = B[m] + sum over c, kh, kw, ty, tx of
//   W[m, c, kh, kw] * mask[n, og k, oh, ow] * bilinear weight(ty, tx) * x[n, c, h_ty, w_tx]
// with k = kh * KW + kw, og the offset group of channel c, and (h, w) = (oh * stride -
// pad + kh * dilation, likewise) + offset[n, (og k) * 2 + (0, 1), oh, ow]; h_ty is floor(h) +
// ty, and taps outside the input read 0 (the reference's GridSample with zeros padding).
// Over the domain [N, G, Mg, OH, OW, Cg, KH, KW, 2, 2] (m = g Mg + mg, c = g Cg + cg), in f64.
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

Result<LoweredNode> lower_deform_conv(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<DeformConvAttrs>();
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[1];
  const Value* offset = n.inputs[2];
  const Value* bias = n.input(3);
  const Value* mask = n.input(4);
  const Value* y = n.outputs[0];
  const Shape& xs = *x->type.shape;
  const Shape& ws = *w->type.shape;
  const Shape& ys = *y->type.shape;
  constexpr DType kF64 = DType::kF64, kI64 = DType::kI64;
  int64_t mg = ws[0].value() / a.group, cg = ws[1].value();
  int64_t kh = ws[2].value(), kw = ws[3].value();
  int64_t per_offset_group = xs[1].value() / a.offset_group;
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int bw = k.buffer(w, BufferRole::kInput);
  int boff = k.buffer(offset, BufferRole::kInput);
  int bb = bias ? k.buffer(bias, BufferRole::kInput) : -1;
  int bm = mask ? k.buffer(mask, BufferRole::kInput) : -1;
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = k.temp(kF64, ys);
  StatementBuilder init("init", ys);
  int b0 = bias ? load_as(init, bb, {AffineExpr::iterator(1)}, bias->type.dtype, kF64)
                : init.constant(0, kF64);
  k.add(init.store(b0, acc, iterators(4)));
  // Iterators: 0 n, 1 g, 2 mg, 3 oh, 4 ow, 5 cg, 6 kh, 7 kw, 8 ty, 9 tx.
  Shape domain = {ys[0], a.group, mg, ys[2], ys[3], cg, kh, kw, 2, 2};
  StatementBuilder b("deform_conv", domain);
  auto c64 = [&](double v) { return b.constant(v, kF64); };
  auto i64 = [&](int64_t v) { return b.constant(static_cast<double>(v), kI64); };
  auto op = [&](ExprOp o, DType t, int p, int q) { return b.op(o, t, {p, q}); };
  AffineExpr channel = {0, {{1, cg}, {5, 1}}};
  AffineExpr m_index = {0, {{1, mg}, {2, 1}}};
  // og * KH * KW + kh * KW + kw, as an i64 node (og = c / channels per offset group).
  int c_node =
      op(ExprOp::kAdd, kI64, op(ExprOp::kMul, kI64, b.iterator(1), i64(cg)), b.iterator(5));
  int og = op(ExprOp::kDiv, kI64, c_node, i64(per_offset_group));
  int tap =
      op(ExprOp::kAdd, kI64, op(ExprOp::kMul, kI64, og, i64(kh * kw)),
         op(ExprOp::kAdd, kI64, op(ExprOp::kMul, kI64, b.iterator(6), i64(kw)), b.iterator(7)));
  auto per_position = [&](int buffer, const Value* v, int channel_node) {
    return b.gather(buffer,
                    {AffineExpr::iterator(0), AffineExpr::constant_of(0), AffineExpr::iterator(3),
                     AffineExpr::iterator(4)},
                    {{1, channel_node, IndexWrap::kClamp}}, v->type.dtype);
  };
  int weight = load_as(
      b, bw, {m_index, AffineExpr::iterator(5), AffineExpr::iterator(6), AffineExpr::iterator(7)},
      w->type.dtype, kF64);
  if (mask) {
    weight =
        op(ExprOp::kMul, kF64, weight, b.op(ExprOp::kCast, kF64, {per_position(bm, mask, tap)}));
  }
  std::vector<IndirectIndex> indirect;
  int inside = b.constant(1, DType::kBool);
  for (int axis = 0; axis < 2; ++axis) {
    auto i = static_cast<size_t>(axis);
    int64_t stride = a.strides.empty() ? 1 : a.strides[i];
    int64_t dilation = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t pad = a.pads.empty() ? 0 : a.pads[i];
    int64_t extent = xs[2 + i].value();
    int component = op(ExprOp::kAdd, kI64, op(ExprOp::kMul, kI64, tap, i64(2)), i64(axis));
    int shift = b.op(ExprOp::kCast, kF64, {per_position(boff, offset, component)});
    // The tap's unshifted position, o * stride - pad + k * dilation.
    int base = op(
        ExprOp::kAdd, kI64,
        op(ExprOp::kSub, kI64, op(ExprOp::kMul, kI64, b.iterator(3 + axis), i64(stride)), i64(pad)),
        op(ExprOp::kMul, kI64, b.iterator(6 + axis), i64(dilation)));
    int pos = op(ExprOp::kAdd, kF64, b.op(ExprOp::kCast, kF64, {base}), shift);
    int low = b.op(ExprOp::kFloor, kF64, {pos});
    int r = op(ExprOp::kSub, kF64, pos, low);
    int first = b.op(ExprOp::kEq, DType::kBool, {b.iterator(8 + axis), i64(0)});
    int corner = op(ExprOp::kAdd, kF64, low, b.op(ExprOp::kCast, kF64, {b.iterator(8 + axis)}));
    weight = op(ExprOp::kMul, kF64, weight,
                b.op(ExprOp::kSelect, kF64, {first, op(ExprOp::kSub, kF64, c64(1), r), r}));
    int within = op(ExprOp::kAnd, DType::kBool, op(ExprOp::kGe, DType::kBool, corner, c64(0)),
                    op(ExprOp::kLe, DType::kBool, corner, c64(static_cast<double>(extent - 1))));
    inside = op(ExprOp::kAnd, DType::kBool, inside, within);
    indirect.push_back({2 + axis, b.op(ExprOp::kCast, kI64, {corner}), IndexWrap::kClamp});
  }
  int v = b.gather(
      bx,
      {AffineExpr::iterator(0), channel, AffineExpr::constant_of(0), AffineExpr::constant_of(0)},
      indirect, x->type.dtype);
  v = b.op(ExprOp::kSelect, kF64, {inside, b.op(ExprOp::kCast, kF64, {v}), c64(0)});
  std::vector<AffineExpr> y_index = {AffineExpr::iterator(0), m_index, AffineExpr::iterator(3),
                                     AffineExpr::iterator(4)};
  k.add(b.store(op(ExprOp::kMul, kF64, weight, v), acc, y_index, Combine::kSum));
  StatementBuilder fin("finish", ys);
  int res = fin.load(acc, iterators(4), kF64);
  if (y->type.dtype != kF64) res = fin.op(ExprOp::kCast, y->type.dtype, {res});
  k.add(fin.store(res, out, iterators(4)));
  return k.lowered();
}

} // namespace weft::kernel
