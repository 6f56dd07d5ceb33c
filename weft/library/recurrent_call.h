// RNN, GRU and LSTM of f32 values on the CPU as a call of Weft's own, at any length and over
// symbols (a dynamic-shape compile); other devices and dtypes, and runs without library calls
// (WEFT_ONEDNN=0), unroll them (expand_recurrent.h; stages::recurrent_forms chooses). Per
// direction, the steps run in one parallel region, each thread its share of the hidden units in
// every gate: the state times its columns of R^T (packed panels, kept while W and R stay, a
// product of Weft's own), X W^T in chunks of the sequence or added inside that product, those
// units' gates, then a barrier; or, for the LSTM and the RNN at a batch of 16 or more, each
// thread its own entries over all the units, with no barrier between steps. The run reads the
// sequence length and batch from its extents, so one call serves every shape. Same arithmetic
// as the unrolled ops, in f32; docs/library.md.
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
