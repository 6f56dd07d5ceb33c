// RNN, GRU and LSTM of f32 values on the CPU as a call of Weft's own, at any length and over
// symbols (a dynamic-shape compile); other devices and dtypes unroll them (expand_recurrent.h;
// stages::recurrent_forms chooses). Per direction, the input's projection X W^T for the whole
// sequence is one sgemm (oneDNN's, which takes its dims at each call); the steps then run in
// one parallel region, each thread its share of the hidden units in every gate: the state
// times its columns of R^T (packed once a run, a product of Weft's own) and those units' gates,
// then a barrier. The run reads the sequence length and batch from its extents, so one call
// serves every shape. Same arithmetic as the unrolled ops, in f32; docs/library.md.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// Whether the call takes "node": an RNN, GRU or LSTM of f32 values (sequence_lens i32 or
// i64) with a static hidden size and input width.
bool runs_recurrent(const Node& node);

// The call for "node" when runs_recurrent; none otherwise.
std::optional<LibraryCall> recurrent_call(const Node& node);

} // namespace weft::library
