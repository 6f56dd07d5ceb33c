// channels_last: convolutions on channels-last activations, kept so across regions.
//
// oneDNN's fast convolutions take channels-last activations; an ONNX Conv's are channels
// first, so each call used to reorder its input and output (MobileNetV2: two reorders per
// convolution, more time than the convolutions). This pass, for the CPU's library calls:
// - turns each 2-D or 3-D f32 Conv into Op::kConvChannelsLast between two Transposes, to
//   [N, spatial..., C] before it (one per input value, shared by the convolutions reading it)
//   and back after it, and so each 1-D one of one group over constant weights (oneDNN's
//   matrix products over im2col tiles run those, whose rows are contiguous channels-last);
//   so each QLinearConv that "int8_call" says oneDNN runs in int8, into
//   Op::kQLinearConvChannelsLast (its 8-bit activations then stay channels-last between
//   convolutions, through the per-tensor QuantizeLinear and DequantizeLinear around them);
// - sinks each Transpose towards its readers through elementwise ops, a Concat of channels
//   and reductions that keep their dims (over the axes the Transpose maps them to), Slices
//   and Splits, Resizes by constant parameters (permuted; one that enlarges only where its
//   readers take the Transpose on, not before a graph output), and channel shuffles (a
//   Reshape splitting the channels, a Transpose of the factors, a Reshape merging them: the
//   same permutation of channels-last's last axis),
//   when each reader of its output is such an op (SiLU's Sigmoid and Mul both read it); a
//   reduction without keepdims whose kept axes stay in order needs no Transpose after; their
//   other operands are taken channels-last too: another such Transpose's input, a constant
//   transposed once, or any other 4-D operand through a Transpose of its own (one operand's
//   reorder instead of the result's, which may then cancel further on);
// - turns an inference BatchNormalization that a Transpose feeds into a per-channel scale
//   and shift (constants), which sink as above;
// - gives a pooling that a Transpose feeds one to channels-last as its only reader (its
//   other readers read a Transpose back, which sinks on): that pair is never cancelled, and
//   pools_between_regions (below) runs the pooling channels-last in its place;
// - cancels a Transpose whose reader undoes it;
// - last, hoists a Transpose back to channels-first over the Concat it reads (its only
//   reader), where the Transpose's result goes to Reshapes, Flattens or graph outputs: a
//   Concat along the channels of its inputs' Transposes, each writing its slice.
// Between two convolutions, activations then stay channels-last, and the Transposes left
// are at the region's boundaries (a Reshape, the graph's outputs, ops that stay plain): the
// reorders that remain, in the graph for `weft inspect` to show.
//
// Requires: a verified graph whose shapes are inferred (after specialize).
// Guarantees: the graph computes the same values; returns whether it changed anything.
#pragma once

#include <functional>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// "stays_plain": the convolutions that keep plain activations (generated code runs them
// faster so: library::few_channels_a_group), and the Resizes that a Transpose does not sink
// through (oneDNN's resampling runs them faster between their Transposes, absorbed:
// library::onednn_resamples).
Result<bool> channels_last(Graph& graph, const std::function<bool(const Node&)>& int8_call = {},
                           const std::function<bool(const Node&)>& stays_plain = {});

// pools_between_regions: a pooling between two channels-last regions (a Transpose to
// channels-first before it, one to channels-last after it) runs channels-last in place: an
// f32 one becomes Op::kMaxPoolChannelsLast or Op::kAveragePoolChannelsLast over the
// channels-last value, writing the Transpose after it's output (generated code or oneDNN's
// call, driver/select_library.cc); others' library calls absorb both Transposes. So may one
// whose output other poolings read too, each before a region of its own (Inception's
// stride-2 pooling, read by the next block's convolutions and by its pooling branch): the
// Transpose after it becomes its only reader, and those poolings read the value through a
// Transpose back. Without this, the pooling ran on plain activations with a reorder on each
// side.
// Runs after channels_last and the passes after it: canonicalize composes the Transposes
// it adds (to channels-last and back) into nothing.
Result<bool> pools_between_regions(Graph& graph);

} // namespace weft
