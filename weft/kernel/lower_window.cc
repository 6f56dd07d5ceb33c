// Window ops (Conv, MaxPool, AveragePool) and constant Pad: affine statements whose guards
// keep every read inside the input, which is how padding is expressed.
#include <algorithm>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// The input position o * stride + k * dilation - pad_begin of one spatial dim, from the
// iterators of the output position "o" and the tap "k".
AffineExpr tap(const Window& w, int o, int k) {
  return {-w.pad_begin, {{o, w.stride}, {k, w.dilation}}};
}

// Guards keeping "pos" in [lo, hi).
void add_bounds(std::vector<AffineExpr>& guards, const AffineExpr& pos, int64_t lo, int64_t hi) {
  AffineExpr above = pos;
  above.constant -= lo; // pos - lo >= 0
  AffineExpr below = {hi - 1 - pos.constant, {}};
  for (auto [i, c] : pos.terms)
    below.terms.push_back({i, -c}); // hi - 1 - pos >= 0
  guards.push_back(above);
  guards.push_back(below);
}

// The kernel's spatial extents: the attribute, or the weights' dims [M, Cg, k...].
Ints kernel_of(const ConvAttrs& a, const Shape& weights) {
  if (!a.kernel_shape.empty()) return a.kernel_shape;
  Ints kernel;
  for (size_t i = 2; i < weights.size(); ++i)
    kernel.push_back(weights[i].value());
  return kernel;
}

// y = by cast to y's dtype (f16 and bf16 outputs, summed in f32 in "by").
void cast_back(KernelBuilder& k, int by, DType t, int out, const Value* y) {
  StatementBuilder fin("finish", *y->type.shape);
  std::vector<AffineExpr> all = iterators(y->type.shape->size());
  k.add(fin.store(fin.op(ExprOp::kCast, y->type.dtype, {fin.load(by, all, t)}), out, all));
}

} // namespace

// y[n, m, o...] = bias[m] + sum over c, k... of x[n, g*Cg + c, tap] * w[m, c, k...], with
// m = g*Mg + mg so that the group is an iterator and every index stays affine. ConvInteger
// subtracts the zero points and accumulates in i32 (padding contributes 0, as a padded
// zero point would); QLinearConv then requantizes the sum.
Result<LoweredNode> lower_conv(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ConvAttrs>();
  // ConvInteger: x, w, x_zero_point, w_zero_point. QLinearConv: x, x_scale, x_zero_point, w,
  // w_scale, w_zero_point, y_scale, y_zero_point, bias.
  bool integer = n.op_type == Op::kConvInteger, qlinear = n.op_type == Op::kQLinearConv;
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[qlinear ? 3 : 1];
  const Value* b = qlinear ? n.input(8) : integer ? nullptr : n.input(2);
  const Value* x_zero = qlinear ? n.input(2) : integer ? n.input(2) : nullptr;
  const Value* w_zero = qlinear ? n.input(5) : integer ? n.input(3) : nullptr;
  const Value* y = n.outputs[0];
  const Shape& ws = *w->type.shape;
  std::vector<Window> win = window_dims(kernel_of(a, ws), a.strides, a.dilations, a.pads,
                                        a.auto_pad, *x->type.shape, *y->type.shape);
  int64_t batch = (*y->type.shape)[0].value(), m_total = ws[0].value(), cg = ws[1].value();
  int64_t mg = m_total / a.group;
  size_t spatial = win.size();
  // QLinearConv sums in i32, f16 and bf16 in f32.
  DType t = qlinear ? DType::kI32 : accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int bw = k.buffer(w, BufferRole::kInput);
  int bb = b ? k.buffer(b, BufferRole::kInput) : -1;
  int out = k.buffer(y, BufferRole::kOutput);
  int by = t != y->type.dtype ? k.temp(t, *y->type.shape) : out;
  // Iterators: n, g, mg, o..., then c, k...
  int io = 3, ic = 3 + static_cast<int>(spatial), ik = ic + 1;
  Shape out_domain = {batch, a.group, mg};
  for (const Window& d : win)
    out_domain.push_back(d.out);
  AffineExpr m_index = {0, {{1, mg}, {2, 1}}};
  std::vector<AffineExpr> y_index = {AffineExpr::iterator(0), m_index};
  for (size_t i = 0; i < spatial; ++i)
    y_index.push_back(AffineExpr::iterator(io + static_cast<int>(i)));
  StatementBuilder init("init", out_domain);
  int bias = b ? load_as(init, bb, {m_index}, b->type.dtype, t) : init.constant(0, t);
  k.add(init.store(bias, by, y_index));
  Shape domain = out_domain;
  domain.push_back(cg);
  for (const Window& d : win)
    domain.push_back(d.kernel);
  StatementBuilder mac("multiply_add", domain);
  std::vector<AffineExpr> x_index = {AffineExpr::iterator(0), {0, {{1, cg}, {ic, 1}}}};
  std::vector<AffineExpr> w_index = {m_index, AffineExpr::iterator(ic)};
  std::vector<AffineExpr> guards;
  for (size_t i = 0; i < spatial; ++i) {
    AffineExpr pos = tap(win[i], io + static_cast<int>(i), ik + static_cast<int>(i));
    x_index.push_back(pos);
    w_index.push_back(AffineExpr::iterator(ik + static_cast<int>(i)));
    add_bounds(guards, pos, 0, win[i].in);
  }
  int xv = load_as(mac, bx, x_index, x->type.dtype, t);
  int wv = load_as(mac, bw, w_index, w->type.dtype, t);
  // A zero point per tensor for x, per tensor or output channel for w.
  xv = subtract_zero_point(k, mac, x_zero, xv, AffineExpr::constant_of(0), t);
  wv = subtract_zero_point(k, mac, w_zero, wv, m_index, t);
  Statement s = mac.store(mac.op(ExprOp::kMul, t, {xv, wv}), by, y_index, Combine::kSum);
  s.guards = guards;
  k.add(std::move(s));
  if (qlinear) {
    // x_scale per tensor, w_scale per tensor or output channel.
    add_requantize(k, by, {n.inputs[1], {}}, {n.inputs[4], AffineExpr::iterator(1)}, n.inputs[6],
                   n.input(7), out, *y->type.shape, iterators(y->type.shape->size()),
                   y->type.dtype);
  } else if (by != out) {
    cast_back(k, by, t, out, y);
  }
  return k.lowered();
}

// weft.ConvChannelsLast: y[n, o..., m] = bias[m] + sum over c, k... of
// x[n, tap..., g*Cg + c] * w[k..., c, m], from its weights laid out [k..., Cg, M] when it has
// them (input 3, which the channels_last pass gives depthwise convolutions: the output channel
// then moves along the last dim of y, x and the weights, so each tap adds a run of channels,
// poly::ScheduleOptions::outputs_innermost), else from the given [M, Cg, k...] (each output a
// dot product of contiguous weights: a convolution of one pixel). Iterators n, o..., then g
// and mg (mg innermost, or g when Mg is 1), then c, k....
Result<LoweredNode> lower_conv_channels_last(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ConvAttrs>();
  bool last = n.input(3) != nullptr;
  const Value *x = n.inputs[0], *w = last ? n.inputs[3] : n.inputs[1], *b = n.input(2),
              *y = n.outputs[0];
  const Shape& ws = *n.inputs[1]->type.shape;               // [M, Cg, k...]
  Shape x_first = *x->type.shape, y_first = *y->type.shape; // [N, C, spatial...]
  std::rotate(x_first.begin() + 1, x_first.end() - 1, x_first.end());
  std::rotate(y_first.begin() + 1, y_first.end() - 1, y_first.end());
  std::vector<Window> win =
      window_dims(kernel_of(a, ws), a.strides, a.dilations, a.pads, a.auto_pad, x_first, y_first);
  int64_t cg = ws[1].value(), mg = ws[0].value() / a.group;
  int spatial = static_cast<int>(win.size());
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int bw = k.buffer(w, BufferRole::kInput);
  int bb = b ? k.buffer(b, BufferRole::kInput) : -1;
  int out = k.buffer(y, BufferRole::kOutput);
  int by = t != y->type.dtype ? k.temp(t, *y->type.shape) : out;
  // Iterators: n, o... (1..spatial), then g and mg in either order, then c, k....
  int io = 1, ig = 1 + spatial, img = ig + 1;
  if (mg == 1) std::swap(ig, img);
  int ic = 3 + spatial, ik = ic + 1;
  Shape out_domain = {(*y->type.shape)[0]};
  for (const Window& d : win)
    out_domain.push_back(d.out);
  out_domain.push_back(ig < img ? Dim(a.group) : Dim(mg));
  out_domain.push_back(ig < img ? Dim(mg) : Dim(a.group));
  AffineExpr m_index = {0, {{ig, mg}, {img, 1}}};
  std::vector<AffineExpr> y_index = {AffineExpr::iterator(0)};
  for (int i = 0; i < spatial; ++i)
    y_index.push_back(AffineExpr::iterator(io + i));
  y_index.push_back(m_index);
  StatementBuilder init("init", out_domain);
  int bias = b ? load_as(init, bb, {m_index}, b->type.dtype, t) : init.constant(0, t);
  k.add(init.store(bias, by, y_index));
  Shape domain = out_domain;
  domain.push_back(cg);
  for (const Window& d : win)
    domain.push_back(d.kernel);
  StatementBuilder mac("multiply_add", domain);
  std::vector<AffineExpr> x_index = {AffineExpr::iterator(0)}, taps, guards;
  for (int i = 0; i < spatial; ++i) {
    AffineExpr pos = tap(win[static_cast<size_t>(i)], io + i, ik + i);
    x_index.push_back(pos);
    taps.push_back(AffineExpr::iterator(ik + i));
    add_bounds(guards, pos, 0, win[static_cast<size_t>(i)].in);
  }
  x_index.push_back({0, {{ig, cg}, {ic, 1}}});
  std::vector<AffineExpr> w_index = last ? taps : std::vector<AffineExpr>{m_index};
  w_index.push_back(AffineExpr::iterator(ic));
  if (last)
    w_index.push_back(m_index);
  else
    w_index.insert(w_index.end(), taps.begin(), taps.end());
  int xv = load_as(mac, bx, x_index, x->type.dtype, t);
  int wv = load_as(mac, bw, w_index, w->type.dtype, t);
  Statement s = mac.store(mac.op(ExprOp::kMul, t, {xv, wv}), by, y_index, Combine::kSum);
  s.guards = guards;
  k.add(std::move(s));
  if (by != out) cast_back(k, by, t, out, y);
  return k.lowered();
}

// y[n, g*Mg + m, i*s + k*d - pad...] += x[n, g*Cg + c, i...] * w[g*Cg + c, m, k...]: the
// transposed convolution in scatter form, whose write index is affine (instances that meet
// at one output position are ordered by the dependences between them); guards drop the
// positions outside the output, which is how the pads crop.
Result<LoweredNode> lower_conv_transpose(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ConvTransposeAttrs>();
  WEFT_ASSIGN_OR_RETURN(std::vector<TransposedWindow> win, conv_transpose_windows(n));
  const Value* x = n.inputs[0];
  const Value* w = n.inputs[1];
  const Value* b = n.input(2);
  const Value* y = n.outputs[0];
  const Shape& xs = *x->type.shape;
  int64_t cg = xs[1].value() / a.group, mg = (*w->type.shape)[1].value();
  int spatial = static_cast<int>(win.size());
  DType t = accumulator_type(y->type.dtype); // f16 and bf16 sum in f32
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int bw = k.buffer(w, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  int by = t != y->type.dtype ? k.temp(t, *y->type.shape) : out;
  // The output, as [N, G, Mg, out...], starts as the bias.
  Shape out_domain = {xs[0], a.group, mg};
  for (const TransposedWindow& d : win)
    out_domain.push_back(d.out);
  AffineExpr m_index = {0, {{1, mg}, {2, 1}}};
  std::vector<AffineExpr> out_index = {AffineExpr::iterator(0), m_index};
  for (int i = 0; i < spatial; ++i)
    out_index.push_back(AffineExpr::iterator(3 + i));
  StatementBuilder init("init", out_domain);
  int bias = b ? load_as(init, k.buffer(b, BufferRole::kInput), {m_index}, b->type.dtype, t)
               : init.constant(0, t);
  k.add(init.store(bias, by, out_index));
  // Iterators: n, g, m, c, the input positions, the taps.
  Shape domain = {xs[0], a.group, mg, cg};
  int in = 4, tap = 4 + spatial;
  for (int i = 0; i < spatial; ++i)
    domain.push_back(xs[static_cast<size_t>(2 + i)]);
  for (const TransposedWindow& d : win)
    domain.push_back(d.kernel);
  AffineExpr c_index = {0, {{1, cg}, {3, 1}}};
  std::vector<AffineExpr> x_index = {AffineExpr::iterator(0), c_index};
  std::vector<AffineExpr> w_index = {c_index, AffineExpr::iterator(2)};
  std::vector<AffineExpr> y_index = {AffineExpr::iterator(0), m_index};
  std::vector<AffineExpr> guards;
  for (int i = 0; i < spatial; ++i) {
    const TransposedWindow& d = win[static_cast<size_t>(i)];
    AffineExpr pos = {-d.pad_begin, {{in + i, d.stride}, {tap + i, d.dilation}}};
    x_index.push_back(AffineExpr::iterator(in + i));
    w_index.push_back(AffineExpr::iterator(tap + i));
    y_index.push_back(pos);
    add_bounds(guards, pos, 0, d.out);
  }
  StatementBuilder mac("multiply_add", domain);
  int product = mac.op(
      ExprOp::kMul, t,
      {load_as(mac, bx, x_index, x->type.dtype, t), load_as(mac, bw, w_index, w->type.dtype, t)});
  Statement st = mac.store(product, by, y_index, Combine::kSum);
  st.guards = guards;
  k.add(std::move(st));
  if (by != out) cast_back(k, by, t, out, y);
  return k.lowered();
}

namespace {

// The value of an affine expression of the iterators, as an i64 node.
int affine_value(StatementBuilder& b, const AffineExpr& e) {
  int v = b.constant(static_cast<double>(e.constant), DType::kI64);
  for (auto [iter, coeff] : e.terms) {
    int term = b.op(ExprOp::kMul, DType::kI64,
                    {b.iterator(iter), b.constant(static_cast<double>(coeff), DType::kI64)});
    v = b.op(ExprOp::kAdd, DType::kI64, {v, term});
  }
  return v;
}

// MaxPool's Indices: the lowest flat index of x (over [N, C, spatial...], the spatial dims
// row-major, or column-major with storage_order 1) among the in-bounds taps that hold the
// max, as a min over the pool's domain.
void add_max_indices(KernelBuilder& k, const Node& n, const std::vector<Window>& win, int bx,
                     int by, const Shape& domain, const std::vector<AffineExpr>& x_index,
                     const std::vector<AffineExpr>& inside) {
  const Value* x = n.inputs[0];
  const Value* indices = n.outputs[1];
  const Shape& xs = *x->type.shape;
  bool column_major = n.attrs_as<PoolAttrs>().storage_order == 1;
  size_t spatial = win.size();
  // flat = (n * C + c) * plane + sum of position * stride.
  int64_t plane = 1;
  for (size_t i = 0; i < spatial; ++i)
    plane *= win[i].in;
  AffineExpr flat = {0, {{0, xs[1].value() * plane}, {1, plane}}};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t stride = 1;
    for (size_t j = 0; j < spatial; ++j) {
      if (column_major ? j < i : j > i) stride *= win[j].in;
    }
    for (auto [iter, coeff] : x_index[2 + i].terms)
      flat.terms.push_back({iter, coeff * stride});
    flat.constant += x_index[2 + i].constant * stride;
  }
  Shape out_domain(domain.begin(), domain.begin() + 2 + static_cast<int64_t>(spatial));
  std::vector<AffineExpr> y_index = iterators(out_domain.size());
  int bi = k.buffer(indices, BufferRole::kOutput);
  double none = static_cast<double>(num_elements(xs).value()); // above every index
  StatementBuilder init("init_indices", out_domain);
  k.add(init.store(init.constant(none, DType::kI64), bi, y_index));
  StatementBuilder b("find_indices", domain);
  DType t = x->type.dtype;
  int hit = b.op(ExprOp::kEq, DType::kBool, {b.load(bx, x_index, t), b.load(by, y_index, t)});
  int candidate = b.op(ExprOp::kSelect, DType::kI64,
                       {hit, affine_value(b, flat), b.constant(none, DType::kI64)});
  Statement s = b.store(candidate, bi, y_index, Combine::kMin);
  s.guards = inside;
  k.add(std::move(s));
}

} // namespace

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channels c - (size - 1) / 2 ...
// c + size / 2 that exist)^beta. The sum is a reduction over the domain [N, C, rest, tap]
// cut by guards, in the accumulator type.
Result<LoweredNode> lower_lrn(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<LrnAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& xs = *x->type.shape;
  int64_t rest = 1;
  for (size_t i = 2; i < xs.size(); ++i)
    rest *= xs[i].value();
  Shape view = {xs[0], xs[1], rest};
  DType t = accumulator_type(y->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput, view);
  int out = k.buffer(y, BufferRole::kOutput, view);
  int sum = k.temp(t, view);
  std::vector<AffineExpr> all = iterators(3);
  StatementBuilder init("init", view);
  k.add(init.store(init.constant(0, t), sum, all));
  int64_t before = (a.size - 1) / 2;
  AffineExpr channel = {-before, {{1, 1}, {3, 1}}}; // c + tap - (size - 1) / 2
  StatementBuilder sq("sum_squares", {xs[0], xs[1], rest, a.size});
  int v = load_as(sq, in, {AffineExpr::iterator(0), channel, AffineExpr::iterator(2)},
                  x->type.dtype, t);
  Statement s = sq.store(sq.op(ExprOp::kMul, t, {v, v}), sum, all, Combine::kSum);
  add_bounds(s.guards, channel, 0, xs[1].value());
  k.add(std::move(s));
  StatementBuilder b("normalize", view);
  int scaled = b.op(ExprOp::kMul, t,
                    {b.constant(a.alpha / static_cast<double>(a.size), t), b.load(sum, all, t)});
  int denominator =
      b.op(ExprOp::kPow, t,
           {b.op(ExprOp::kAdd, t, {b.constant(a.bias, t), scaled}), b.constant(a.beta, t)});
  int r = b.op(ExprOp::kDiv, t, {load_as(b, in, all, x->type.dtype, t), denominator});
  if (t != y->type.dtype) r = b.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(b.store(r, out, all));
  return k.lowered();
}

// MaxUnpool: y = 0, then y[position of I[p]] = X[p]. The indices are flat over the
// default output shape (as MaxPool's Indices are over its input); a larger output_shape
// keeps the positions, so each index is split into coordinates, an indirect write each.
Result<LoweredNode> lower_max_unpool(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* idx = n.inputs[1];
  const Value* y = n.outputs[0];
  WEFT_ASSIGN_OR_RETURN(Shape addressed, max_unpool_default_shape(n));
  const Shape& xs = *x->type.shape;
  const Shape& ys = *y->type.shape;
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int bi = k.buffer(idx, BufferRole::kInput);
  int by = k.buffer(y, BufferRole::kOutput);
  DType t = y->type.dtype;
  StatementBuilder zero("zero", ys);
  k.add(zero.store(zero.constant(0, t), by, iterators(ys.size())));
  StatementBuilder b("unpool", xs);
  constexpr DType kI64 = DType::kI64;
  int flat = load_as(b, bi, iterators(xs.size()), idx->type.dtype, kI64);
  std::vector<IndirectIndex> indirect;
  int64_t stride = 1;
  for (size_t d = addressed.size(); d-- > 0;) {
    int64_t extent = addressed[d].value();
    int c = b.op(ExprOp::kDiv, kI64, {flat, b.constant(static_cast<double>(stride), kI64)});
    c = b.op(ExprOp::kMod, kI64, {c, b.constant(static_cast<double>(extent), kI64)});
    indirect.insert(indirect.begin(), {static_cast<int>(d), c, IndexWrap::kClamp});
    stride *= extent;
  }
  Statement s = b.store(b.load(bx, iterators(xs.size()), t), by,
                        std::vector<AffineExpr>(ys.size(), AffineExpr::constant_of(0)));
  s.write.indirect = std::move(indirect);
  k.add(std::move(s));
  return k.lowered();
}

namespace {

// A pooling's windows, from its shapes channels first.
std::vector<Window> pool_windows(const Node& n) {
  const auto& a = n.attrs_as<PoolAttrs>();
  bool last = shown_op(n.op_type) != n.op_type;
  const Shape& x = *n.inputs[0]->type.shape;
  const Shape& y = *n.outputs[0]->type.shape;
  return window_dims(a.kernel_shape, a.strides, a.dilations, a.pads, a.auto_pad,
                     last ? move_channels(x, false) : x, last ? move_channels(y, false) : y);
}

} // namespace

bool pool_counts_every_tap(const Node& n) {
  bool padding_counts = n.attrs_as<PoolAttrs>().count_include_pad;
  std::vector<Window> win = pool_windows(n);
  return std::all_of(win.begin(), win.end(), [&](const Window& w) {
    int64_t end = (w.out - 1) * w.stride + (w.kernel - 1) * w.dilation - w.pad_begin; // last tap
    return padding_counts ? end < w.in + w.pad_end : w.pad_begin == 0 && end < w.in;
  });
}

// MaxPool: the max over in-bounds taps. AveragePool: their sum over their count, where
// count_include_pad also counts taps in the padding (but not beyond it); where every window
// counts all its taps (pool_counts_every_tap), the sum over the window's size. Their channels-last
// forms (weft.MaxPoolChannelsLast, weft.AveragePoolChannelsLast) iterate [n, o..., c, k...], the
// channel moving along the last dim of x and y: each tap then combines a run of channels into
// the output pixel (the CPU schedule's few-terms rule, as a depthwise convolution's).
Result<LoweredNode> lower_pool(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<PoolAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  bool last = shown_op(n.op_type) != n.op_type;
  std::vector<Window> win = pool_windows(n);
  const Shape& ys = *y->type.shape;
  bool max = shown_op(n.op_type) == Op::kMaxPool;
  DType t = y->type.dtype;
  int spatial = static_cast<int>(win.size());
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int by = k.buffer(y, BufferRole::kOutput);
  // Iterators: n, c, o... (channels first) or n, o..., c (channels last); then k....
  int ic = last ? 1 + spatial : 1, io = last ? 1 : 2, ik = 2 + spatial;
  Shape out_domain = {ys[0]};
  for (int i = 0; i < spatial; ++i)
    out_domain.push_back(win[static_cast<size_t>(i)].out);
  out_domain.insert(out_domain.begin() + ic, ys[last ? ys.size() - 1 : 1]);
  Shape domain = out_domain;
  for (const Window& d : win)
    domain.push_back(d.kernel);
  std::vector<AffineExpr> x_index = {AffineExpr::iterator(0)};
  std::vector<AffineExpr> inside, padded;
  for (int i = 0; i < spatial; ++i) {
    const Window& w = win[static_cast<size_t>(i)];
    AffineExpr pos = tap(w, io + i, ik + i);
    x_index.push_back(pos);
    add_bounds(inside, pos, 0, w.in);
    add_bounds(padded, pos, -w.pad_begin, w.in + w.pad_end);
  }
  x_index.insert(x_index.begin() + ic, AffineExpr::iterator(ic));
  std::vector<AffineExpr> y_index = iterators(out_domain.size());
  StatementBuilder init("init", out_domain);
  k.add(init.store(init.constant(max ? combine_identity(Combine::kMax) : 0, t), by, y_index));
  StatementBuilder acc("accumulate", domain);
  Statement s =
      acc.store(acc.load(bx, x_index, t), by, y_index, max ? Combine::kMax : Combine::kSum);
  s.guards = inside;
  k.add(std::move(s));
  if (max && n.outputs.size() > 1 && n.outputs[1]) {
    add_max_indices(k, n, win, bx, by, domain, x_index, inside);
  }
  if (!max && pool_counts_every_tap(n)) {
    double size = 1;
    for (const Window& d : win)
      size *= static_cast<double>(d.kernel);
    StatementBuilder avg("average", out_domain);
    k.add(avg.store(avg.op(ExprOp::kDiv, t, {avg.load(by, y_index, t), avg.constant(size, t)}), by,
                    y_index));
  } else if (!max) {
    int cnt = k.temp(t, out_domain);
    StatementBuilder zero("init_count", out_domain);
    k.add(zero.store(zero.constant(0, t), cnt, y_index));
    StatementBuilder count("count", domain);
    Statement c = count.store(count.constant(1, t), cnt, y_index, Combine::kSum);
    c.guards = a.count_include_pad ? padded : inside;
    k.add(std::move(c));
    StatementBuilder avg("average", out_domain);
    k.add(avg.store(avg.op(ExprOp::kDiv, t, {avg.load(by, y_index, t), avg.load(cnt, y_index, t)}),
                    by, y_index));
  }
  return k.lowered();
}

// Constant padding: fill with the value, then copy the input in at its offset; negative
// pads crop, through guards on the copy.
namespace {

// Edge, reflect and wrap padding: each output element reads the input at a position computed
// from its own (an indirect load with a computed index): the border element's, clamped, for
// edge; mirrored about the border (without repeating it) for reflect, again and again where
// the pads reach past the far border; modulo the input's extent for wrap (the input repeated
// periodically). Over symbolic extents too.
void add_mirror_copy(KernelBuilder& k, const Node& n, int bx, int by) {
  const auto& a = n.attrs_as<PadAttrs>();
  const Shape& xs = *n.inputs[0]->type.shape;
  const Shape& ys = *n.outputs[0]->type.shape;
  StatementBuilder b(std::string(pad_mode_name(a.mode)), ys);
  std::vector<AffineExpr> index = iterators(ys.size());
  std::vector<IndirectIndex> indirect;
  auto c = [&](int64_t v) { return b.constant(static_cast<double>(v), DType::kI64); };
  for (size_t d = 0; d < ys.size(); ++d) {
    int64_t begin = (*a.pads)[d], end = (*a.pads)[d + ys.size()];
    if (begin == 0 && end == 0) continue;
    // The input's extent times "times", less "less": a constant, or over a symbolic extent
    // an ExprOp::kExtent value.
    auto extent = [&](int64_t times, int64_t less) {
      if (xs[d].is_static()) return c(times * xs[d].value() - less);
      int x = b.extent(xs[d], DType::kI64);
      if (times == 2) x = b.op(ExprOp::kAdd, DType::kI64, {x, x});
      return less == 0 ? x : b.op(ExprOp::kSub, DType::kI64, {x, c(less)});
    };
    int pos = b.op(ExprOp::kSub, DType::kI64, {b.iterator(static_cast<int>(d)), c(begin)});
    if (a.mode == PadMode::kReflect) {
      pos = b.op(ExprOp::kAbs, DType::kI64, {pos});
      // Pads of the extent or more reflect again and again (ONNX's reference, numpy's pad):
      // the positions repeat every 2 (n - 1). (Over a symbolic extent a run limit keeps the
      // pads shorter: run_limits.h.)
      if (xs[d].is_static() && std::max(begin, end) > xs[d].value() - 1)
        pos =
            b.op(ExprOp::kMod, DType::kI64, {pos, c(std::max<int64_t>(2 * xs[d].value() - 2, 1))});
      int past = b.op(ExprOp::kGt, DType::kBool, {pos, extent(1, 1)});
      pos = b.op(ExprOp::kSelect, DType::kI64,
                 {past, b.op(ExprOp::kSub, DType::kI64, {extent(2, 2), pos}), pos});
    } else if (a.mode == PadMode::kWrap) {
      pos = b.op(ExprOp::kMod, DType::kI64, {pos, extent(1, 0)}); // the divisor's sign
    }
    index[d] = AffineExpr::constant_of(0);
    indirect.push_back({static_cast<int>(d), pos, IndexWrap::kClamp});
  }
  DType t = n.inputs[0]->type.dtype;
  k.add(b.store(b.gather(bx, index, indirect, t), by, iterators(ys.size())));
}

} // namespace

Result<LoweredNode> lower_pad(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<PadAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& ys = *y->type.shape;
  size_t rank = ys.size();
  KernelBuilder k(name);
  int bx = k.buffer(x, BufferRole::kInput);
  int by = k.buffer(y, BufferRole::kOutput);
  if (a.mode != PadMode::kConstant) {
    add_mirror_copy(k, n, bx, by);
    return k.lowered();
  }
  StatementBuilder fill("fill", ys);
  const Value* value = n.input(2); // a fill value known only at run time
  int v = value ? fill.load(k.buffer(value, BufferRole::kInput, {1}), {AffineExpr::constant_of(0)},
                            value->type.dtype)
                : fill.constant(a.value, y->type.dtype);
  k.add(fill.store(v, by, iterators(rank)));
  StatementBuilder copy("copy", *x->type.shape);
  std::vector<AffineExpr> y_index;
  std::vector<AffineExpr> guards;
  for (size_t d = 0; d < rank; ++d) {
    AffineExpr pos = {(*a.pads)[d], {{static_cast<int>(d), 1}}};
    y_index.push_back(pos);
    // Only a negative pad (a crop) takes positions out of y; such a dim is static.
    if ((*a.pads)[d] < 0 || (*a.pads)[d + rank] < 0) add_bounds(guards, pos, 0, ys[d].value());
  }
  Statement s = copy.store(copy.load(bx, iterators(rank), x->type.dtype), by, y_index);
  s.guards = guards;
  k.add(std::move(s));
  return k.lowered();
}

} // namespace weft::kernel
