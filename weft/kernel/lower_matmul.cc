// MatMul, Gemm and Einsum as generated reductions. Correct, not fast: the design sends
// contractions to oneDNN (docs/status.md); this keeps models running until that lands.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

// y[..., m, n] = sum_k a[..., m, k] * b[..., k, n], with numpy batch broadcasting and 1-D
// operands promoted as numpy does; MatMulInteger subtracts the zero points, in i32, and
// QLinearMatMul then requantizes. Iterators:
// batch dims, m, n, then k.
Result<LoweredNode> lower_matmul(const Node& n, const std::string& name) {
  // MatMulInteger: a, b, a_zero_point, b_zero_point. QLinearMatMul: a, a_scale, a_zero_point,
  // b, b_scale, b_zero_point, y_scale, y_zero_point.
  bool integer = n.op_type == Op::kMatMulInteger, qlinear = n.op_type == Op::kQLinearMatMul;
  const Value* a = n.inputs[0];
  const Value* b = n.inputs[qlinear ? 3 : 1];
  const Value* a_zero = qlinear || integer ? n.input(2) : nullptr;
  const Value* b_zero = qlinear ? n.input(5) : integer ? n.input(3) : nullptr;
  const Value* y = n.outputs[0];
  Shape sa = *a->type.shape, sb = *b->type.shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim(1));
  if (b_vec) sb.push_back(Dim(1));
  int64_t m = sa[sa.size() - 2].value(), k = sa.back().value(), nn = sb.back().value();
  // The output as [batch..., m, n] (y drops the promoted unit dims).
  Shape out = *y->type.shape;
  if (a_vec) out.insert(out.end() - (b_vec ? 0 : 1), Dim(1));
  if (b_vec) out.push_back(Dim(1));
  size_t batch = out.size() - 2;
  Shape domain = out;
  domain.push_back(k);
  DType t = qlinear ? DType::kI32 : accumulator_type(y->type.dtype);
  KernelBuilder kb(name);
  int ba = kb.buffer(a, BufferRole::kInput, sa);
  int bb = kb.buffer(b, BufferRole::kInput, sb);
  int acc = kb.temp(t, {num_elements(out)});
  int by = kb.buffer(y, BufferRole::kOutput, {num_elements(out)});
  // Flat position of (batch..., m, n) in the output (outside an empty dim, stride 0: no term).
  AffineExpr flat;
  int64_t stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    if (out[i].value() != 1 && stride != 0)
      flat.terms.insert(flat.terms.begin(), {static_cast<int>(i), stride});
    stride *= out[i].value();
  }
  auto operand_index = [&](const Shape& s, int row, int col) {
    Shape batch_dims(s.begin(), s.end() - 2);
    std::vector<AffineExpr> idx =
        broadcast_index(batch_dims, Shape(out.begin(), out.begin() + batch));
    idx.push_back(row < 0 ? AffineExpr::constant_of(0) : AffineExpr::iterator(row));
    idx.push_back(col < 0 ? AffineExpr::constant_of(0) : AffineExpr::iterator(col));
    return idx;
  };
  int im = static_cast<int>(batch), in = static_cast<int>(batch) + 1,
      ik = static_cast<int>(batch) + 2;
  StatementBuilder init("init", {num_elements(out)});
  kb.add(init.store(init.constant(0, t), acc, iterators(1)));
  StatementBuilder mac("multiply_add", domain);
  int x = load_as(mac, ba, operand_index(sa, m == 1 ? -1 : im, ik), a->type.dtype, t);
  int w = load_as(mac, bb, operand_index(sb, ik, nn == 1 ? -1 : in), b->type.dtype, t);
  // Zero points: per row of A, per column of B.
  x = subtract_zero_point(kb, mac, a_zero, x, AffineExpr::iterator(im), t);
  w = subtract_zero_point(kb, mac, b_zero, w, AffineExpr::iterator(in), t);
  kb.add(mac.store(mac.op(ExprOp::kMul, t, {x, w}), acc, {flat}, Combine::kSum));
  if (qlinear) {
    // Scales per tensor, or per row of A and per column of B.
    add_requantize(kb, acc, {n.inputs[1], AffineExpr::iterator(im)},
                   {n.inputs[4], AffineExpr::iterator(in)}, n.inputs[6], n.input(7), by, out,
                   {flat}, y->type.dtype);
    return kb.lowered();
  }
  StatementBuilder fin("finish", {num_elements(out)});
  int r = fin.load(acc, iterators(1), t);
  if (t != y->type.dtype) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
  kb.add(fin.store(r, by, iterators(1)));
  return kb.lowered();
}

// y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N].
Result<LoweredNode> lower_gemm(const Node& n, const std::string& name) {
  const auto& g = n.attrs_as<GemmAttrs>();
  const Value* a = n.inputs[0];
  const Value* b = n.inputs[1];
  const Value* c = n.input(2);
  const Value* y = n.outputs[0];
  int64_t m = (*y->type.shape)[0].value(), nn = (*y->type.shape)[1].value();
  int64_t k = (*a->type.shape)[g.trans_a ? 0 : 1].value();
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder kb(name);
  int ba = kb.buffer(a, BufferRole::kInput);
  int bb = kb.buffer(b, BufferRole::kInput);
  int bc = c ? kb.buffer(c, BufferRole::kInput) : -1;
  int acc = kb.temp(t, {m, nn});
  int by = kb.buffer(y, BufferRole::kOutput);
  auto it = [](int i) { return AffineExpr::iterator(i); };
  StatementBuilder init("init", {m, nn});
  kb.add(init.store(init.constant(0, t), acc, iterators(2)));
  StatementBuilder mac("multiply_add", {m, nn, k});
  int x = load_as(mac, ba,
                  g.trans_a ? std::vector<AffineExpr>{it(2), it(0)}
                            : std::vector<AffineExpr>{it(0), it(2)},
                  a->type.dtype, t);
  int w = load_as(mac, bb,
                  g.trans_b ? std::vector<AffineExpr>{it(1), it(2)}
                            : std::vector<AffineExpr>{it(2), it(1)},
                  b->type.dtype, t);
  kb.add(mac.store(mac.op(ExprOp::kMul, t, {x, w}), acc, iterators(2), Combine::kSum));
  StatementBuilder fin("finish", {m, nn});
  int r = fin.op(ExprOp::kMul, t, {fin.load(acc, iterators(2), t), fin.constant(g.alpha, t)});
  if (c) {
    int cv = load_as(fin, bc, broadcast_index(*c->type.shape, {m, nn}), c->type.dtype, t);
    r = fin.op(ExprOp::kAdd, t, {r, fin.op(ExprOp::kMul, t, {cv, fin.constant(g.beta, t)})});
  }
  if (t != y->type.dtype) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
  kb.add(fin.store(r, by, iterators(2)));
  return kb.lowered();
}

} // namespace weft::kernel

namespace weft::kernel {

// Einsum as one reduction: iterators for the output's labels, then for the summed labels;
// each input reads at its labels' iterators (a repeated label reads a diagonal; a dim of
// extent 1 under a broadcast ellipsis reads index 0).
Result<LoweredNode> lower_einsum(const Node& n, const std::string& name) {
  std::vector<size_t> ranks;
  for (const Value* in : n.inputs)
    ranks.push_back(in->type.shape->size());
  WEFT_ASSIGN_OR_RETURN(EinsumLabels labels,
                        einsum_labels(n.attrs_as<EinsumAttrs>().equation, ranks));
  const Value* y = n.outputs[0];
  std::string order = labels.output;
  std::map<char, int64_t> extent;
  for (size_t i = 0; i < labels.inputs.size(); ++i) {
    for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
      char c = labels.inputs[i][d];
      int64_t e = (*n.inputs[i]->type.shape)[d].value();
      if (!extent.contains(c) || extent[c] == 1) extent[c] = e;
      if (order.find(c) == std::string::npos) order += c;
    }
  }
  Shape domain;
  for (char c : order)
    domain.push_back(extent[c]);
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = t == y->type.dtype ? out : k.temp(t, *y->type.shape);
  std::vector<AffineExpr> out_index = iterators(labels.output.size());
  StatementBuilder init("init", *y->type.shape);
  k.add(init.store(init.constant(0, t), acc, out_index));
  StatementBuilder b("einsum", domain);
  int product = -1;
  for (size_t i = 0; i < labels.inputs.size(); ++i) {
    const Value* in = n.inputs[i];
    std::vector<AffineExpr> index;
    for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
      char c = labels.inputs[i][d];
      bool broadcast = (*in->type.shape)[d].value() == 1 && extent[c] != 1;
      index.push_back(broadcast ? AffineExpr::constant_of(0)
                                : AffineExpr::iterator(static_cast<int>(order.find(c))));
    }
    int v = load_as(b, k.buffer(in, BufferRole::kInput), index, in->type.dtype, t);
    product = product < 0 ? v : b.op(ExprOp::kMul, t, {product, v});
  }
  k.add(b.store(product, acc, out_index, Combine::kSum));
  if (acc != out) {
    StatementBuilder fin("finish", *y->type.shape);
    k.add(fin.store(fin.op(ExprOp::kCast, y->type.dtype, {fin.load(acc, out_index, t)}), out,
                    out_index));
  }
  return k.lowered();
}

// DFT as a reduction over the signal axis: y[..., k, ..., c] = sum over n of
// x[..., n, ...] * e^(s 2 pi i k n / N), s = -1 forward and +1 inverse (which also divides by
// N), c selecting the real or imaginary part; the angle uses k n mod N, in f64. The signal
// is cut or zero-padded to the transform length N (only n < min(N, extent) contribute). A
// one-sided inverse (irfft) sums the n / 2 + 1 given frequencies of a Hermitian spectrum:
// y[t] = (1 / N) sum over k of w_k Re(x[k] e^(2 pi i k t / N)), w_k = 1 for k = 0 and k = N / 2
// (their conjugates are themselves), 2 for the others (which stand for their conjugates too).
Result<LoweredNode> lower_dft(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<DftAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& xs = *x->type.shape;
  const Shape& ys = *y->type.shape;
  int rank = static_cast<int>(ys.size());
  std::optional<int64_t> given_axis = dft_axis(n);
  std::optional<int64_t> length = dft_length(n);
  if (!given_axis || !length) return Status::error("DFT axis or dft_length known only at run time");
  int axis = static_cast<int>(*given_axis < 0 ? *given_axis + rank : *given_axis);
  bool irfft = a.inverse && a.onesided;
  int64_t extent = xs[static_cast<size_t>(axis)].value();
  int64_t terms = std::min(extent, irfft ? *length / 2 + 1 : *length);
  bool complex = xs.back().value() == 2;
  constexpr DType kF64 = DType::kF64, kI64 = DType::kI64;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = k.temp(kF64, ys);
  std::vector<AffineExpr> all = iterators(ys.size());
  StatementBuilder init("init", ys);
  k.add(init.store(init.constant(0, kF64), acc, all));
  Shape domain = ys;
  domain.push_back(terms); // n: iterator "rank"
  StatementBuilder b("dft", domain);
  auto c = [&](double v) { return b.constant(v, kF64); };
  auto part = [&](int component) {
    std::vector<AffineExpr> index = all;
    index[static_cast<size_t>(axis)] = AffineExpr::iterator(rank);
    index.back() = AffineExpr::constant_of(component);
    return load_as(b, in, index, x->type.dtype, kF64);
  };
  int re = part(0), im = complex ? part(1) : c(0);
  int kn = b.op(ExprOp::kMod, kI64,
                {b.op(ExprOp::kMul, kI64, {b.iterator(axis), b.iterator(rank)}),
                 b.constant(static_cast<double>(*length), kI64)});
  double sign = a.inverse ? 1 : -1;
  int angle = b.op(ExprOp::kMul, kF64,
                   {b.op(ExprOp::kCast, kF64, {kn}),
                    c(2 * 3.14159265358979323846 / static_cast<double>(*length))});
  int cos = b.op(ExprOp::kCos, kF64, {angle});
  int sin = b.op(ExprOp::kMul, kF64, {c(sign), b.op(ExprOp::kSin, kF64, {angle})});
  auto sub = [&](int p, int q) { return b.op(ExprOp::kSub, kF64, {p, q}); };
  auto mul = [&](int p, int q) { return b.op(ExprOp::kMul, kF64, {p, q}); };
  int real = sub(mul(re, cos), mul(im, sin));
  int imag = b.op(ExprOp::kAdd, kF64, {mul(re, sin), mul(im, cos)});
  int is_real = b.op(ExprOp::kEq, DType::kBool, {b.iterator(rank - 1), b.constant(0, kI64)});
  int v = b.op(ExprOp::kSelect, kF64, {is_real, real, imag}); // irfft: always the real part
  if (irfft) {
    int freq = b.iterator(rank);
    auto eq = [&](int p, int64_t q) {
      return b.op(ExprOp::kEq, DType::kBool, {p, b.constant(static_cast<double>(q), kI64)});
    };
    int self_conjugate =
        b.op(ExprOp::kOr, DType::kBool,
             {eq(freq, 0), *length % 2 == 0 ? eq(freq, *length / 2) : b.constant(0, DType::kBool)});
    v = mul(v, b.op(ExprOp::kSelect, kF64, {self_conjugate, c(1), c(2)}));
  }
  if (a.inverse) v = b.op(ExprOp::kDiv, kF64, {v, c(static_cast<double>(*length))});
  k.add(b.store(v, acc, all, Combine::kSum));
  StatementBuilder fin("finish", ys);
  int r = fin.load(acc, all, kF64);
  if (y->type.dtype != kF64) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(fin.store(r, out, all));
  return k.lowered();
}

} // namespace weft::kernel
