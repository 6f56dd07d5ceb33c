// split_moments: a variance over axes that are not one trailing run becomes per-row
// statistics combined across rows (Chan et al.'s pairwise update with equal counts).
//
//   m = ReduceMean(x, A); v = ReduceMean((x - m)^2, A)
//
// where A = outer + inner, inner the trailing run of A (ending at the last axis) and outer
// the rest, becomes
//
//   r = ReduceMean(x, inner); s = ReduceMean((x - r)^2, inner)   (per row, in cache)
//   m = ReduceMean(r, A);     v = ReduceMean(s + (r - m)^2, A)   (across rows, small)
//
// which is the same variance (every row has the same count) and as stable as the two-pass
// form. A BatchNorm-in-training subgraph (A = {N, H, W} of NCHW) so reads its input twice
// instead of three times: the per-row passes share the row's loop (fusion keeps it in
// cache), where the direct form needs the whole mean before its second pass can start.
//
// Requires: canonicalized reductions (axes sorted, in the attributes).
// Guarantees: only f32 and f64 inputs of static shape whose rows have 64 elements or more
// and whose outer axes hold more than one row are rewritten; the squares (x - m)^2 of the
// direct form are left to eliminate_dead_code where nothing else reads them. Values keep
// their names and types.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status split_moments(Graph& graph);

} // namespace weft
