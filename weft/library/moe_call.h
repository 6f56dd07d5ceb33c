// weft.MoE (graph/attrs.h, MoEAttrs: com.microsoft's MoE and QMoE) on the CPU as Weft's own
// call, which runs each expert on the tokens routed to it only. Per run: each token's top k
// experts and weights from its logits; then for each expert with tokens, its rows gathered,
// fc1, the activation, fc2, and each row added into its token's output times its weight.
// Weights f32 constants [E, N, K] (oneDNN's sgemm per expert), or DequantizeLinear of 4- or
// 8-bit constants in blocks along K (QMoE's, kept quantized: QuantizedMatrix of
// weight_only_matmul.h per expert, the f32 weights never made). docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// Does the call take "moe" (weft.MoE)? x f32 [T, H] (T static or symbolic), logits f32 [T, E],
// fc1 [E, F, H] and fc2 [E, H, I] in one of the forms above (a DequantizeLinear read by
// nothing else), biases absent or f32 constants [E, F] and [E, H], F = 2 I for swiglu and I
// otherwise.
bool moe_call_takes(const Node& moe, const SoleReader& sole_reader);

// The call for "moe" when it takes it (absorbing the DequantizeLinears); none otherwise.
std::optional<LibraryCall> moe_call(const Node& moe, const SoleReader& sole_reader);

} // namespace weft::library
