// narrow_in_f32: f16 and bf16 convolutions, matrix products and poolings as f32 ones between
// Casts, for the CPU's f32 library calls. Generated code ran them correctly but slowly (an f16
// ResNet-18 at batch 1: 8.1 s a run, against 18 ms for ONNX Runtime, which inserts the same
// Casts); oneDNN's own f16 and bf16 primitives are not called.
//
// Each Conv, ConvTranspose, MatMul, Gemm, MaxPool (without Indices) and AveragePool whose
// inputs are all of one narrow float type reads Casts of them to f32 and writes an f32 value,
// which a Cast back to the narrow type turns into the node's output: the same value where the
// node's arithmetic sums in f32 and rounds once (as its generated code did, and as ONNX
// Runtime's does). Casts of constant weights fold (refold), so the library packs f32 weights;
// the Casts of activations fuse into the generated kernels next to them, and the channels_last
// pass sinks its Transposes through them.
//
// "ops": the node types to rewrite, those the device's library calls take (by default the
// CPU's: all six; CUDA's cuBLAS and cuDNN calls take Conv, MatMul and Gemm).
//
// Requires: a verified graph whose shapes are inferred. Guarantees: the graph computes the
// same values up to the summation order of the rewritten nodes; returns whether it changed.
#pragma once

#include <set>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

inline const std::set<Op> kNarrowedOps = {Op::kConv, Op::kConvTranspose, Op::kMatMul,
                                          Op::kGemm, Op::kMaxPool,       Op::kAveragePool};

Result<bool> narrow_in_f32(Graph& graph, const std::set<Op>& ops = kNarrowedOps);

} // namespace weft
