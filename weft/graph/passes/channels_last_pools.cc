#include <algorithm>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/channels_last.h"
#include "weft/graph/passes/channels_last_ops.h"

namespace weft {

using namespace channels_last_ops; // NOLINT(google-build-using-namespace)

namespace {

// Each f32 pooling of Transpose(to first)(a) whose only reader is a Transpose to channels-last
// becomes its channels-last form over a, writing that Transpose's output.
bool pools_in_place(Graph& graph) {
  std::unordered_map<const Value*, std::vector<Node*>> readers;
  for (const auto& n : graph.nodes()) {
    for (const Value* v : n->inputs)
      readers[v].push_back(n.get());
  }
  std::vector<Node*> pools;
  for (const auto& n : graph.nodes()) {
    if (is_pool(n.get()) && n->inputs[0]->type.dtype == DType::kF32) pools.push_back(n.get());
  }
  bool changed = false;
  for (Node* p : pools) {
    Value* y = p->outputs[0];
    Node* first = p->inputs[0]->producer;
    const std::vector<Node*>& after = readers[y];
    if (!is_transpose(first, kToFirst) || after.size() != 1 || !is_transpose(after[0], kToLast) ||
        graph.is_graph_output(y))
      continue;
    Node* back = after[0];
    Value* out = back->outputs[0];
    out->producer = nullptr;
    back->outputs[0] = nullptr;
    Op op = p->op_type == Op::kMaxPool ? Op::kMaxPoolChannelsLast : Op::kAveragePoolChannelsLast;
    NodeBuilder(graph, *back).op(op, {first->inputs[0]}, p->attrs, out);
    std::string name = p->name;
    std::vector<Node*>& others = readers[first->outputs[0]];
    others.erase(std::find(others.begin(), others.end(), p));
    const Node* unread =
        others.empty() && !graph.is_graph_output(first->outputs[0]) ? first : nullptr;
    graph.remove_nodes_if([&](const Node& m) { return &m == p || &m == back || &m == unread; });
    graph.rename_node(out->producer, name); // profiles name the model's node
    changed = true;
  }
  return changed;
}

} // namespace

Result<bool> pools_between_regions(Graph& graph) {
  std::unordered_map<const Value*, std::vector<Node*>> readers;
  for (const auto& n : graph.nodes()) {
    for (const Value* v : n->inputs)
      readers[v].push_back(n.get());
  }
  auto only_reader = [&](const Value* v) -> Node* {
    auto it = readers.find(v);
    return it == readers.end() || it->second.size() != 1 || graph.is_graph_output(v)
               ? nullptr
               : it->second[0];
  };
  bool changed = false;
  std::vector<Node*> pools;
  for (const auto& n : graph.nodes()) {
    if (is_pool(n.get())) pools.push_back(n.get());
  }
  for (Node* p : pools) {
    Value* y = p->outputs[0];
    const Node* in = p->inputs[0]->producer;
    if (!is_transpose(in, kToFirst) || only_reader(p->inputs[0]) != p || graph.is_graph_output(y))
      continue;
    Node* reorder = nullptr;     // the Transpose to channels-last
    std::vector<Node*> branches; // the other poolings
    bool fits = true;
    for (Node* r : readers[y]) {
      if (is_transpose(r, kToLast) && !reorder) {
        reorder = r;
      } else if (is_pool(r) && r->inputs[0] == y &&
                 is_transpose(only_reader(r->outputs[0]), kToLast)) {
        branches.push_back(r);
      } else {
        fits = false;
      }
    }
    if (!fits || !reorder || branches.empty()) continue;
    // Right after the pooling: its Transpose to channels-last and the one back.
    NodeBuilder b(graph, *node_after(graph, *p));
    Value* last = b.op(Op::kTranspose, {y}, TransposeAttrs{kToLast});
    Value* back = b.op(Op::kTranspose, {last}, TransposeAttrs{kToFirst});
    graph.replace_all_uses(reorder->outputs[0], last);
    graph.remove_nodes_if([&](const Node& m) { return &m == reorder; });
    for (Node* r : branches)
      r->inputs[0] = back;
    readers[y] = {last->producer};
    readers[last] = {back->producer};
    readers[back] = branches;
    changed = true;
  }
  return pools_in_place(graph) || changed;
}

} // namespace weft
