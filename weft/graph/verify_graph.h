// The verifier of the graph IR. It runs after every pass (driver/pipeline.cc).
//
// Checks that:
// - every node is in the op table at its opset, and its attributes have the table's struct;
// - every value is defined once (input, constant or one node output) before it is used;
// - names are unique, graph outputs are defined;
// - each node's output types agree with its shape function wherever both are known.
// A failure is a bug in the pass that ran last, so the message names it.
#pragma once

#include <string_view>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status verify_graph(const Graph& graph, std::string_view after_pass);

// Do two types agree where both are known? Unknown dims and ranks agree with anything.
bool types_agree(const TensorType& stored, const TensorType& inferred);

} // namespace weft
