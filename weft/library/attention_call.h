// Attention's scores, softmax and weighted sum on the CPU as one call, a block of query rows
// at a time: softmax(Q x K^T * scale + mask) x V, where the scores of the block (at most
// kMaxBlockBytes) stay in the cache between the two products, instead of a [..., Sq, Sk]
// tensor written by one product, read and written by the softmax and read by the other. The
// products are oneDNN's sgemm (through the strides of absorbed Transposes, as dnnl_sgemm.h),
// the softmax's exponentials Weft's, in place, the division applied to the result's rows. Keys that every row of a block masks (at -inf or at most -1e30: a causal
// mask's later keys, a sliding window's earlier ones, padding) are left out of both products
// and the softmax. Whisper's encoder (6 heads of 1500 x 1500 scores, 54 MB a layer) spent
// half its time there. docs/library.md.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for "node" when it is the first product of such a chain over f32 values:
// MatMul(Q, K^T), then optionally Mul or Div by a constant scalar, then optionally Add of a
// mask that broadcasts to the scores, then Softmax over the last axis, then MatMul(., V); each
// node the sole reader of the one before; Transposes of Q, K^T, V and of the result absorbed
// where a matrix's rows or columns stay contiguous. Static scores only where they take at
// least kMinScoresBytes (smaller ones stay in the cache anyway, and the generated softmax
// fuses the scale and the mask); over symbolic dims (bound at each run) at any size, since
// the products would be sgemm's anyway (dnnl_sgemm.h). None otherwise, and under
// WEFT_ATTENTION=0.
// "readers" gives the nodes that read a value (none for a graph output). The call absorbs a
// guard for rows that mask every key between the Softmax and the second product: PyTorch's
// Where(IsNaN(p), 0, p) (the Softmax's result then read twice) and ONNX Attention's as
// decompose.cc expands it, Where(Equal(ReduceMax(mask, -1), -inf), 0, p); such rows give 0.
std::optional<LibraryCall>
attention_call(const Node& node, const SoleReader& sole_reader,
               const std::function<std::vector<const Node*>(const Value*)>& readers,
               const std::function<bool(const Node*)>& free);

} // namespace weft::library
