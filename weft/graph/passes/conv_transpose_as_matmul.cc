#include "weft/graph/passes/conv_transpose_as_matmul.h"

#include <algorithm>
#include <vector>

#include "weft/graph/node_builder.h"

namespace weft {

namespace {

bool all_equal(const Ints& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == value; });
}

// [C, M, kh, kw] -> [C, kh * kw * M], the columns ordered (i, j, m).
Tensor as_columns(const Tensor& w) {
  const std::vector<int64_t>& d = w.dims();
  int64_t c = d[0], m = d[1], kh = d[2], kw = d[3];
  Tensor out(DType::kF32, {c, kh * kw * m});
  for (int64_t ci = 0; ci < c; ++ci)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          out.set_double(ci * kh * kw * m + (i * kw + j) * m + mi,
                         w.get_double(((ci * m + mi) * kh + i) * kw + j));
  return out;
}

// Does "n" fit the rewrite (see the header)?
bool fits(const Node& n) {
  if (n.op_type != Op::kConvTranspose || n.conditional) return false;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  const Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  if (!x || !w || !y || !w->is_constant() || x->type.dtype != DType::kF32 ||
      !x->type.has_static_shape() || !y->type.has_static_shape() || x->type.shape->size() != 4 ||
      w->constant->dims().size() != 4)
    return false;
  if (n.input(2) && !n.input(2)->is_constant()) return false;
  const auto& a = n.attrs_as<ConvTransposeAttrs>();
  const std::vector<int64_t>& wd = w->constant->dims();
  Ints kernel = {wd[2], wd[3]};
  return a.group == 1 && a.auto_pad == AutoPad::kNotSet && a.output_shape.empty() &&
         all_equal(a.dilations, 1) && all_equal(a.pads, 0) && all_equal(a.output_padding, 0) &&
         (a.kernel_shape.empty() || a.kernel_shape == kernel) && a.strides == kernel;
}

} // namespace

Result<bool> conv_transpose_as_matmul(Graph& graph) {
  std::vector<Node*> found;
  for (const auto& n : graph.nodes()) {
    if (fits(*n)) found.push_back(n.get());
  }
  for (Node* n : found) {
    NodeBuilder b(graph, *n);
    Value* x = n->inputs[0];
    const Tensor& w = *n->inputs[1]->constant;
    const Shape& xs = *x->type.shape;
    int64_t batch = xs[0].value(), h = xs[2].value(), wd = xs[3].value();
    int64_t m = w.dims()[1], kh = w.dims()[2], kw = w.dims()[3];
    Value* nhwc = b.op(Op::kTranspose, {x}, TransposeAttrs{Ints{0, 2, 3, 1}});
    Value* product = b.op(Op::kMatMul, {nhwc, b.constant("columns", as_columns(w))});
    Value* blocks = b.op(Op::kReshape, {product}, reshape_to(Ints{batch, h, wd, kh, kw, m}));
    Value* shuffled = b.op(Op::kTranspose, {blocks}, TransposeAttrs{Ints{0, 1, 3, 2, 4, 5}});
    Value* out = b.op(Op::kReshape, {shuffled}, reshape_to(Ints{batch, h * kh, wd * kw, m}));
    if (Value* bias = n->input(2))
      out = b.op(Op::kAdd, {out, b.op(Op::kReshape, {bias}, reshape_to(Ints{1, 1, 1, m}))});
    Value* y = n->outputs[0];
    n->outputs[0] = nullptr;
    y->producer = nullptr;
    b.op(Op::kTranspose, {out}, TransposeAttrs{Ints{0, 3, 1, 2}}, y);
    WEFT_RETURN_IF_ERROR(b.status());
  }
  graph.remove_nodes_if(
      [&](const Node& n) { return std::find(found.begin(), found.end(), &n) != found.end(); });
  return !found.empty();
}

} // namespace weft
