// RoiAlign on the CPU runs as a call of Weft's own: for each region, the sample points' taps
// and bilinear weights are computed once, then every channel reads them (as ONNX Runtime's
// pre-computed taps do). The generated kernel (kernel/lower_resize.cc) computes them again
// for each channel: a Faster R-CNN's box pooling (hundreds of regions, 256 channels, 7x7
// bins of 2x2 samples) took about half of its run that way. docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for a RoiAlign with f32 or f64 data, i64 batch indices and a sampling ratio above
// 0 (any count of regions, symbolic or not); none otherwise. The same arithmetic as the
// generated kernel: f64 throughout, a point more than a pixel outside the input weighs 0, max
// mode takes the largest weighted tap.
std::optional<LibraryCall> roi_align_call(const Node& node);

} // namespace weft::library
