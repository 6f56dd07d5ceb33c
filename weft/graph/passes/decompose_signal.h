// Signal-processing ops that decompose (passes/decompose.h) calls for, as the primitives
// they are defined by.
//
//   STFT(signal, frame_step, window, frame_length) (17): the frames gathered from the
//       signal ([batch, frames, frame_length, 1 or 2]), times the window, then a DFT along
//       the frame (one-sided unless onesided = 0)
//   MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
//       upper_edge_hertz) (17): the triangular filters computed elementwise in f64 from the
//       band edges (which fold to a constant when the inputs are constant)
//
// Requires: static shapes; frame_step and frame_length (when given) constant; num_mel_bins
// and dft_length constant.
// Guarantees: "y" is defined by the new nodes, with the node's output type.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Can "node" (STFT) be decomposed now?
bool stft_ready(const Node& node);
Status decompose_stft(Graph& graph, Node& node, Value* y);
// Can "node" (MelWeightMatrix) be decomposed now?
bool mel_weight_matrix_ready(const Node& node);
Status decompose_mel_weight_matrix(Graph& graph, Node& node, Value* y);

} // namespace weft
