// infer_shapes: refines value types with the op table's shape functions.
//
// ONNX shape inference runs at import; after constant folding more inputs are constant, so
// shape functions can turn symbolic or unknown dims into integers (e.g. a Reshape whose
// target was computed by a folded Shape subgraph).
//
// Requires: a verified graph.
// Guarantees: a dim becomes static wherever a node's shape function determines it; a
// missing shape is filled in wherever the function determines the rank, with fresh symbols
// for the dims it does not determine. Fails when a shape function finds the node's inputs
// contradictory, except for nodes of If branches (Node::conditional), which are left as they
// are.
#pragma once

#include <set>
#include <string>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status infer_shapes(Graph& graph);

// The error of the first node imported from an If branch (Node::conditional) whose shape
// function rejects it; run once the Ifs that can be resolved are, before lowering.
Status check_conditional_shapes(const Graph& graph);

// "stored" with every dim that "inferred" determines and "stored" does not; when "stored"
// has no shape, dims "inferred" leaves unknown become fresh symbols of "graph". With
// "input_symbols" (the graph inputs' symbols), a stored symbol made of others gives way to
// an inferred dim made of those.
TensorType refine_type(const TensorType& stored, const TensorType& inferred, Graph& graph,
                       const std::set<std::string>* input_symbols = nullptr);

} // namespace weft
