// ONNX Runtime's transformer optimizer's com.microsoft ops (contrib_ops.h): Attention,
// MultiHeadAttention, EmbedLayerNormalization, SkipLayerNormalization, the Gelu family,
// FusedMatMul and BiasAdd, each as the ai.onnx ops it computes (docs/onnx-versions.md).
#pragma once

#include <map>
#include <string>

#include "weft/onnx/contrib_expansion.h"

namespace weft::contrib {

// By qualified name: "com.microsoft.Attention".
std::map<std::string, ContribOp> transformer_ops();

// SimplifiedLayerNormalization(X, scale), ONNX Runtime's RMSNorm, which it registers in the
// ai.onnx domain: over the last axis only, without its output 1.
Status expand_simplified_layer_norm(Expansion& e);

} // namespace weft::contrib
