// Weight-only quantized matmuls (ONNX Runtime's MatMulNBits: int4 language models) as Weft's own
// call: MatMul(A, Transpose(DequantizeLinear(q, scales, zero points, axis 1, block_size))) with
// q a constant u4 or u8 [N, K] (a byte per weight in Weft's memory), f32 scales and zero points
// per block of K, which MatMulNBits expands into at import (contrib_ops.cc). The f32 weights are
// never made: each thread takes a range of the N output columns, each a contiguous row of q,
// and dequantizes in registers. One row (a decoding step) reads the 4-bit weights packed two to
// a byte (a copy the call makes); up to 4 rows read each weight once for all of them; more rows
// (a prompt) dequantize chunks of 16 columns into f32 in cache, each once, and multiply every row
// by them in tiles of 4 x 4. MatMulNBits' accuracy level 4 (the DequantizeLinear's
// accuracy_level) on a CPU with VNNI quantizes the rows to int8 per block instead, as ONNX
// Runtime does, and multiplies them by the 4- or 8-bit weights as integers (vpdpbusd), the
// weights laid out for it in tiles of 32 columns. Without the call (no oneDNN, CUDA), the
// DequantizeLinear runs as a generated kernel at every run.
// docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for "matmul" (f32 A of rank 2 or more, static or symbolic rows) when its weights are
// that pattern, the DequantizeLinear and Transpose read by nothing else; none otherwise. It
// absorbs both.
std::optional<LibraryCall> weight_only_matmul_call(const Node& matmul,
                                                   const SoleReader& sole_reader);

} // namespace weft::library
