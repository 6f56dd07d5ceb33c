#include "weft/graph/passes/products_in_bf16.h"

#include <algorithm>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"

namespace weft {

namespace {

bool f32(const Value* v) { return !v || v->type.dtype == DType::kF32; }

} // namespace

Result<bool> products_in_bf16(Graph& graph) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    bool conv = n->op_type == Op::kConv,
         matmul = n->op_type == Op::kMatMul || n->op_type == Op::kGemm;
    if ((!conv && !matmul) || n->inputs.size() < 2 || n->outputs.size() != 1 ||
        !std::all_of(n->inputs.begin(), n->inputs.end(), f32) || !f32(n->outputs[0]) ||
        (conv && !n->inputs[1]->is_constant()))
      continue;
    nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    NodeBuilder b(graph, *node);
    for (size_t i = 0; i < 2; ++i) {
      Value* narrow = b.op(Op::kCast, {node->inputs[i]}, CastAttrs{DType::kBF16});
      node->inputs[i] = b.op(Op::kCast, {narrow}, CastAttrs{DType::kF32});
    }
    WEFT_RETURN_IF_ERROR(b.status());
  }
  return !nodes.empty();
}

} // namespace weft
