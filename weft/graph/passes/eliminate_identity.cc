#include "weft/graph/passes/eliminate_identity.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace weft {

namespace {

bool is_inference_dropout(const Node& node) {
  if (node.outputs.size() > 1 && node.outputs[1]) return false; // the mask is used
  const Value* training = node.input(2);
  if (!training) return true;
  return training->is_constant() && training->constant->get_int64(0) == 0;
}

bool same_static_type(const Node& node) {
  const TensorType& in = node.inputs[0]->type;
  const TensorType& out = node.outputs[0]->type;
  return in.has_static_shape() && in == out;
}

} // namespace

bool is_identity(const Node& node) {
  Op op = node.op_type.id();
  if (node.inputs.empty() || !node.inputs[0] || node.outputs.empty() || !node.outputs[0]) {
    return false;
  }
  if (op == Op::kIdentity) return true;
  if (op == Op::kDropout) return is_inference_dropout(node);
  if (op == Op::kCast) return node.attrs_as<CastAttrs>().to == node.inputs[0]->type.dtype;
  if (op == Op::kReshape || op == Op::kSqueeze || op == Op::kUnsqueeze || op == Op::kFlatten ||
      op == Op::kExpand) {
    return same_static_type(node);
  }
  if (op == Op::kPad) { // pads of 0 (PyTorch 1.13 exports avg_pool2d as one before the pooling)
    const std::optional<Ints>& pads = node.attrs_as<PadAttrs>().pads;
    return pads && node.inputs.size() == 1 && same_static_type(node) &&
           std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
  }
  return false;
}

Status eliminate_identity(Graph& graph) {
  std::unordered_set<const Node*> removed;
  std::unordered_map<Value*, std::string> renames; // forwarded value -> graph output name
  for (const auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (!is_identity(node)) continue;
    Value* in = node.inputs[0];
    Value* out = node.outputs[0];
    if (graph.is_graph_output(out)) {
      bool in_is_interface = !in->producer || graph.is_graph_output(in) || renames.contains(in);
      if (in_is_interface) continue;
      renames[in] = out->name;
    }
    graph.replace_all_uses(out, in);
    removed.insert(&node);
  }
  graph.remove_nodes_if([&](const Node& n) { return removed.contains(&n); });
  for (auto& [value, name] : renames)
    graph.rename_value(value, name);
  return Status();
}

} // namespace weft
