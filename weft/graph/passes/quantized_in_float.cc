#include "weft/graph/passes/quantized_in_float.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "weft/graph/evaluate.h"
#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/eliminate_dead_code.h"

namespace weft {

namespace {

// "node" in place, as "op" of "inputs": its outputs stay.
void become(Node& node, Op op, std::vector<Value*> inputs, OpAttrs attrs = NoAttrs{}) {
  node.op_type = op;
  node.def = find_op(op, node.opset);
  node.attrs = std::move(attrs);
  node.inputs = std::move(inputs);
}

// The one value of a constant with one element, or nullopt.
std::optional<double> scalar_constant(const Value* v) {
  if (!v || !v->is_constant() || v->constant->num_elements() != 1) return std::nullopt;
  return v->constant->get_double(0);
}

// A per-tensor DequantizeLinear moves above the ops that only move or pick its input's
// elements, and above max pooling (dequantizing is increasing for a positive scale), until
// it meets what they read; returns it there. ONNX Runtime's QOperator format runs MaxPool,
// Reshape and Transpose on the quantized values between a QuantizeLinear and its
// DequantizeLinear, which then form the pair below. Each op moved now runs in float.
Node* sink_dequantize(Graph& graph, Node* dq, std::unordered_map<const Value*, int>& uses) {
  static const std::set<Op> kOrderPreserving = {Op::kMaxPool,      Op::kGlobalMaxPool, Op::kReshape,
                                                Op::kTranspose,    Op::kFlatten,       Op::kSqueeze,
                                                Op::kUnsqueeze,    Op::kIdentity,      Op::kSlice,
                                                Op::kDepthToSpace, Op::kSpaceToDepth};
  std::optional<double> s = scalar_constant(dq->inputs[1]);
  if (!s || *s <= 0 || (dq->inputs.size() > 2 && !scalar_constant(dq->inputs[2]))) return dq;
  for (;;) {
    Value* moved = dq->inputs[0];
    Node* m = moved->producer;
    if (!m || !kOrderPreserving.contains(m->op_type) || uses[moved] != 1 ||
        graph.is_graph_output(moved) || m->outputs.size() != 1)
      return dq;
    // The op now reads the new DequantizeLinear and writes floats, which the old one,
    // now an Identity, passes on (eliminate_identity removes it).
    std::vector<Value*> inputs = dq->inputs;
    inputs[0] = m->inputs[0];
    Value* dequantized = NodeBuilder(graph, *m).op(Op::kDequantizeLinear, inputs, dq->attrs);
    m->inputs[0] = dequantized;
    moved->type.dtype = dequantized->type.dtype;
    become(*dq, Op::kIdentity, {moved});
    uses[dequantized] = 1;
    dq = dequantized->producer;
  }
}

// DequantizeLinear(QuantizeLinear(x, s, z), s, z), per tensor, the QuantizeLinear read only
// there (a QDQ model's activations between its operators): in float, x * (1 / s) rounded
// half to even, clipped to the integer type's range less z, times s. The same values (the
// reciprocal as canonicalize_div's), as ops that sink through channels-last regions (and
// whose first step library calls absorb), where the pair was two kernels of its own.
bool expand_quantize_dequantize(Graph& graph, Node& dq,
                                const std::unordered_map<const Value*, int>& uses) {
  Node* q = dq.inputs[0]->producer;
  if (!q || q->op_type != Op::kQuantizeLinear || dq.opset < 11 || dq.inputs.size() != 3 ||
      q->inputs.size() != 3 || q->inputs[0]->type.dtype != DType::kF32 ||
      dq.outputs[0]->type.dtype != DType::kF32 || graph.is_graph_output(dq.inputs[0]) ||
      uses.at(dq.inputs[0]) != 1)
    return false;
  std::optional<double> s = scalar_constant(q->inputs[1]), z = scalar_constant(q->inputs[2]);
  if (!s || !z || s != scalar_constant(dq.inputs[1]) || z != scalar_constant(dq.inputs[2]) ||
      q->inputs[1]->type.dtype != DType::kF32)
    return false;
  double lo = 0, hi = 0;
  switch (q->outputs[0]->type.dtype) {
    case DType::kU8: hi = 255; break;
    case DType::kI8: lo = -128, hi = 127; break;
    case DType::kU16: hi = 65535; break;
    case DType::kI16: lo = -32768, hi = 32767; break;
    default: return false;
  }
  auto inverse = static_cast<float>(1.0 / *s);
  if (!std::isfinite(inverse) || std::abs(inverse) < std::numeric_limits<float>::min())
    return false;
  NodeBuilder b(graph, dq);
  Value* scaled = b.op(Op::kMul, {q->inputs[0], b.fill(DType::kF32, {}, inverse)});
  Value* rounded = b.op(Op::kRound, {scaled});
  Value* clipped = b.op(Op::kClip, {rounded},
                        ClipAttrs{static_cast<float>(lo - *z), static_cast<float>(hi - *z)});
  become(dq, Op::kMul, {clipped, b.fill(DType::kF32, {}, *s)});
  return true;
}

// Gather(DequantizeLinear(t, s, z), indices), per tensor, the DequantizeLinear read only
// there: DequantizeLinear(Gather(t, indices), s, z), which dequantizes only the elements
// gathered. quantize_static's embedding tables are such a t, too large to fold: DistilBERT
// dequantized its 23M-element table at every run, 6.8 of 30 ms.
bool gather_then_dequantize(Graph& graph, Node& gather,
                            const std::unordered_map<const Value*, int>& uses) {
  if (gather.op_type != Op::kGather) return false;
  Node* dq = gather.inputs[0]->producer;
  if (!dq || dq->op_type != Op::kDequantizeLinear || uses.at(gather.inputs[0]) != 1 ||
      graph.is_graph_output(gather.inputs[0]) || !scalar_constant(dq->inputs[1]) ||
      (dq->input(2) && !scalar_constant(dq->input(2))) ||
      dq->attrs_as<QuantizeAttrs>().block_size != 0)
    return false;
  Value* picked =
      NodeBuilder(graph, gather).op(Op::kGather, {dq->inputs[0], gather.inputs[1]}, gather.attrs);
  std::vector<Value*> inputs = dq->inputs;
  inputs[0] = picked;
  become(gather, Op::kDequantizeLinear, inputs, dq->attrs); // (the table's goes unread)
  return true;
}

// Mul(Conv(x, W, B), s), s a constant per tensor or per output channel, W and B constant,
// the Conv read only there: Conv(x, W * s, B * s); through a Relu between them too when s is
// positive. A quantized model's activations leave each convolution as x * (1 / scale)
// (expand_quantize_dequantize); folded, the call has no binary post-op left, which oneDNN's
// Winograd kernels require. A frozen batch norm (torchvision's FrozenBatchNorm2d, in DETR's
// and the detectors' backbones) is such a Mul and an Add of a per-channel shift, which then
// folds into the bias (canonicalize's bias_into_conv, when the graph refolds): a residual
// after it is the call's first post-op, a sum, which oneDNN's brgemm kernels take.
bool fold_scale_into_convolution(Graph& graph, Node& mul,
                                 const std::unordered_map<const Value*, int>& uses) {
  if (mul.op_type != Op::kMul || mul.inputs.size() != 2 || mul.inputs[0] == mul.inputs[1])
    return false;
  int from = mul.inputs[0]->producer ? 0 : 1;
  Value *y = mul.inputs[from], *s = mul.inputs[1 - from];
  auto single_use = [&](const Value* v) { return uses.at(v) == 1 && !graph.is_graph_output(v); };
  Node* conv = y->producer;
  Node* relu = conv && conv->op_type == Op::kRelu ? conv : nullptr;
  if (relu && single_use(relu->outputs[0])) conv = relu->inputs[0]->producer;
  if (!conv || conv->op_type != Op::kConv || !single_use(conv->outputs[0]) || !s->is_constant() ||
      s->type.dtype != DType::kF32 || y->type.dtype != DType::kF32 ||
      !conv->inputs[1]->is_constant() || (conv->input(2) && !conv->input(2)->is_constant()) ||
      !y->type.has_static_shape() || mul.outputs[0]->type.shape != y->type.shape)
    return false;
  // The scale of each output channel: s is one element, or M along y's axis 1.
  const Tensor &w = *conv->inputs[1]->constant, &scale = *s->constant;
  int64_t m = w.dims()[0], rank = static_cast<int64_t>(y->type.shape->size());
  std::vector<int64_t> dims = scale.dims();
  dims.insert(dims.begin(), std::max<int64_t>(0, rank - scale.rank()), 1);
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (dims[i] != 1 && (i != 1 || dims[i] != m)) return false;
  }
  if (static_cast<int64_t>(dims.size()) != rank || w.dtype() != DType::kF32) return false;
  auto channel_scale = [&](int64_t c) {
    return static_cast<float>(scale.get_double(scale.num_elements() == 1 ? 0 : c));
  };
  for (int64_t c = 0; relu && c < m; ++c) {
    if (!(channel_scale(c) > 0)) return false;
  }
  auto scaled = [&](const Value* v, int64_t per_channel) {
    const Tensor& t = *v->constant;
    Tensor out(DType::kF32, t.dims());
    for (int64_t i = 0; i < t.num_elements(); ++i)
      out.set_double(i, static_cast<float>(t.get_double(i)) * channel_scale(i / per_channel));
    return graph.add_constant(graph.unique_name(v->name + "_scaled"), std::move(out));
  };
  conv->inputs[1] = scaled(conv->inputs[1], w.num_elements() / m);
  if (conv->input(2)) conv->inputs[2] = scaled(conv->inputs[2], 1);
  // The Mul becomes y's producer (the Conv, or the Relu after it), which is left unread: the
  // Mul's readers then read the convolution itself (an Identity in its place would hide it
  // from bias_into_conv, which runs before eliminate_identity).
  Node* producer = y->producer;
  std::string name = producer->name;
  graph.rename_node(producer, graph.unique_node_name(name + "_unscaled"));
  graph.rename_node(&mul, name);
  mul.opset = producer->opset;
  become(mul, producer->op_type, producer->inputs, producer->attrs);
  return true;
}

// Cast(MatMulInteger(A, B, a_zero_point, b_zero_point), f32), B and b_zero_point constant
// (ONNX Runtime's quantize_dynamic writes it for every weight, after a DynamicQuantizeLinear
// of the activations): MatMul(Cast(A, f32) - a_zero_point, B - b_zero_point), the weights
// an f32 constant that the library packs once. ConvInteger (its CNNs) likewise becomes a Conv,
// whose zero padding is the spec's padding with x_zero_point. The sums are the same integers
// up to f32's rounding past 2^24, which the Cast to f32 rounds anyway.
bool integer_product_in_float(Graph& graph, Node& cast,
                              const std::unordered_map<const Value*, int>& uses,
                              const std::function<bool(const Node&)>& stays_integer) {
  if (cast.op_type != Op::kCast || cast.attrs_as<CastAttrs>().to != DType::kF32) return false;
  Node* p = cast.inputs[0]->producer;
  if (!p || (p->op_type != Op::kMatMulInteger && p->op_type != Op::kConvInteger) ||
      uses.at(cast.inputs[0]) != 1 || graph.is_graph_output(cast.inputs[0]) ||
      !p->inputs[1]->is_constant() || stays_integer(*p))
    return false;
  bool conv = p->op_type == Op::kConvInteger;
  const Tensor& b = *p->inputs[1]->constant;
  const Value *a_zero = p->input(2), *b_zero = p->input(3);
  if ((!conv && b.rank() != 2) || (b_zero && !b_zero->is_constant()) ||
      (a_zero &&
       (!a_zero->type.has_static_shape() || shape_num_elements(*a_zero->type.shape) != 1)))
    return false;
  // The weights' zero point: one, or one per column of B (per output channel of W).
  int64_t channels = conv ? b.dims()[0] : b.dims()[1];
  int64_t zeros = b_zero ? b_zero->constant->num_elements() : 1;
  if (zeros != 1 && zeros != channels) return false;
  Tensor weights(DType::kF32, b.dims());
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    int64_t channel = conv ? i / (b.num_elements() / channels) : i % channels;
    int64_t zero = b_zero ? b_zero->constant->get_int64(zeros == 1 ? 0 : channel) : 0;
    weights.set_double(i, static_cast<double>(b.get_int64(i) - zero));
  }
  NodeBuilder build(graph, cast);
  Value* a = build.op(Op::kCast, {p->inputs[0]}, CastAttrs{DType::kF32, true});
  if (a_zero)
    a = build.op(Op::kSub, {a, build.op(Op::kCast, {p->inputs[2]}, CastAttrs{DType::kF32, true})});
  // The integer op goes with the next dead-code pass.
  become(cast, conv ? Op::kConv : Op::kMatMul, {a, build.constant("weights", std::move(weights))},
         conv ? p->attrs : OpAttrs{NoAttrs{}});
  return true;
}

// DequantizeLinear of constants read only as the weights of Conv, MatMul or Gemm, which
// fold_constants leaves for quantized_products.h, folds here.
bool fold_dequantized_weights(Graph& graph) {
  std::unordered_map<const Value*, int> uses = graph.use_counts(), weight_uses;
  for (const auto& n : graph.nodes()) {
    if ((n->op_type == Op::kConv || n->op_type == Op::kMatMul || n->op_type == Op::kGemm) &&
        n->input(1))
      ++weight_uses[n->input(1)];
  }
  std::vector<Node*> folded;
  for (const auto& n : graph.nodes()) {
    if (n->op_type != Op::kDequantizeLinear) continue;
    const Value* out = n->outputs[0];
    if (uses[out] != weight_uses[out] ||
        !std::all_of(n->inputs.begin(), n->inputs.end(),
                     [](const Value* v) { return !v || v->is_constant(); }))
      continue;
    Result<std::vector<Tensor>> value = evaluate_node(*n);
    if (!value.ok() || value->size() != 1) continue; // left as a node
    graph.make_constant(n->outputs[0], std::move((*value)[0]));
    folded.push_back(n.get());
  }
  graph.remove_nodes_if(
      [&](const Node& n) { return std::find(folded.begin(), folded.end(), &n) != folded.end(); });
  return !folded.empty();
}

} // namespace

Result<bool> quantized_in_float(Graph& graph,
                                const std::function<bool(const Node&)>& stays_integer) {
  // (What quantized_products replaced goes first: its weights need no folding.)
  WEFT_RETURN_IF_ERROR(eliminate_dead_code(graph));
  bool changed = fold_dequantized_weights(graph);
  // Collect first: the rewrites insert nodes.
  auto collect = [&] {
    std::vector<Node*> nodes;
    for (const auto& n : graph.nodes())
      nodes.push_back(n.get());
    return nodes;
  };
  std::unordered_map<const Value*, int> uses = graph.use_counts();
  for (Node* node : collect()) {
    if (node->op_type != Op::kDequantizeLinear) continue;
    Node* dq = sink_dequantize(graph, node, uses);
    changed |= dq != node;
    changed |= expand_quantize_dequantize(graph, *dq, uses);
  }
  // The QuantizeLinears that the pairs leave unread would count as readers below.
  WEFT_RETURN_IF_ERROR(eliminate_dead_code(graph));
  uses = graph.use_counts();
  for (Node* node : collect()) {
    changed |= fold_scale_into_convolution(graph, *node, uses);
    changed |= gather_then_dequantize(graph, *node, uses);
    changed |= integer_product_in_float(graph, *node, uses, stays_integer);
  }
  // What the rewrites leave unused goes with the next dead-code pass.
  return changed;
}

} // namespace weft
