#include "weft/graph/passes/canonicalize_rewrites.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

namespace weft::canonicalize_rewrites {

Value* insert_op(Graph& graph, const Node& at, Op op, std::vector<Value*> inputs, TensorType type,
                 OpAttrs attrs, const std::string& value_name, const std::string& node_name) {
  std::string base = fmt::format("{}_{}", at.name, op);
  Value* out =
      graph.add_value(graph.unique_name(value_name.empty() ? base : value_name), std::move(type));
  Node n;
  n.name = graph.unique_node_name(node_name.empty() ? base : node_name);
  n.op_type = op;
  n.opset = at.opset;
  n.conditional = at.conditional;
  n.def = find_op(op, at.opset);
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs = {out};
  graph.insert_node_before(&at, std::move(n));
  return out;
}

// MatMul(Mul(a, s), b) with s a float constant of one element, and the Mul's output read by
// this MatMul only, is Mul(MatMul(a, b), s) (either operand; two scales multiply). The scale
// then joins the code after the product (attention's scores: the Softmax's kernel), and a
// Transpose before it meets the MatMul, whose oneDNN call reads it through strides. PyTorch's
// scaled_dot_product_attention exports q and k each scaled by the square root of the scale,
// each with its Transpose a kernel of its own (the GPT-2 block's: 2 x 0.035 ms of 2.4).
// f32 and f64: the product rounds once more or less than before (an ulp or two of the scores).
void scale_after_matmul(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  const Value* out = node.outputs[0];
  // f16 products are scaled first for their range (scores past 65504 overflow), and rounded
  // in f16 the scores moved by 2 ulp (onnx's test_attention_4d_gqa_*_fp16).
  DType t = out->type.dtype;
  if (node.inputs.size() != 2 || (t != DType::kF32 && t != DType::kF64)) return;
  double scale = 1.0;
  std::array<Value*, 2> operands = {node.inputs[0], node.inputs[1]};
  for (Value*& v : operands) {
    const Node* mul = v->producer;
    if (!mul || mul->op_type != Op::kMul || mul->inputs.size() != 2 || uses[v] != 1 ||
        graph.is_graph_output(v))
      continue;
    for (int c = 0; c < 2; ++c) {
      const Value* s = mul->inputs[static_cast<size_t>(c)];
      Value* x = mul->inputs[static_cast<size_t>(1 - c)];
      if (!s->is_constant() || s->constant->num_elements() != 1 || !(x->type == v->type)) continue;
      double f = s->constant->get_double(0);
      if (!std::isfinite(f)) continue;
      scale *= f;
      v = x;
      break;
    }
  }
  if (operands[0] == node.inputs[0] && operands[1] == node.inputs[1]) return;
  for (int i = 0; i < 2; ++i) {
    Value*& in = node.inputs[static_cast<size_t>(i)];
    if (in != operands[static_cast<size_t>(i)]) {
      --uses[in];
      ++uses[operands[static_cast<size_t>(i)]];
    }
  }
  // The product takes the node's name; the node becomes the Mul that writes its output.
  std::string name = node.name;
  graph.rename_node(&node, graph.unique_node_name(name + "_scale"));
  Value* product = insert_op(graph, node, Op::kMatMul, {operands[0], operands[1]}, out->type,
                             NoAttrs{}, out->name + "_unscaled", name);
  Tensor factor(out->type.dtype, {});
  factor.set_double(0, scale);
  node.op_type = Op::kMul;
  node.def = find_op(Op::kMul, node.opset);
  node.attrs = NoAttrs{};
  node.inputs = {product,
                 graph.add_constant(graph.unique_name(name + "_scale"), std::move(factor))};
}

// Tanh(Softplus(x)), with the Softplus read by the Tanh alone, as Mish's lowering computes it
// (kernel/lower_elementwise.cc): n / (n + 2) with n = e^x (e^x + 2), and 1 from 20 on. The
// TorchScript exporter writes Mish so (x * tanh(softplus(x))), and the log and tanh after
// each other left its kernel scalar code. f32 and f64, from opset 9 (Where).
void tanh_of_softplus(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  Value* s = node.inputs[0];
  const Node* softplus = s->producer;
  DType t = s->type.dtype;
  if (!softplus || softplus->op_type != Op::kSoftplus || uses[s] != 1 || graph.is_graph_output(s) ||
      (t != DType::kF32 && t != DType::kF64) || node.opset < 9)
    return;
  Value* x = softplus->inputs[0];
  auto scalar = [&](const std::string& name, double v) {
    Tensor c(t, {});
    c.set_double(0, v);
    return graph.add_constant(graph.unique_name(node.name + name), std::move(c));
  };
  const TensorType& type = node.outputs[0]->type;
  Value* e = insert_op(graph, node, Op::kExp, {x}, type);
  Value* n = insert_op(graph, node, Op::kMul,
                       {e, insert_op(graph, node, Op::kAdd, {e, scalar("_two", 2)}, type)}, type);
  Value* ratio =
      insert_op(graph, node, Op::kDiv,
                {n, insert_op(graph, node, Op::kAdd, {n, scalar("_two", 2)}, type)}, type);
  Value* past = insert_op(graph, node, Op::kGreater, {x, scalar("_twenty", 20)},
                          TensorType{DType::kBool, type.shape});
  node.op_type = Op::kWhere; // in place of the Tanh
  node.def = find_op(Op::kWhere, node.opset);
  node.inputs = {past, scalar("_one", 1), ratio};
  --uses[s];
  uses[x] += 2; // the Exp and the Greater
}

// Add(Conv(x, w, b), v) with v one value per output channel ([C], [C, 1, 1], [1, C, 1, 1]
// against [N, C, H, W]: a diffusion UNet's time embedding), the Conv read by the Add alone, is
// Conv(x, w, b + v), the bias computed at run time (or folded here where v and b are
// constants). The convolution then runs as it does with its own bias: a per-channel operand
// was a binary post-op, which kept it off the Winograd kernels (a DDPM UNet's 192 -> 64
// channels at 64x64: 2.6 ms on oneDNN's direct kernel). f32; the Add node becomes the Conv.
void bias_into_conv(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  const TensorType& type = node.outputs[0]->type;
  if (node.inputs.size() != 2 || type.dtype != DType::kF32 || !type.has_static_shape()) return;
  const Shape& ys = *type.shape;
  size_t rank = ys.size();
  for (size_t c = 0; c < 2; ++c) {
    Value *y = node.inputs[c], *v = node.inputs[1 - c];
    Node* conv = y->producer;
    if (!conv || conv->op_type != Op::kConv || conv->outputs.size() != 1 || uses[y] != 1 ||
        graph.is_graph_output(y) || !(y->type == type) || rank < 3 || !v->type.has_static_shape() ||
        v->type.dtype != DType::kF32)
      continue;
    const Shape& vs = *v->type.shape;
    bool per_channel = vs.size() + 1 >= rank && vs.size() <= rank;
    for (size_t i = 0; i < vs.size() && per_channel; ++i)
      per_channel = vs[i] == (i + rank - vs.size() == 1 ? ys[1] : Dim(1));
    if (!per_channel) continue;
    int64_t channels = ys[1].value();
    Value* b = conv->input(2);
    Value* bias;
    if (v->is_constant() && (!b || b->is_constant())) {
      Tensor sum(DType::kF32, {channels});
      for (int64_t i = 0; i < channels; ++i)
        sum.set_double(i, v->constant->get_double(i) + (b ? b->constant->get_double(i) : 0.0));
      bias = graph.add_constant(graph.unique_name(conv->name + "_bias"), std::move(sum));
    } else {
      TensorType per{DType::kF32, Shape{Dim(channels)}};
      bias =
          insert_op(graph, node, Op::kReshape, {v}, per, ReshapeAttrs{false, Ints{channels}, {}});
      if (b) bias = insert_op(graph, node, Op::kAdd, {b, bias}, per);
    }
    // The Add becomes the convolution and takes its name; the Conv is left unread.
    std::string name = conv->name;
    graph.rename_node(conv, graph.unique_node_name(name + "_unbiased"));
    graph.rename_node(&node, name);
    node.op_type = Op::kConv;
    node.def = conv->def;
    node.opset = conv->opset;
    node.attrs = conv->attrs;
    node.inputs = {conv->inputs[0], conv->inputs[1], bias};
    --uses[y];
    ++uses[conv->inputs[0]];
    ++uses[conv->inputs[1]];
    return;
  }
}

} // namespace weft::canonicalize_rewrites
