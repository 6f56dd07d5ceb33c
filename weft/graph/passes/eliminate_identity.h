// eliminate_identity: removes nodes that pass their first input through unchanged.
//
// Those are Identity; Dropout at inference (no training_mode, mask unused); Cast to the
// input's own dtype; and Reshape, Squeeze, Unsqueeze, Flatten and Expand whose static
// output shape equals their input's.
//
// Requires: a verified graph.
// Guarantees: no such node remains, except where both its input and its output are part of
// the graph's interface (an input, constant or output of the graph), which would need a copy.
// Graph outputs keep their names: when an identity's output is a graph output, the value
// it forwarded takes over that name.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status eliminate_identity(Graph& graph);

// Does "node" forward its first input unchanged?
bool is_identity(const Node& node);

} // namespace weft
