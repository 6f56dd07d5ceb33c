#include "weft/graph/passes/narrow_in_f32.h"

#include <optional>
#include <set>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"

namespace weft {

namespace {

// The narrow float type all of "node"'s inputs and its one output have, if they do.
std::optional<DType> narrow_type(const Node& node) {
  if (node.outputs.size() != 1 || node.inputs.empty()) return std::nullopt;
  DType t = node.outputs[0]->type.dtype;
  if (t != DType::kF16 && t != DType::kBF16) return std::nullopt;
  for (const Value* in : node.inputs) {
    if (!in || in->type.dtype != t) return std::nullopt;
  }
  return t;
}

} // namespace

Result<bool> narrow_in_f32(Graph& graph, const std::set<Op>& ops) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    if (ops.contains(n->op_type.id()) && narrow_type(*n)) nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    DType t = *narrow_type(*node);
    NodeBuilder b(graph, *node);
    std::vector<Value*> wide;
    for (Value* in : node->inputs)
      wide.push_back(b.op(Op::kCast, {in}, CastAttrs{DType::kF32}));
    // The f32 node goes before; this one becomes the Cast back, keeping its output.
    Value* product = b.op(node->op_type.id(), wide, node->attrs);
    WEFT_RETURN_IF_ERROR(b.status());
    node->op_type = Op::kCast;
    node->def = find_op(Op::kCast, node->opset);
    node->attrs = CastAttrs{t};
    node->inputs = {product};
  }
  return !nodes.empty();
}

} // namespace weft
