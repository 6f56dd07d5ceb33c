#include "weft/graph/verify_graph.h"

#include <unordered_set>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/print_graph.h"

namespace weft {

bool types_agree(const TensorType& stored, const TensorType& inferred) {
  if (stored.dtype != inferred.dtype) return false;
  if (!stored.shape || !inferred.shape) return true;
  if (stored.shape->size() != inferred.shape->size()) return false;
  for (size_t i = 0; i < stored.shape->size(); ++i) {
    const Dim& a = (*stored.shape)[i];
    const Dim& b = (*inferred.shape)[i];
    if (a.is_static() && b.is_static() && a.value() != b.value()) return false;
  }
  return true;
}

Status verify_graph(const Graph& graph, std::string_view after_pass) {
  auto broken = [&](const std::string& what) {
    return Status::error(
        fmt::format("internal error: graph verifier after pass '{}': {}", after_pass, what));
  };
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names, node_names;
  for (const Value* v : graph.inputs) {
    if (v->producer || v->is_constant()) return broken("input %" + v->name + " has a definition");
    defined.insert(v);
  }
  for (const auto& v : graph.values()) {
    if (!names.insert(v->name).second) return broken("value name %" + v->name + " is repeated");
    if (v->is_constant()) {
      if (v->producer) return broken("constant %" + v->name + " also has a producer");
      if (!(v->type == v->constant->type()))
        return broken("constant %" + v->name + " has the wrong type");
      defined.insert(v.get());
    }
  }
  for (const auto& n : graph.nodes()) {
    if (!node_names.insert(n->name).second) return broken("node name " + n->name + " is repeated");
    if (n->def != find_op(n->op_type, n->opset)) {
      return broken(fmt::format("node {} ({}, opset {}) is not its op table entry", n->name,
                                n->op_type, n->opset));
    }
    for (const Value* in : n->inputs) {
      if (in && !defined.contains(in)) {
        return broken(fmt::format("node {} uses %{} before its definition", n->name, in->name));
      }
    }
    for (const Value* out : n->outputs) {
      if (!out) continue;
      if (out->producer != n.get() || !defined.insert(out).second) {
        return broken(fmt::format("%{} is not defined once, by node {}", out->name, n->name));
      }
    }
    // A node of an If branch may not fit the shapes of a run that does not take its branch
    // (graph.h); check_conditional_shapes checks those that stay until lowering.
    if (!n->def->infer || n->conditional) continue;
    Result<std::vector<TensorType>> inferred = n->def->infer(*n);
    if (!inferred.ok()) {
      return broken(fmt::format("{}: shape function failed: {}", print_node(*n),
                                inferred.status().message()));
    }
    for (size_t i = 0; i < n->outputs.size() && i < inferred->size(); ++i) {
      const Value* out = n->outputs[i];
      if (out && !types_agree(out->type, (*inferred)[i])) {
        return broken(fmt::format("{}: output %{} has type {} but its shape function gives {}",
                                  print_node(*n), out->name, out->type.to_string(),
                                  (*inferred)[i].to_string()));
      }
    }
  }
  for (const Value* v : graph.outputs) {
    if (!defined.contains(v)) return broken("graph output %" + v->name + " is not defined");
  }
  return Status();
}

} // namespace weft
