// TopK on the CPU over a long or symbolic axis runs as a call that selects the K first
// elements of each row with a partial sort, O(N log K) per row of N. The generated kernel
// (kernel/lower_positional.cc) ranks every element against every other, N^2 per row: fine
// for the short axes of attention or beam search, but SSDLite's postprocessing takes the top
// 300 of ~3,000 candidates for each of 90 classes, and those 90 TopKs took ~360 ms of a
// 450 ms run. docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"
#include "weft/library/shape_call.h"

namespace weft::library {

// Axes this long or shorter run as generated code when their length is static.
inline constexpr int64_t kGeneratedTopKMaxAxis = 64;

// The call for a TopK whose input is a plain number type (not f16, bf16 or narrower) and
// whose axis is symbolic or longer than kGeneratedTopKMaxAxis, or with other dims symbolic (a
// router's top experts of each token in a dynamic compile); none otherwise. Results are
// sorted; equal elements keep their order (the lower index first, as ONNX asks); NaN counts as
// larger than every number, as in PyTorch.
std::optional<LibraryCall> top_k_call(const Node& node);

// A TopK that a call runs (the CPU's above, CUDA's in cuda_top_k.h) over its input viewed as
// [A, N, B] (N the axis), outputs [A, K, B]: "call"'s values (X, Values[, Indices]), node
// and symbols are set, its kernel left to the caller. None where generated code runs the node
// (a short static axis) or a dim is unknown.
struct TopKView {
  CallExtent a, n, b, k;
  Dim k_dim;
  bool largest = true, indices = false;
};
std::optional<TopKView> top_k_view(const Node& node, LibraryCall& call);

} // namespace weft::library
