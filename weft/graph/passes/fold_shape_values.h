// fold_shape_values: in a dynamic-shape compile, the shapes a graph computes from its
// values' shapes (Shape, then Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape, Cast and
// Mul of the results, as exporters write them for every view of a dynamic dim) evaluated as
// dims, symbols included, so that the Reshapes they feed know their targets.
//
// Requires: a verified graph whose shapes are inferred (infer_shapes), Slices canonical.
// Guarantees: a Reshape whose target the evaluation gives in full takes it as its
// symbolic_shape (0 and -1 resolved; a -1 divides products of symbols exactly) and loses its
// shape input; so does an Expand, with its target. The Shape nodes left unread are dead
// code. Returns whether any node did.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> fold_shape_values(Graph& graph);

} // namespace weft
