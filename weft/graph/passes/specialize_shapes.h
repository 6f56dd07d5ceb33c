// specialize_shapes: binds the graph's inputs to concrete types and propagates them.
//
// Every symbolic dim of an input becomes the given extent, everywhere in the graph (a
// symbol names one extent), and so does every dim over those (in value types and in the
// attributes of fold_shape_values); shape functions then refine the rest. Run fold_constants and
// canonicalize after it: Shape ops and Reshape targets become constants.
//
// Requires: a verified graph; "types" has one entry per graph input, each with a shape
// whose dims are static or the declared symbol (which then stays symbolic). Fails, naming
// the input, when a type contradicts the input's declared type (dtype, rank, a static
// extent, or one symbol bound to two extents).
// Guarantees: the graph's inputs have exactly the given types.
#pragma once

#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status specialize_shapes(Graph& graph, const std::vector<TensorType>& types);

// Is input "i" of "n" an operand whose value determines output shapes (or, for CumSum's
// axis and Resize's region of interest, the loop structure; for Dropout's ratio and training
// flag, whether it is a copy)?
bool is_shape_operand(const Node& n, size_t i);

// The positions of graph inputs whose values determine shapes (Reduce axes, Slice bounds,
// Reshape/Expand/Tile targets, Range bounds, ..., directly or through foldable arithmetic).
std::vector<int> shape_operand_inputs(const Graph& graph);

// Replaces the uses of small inputs whose values determine shapes (Reduce axes, Slice
// bounds, Reshape/Expand/Tile targets, Range bounds, ..., directly or through foldable
// arithmetic) by constants holding "values", so that the shapes are static. An input that
// also feeds data is frozen too: its value is part of the compiled shapes, and the
// executable refuses other values. The inputs stay in the graph's interface. Returns the
// positions of the inputs frozen.
std::vector<int> freeze_shape_operands(Graph& graph, const std::vector<Tensor>& values);

} // namespace weft
