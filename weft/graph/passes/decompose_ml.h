// Classic machine-learning ops that decompose (passes/decompose.h) calls for, as primitives;
// their attributes become constant tables, built here from the attributes and X's shape.
//
//   Binarizer(X) (ai.onnx.ml 1): X > threshold, cast to X's type
//   ArrayFeatureExtractor(X, Y) (ai.onnx.ml 1): a Gather along the last axis
//   TfIdfVectorizer(X) (9): per length n of the pool's n-grams, the items of every window
//       (each start, each skip) gathered at constant positions and compared with the pool's
//       n-grams (Equal, And), the matches summed over the windows, then gathered into the
//       output columns and weighted by the mode
//   TreeEnsemble(X) (ai.onnx.ml 5): every tree walked at once, one step per level of the
//       deepest tree: the current node's feature, split, children and mode gathered from its
//       row of a constant table, the comparison chooses the next node (leaves lead to
//       themselves); then the leaves' weights summed (or averaged, or the min or max taken)
//       per target, or, where each target has a tree of its own, gathered; the new nodes are
//       at ai.onnx opset kTreeWalkOpset where the model's is older (Where, IsNaN, LessOrEqual)
//
// Requires: static shapes for TfIdfVectorizer and TreeEnsemble (they wait for specialization
// otherwise); for ArrayFeatureExtractor, the ranks; for TreeEnsemble, trees without cycles,
// at most kMaxTreeDepth deep.
// Guarantees: "y" is defined by the new nodes, with the node's output type.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// The deepest tree that TreeEnsemble unrolls.
inline constexpr int64_t kMaxTreeDepth = 1024;
// The oldest ai.onnx opset of TreeEnsemble's new nodes.
inline constexpr int kTreeWalkOpset = 12;

// Is "node" one of the ops decompose_ml_op handles?
bool is_ml_op(const Node& node);
// Can "node" (is_ml_op) be decomposed now?
bool ml_op_ready(const Node& node);
Status decompose_ml_op(Graph& graph, Node& node, Value* y);

} // namespace weft
