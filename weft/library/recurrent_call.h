// RNN, GRU and LSTM on the CPU as a call of Weft's own, for what expand_recurrent does not
// unroll: a sequence or batch over symbols (a dynamic-shape compile) and sequences longer than
// kMaxUnrolledSteps. Per direction, the input's projection X W^T for the whole sequence is one
// sgemm (oneDNN's, which takes its dims at each call); each step multiplies the state by R^T
// (sgemm again) and applies the cell's gates in one pass over the batch. The run reads the
// sequence length and batch from its extents, so one call serves every shape. Same arithmetic
// as the unrolled ops (expand_recurrent.h), in f32; docs/library.md.
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
