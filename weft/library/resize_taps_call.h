// Resize and Upsample on the CPU as a call of Weft's own: one pass along each resized axis,
// whose taps (input positions and weights, graph/resize_taps.h) are computed once when the call
// is built; a pass sums weighted rows of its input (the run of inner axes, contiguous), or
// along the last axis gathers from one row that stays in the L1. The generated kernel
// (kernel/lower_resize.cc) computes every element's taps again, in f64 with divisions, ceil and
// clamps, at 0.3-4 GB/s: nearest x2 of [128, 40, 40] 1.1 ms, bilinear with align_corners of
// [64, 64, 64] 4.8 ms, bicubic 17 ms. docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for a Resize or Upsample of f32 or f64 data, static shapes and constant scales or
// sizes, in a form resize_taps covers (not antialias, not tf_crop_and_resize); none otherwise.
// Over symbolic dims, the passes are built per run's extents (dynamic_call.h).
// Each pass adds its taps in the data's type (the generated kernel adds all of an element's
// taps in f64).
std::optional<LibraryCall> resize_taps_call(const Node& node);

} // namespace weft::library
