// quantized_in_float: the quantized forms that ONNX Runtime's tools write, as the float
// arithmetic they stand for, which library calls and generated kernels run at f32 speed
// (docs/library.md, "Quantized models").
//
// - A per-tensor DequantizeLinear (positive scale) moves above MaxPool, GlobalMaxPool and the
//   ops that only move elements (Reshape, Transpose, Flatten, ...), toward its QuantizeLinear.
// - A QuantizeLinear -> DequantizeLinear pair per tensor (a QDQ model's activations) becomes
//   Mul, Round, Clip and Mul in float: the same values, in ops that sink through
//   channels-last regions.
// - Gather(DequantizeLinear(t), indices), per tensor, becomes DequantizeLinear(Gather(t,
//   indices)): only the gathered elements are dequantized (an embedding table).
// - Mul(Conv(x, W, B), s), s constant per tensor or per output channel (through a Relu when
//   s > 0), becomes Conv(x, W * s, B * s) on constant W and B.
// - Cast(MatMulInteger(A, B, a_zero, b_zero), f32) on a constant B becomes an f32 MatMul of
//   A - a_zero and B - b_zero (quantize_dynamic's transformers), unless "stays_integer"
//   says a library runs that MatMulInteger as an int8 product; ConvInteger becomes a Conv
//   alike.
//
// Runs once the device is known, after specialization (stages::quantized_forms), when the
// products a library runs in int8 have been chosen (quantized_products.h): first it
// folds the DequantizeLinear of constant weights that fold_constants left for that choice.
// Guarantees: values unchanged up to f32 rounding (which a Cast to f32 does anyway); nodes
// left unused and Identities go with the passes after it (refold). Returns whether it
// changed the graph.
#pragma once

#include <functional>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> quantized_in_float(Graph& graph,
                                const std::function<bool(const Node&)>& stays_integer);

} // namespace weft
