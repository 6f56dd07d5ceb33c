#include "weft/graph/passes/eliminate_dead_code.h"

#include <unordered_set>

namespace weft {

Status eliminate_dead_code(Graph& graph) {
  std::unordered_set<const Value*> live(graph.outputs.begin(), graph.outputs.end());
  std::unordered_set<const Node*> dead;
  // Walk backwards: a node is live when one of its outputs is; its inputs then are too.
  const auto& nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node& node = **it;
    bool used = false;
    for (const Value* out : node.outputs)
      used = used || (out && live.contains(out));
    if (!used) {
      dead.insert(&node);
      continue;
    }
    for (const Value* in : node.inputs) {
      if (in) live.insert(in);
    }
  }
  // Omitted outputs of live nodes that nothing reads stay: they are part of the node.
  graph.remove_nodes_if([&](const Node& n) { return dead.contains(&n); });
  return Status();
}

} // namespace weft
