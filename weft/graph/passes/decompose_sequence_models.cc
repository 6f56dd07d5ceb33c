#include "weft/graph/passes/decompose_sequence_models.h"

#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/decompose_builders.h"
#include "weft/graph/passes/expand_recurrent.h"

namespace weft {

namespace {

std::vector<int64_t> dims(const Value* x) { return shape_static_dims(*x->type.shape); }

using namespace decompose_builders; // NOLINT(google-build-using-namespace)

// The recurrence of linear_attention, one step per token. The inputs are viewed as
// [B, T, ...] so that one Gather along axis 1 takes a step's slice, shaped for the step's
// broadcasts and MatMuls.
struct LinearAttentionSteps {
  Value* query = nullptr;      // [B, T, Hkv, group, dk]
  Value* key_column = nullptr; // [B, T, Hkv, dk, 1]
  Value* key_row = nullptr;    // [B, T, Hkv, 1, dk] (delta rules)
  Value* value = nullptr;      // [B, T, Hkv, 1, dv]
  Value* decay = nullptr;      // [B, T, Hkv, dk or 1, 1] (gated rules)
  Value* beta = nullptr;       // [B, T, Hkv or 1, 1, 1] (delta rules)
};

// LinearAttention: see the header. Each step is the reference's: decay, the delta
// correction with the decayed state, the write, then the read by every query head of the
// group; the scale multiplies the stacked reads.
Status linear_attention(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<LinearAttentionAttrs>();
  Value* q = node.inputs[0];
  std::vector<int64_t> qd = dims(q), vd = dims(node.inputs[2]);
  int64_t batch = qd[0], steps = qd[1], hkv = a.kv_num_heads, group = a.q_num_heads / hkv;
  int64_t dk = qd[2] / a.q_num_heads, dv = vd[2] / hkv;
  if (steps > kMaxUnrolledSteps) {
    return Status::error(fmt::format("the sequence has {} steps; Weft unrolls LinearAttention "
                                     "over at most {} steps",
                                     steps, kMaxUnrolledSteps));
  }
  if (steps == 0) return Status::error("an empty sequence is not supported");
  const DType f32 = DType::kF32;
  auto view = [&](Value* x, Ints shape) {
    shape.insert(shape.begin(), {batch, steps});
    return constant_shape(b, cast_to(b, x, f32), shape);
  };
  LinearAttentionSteps in;
  in.query = view(q, {hkv, group, dk});
  in.key_column = view(node.inputs[1], {hkv, dk, 1});
  in.value = view(node.inputs[2], {hkv, 1, dv});
  if (Value* decay = node.input(4)) in.decay = view(decay, {hkv, dims(decay)[2] / hkv, 1});
  if (Value* beta = node.input(5)) {
    in.key_row = view(node.inputs[1], {hkv, 1, dk});
    in.beta = view(beta, {dims(beta)[2], 1, 1});
  }
  Value* state =
      node.input(3) ? cast_to(b, node.inputs[3], f32) : b.fill(f32, {batch, hkv, dk, dv}, 0.0);
  std::vector<Value*> reads;
  for (int64_t t = 0; t < steps; ++t) {
    if (in.decay) state = b.op(Op::kMul, {state, b.op(Op::kExp, {b.take(in.decay, t, 1)})});
    Value* v = b.take(in.value, t, 1); // [B, Hkv, 1, dv]
    if (in.beta) {
      Value* retrieved = b.op(Op::kMatMul, {b.take(in.key_row, t, 1), state});
      v = b.op(Op::kMul, {b.take(in.beta, t, 1), b.op(Op::kSub, {v, retrieved})});
    }
    state = b.op(Op::kAdd, {state, b.op(Op::kMul, {b.take(in.key_column, t, 1), v})});
    reads.push_back(b.op(Op::kMatMul, {b.take(in.query, t, 1), state})); // [B, Hkv, group, dv]
  }
  double scale = a.scale != 0.0f ? a.scale : 1.0 / std::sqrt(static_cast<double>(dk));
  Value* y = b.op(Op::kMul, {b.stack(reads, 1), scalar(b, "scale", f32, scale)});
  y = constant_shape(b, y, {batch, steps, a.q_num_heads * dv});
  define(b, cast_to(b, y, q->type.dtype), outs[0]);
  if (outs.size() > 1 && outs[1]) define(b, cast_to(b, state, outs[1]->type.dtype), outs[1]);
  return b.status();
}

// CausalConvWithState: see the header. The SiLU reads the convolution rounded to the
// input's type, as the reference does.
Status causal_conv(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  NodeBuilder b(graph, node);
  Value* x = node.inputs[0];
  Value* w = node.inputs[1];
  std::vector<int64_t> xd = dims(x);
  int64_t channels = xd[1], length = xd[2], taps = dims(w)[2];
  DType t = x->type.dtype;
  Value* padded = x;
  if (taps > 1) {
    Value* past = node.input(3) ? node.inputs[3] : b.fill(t, {xd[0], channels, taps - 1}, 0.0);
    padded = b.op(Op::kConcat, {past, x}, AxisAttrs{2});
  }
  // Conv runs in f32 or f64 (the CPU has no f16 or bf16 depthwise convolution).
  DType wide = t == DType::kF64 ? DType::kF64 : DType::kF32;
  std::vector<Value*> operands = {cast_to(b, padded, wide), cast_to(b, w, wide)};
  if (Value* bias = node.input(2)) operands.push_back(cast_to(b, bias, wide));
  ConvAttrs conv;
  conv.group = channels;
  conv.kernel_shape = {taps};
  Value* y = cast_to(b, b.op(Op::kConv, operands, conv), t);
  if (node.attrs_as<CausalConvAttrs>().silu) {
    Value* yw = cast_to(b, y, wide);
    y = cast_to(b, b.op(Op::kMul, {yw, b.op(Op::kSigmoid, {yw})}), t);
  }
  define(b, y, outs[0]);
  if (outs.size() > 1 && outs[1]) { // the last taps - 1 positions (none for one tap)
    int64_t end = length + taps - 1;
    define(b,
           b.op(Op::kSlice, {padded}, SliceAttrs{Ints{end - (taps - 1)}, Ints{end}, Ints{2}, {}}),
           outs[1]);
  }
  return b.status();
}

// The nodes of "body" (a modifier of FlexAttention), rebuilt before the node that "b" builds
// at, with "input" for its first input and "captured" for the rest. The new nodes' types are
// inferred from the actual values, not copied from the body (whose dims are symbols).
Result<Value*> inline_modifier(NodeBuilder& b, const Graph& body, Value* input,
                               const std::vector<Value*>& captured) {
  if (body.inputs.size() != 1 + captured.size() || body.outputs.size() != 1)
    return Status::error("a modifier graph must take one input and give one output");
  std::unordered_map<const Value*, Value*> map = {{body.inputs[0], input}};
  for (size_t i = 0; i < captured.size(); ++i)
    map[body.inputs[i + 1]] = captured[i];
  auto value = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    if (auto it = map.find(v); it != map.end()) return it->second;
    if (!v->is_constant()) return nullptr;
    return map[v] = b.constant(v->name, *v->constant);
  };
  for (const auto& n : body.nodes()) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs) {
      ins.push_back(value(in));
      if (in && !ins.back())
        return Status::error(
            fmt::format("modifier node '{}' reads '{}' before it is defined", n->name, in->name));
    }
    std::vector<Value*> made = b.node(n->op_type.id(), ins, n->attrs, n->outputs.size());
    for (size_t i = 0; i < made.size(); ++i) {
      if (n->outputs[i]) map[n->outputs[i]] = made[i];
    }
  }
  return value(body.outputs[0]);
}

// FlexAttention, as the reference implementation of onnx 1.23.2 computes it: KV heads
// repeated for grouped queries, Q and K each scaled by sqrt(scale) in their type, the scores
// in softmax_precision (f32, or f64 for f64 inputs) through score_mod, Softmax, prob_mod,
// then the weighted sum of V in that precision.
Status flex_attention(Graph& graph, Node& node, Value* into) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<FlexAttentionAttrs>();
  Value* q = node.inputs[0];
  Value* k = node.inputs[1];
  Value* v = node.inputs[2];
  DType t = q->type.dtype;
  std::vector<int64_t> qd = dims(q), kd = dims(k);
  if (qd[1] != kd[1]) { // each KV head serves q_heads / kv_heads query heads in a row
    int64_t group = qd[1] / kd[1];
    auto repeat = [&](Value* x) {
      std::vector<int64_t> d = dims(x);
      Value* u = b.op(Op::kUnsqueeze, {x}, AxesAttrs{Ints{2}});
      Value* e =
          b.op(Op::kExpand,
               {u, b.constant("groups", Tensor::vector_i64({d[0], d[1], group, d[2], d[3]}))});
      return constant_shape(b, e, {d[0], qd[1], d[2], d[3]});
    };
    k = repeat(k);
    v = repeat(v);
  }
  double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(qd[3]));
  Value* root = scalar(b, "scale", t, std::sqrt(static_cast<float>(scale)));
  Value* kt = b.op(Op::kTranspose, {b.op(Op::kMul, {k, root})}, TransposeAttrs{Ints{0, 1, 3, 2}});
  Value* scores = b.op(Op::kMatMul, {b.op(Op::kMul, {q, root}), kt});
  DType precision = a.softmax_precision.value_or(t == DType::kF64 ? DType::kF64 : DType::kF32);
  scores = cast_to(b, scores, precision);
  std::vector<Value*> extra(node.inputs.begin() + 3, node.inputs.end());
  auto split_at = extra.begin() + a.score_mod_captured;
  if (a.score_mod) {
    WEFT_ASSIGN_OR_RETURN(scores, inline_modifier(b, *a.score_mod, scores,
                                                  std::vector<Value*>(extra.begin(), split_at)));
    scores = cast_to(b, scores, precision);
  }
  Value* probs = b.op(Op::kSoftmax, {scores}, SoftmaxAttrs{-1});
  if (a.prob_mod) {
    WEFT_ASSIGN_OR_RETURN(
        probs, inline_modifier(b, *a.prob_mod, probs, std::vector<Value*>(split_at, extra.end())));
    probs = cast_to(b, probs, precision);
  }
  Value* y = b.op(Op::kMatMul, {probs, cast_to(b, v, precision)});
  define(b, cast_to(b, y, t), into);
  return b.status();
}

} // namespace

bool is_sequence_model_op(const Node& node) {
  return node.op_type == Op::kLinearAttention || node.op_type == Op::kCausalConvWithState ||
         node.op_type == Op::kFlexAttention;
}

Status decompose_sequence_model(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  if (node.op_type == Op::kLinearAttention) return linear_attention(graph, node, outs);
  if (node.op_type == Op::kCausalConvWithState) return causal_conv(graph, node, outs);
  return flex_attention(graph, node, outs[0]);
}

} // namespace weft
