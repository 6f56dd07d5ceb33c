// ONNX Runtime's decoder-LLM com.microsoft ops (contrib_ops.h): GroupQueryAttention, with its
// KV cache (growing, or a sliding window's buffer) and rotary embedding, RotaryEmbedding, and
// CausalConvWithState, MoE and QMoE, as its GenAI model builder and its transformer optimizer write
// them for Llama, Mistral, Phi, Qwen, Gemma, LFM2, GPT-OSS and others (docs/onnx-versions.md).
#pragma once

#include <map>
#include <string>

#include "weft/onnx/contrib_expansion.h"

namespace weft::contrib {

// By qualified name: "com.microsoft.GroupQueryAttention".
std::map<std::string, ContribOp> decoder_ops();

} // namespace weft::contrib
