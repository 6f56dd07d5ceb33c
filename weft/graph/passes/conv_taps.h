// Conv taps that read padding, which canonicalize rewrites on each Conv with constant weights
// and static shapes (graph/passes/canonicalize.h). Along each window dim, the taps that read
// inside the input at an output position are a run [lo, hi]; runs of outputs share them.
#pragma once
#include "weft/graph/graph.h"

namespace weft {

// A Conv reading a Pad of zeros on its spatial dims only (the explicit padding of models from
// TensorFlow and of some exporters) reads the Pad's input instead, its pads grown by the
// Pad's: one convolution, no padded copy (nor the reorders around one, which
// channels-last regions do not take through). The Pad stays for its other readers.
void absorb_pad(Node& conv);

// Taps that read only padding at every output are dropped: the weights lose those rows and
// columns, the pads shrink to keep the output's positions. With dilation d, a tap off the
// centre reads a plane of d points or fewer only in padding: DeepLabV3's ASPP at rates 24
// and 36 over a 16x16 plane is a 1x1 convolution (each 1.1 GFLOP of 3x3 taps, 11 ms on
// oneDNN's im2col kernel, AMD EPYC, 2 threads, 2026-12-01).
void drop_padding_taps(Graph& graph, Node& conv);

// A Conv whose taps read inside at under half its tap-positions, of 50 MFLOP or more, splits
// into pieces: the outputs that read the same taps (a run per dim) are a Conv of those taps
// alone over the slice of the input they read, unpadded, and Concats join the pieces, which
// an Identity in the Conv's place passes on. DeepLabV3's ASPP at rate 12 over 16x16 reads
// inside with a quarter of its taps: 9 pieces, 10-12 -> about 3 ms.
void split_padded_conv(Graph& graph, Node& conv);

} // namespace weft
