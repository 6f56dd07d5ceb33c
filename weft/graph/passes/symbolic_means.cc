#include "weft/graph/passes/symbolic_means.h"

#include "weft/graph/node_builder.h"

namespace weft {

namespace {

// A mean as a ReduceMean's attributes: a ReduceMean's own, or GlobalAveragePool's (the
// spatial axes, kept).
std::optional<ReduceAttrs> mean_attrs(const Node& n) {
  if (n.op_type == "ReduceMean") return n.attrs_as<ReduceAttrs>();
  if (n.op_type != "GlobalAveragePool" || !n.inputs[0]->type.shape) return std::nullopt;
  Ints spatial;
  for (size_t d = 2; d < n.inputs[0]->type.shape->size(); ++d)
    spatial.push_back(static_cast<int64_t>(d));
  return ReduceAttrs{spatial, true, false};
}

// The reduced axes of a mean that needs its count at run time, normalized; none otherwise.
std::optional<Ints> symbolic_mean_axes(const Node& n) {
  std::optional<ReduceAttrs> a = mean_attrs(n);
  if (!a) return std::nullopt;
  const Value* x = n.inputs[0];
  DType t = x->type.dtype;
  if (!a->axes || a->axes->empty() || !x->type.shape || (t != DType::kF32 && t != DType::kF64))
    return std::nullopt;
  auto rank = static_cast<int64_t>(x->type.shape->size());
  Ints axes;
  bool symbolic = false;
  for (int64_t axis : *a->axes) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    axes.push_back(axis < 0 ? axis + rank : axis);
    symbolic |= !(*x->type.shape)[static_cast<size_t>(axes.back())].is_static();
  }
  if (!symbolic) return std::nullopt;
  return axes;
}

} // namespace

Result<bool> decompose_symbolic_means(Graph& graph) {
  std::vector<Node*> means;
  for (const auto& n : graph.nodes()) {
    if (symbolic_mean_axes(*n)) means.push_back(n.get());
  }
  for (Node* node : means) {
    Ints axes = *symbolic_mean_axes(*node);
    bool keepdims = mean_attrs(*node)->keepdims;
    Value* x = node->inputs[0];
    Value* y = node->outputs[0];
    y->producer = nullptr; // the Div below defines it, so that its name stays
    node->outputs[0] = nullptr;
    NodeBuilder b(graph, *node);
    Value* sum = b.op("ReduceSum", {x}, ReduceAttrs{axes, keepdims, false});
    Value* extents = b.op("Gather",
                          {b.op("Shape", {x}, ShapeAttrs{0, std::nullopt}),
                           b.constant("axes", Tensor::vector_i64(axes))},
                          AxisAttrs{0});
    Value* count = b.op("ReduceProd", {extents}, ReduceAttrs{Ints{0}, false, false});
    b.op("Div", {sum, b.op("Cast", {count}, CastAttrs{x->type.dtype})}, NoAttrs{}, y);
    WEFT_RETURN_IF_ERROR(b.status());
    graph.remove_nodes_if([&](const Node& n) { return &n == node; });
  }
  return !means.empty();
}

} // namespace weft
