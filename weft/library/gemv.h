// A matrix-vector product over constant f32 weights, y [1, N] = x [1, K] W [K, N] (or W^T), as
// Weft's own call: a large language model's decoding step at batch 1 is nothing but these, each a
// stream of K x N weights, and oneDNN 2.6's brgemm matmul moved them at 25-28 GB/s where
// ONNX Runtime's single-row kernel moved ~42 GB/s (AMD EPYC, 2 threads, 184 MB of weights).
// Each thread sums its share of W's rows, eight rows at a time (eight streams from memory),
// into a partial row in cache; the partials are added, with the bias and the oneDNN post-ops
// the matmul absorbed (dnnl_epilogue.h). Internal to library/ (dnnl.cc's matmul_call picks it).
#pragma once

#include <optional>
#include <vector>

#include "weft/library/dnnl_epilogue.h"

namespace weft::library {

// Weights of fewer elements stay oneDNN's (cached, compute not memory decides).
inline constexpr int64_t kGemvMinWeights = int64_t{1} << 18;

// Unless WEFT_GEMV=0 (read once; for comparisons: oneDNN then runs them).
bool gemv_enabled();

// The call for x [1, K] (a row, in any rank) times constant w [K, N] (plain row-major, any
// leading dims 1), or w [N, K] "transposed" (Gemm's transB: each output the dot product with a
// row), into y [1, N], plus "bias" [N] when given, then "ops" (their src1 spanning N or one
// element); none when it does not apply.
std::optional<LibraryCall> gemv_call(const Value* x, const Value* w, const Value* bias,
                                     const Value* y, const std::vector<PostOp>& ops,
                                     bool transposed = false);
// The same over values given by their element counts: x of K, y and bias of N, w of K x N
// laid out as above ([N, K] "transposed": a one-pixel 1x1 convolution's [N, K, 1, 1]), each
// binary post-op's src1 of N or one element.
std::optional<LibraryCall> gemv_call_flat(const Value* x, const Value* w, const Value* bias,
                                          const Value* y, const std::vector<PostOp>& ops, int64_t k,
                                          int64_t n, bool transposed);

} // namespace weft::library
