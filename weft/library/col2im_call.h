// Col2Im on the CPU runs as a call of Weft's own. decompose writes it as a ConvTranspose with
// one-hot weights (a group per channel, a tap per input channel: graph/passes/decompose.cc),
// which oneDNN ran at 3-8% of the read bandwidth and generated code slower (VOLO's Fold of
// [1, 1728, 196] into [1, 192, 28, 28]: 0.8-0.9 ms, four a model); the call adds each column
// into its place in the channel's plane: docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for a 2-D ConvTranspose in that form (f32, static shapes, constant one-hot weights,
// no bias); none for others.
std::optional<LibraryCall> col2im_call(const Node& node);

} // namespace weft::library
