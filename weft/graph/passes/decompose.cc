#include "weft/graph/passes/decompose.h"

#include <numeric>

#include "weft/graph/node_builder.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

Value* scalar(NodeBuilder& b, const std::string& what, DType dtype, double v) {
  Tensor t(dtype, {});
  t.set_double(0, v);
  return b.constant(what, std::move(t));
}

Value* shape_constant(NodeBuilder& b, const std::string& what, const Ints& dims) {
  return b.constant(what, Tensor::vector_i64(dims));
}

// "x" as "to", or "x" itself when it has that type.
Value* cast_to(NodeBuilder& b, Value* x, DType to) {
  return x->type.dtype == to ? x : b.op("Cast", {x}, CastAttrs{to});
}

// (x - mean) / sqrt(var + eps) over "axes" (x already in the statistics' type).
Value* standardize(NodeBuilder& b, Value* x, const Ints& axes, float epsilon) {
  Value* mean = b.op("ReduceMean", {x}, ReduceAttrs{axes, true, false});
  Value* dev = b.op("Sub", {x, mean});
  Value* var = b.op("ReduceMean", {b.op("Mul", {dev, dev})}, ReduceAttrs{axes, true, false});
  Value* eps = scalar(b, "epsilon", x->type.dtype, epsilon);
  return b.op("Div", {dev, b.op("Sqrt", {b.op("Add", {var, eps})})});
}

// x's shape as a value: a constant when static, else a Shape node.
Value* shape_of(NodeBuilder& b, Value* x) {
  if (shape_is_static(*x->type.shape)) {
    std::vector<int64_t> dims = shape_static_dims(*x->type.shape);
    return shape_constant(b, "shape", Ints(dims.begin(), dims.end()));
  }
  return b.op("Shape", {x}, ShapeAttrs{0, std::nullopt});
}

Status rms_norm(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<LayerNormAttrs>();
  Value* x = node.inputs[0];
  int64_t rank = static_cast<int64_t>(x->type.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  Ints axes(static_cast<size_t>(rank - axis));
  std::iota(axes.begin(), axes.end(), axis);
  Value* xs = cast_to(b, x, a.stash_type);
  Value* mean_square = b.op("ReduceMean", {b.op("Mul", {xs, xs})}, ReduceAttrs{axes, true, false});
  Value* eps = scalar(b, "epsilon", a.stash_type, a.epsilon);
  Value* normalized = b.op("Div", {xs, b.op("Sqrt", {b.op("Add", {mean_square, eps})})});
  normalized = cast_to(b, normalized, x->type.dtype);
  b.op("Mul", {normalized, node.inputs[1]}, NoAttrs{}, y);
  return b.status();
}

Status group_norm(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<GroupNormAttrs>();
  Value* x = node.inputs[0];
  size_t rank = x->type.shape->size();
  Value* groups = b.op("Reshape", {x, shape_constant(b, "grouped", {0, a.num_groups, -1})},
                       ReshapeAttrs{});
  Value* n = standardize(b, cast_to(b, groups, a.stash_type), {2}, a.epsilon);
  n = cast_to(b, n, x->type.dtype);
  Value* scale = node.inputs[1];
  Value* bias = node.inputs[2];
  if (node.opset < 21) { // per group: [G, 1] against [N, G, C/G * spatial]
    Value* per_group = shape_constant(b, "per_group", {a.num_groups, 1});
    n = b.op("Mul", {n, b.op("Reshape", {scale, per_group}, ReshapeAttrs{})});
    n = b.op("Add", {n, b.op("Reshape", {bias, per_group}, ReshapeAttrs{})});
    b.op("Reshape", {n, shape_of(b, x)}, ReshapeAttrs{}, y);
    return b.status();
  }
  n = b.op("Reshape", {n, shape_of(b, x)}, ReshapeAttrs{});
  Ints per_channel(rank - 1, 1); // [C, 1, ..., 1] against [N, C, spatial...]
  per_channel[0] = -1;
  Value* channels = shape_constant(b, "per_channel", per_channel);
  n = b.op("Mul", {n, b.op("Reshape", {scale, channels}, ReshapeAttrs{})});
  b.op("Add", {n, b.op("Reshape", {bias, channels}, ReshapeAttrs{})}, NoAttrs{}, y);
  return b.status();
}

} // namespace

Status decompose(Graph& graph) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    bool fused = n->op_type == "RMSNormalization" || n->op_type == "GroupNormalization";
    if (fused && n->inputs[0]->type.shape && n->outputs[0]) nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    Location where{graph.source, node->name, node->op_type, node->opset};
    // The new nodes define the node's output value, so that its name stays.
    Value* y = node->outputs[0];
    y->producer = nullptr;
    node->outputs[0] = nullptr;
    Status done = node->op_type == "RMSNormalization" ? rms_norm(graph, *node, y)
                                                      : group_norm(graph, *node, y);
    WEFT_RETURN_IF_ERROR(done.with_location(where));
    graph.remove_nodes_if([&](const Node& n) { return &n == node; });
  }
  return Status();
}

} // namespace weft
