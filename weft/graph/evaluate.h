// Reference evaluation of one node on constant inputs, for constant folding and for the
// bodies of Loops that run on the host (control_flow.h).
//
// Covers the ops that exporters use to compute shapes and small constants (Shape, Gather,
// Concat, Reshape, Unsqueeze, Slice, Cast, Range, ConstantOfShape, integer arithmetic, ...),
// Resize and ArgMax/ArgMin (torchvision's pasting loops), and ScatterElements, ScatterND,
// GatherElements, Tile and CumSum (index and position tables that models build in forward, as
// BEiT's relative positions and DETR's sine embedding; evaluate_indexing.cc holds the gathers,
// scatters and Tile). It is written for
// clarity, not speed: folding only runs it on small tensors. Transpose, which folds weights of any
// size (x @ W.T), copies in cache-sized tiles; Concat, Slice and Resize, which host Loops run on
// images, copy or sum in rows.
#pragma once

#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Can evaluate_node fold "node" when its inputs are constant (or, for Shape and Size, when
// its input has a static shape)?
bool can_evaluate(const Node& node);

// The outputs of "node". Requires can_evaluate(node) and every present input constant
// (except the data input of Shape and Size, which needs only a static shape). Fails on
// inputs the op rejects (e.g. a Gather index out of range).
Result<std::vector<Tensor>> evaluate_node(const Node& node);

} // namespace weft
