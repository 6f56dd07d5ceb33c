// decompose_sequence_models: the sequence-model ops of the newer opsets as the primitives
// they are defined by; part of decompose (decompose.h), which calls it for these nodes.
//
//   LinearAttention (27): the recurrence unrolled over the sequence, in f32 as the reference
//       computes it: per step, the state [B, Hkv, dk, dv] decays by exp(decay) (gated rules),
//       the write v becomes beta * (v - S^T k) (delta rules), S += k v^T, and each group of
//       query heads reads q^T S of its KV head (a MatMul of q as [B, Hkv, group, dk]).
//   CausalConvWithState (27): past_state (or zeros) concatenated before the input, a depthwise
//       Conv (in f32 for f16 and bf16 inputs), SiLU when asked; present_state is the padded
//       input's last k - 1 positions.
//   FlexAttention (ai.onnx.preview 1): softmax(score_mod(Q K^T * scale)), prob_mod, times V,
//       the modifier graphs inlined (their nodes re-typed for the actual scores).
//
// Requires: static shapes on the node's inputs (is_sequence_model_op nodes wait for
// specialization until then); LinearAttention's sequence at most kMaxUnrolledSteps long.
// Guarantees: the output values keep their names and types; the node's place is taken by
// the new nodes.
#pragma once

#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Is "node" one of the ops this file decomposes?
bool is_sequence_model_op(const Node& node);

// Defines "outs" (the node's former outputs; null where unused) by new nodes before "node".
Status decompose_sequence_model(Graph& graph, Node& node, const std::vector<Value*>& outs);

} // namespace weft
