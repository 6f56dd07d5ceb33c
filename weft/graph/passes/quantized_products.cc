#include "weft/graph/passes/quantized_products.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"

namespace weft {

namespace {

// A constant with one element.
bool scalar(const Value* v) { return v && v->is_constant() && v->constant->num_elements() == 1; }

// The DequantizeLinear or QuantizeLinear "n" quantizes per tensor, or per output channel
// along axis "channel_axis" of a value of rank "rank" with "channels" of them, with no blocks.
bool per_tensor_or_channel(const Node& n, int64_t rank, int64_t channels, int64_t channel_axis) {
  const auto& at = n.attrs_as<QuantizeAttrs>();
  const Value* scale = n.input(1);
  if (at.block_size != 0 || !scale || !scale->is_constant() || scale->type.dtype != DType::kF32)
    return false;
  int64_t axis = at.axis < 0 ? at.axis + rank : at.axis;
  int64_t elements = scale->constant->num_elements();
  return elements == 1 ||
         (elements == channels && axis == channel_axis && scale->constant->rank() == 1);
}

// The bias in units of xs * ws[c], when each element is such a whole multiple.
std::optional<Tensor> integer_bias(const Tensor& bias, double xs, const Tensor& ws) {
  Tensor out(DType::kI32, bias.dims());
  for (int64_t c = 0; c < bias.num_elements(); ++c) {
    float unit =
        static_cast<float>(xs) * static_cast<float>(ws.get_double(ws.num_elements() == 1 ? 0 : c));
    double v = bias.get_double(c) / static_cast<double>(unit), r = std::nearbyint(v);
    if (!std::isfinite(v) || std::abs(v - r) > 1e-3 + 1e-6 * std::abs(v) || std::abs(r) > 2e9)
      return std::nullopt;
    out.set_int64(c, static_cast<int64_t>(r));
  }
  return out;
}

// A constant whose every element is 0.
bool all_zero(const Value* v) {
  if (!v->is_constant()) return false;
  std::vector<int64_t> values = v->constant->to_int64_vector();
  return std::all_of(values.begin(), values.end(), [](int64_t z) { return z == 0; });
}

// The [K, N] s8 transpose of the [N, K] s8 "w".
Tensor transposed(const Tensor& w) {
  int64_t n = w.dims()[0], k = w.dims()[1];
  Tensor out(DType::kI8, {k, n});
  const auto* from = reinterpret_cast<const int8_t*>(w.data());
  auto* to = reinterpret_cast<int8_t*>(out.data());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      to[c * n + r] = from[r * k + c];
  return out;
}

// A Gemm that is a product of A by B (or by B transposed) plus, if "c" is set, the
// constant row "c" (as ORT's quantizer writes a Linear): alpha 1, A not transposed, beta 1.
bool plain_gemm(const Node& gemm, const Value** c) {
  const auto& at = gemm.attrs_as<GemmAttrs>();
  *c = at.beta == 0.0f ? nullptr : gemm.input(2);
  if (at.alpha != 1.0f || at.trans_a || (*c && at.beta != 1.0f)) return false;
  if (!*c) return true;
  if (!(*c)->is_constant()) return false;
  const std::vector<int64_t>& dims = (*c)->constant->dims();
  return dims.size() == 1 || (dims.size() == 2 && dims[0] == 1);
}

// The QuantizeLinear that alone reads "v", or null.
Node* sole_quantize(const Graph& graph, const Value* v,
                    const std::unordered_map<const Value*, std::vector<Node*>>& readers) {
  auto it = readers.find(v);
  if (graph.is_graph_output(v) || it == readers.end() || it->second.size() != 1) return nullptr;
  Node* q = it->second[0];
  return q->op_type == Op::kQuantizeLinear && q->inputs[0] == v ? q : nullptr;
}

// QuantizeLinear(m(DequantizeLinear(x, s, z)), s, z) per tensor, m a MaxPool or an op that
// only moves elements, read only by that QuantizeLinear: m(x) on the quantized values, the
// QuantizeLinear left as an Identity. Exact: dequantizing is increasing for s > 0, and
// quantizing a dequantized value with the same s and z gives it back. ONNX Runtime drops such
// pairs too; QDQ ResNets' stem pooling ran in f32 between two conversions (0.3 ms of 6).
// Where the values go on in float, quantized_in_float's sink_dequantize moves the
// DequantizeLinear back above m.
bool quantized_values_through(Graph& graph, Node& q, std::unordered_map<const Value*, int>& uses) {
  static const std::set<Op> kMoving = {Op::kMaxPool, Op::kReshape,      Op::kTranspose,
                                       Op::kFlatten, Op::kSqueeze,      Op::kUnsqueeze,
                                       Op::kSlice,   Op::kDepthToSpace, Op::kSpaceToDepth};
  if (q.op_type != Op::kQuantizeLinear || !q.inputs[0]) return false;
  Node* m = q.inputs[0]->producer;
  if (!m || !kMoving.contains(m->op_type) || m->outputs.size() != 1 || uses[m->outputs[0]] != 1 ||
      graph.is_graph_output(m->outputs[0]))
    return false;
  Node* dq = m->inputs[0]->producer;
  if (!dq || dq->op_type != Op::kDequantizeLinear ||
      dq->inputs[0]->type.dtype != q.outputs[0]->type.dtype)
    return false;
  for (size_t i : {1, 2}) { // equal constant scales (positive) and zero points, one each
    const Value *a = q.input(i), *b = dq->input(i);
    if (!scalar(a) || !scalar(b) || a->type.dtype != b->type.dtype ||
        a->constant->get_double(0) != b->constant->get_double(0) ||
        (i == 1 && !(a->constant->get_double(0) > 0)))
      return false;
  }
  m->inputs[0] = dq->inputs[0];
  m->outputs[0]->type.dtype = q.outputs[0]->type.dtype;
  q.op_type = Op::kIdentity;
  q.def = find_op(Op::kIdentity, q.opset);
  q.attrs = NoAttrs{};
  q.inputs = {m->outputs[0]};
  return true;
}

} // namespace

Result<bool> quantized_products(Graph& graph,
                                const std::function<bool(const Node&)>& library_takes) {
  std::unordered_map<const Value*, std::vector<Node*>> readers;
  std::vector<Node*> products;
  for (const auto& n : graph.nodes()) {
    for (const Value* in : n->inputs)
      if (in) readers[in].push_back(n.get());
    if (n->op_type == Op::kConv || n->op_type == Op::kMatMul || n->op_type == Op::kGemm)
      products.push_back(n.get());
  }
  bool changed = false;
  for (Node* p : products) {
    bool conv = p->op_type == Op::kConv;
    Node *dx = p->inputs[0]->producer, *dw = p->inputs[1]->producer;
    Node* q = sole_quantize(graph, p->outputs[0], readers);
    if (!dx || !dw || !q || dx->op_type != Op::kDequantizeLinear ||
        dw->op_type != Op::kDequantizeLinear)
      continue;
    const Value *x = dx->inputs[0], *w = dw->inputs[0], *b = p->input(2);
    bool gemm = p->op_type == Op::kGemm, trans_b = gemm && p->attrs_as<GemmAttrs>().trans_b;
    if ((gemm && !plain_gemm(*p, &b)) ||
        (x->type.dtype != DType::kU8 && x->type.dtype != DType::kI8) || !w->is_constant() ||
        w->type.dtype != DType::kI8 || (conv ? w->constant->rank() < 3 : w->constant->rank() != 2))
      continue;
    // Output channels: a convolution's weights' axis 0, a product's axis 1 ([K, N]; [N, K]
    // for a Gemm's transposed B).
    int64_t rank = w->constant->rank(), axis = conv || trans_b ? 0 : 1;
    int64_t channels = w->constant->dims()[static_cast<size_t>(axis)];
    const Value *xz = dx->input(2), *wz = dw->input(2), *yz = q->input(2);
    DType y_dtype = q->outputs[0]->type.dtype;
    bool fits = per_tensor_or_channel(*dx, 1, 1, 0) && scalar(dx->input(1)) &&
                (!xz || scalar(xz)) && per_tensor_or_channel(*dw, rank, channels, axis) &&
                (!wz || all_zero(wz)) && per_tensor_or_channel(*q, 1, 1, 0) &&
                scalar(q->input(1)) && (!yz || scalar(yz)) &&
                (y_dtype == DType::kU8 || y_dtype == DType::kI8) &&
                (yz ? yz->type.dtype == y_dtype : y_dtype == DType::kU8) &&
                (!b || (b->is_constant() && b->constant->num_elements() == channels));
    if (!fits) continue;
    std::optional<Tensor> bias;
    if (b) {
      bias = integer_bias(*b->constant, dx->inputs[1]->constant->get_double(0),
                          *dw->inputs[1]->constant);
      if (!bias) continue;
    }
    NodeBuilder build(graph, *q);
    auto zero = [&](const Value* given, DType dtype) {
      return given ? const_cast<Value*>(given) : build.fill(dtype, {}, 0);
    };
    Value* weights =
        trans_b ? build.constant(p->name + "_weights", transposed(*w->constant)) : dw->inputs[0];
    std::vector<Value*> inputs = {dx->inputs[0], dx->inputs[1],    zero(xz, x->type.dtype),
                                  weights,       dw->inputs[1],    zero(wz, DType::kI8),
                                  q->inputs[1],  zero(yz, y_dtype)};
    if (bias) inputs.push_back(build.constant(p->name + "_bias", std::move(*bias)));
    Op op = conv ? Op::kQLinearConv : bias ? Op::kQLinearMatMulBias : Op::kQLinearMatMul;
    Value* y = build.op(op, inputs, conv ? p->attrs : OpAttrs{NoAttrs{}});
    Node* qlinear = y->producer;
    if (!build.status().ok() || !library_takes(*qlinear)) {
      graph.remove_nodes_if([&](const Node& n) { return &n == qlinear; });
      continue; // (the constants built go with dead-code elimination)
    }
    // The QuantizeLinear passes the QLinear op's result on; eliminate_identity removes it.
    q->op_type = Op::kIdentity;
    q->def = find_op(Op::kIdentity, q->opset);
    q->attrs = NoAttrs{};
    q->inputs = {y};
    changed = true;
  }
  std::unordered_map<const Value*, int> uses = graph.use_counts();
  for (const auto& n : graph.nodes())
    changed |= quantized_values_through(graph, *n, uses);
  return changed;
}

} // namespace weft
