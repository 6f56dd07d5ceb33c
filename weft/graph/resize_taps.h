// The taps of a Resize along one axis, in f64: for each output position, the input positions
// it reads (clamped into the input) and their weights, as the generated kernel
// (kernel/lower_resize.cc) and ONNX's reference compute them. Nearest, linear and cubic are
// separable, so a Resize is a pass of these along each resized axis in turn: constant folding
// (evaluate.cc) and the CPU's call of Weft's own (library/resize_taps_call.h) run it so.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "weft/graph/attrs.h"

namespace weft {

using AxisTaps = std::vector<std::vector<std::pair<int64_t, double>>>;

// Whether resize_taps computes the attributes' form: all but antialias (whose filter widens
// with the scale) and tf_crop_and_resize (whose roi and extrapolation it does not take).
bool resize_taps_cover(const ResizeAttrs& a);

// The taps of an axis of "in" input positions resized to "out" by "scale".
AxisTaps resize_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale);

} // namespace weft
