#include "weft/graph/passes/infer_shapes.h"

#include "weft/graph/op_table.h"

namespace weft {

TensorType refine_type(const TensorType& stored, const TensorType& inferred, Graph& graph) {
  if (!inferred.shape) return stored;
  if (!stored.shape) {
    Shape shape = *inferred.shape;
    for (Dim& d : shape) {
      if (d.is_unknown()) d = graph.fresh_symbol();
    }
    return {stored.dtype, shape};
  }
  if (stored.shape->size() != inferred.shape->size()) return stored;
  TensorType out = stored;
  for (size_t i = 0; i < out.shape->size(); ++i) {
    Dim& d = (*out.shape)[i];
    const Dim& given = (*inferred.shape)[i];
    // A static dim, or any dim where a fresh symbol stood for one nothing could tell (a
    // Reshape whose target fold_shape_values found since).
    if ((!d.is_static() && given.is_static()) ||
        (!d.is_static() && graph.is_fresh(d) && !given.is_unknown()))
      d = given;
  }
  return out;
}

Status infer_shapes(Graph& graph) {
  for (const auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (!node.def->infer) continue;
    Result<std::vector<TensorType>> inferred = node.def->infer(node);
    if (!inferred.ok()) {
      if (node.conditional) continue; // its If may never take its branch (graph.h)
      return inferred.status().with_location({graph.source, node.name, node.op_type, node.opset});
    }
    for (size_t i = 0; i < node.outputs.size() && i < inferred->size(); ++i) {
      if (node.outputs[i])
        node.outputs[i]->type = refine_type(node.outputs[i]->type, (*inferred)[i], graph);
    }
  }
  return Status();
}

Status check_conditional_shapes(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (!n->conditional || !n->def->infer) continue;
    Result<std::vector<TensorType>> inferred = n->def->infer(*n);
    if (!inferred.ok())
      return inferred.status().with_location({graph.source, n->name, n->op_type, n->opset});
  }
  return Status();
}

} // namespace weft
