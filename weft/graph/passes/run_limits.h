// run_limits: in a dynamic-shape compile, the limits (Graph::dim_limits) that ops need of
// their symbolic dims, which shape inference checks where the dims are static. Indexing ops:
// GatherElements' and ScatterElements' indices no longer than the data off the axis, and an
// axis that Gather, GatherElements, GatherND, ScatterElements, ScatterND or a loss's target
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) indexes into holds an element where
// an index is given. Their kernels clamp each index to its axis, and would read or write past
// the data where these do not hold (the loss of an NLL's expanded form over a target longer
// than its input changed from compile to compile). Gemm: each dim of C 1 or the output's
// there (its library call checked that only where the output was not empty). Pad in reflect
// mode: each symbolic axis longer than its pads (the kernel mirrors once). Each run
// checks the limits
// (Executable::bind); a run that breaks one compiles for its own shapes, and meets shape
// inference's error.
//
// Requires: inferred shapes.
#pragma once

#include "weft/graph/graph.h"

namespace weft {

void note_run_limits(Graph& graph);

} // namespace weft
