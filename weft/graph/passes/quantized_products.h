// quantized_products: a QDQ model's convolutions and matrix products (ONNX Runtime's
// quantize_static, its default format), DequantizeLinear -> Conv, MatMul or Gemm ->
// QuantizeLinear, as one QLinearConv, QLinearMatMul or weft.QLinearMatMulBias on the
// quantized activations and weights, where "library_takes" says a library runs that node in
// int8 (oneDNN on CPUs with VNNI: docs/library.md).
//
// Matched: Conv(DequantizeLinear(x, xs, xz), DequantizeLinear(W, ws, wz), B),
// MatMul(DequantizeLinear(x, xs, xz), DequantizeLinear(W, ws, wz)) or the same Gemm with
// alpha 1, A not transposed and B (with beta 1) a row, read only by QuantizeLinear(., ys,
// yz), where x is u8 or s8; xs, xz, ys and yz are constants per tensor; W is a constant s8
// with ws per tensor or per output channel (a convolution's axis 0, a product's [K, N] axis
// 1, a Gemm's transposed [N, K] axis 0, transposed here) and wz zero; and B is absent or a
// constant whose elements lie within 1e-3 of whole multiples of xs * ws (ONNX Runtime's
// quantizer writes it in those units; it becomes QLinearConv's int32 bias, or a Gemm's in
// weft.QLinearMatMulBias, which QLinearMatMul lacks). The QLinear op then computes the same sums in
// int32 and requantizes them with xs * ws / ys, where the QDQ form multiplies in f32 and
// rounds once at the QuantizeLinear: the outputs agree up to f32's rounding of the scale (a
// tie may fall the other way).
//
// Then, unconditionally: QuantizeLinear(m(DequantizeLinear(x, s, z)), s, z) per tensor, m a
// MaxPool or an op that only moves elements (Reshape, Transpose, Slice, ...), becomes m(x)
// on the 8-bit values, exactly (ONNX Runtime drops such pairs too). Where the values go on in
// float, quantized_in_float moves the DequantizeLinear back above m.
//
// Runs in stages::quantized_forms, before quantized_in_float (which folds and rewrites what
// is left). The replaced nodes are left for dead-code elimination, the QuantizeLinear as an
// Identity. Returns whether it changed the graph.
#pragma once

#include <functional>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> quantized_products(Graph& graph,
                                const std::function<bool(const Node&)>& library_takes);

} // namespace weft
