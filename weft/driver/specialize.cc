#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "weft/driver/pipeline.h"
#include "weft/driver/stages.h"
#include "weft/graph/control_flow.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/fold_shape_values.h"
#include "weft/graph/passes/run_limits.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/graph/passes/unify_dims.h"
#include "weft/kernel/lower_node.h"
#include "weft/library/random_call.h"
#include "weft/library/recurrent_call.h"
#include "weft/support/grouped_list.h"

namespace weft::stages {

namespace {

// "given" with the symbolic dims that "declared" has in their places.
TensorType keep_symbols(const TensorType& declared, TensorType given) {
  if (!declared.shape || declared.shape->size() != given.shape->size()) return given;
  for (size_t d = 0; d < given.shape->size(); ++d) {
    if (!(*declared.shape)[d].is_static()) (*given.shape)[d] = (*declared.shape)[d];
  }
  return given;
}

} // namespace

Status specialize(Graph& graph, const std::vector<Tensor>& inputs, bool dynamic_shapes,
                  std::vector<int>* frozen) {
  std::vector<TensorType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    types.push_back(inputs[i].type());
    if (dynamic_shapes && i < graph.inputs.size())
      types.back() = keep_symbols(graph.inputs[i]->type, types.back());
  }
  WEFT_RETURN_IF_ERROR(specialize_shapes(graph, types));
  *frozen = freeze_shape_operands(graph, inputs);
  if (dynamic_shapes && !frozen->empty())
    return Status::error(fmt::format("{}: input values determine shapes", graph.source));
  WEFT_RETURN_IF_ERROR(refold(graph, "specialize"));
  if (!dynamic_shapes) return Status();
  // The Reshape targets that shapes computed over symbols give; each round may give more
  // (a resolved Reshape's shape feeds the next). Then dims that broadcasts equate.
  for (bool resolved = true; resolved;) {
    WEFT_ASSIGN_OR_RETURN(resolved, fold_shape_values(graph));
    if (!resolved) {
      WEFT_ASSIGN_OR_RETURN(resolved, unify_dims(graph));
    }
    if (resolved) WEFT_RETURN_IF_ERROR(refold(graph, "fold_shape_values"));
  }
  note_run_limits(graph);
  return Status();
}

Status check_lowerable(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> nodes; // (op, node)
  for (const auto& n : graph.nodes()) {
    // Dims that values gave (Range's limits, Expand's shape) may exceed what memory holds.
    for (const Value* out : n->outputs) {
      int64_t count = 0;
      if (out && out->type.has_static_shape() &&
          !dims_are_allocatable(out->type.dtype, shape_static_dims(*out->type.shape), &count)) {
        return Status::error(location_of(graph, *n),
                             fmt::format("output '{}' would be {}: too large to hold", out->name,
                                         out->type.to_string()));
      }
    }
    // (Shapes over symbols run as calls: library::shape_call.)
    bool symbolic_shape = (n->op_type == Op::kShape || n->op_type == Op::kSize) &&
                          n->inputs[0]->type.shape && !shape_is_static(*n->inputs[0]->type.shape);
    // (channels_last makes these only where oneDNN runs the convolutions; moe_forms keeps
    // MoE only for its CPU call.)
    // Random values are CPU calls (library/random_call.h); so are the recurrent ops that
    // expand_recurrent leaves (library/recurrent_call.h: over symbols, or long sequences).
    bool library_only = n->op_type == Op::kConvChannelsLast ||
                        n->op_type == Op::kQLinearConvChannelsLast ||
                        n->op_type == Op::kQLinearMatMulBias || n->op_type == Op::kMoE ||
                        library::draws_random_values(*n) || library::runs_recurrent(*n);
    if (!kernel::can_lower(*n) && !symbolic_shape && !library_only)
      nodes.emplace_back(fmt::format("{} (opset {})", n->op_type, n->opset), n->name);
  }
  if (nodes.empty()) return Status();
  return Status::error(
      fmt::format("{}: ops Weft cannot execute yet: {}", graph.source, format_grouped(nodes)));
}

Status run_host_ops(Graph& graph) {
  for (;;) {
    std::vector<Node*> ready; // the host ops whose inputs are known
    for (const auto& n : graph.nodes()) {
      bool waiting = false;
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Value* v = n->inputs[i];
        waiting |= v && !v->is_constant() && needs_value(*n, i);
      }
      if (is_data_dependent(*n) && !waiting) ready.push_back(n.get());
    }
    if (ready.empty()) return Status();
    // Control flow rewrites the graph, one node at a time. The other host ops all run, then
    // the graph refolds once: SSDLite's 180 NonZeros had refolded its 3,500 nodes after
    // each, 0.9 s of every new image.
    // (A Loop that runs on the host computes its outputs, as the others do.)
    auto unrolls = [](const Node* n) {
      return (n->op_type == Op::kLoop && !loop_runs_on_host(*n)) || n->op_type == Op::kScan;
    };
    auto control = std::find_if(ready.begin(), ready.end(),
                                [&](const Node* n) { return unrolls(n) || n->op_type == Op::kIf; });
    if (control != ready.end()) ready = {*control};
    std::set<const Node*> done;
    for (Node* node : ready) {
      bool finished = true;
      if (unrolls(node)) {
        Status s = node->op_type == Op::kLoop ? unroll_loop_step(graph, *node, &finished)
                                              : unroll_scan(graph, *node);
        if (!s.ok()) return s.with_location(location_of(graph, *node));
      } else if (node->op_type == Op::kIf) { // the chosen branch's outputs pass through
        Result<std::vector<Value*>> chosen = chosen_branch(*node);
        if (!chosen.ok()) return chosen.status().with_location(location_of(graph, *node));
        if (!node->conditional) mark_taken(*chosen);
        for (size_t i = 0; i < node->outputs.size(); ++i) {
          if (node->outputs[i]) graph.replace_all_uses(node->outputs[i], (*chosen)[i]);
        }
      } else {
        Result<std::vector<Tensor>> outputs = evaluate_on_host(*node);
        if (!outputs.ok()) return outputs.status().with_location(location_of(graph, *node));
        for (size_t i = 0; i < node->outputs.size(); ++i) {
          Value* out = node->outputs[i];
          if (!out) continue;
          Value* c =
              graph.add_constant(graph.unique_name(out->name + "_value"), std::move((*outputs)[i]));
          graph.replace_all_uses(out, c);
        }
      }
      if (finished) done.insert(node);
    }
    graph.remove_nodes_if([&](const Node& n) { return done.contains(&n); });
    WEFT_RETURN_IF_ERROR(refold(graph, "host ops"));
  }
}

bool waits_for_shape_values(const Node& n) {
  bool unknown = std::any_of(n.outputs.begin(), n.outputs.end(), [](const Value* v) {
    return v && (!v->type.shape || std::any_of(v->type.shape->begin(), v->type.shape->end(),
                                               [](const Dim& d) { return !d.is_static(); }));
  });
  if (!unknown) return false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] && !n.inputs[i]->is_constant() && is_shape_operand(n, i)) return true;
  }
  return false;
}

std::vector<std::string> host_op_inputs(const Graph& graph, bool shape_values,
                                        std::vector<std::string>* host_ops) {
  std::set<const Value*> downstream; // of a data-dependent node
  std::vector<std::string> names;
  for (const auto& node : graph.nodes()) {
    // An If is fed only through its condition: its branches' values just pass through.
    size_t inputs = node->op_type == Op::kIf ? 1 : node->inputs.size();
    bool fed = std::any_of(node->inputs.begin(), node->inputs.begin() + inputs,
                           [&](const Value* v) { return downstream.contains(v); });
    bool waits = shape_values && !is_data_dependent(*node) && waits_for_shape_values(*node);
    bool host = is_data_dependent(*node) || waits;
    // A host op of an If branch waits for its If: the branch may never run.
    if (host && !fed && !node->conditional) {
      host_ops->push_back(fmt::format("{} '{}'", node->op_type, node->name));
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        const Value* v = node->inputs[i];
        bool needed = waits ? is_shape_operand(*node, i) : needs_value(*node, i);
        if (v && !v->is_constant() && needed &&
            std::find(names.begin(), names.end(), v->name) == names.end())
          names.push_back(v->name);
      }
    }
    if (host || fed) downstream.insert(node->outputs.begin(), node->outputs.end());
  }
  return names;
}

} // namespace weft::stages
