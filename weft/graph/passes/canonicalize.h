// canonicalize: rewrites each node into the one form later layers handle.
//
// - Legacy broadcasting (binary ops before opset 7 with broadcast=1) becomes numpy
//   broadcasting: "B" is unsqueezed on the right so that it aligns at the legacy axis.
// - Attributes that newer opsets take as constant inputs move into the typed attributes
//   and the inputs are dropped: Reduce* axes, Squeeze/Unsqueeze axes, Split sizes, Clip
//   bounds, Slice starts/ends/axes/steps, Pad pads and value, the Reshape target, and
//   CumSum's axis.
// - Compress with a constant condition becomes a Gather of the kept positions (after a
//   Reshape that flattens the input, when it has no axis).
// - ScatterND of whole slices at a constant run of consecutive indices (a slice
//   assignment, as torch.onnx's dynamo exporter writes it) becomes a Concat of the updates
//   between slices of the data; when the data is a Transpose's output, in the frame before
//   that Transpose, followed by one Transpose of the result.
// - A Transpose of a Transpose becomes one Transpose of the first one's input (an Identity
//   when the permutations cancel).
// - Tanh(Softplus(x)) (Mish as the TorchScript exporter writes it) becomes the ratio that
//   Mish's lowering computes: n / (n + 2) with n = e^x (e^x + 2), 1 above 20.
// - Axes become non-negative and sorted where the rank is known. A reduction always lists
//   its axes; one with noop_with_empty_axes and no axes becomes an Identity.
//
// Requires: a verified graph (run after fold_constants, so that more inputs are constant).
// Guarantees: the forms above hold for every node whose inputs allow it; types and
// semantics are unchanged.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status canonicalize(Graph& graph);

} // namespace weft
