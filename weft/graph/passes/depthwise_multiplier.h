// depthwise_multiplier: a depthwise convolution with a channel multiplier (each of C input
// channels its own group, M > 1 outputs a group: FastViT's 7x7 stride-2 downsamplings) as a
// depthwise convolution of M x C channels over the input with each channel repeated M times.
//
// Output channel g * M + m reads input channel g alone; repeated, input channel g * M + m is
// channel g, so one group a channel computes the same sums with the same weights. oneDNN has
// a fast kernel for the second form only (brdgmm_dw, against the generic jit kernel at 3-10% of
// the read bandwidth: FastViT-T8's four took 0.86 ms of its 9), and the repeat is one pass over
// channels-last activations. For the CPU's library calls, after channels_last, on its
// channels-last convolutions (weft.ConvChannelsLast, x [N, spatial..., C]):
//   y = ConvChannelsLast(Reshape(Concat(Unsqueeze(x, -1) x M, axis -1), [N, spatial..., C * M]),
//       W, b) with group C * M
//
// Requires: a verified graph whose shapes are inferred (after specialize).
// Guarantees: the graph computes the same values (f32, static shapes, group equal to the
// input channels, more output channels; other convolutions stay); returns whether it rewrote
// any.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> depthwise_multiplier(Graph& graph);

} // namespace weft
