// expand_moe: weft.MoE (attrs.h, MoEAttrs) as primitives, where no library call runs it (CUDA,
// the library off, a form the CPU's call does not take): every expert on every token, mixed
// by routing weights that are zero for the experts not chosen. Correct, at E / k times the
// arithmetic of routing only the chosen ones.
//
//   TopK of the logits -> weights (Softmax of the k, or of all E gathered at the k)
//   routing [T, E] = ReduceSum over k of weights x (indices == e)
//   h = x fc1^T + b1 for every expert [E, T, F]; the activation; y_e = act fc2^T + b2
//   y = ReduceSum over E of y_e x routing^T
//
// Requires: the node's logits of static E. The new nodes are in the forms ONNX gives them (the
// axes of Unsqueeze and ReduceSum, Slice's bounds, as constant inputs): canonicalize runs after
// (stages::moe_forms refolds).
// Guarantees: the output keeps its name and type; the expanded nodes are gone.
#pragma once

#include <functional>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Expands each weft.MoE node that "keep" does not keep; whether any was.
Result<bool> expand_moe(Graph& graph, const std::function<bool(const Node&)>& keep);

} // namespace weft
