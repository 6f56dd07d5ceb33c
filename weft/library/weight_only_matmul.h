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

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph/tensor.h"
#include "weft/library/dnnl.h"

namespace weft::library {

// The constants of a DequantizeLinear of weights quantized in blocks along their last axis: q
// u4 or u8 [..., N, K] (a byte per weight), f32 scales and zero points of q's type
// [..., N, ceil(K / block)]; int8: the DequantizeLinear's accuracy_level is 4.
struct BlockQuantized {
  TensorRef q, scale, zero;
  int bits;
  int64_t block;
  bool int8;
};

// "dq" in that form, if it is.
std::optional<BlockQuantized> block_quantized(const Node& dq);

// One such matrix [N, K], laid out at construction for the kernels that read it: packed two
// 4-bit weights a byte for one row, or with "int8" on a CPU with VNNI in tiles for int8
// activations; otherwise its kernels read q as given.
class QuantizedMatrix {
public:
  // "q_packed": q holds two 4-bit weights a byte as ONNX packs them (else a byte a weight);
  // read here only.
  QuantizedMatrix(int64_t k, int64_t n, int64_t block, int bits, const uint8_t* q, bool q_packed,
                  const float* scale, const uint8_t* zero, bool int8);

  // y [rows, N] = a [rows, K] times the weights transposed, on every thread (OpenMP); q (a
  // byte a weight), scale and zero are the matrix's constants as given (q read unless the
  // matrix holds its own layout, and may then be null).
  void multiply(const float* a, int64_t rows, const uint8_t* q, const float* scale,
                const uint8_t* zero, float* y) const;

  int bits() const { return bits_; }
  bool int8_activations() const { return !tiles_.empty(); }
  // Whether multiply reads q: not where it holds a layout (the int8 tiles, or the packed
  // 4-bit weights, which prompts dequantize from too).
  bool reads_q() const { return tiles_.empty() && packed_.empty(); }
  // "K .. N .. (blocks of ..)", and the layout it holds.
  std::string describe() const;

private:
  // From q as the constructor takes it ("q_packed": two a byte).
  void tile(const uint8_t* q, bool q_packed, const float* scale, const uint8_t* zero);
  void pack(const uint8_t* q, bool q_packed);

  int64_t k_, n_, block_;
  int bits_;
  // The layouts it holds are streamed at each run, in Weft's host memory (huge pages from 2
  // MiB, host_memory.h), as the constants q, scale and zero are.
  using Bytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;
  Bytes packed_; // for one row, where the form allows (4 bits, K and blocks of 32)
  // The int8 path's (tile()), where accuracy level 4 asks for it and the CPU has VNNI; then
  // there is no packed_.
  Bytes tiles_;
  std::vector<float> tile_scale_, tile_zero_scale_;
  std::optional<uint8_t> uniform_zero_;
};

// The QuantizedMatrix of each [N, K] matrix of "w" (q [..., N, K], a mixture of experts' one
// per expert), made once while its constants live (Tensor::derived): one copy for every call
// and every compile of the model that reads them, where each compile for a new shape held
// one more.
std::shared_ptr<const std::vector<QuantizedMatrix>> quantized_matrices(const BlockQuantized& w);

// The call for "matmul" (f32 A of rank 2 or more, static or symbolic rows) when its weights are
// that pattern, the DequantizeLinear and Transpose read by nothing else; none otherwise. It
// absorbs both.
std::optional<LibraryCall> weight_only_matmul_call(const Node& matmul,
                                                   const SoleReader& sole_reader);

} // namespace weft::library
