// expand_recurrent: rewrites RNN, GRU and LSTM nodes into the ops that compute them, one
// time step after another (unrolled).
//
// Per direction, the input's projection X * W^T + bias is one MatMul over the whole
// sequence; each step then adds H * R^T (a MatMul), applies the cell's gates (Split, Add, Mul,
// the activations, Clip) and, with sequence_lens, keeps the state of the batch entries whose
// sequence has ended (Where). The reverse direction with sequence_lens runs forward over each
// entry's reversed sequence (ReverseSequence). The outputs are stacked with Unsqueeze and
// Concat.
//
// Requires: a verified graph with inferred shapes.
// Guarantees: every RNN, GRU and LSTM node whose inputs have static shapes is replaced, but
// those of f32 values, and the slices it takes of constant weights are folded; the values it
// defined keep their names and are now defined by the new nodes. Nodes of f32 values wait for
// the compile's device (driver/stages.h: recurrent_forms), where the CPU's recurrent call
// (library/recurrent_call.h) takes them and other devices unroll them; nodes with dims known
// only at run time are left for after specialization. A node is refused, with an error naming
// it, when its sequence is longer than kMaxUnrolledSteps, or when it has a sequence_lens input
// below opset 10 (the masking needs Where and ReverseSequence).
#pragma once

#include <cstdint>
#include <functional>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Each step costs a few kernels, each compiled: an LSTM takes about 0.2 s of compile time per
// step (measured at 100 steps), so a longer sequence would take minutes.
inline constexpr int64_t kMaxUnrolledSteps = 256;

Status expand_recurrent(Graph& graph);

// Unrolls, as expand_recurrent does, every recurrent node whose inputs have static shapes but
// those "keep" takes; whether it unrolled any.
Result<bool> unroll_recurrent(Graph& graph, const std::function<bool(const Node&)>& keep);

} // namespace weft
