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
//   and Splits, and channel shuffles (a Reshape splitting the channels, a Transpose of the
//   factors, a Reshape merging them: the same permutation of channels-last's last axis),
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
// - cancels a Transpose whose reader undoes it.
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

Result<bool> channels_last(Graph& graph, const std::function<bool(const Node&)>& int8_call = {});

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

// A 2-D grouped convolution of 2-7 channels a group (ResNeXt's 32 groups of 4) onto a plane
// of 28x28 or more: channels-last, oneDNN has only its im2col kernel for it on AVX2 (128
// channels at 56x56: 3.7-4.3 ms, 8 GFLOP/s), and generated code reads each group's channels
// strided (7.5 ms); on the plain layout the generated kernel runs along rows (1.1 ms, and
// 1.0 ms for the two Transposes around it). channels_last leaves it plain and generated code
// runs it (driver/select_library.cc: generated_conv). With a 1x1 convolution on each side:
// 7.1 -> 3.4 ms; 2 channels a group 6.4 -> 3.0; 96 channels at 112x112 16.6 -> 7.7; 256 at
// 28x28 4.3 -> 3.6; but 512 at 14x14 2.3 -> 2.8, so smaller planes stay oneDNN's.
// ResNeXt-50 66.7 -> 56.7 ms (alternating runs, AMD EPYC, AVX2, 2 threads, 2026-12-01).
bool few_channels_a_group(const Node& conv);

} // namespace weft
