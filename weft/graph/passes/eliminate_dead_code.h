// eliminate_dead_code: removes nodes and constants that no graph output depends on.
//
// Requires: a verified graph.
// Guarantees: every remaining node has an output that is used by another node or is a
// graph output; every remaining constant is used. Graph inputs are kept even when unused:
// they are the model's interface.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status eliminate_dead_code(Graph& graph);

} // namespace weft
