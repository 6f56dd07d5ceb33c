// products_in_bf16: f32 convolutions and matrix products that multiply operands rounded to
// bf16, under CompileSettings::allow_bf16 (an opt-in, as PyTorch's oneDNN bf16 math mode and
// OpenVINO's bf16 inference precision are), on CPUs that multiply bf16 natively.
//
// Each f32 Conv over constant weights and each f32 MatMul and Gemm reads its two operands
// (source and weights; A and B) through a Cast to bf16 and back; the Casts of constant
// weights fold to their bf16 values. The library then runs the node as oneDNN's bf16 call,
// which absorbs those Casts (library/dnnl.h, bf16 products) and sums in f32: rounding the
// operands (to within 2^-8 of each, relatively) is the only change to the arithmetic. A bias,
// a residual and every other node stay f32.
//
// Requires: a verified graph whose shapes are inferred. Guarantees: the graph computes the
// products of rounded operands; returns whether it changed.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> products_in_bf16(Graph& graph);

} // namespace weft
