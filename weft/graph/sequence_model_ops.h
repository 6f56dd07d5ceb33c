// The op table's entries for the sequence-model ops that passes/decompose_sequence_models.h
// turns into primitives: their attribute parsers and shape functions.
//
//   LinearAttention(q, k, v, past_state?, decay?, beta?) (27): y [B, T, Hq * dv],
//                            present_state [B, Hkv, dk, dv]
//   CausalConvWithState(x, w, bias?, past_state?) (27): y [B, C, L], present_state [B, C, k - 1]
//   FlexAttention(Q, K, V) (ai.onnx.preview 1): Y [B, Hq, L, Ev]; the modifier graphs are
//                            set by the importer (FlexAttentionAttrs)
#pragma once

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"

namespace weft {

OpAttrs parse_linear_attention(AttrParser& p);
OpAttrs parse_causal_conv(AttrParser& p);
OpAttrs parse_flex_attention(AttrParser& p);

TypesOrError infer_linear_attention(const Node& node);
TypesOrError infer_causal_conv(const Node& node);
TypesOrError infer_flex_attention(const Node& node);

} // namespace weft
