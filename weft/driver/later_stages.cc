#include "weft/driver/later_stages.h"

#include <algorithm>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "weft/driver/pipeline.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"

namespace weft {

Stages::Stages(Graph graph, std::vector<std::string> handed_over, size_t needed,
               stages::Frozen frozen, CompileSettings settings)
    : graph_(std::move(graph)), handed_over_(std::move(handed_over)), needed_(needed),
      frozen_(std::move(frozen)), settings_(std::move(settings)) {
  settings_.dump_dir.clear();
}

Result<std::vector<Tensor>> Stages::run(const runtime::Executable& first,
                                        const std::vector<Tensor>& inputs,
                                        const runtime::RunOptions& options) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> handed, first.run(inputs, options));
  if (const SymbolicRest* rest = symbolic_rest(inputs, handed)) {
    std::vector<Tensor> host_outputs;
    for (const HostOp& op : rest->host_ops) {
      WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(handed));
      std::move(outs.begin(), outs.end(), std::back_inserter(host_outputs));
    }
    std::vector<Tensor> all = inputs;
    all.insert(all.end(), handed.begin(), handed.end());
    std::move(host_outputs.begin(), host_outputs.end(), std::back_inserter(all));
    Result<std::vector<Tensor>> outputs = rest->model->run(all, options);
    if (outputs.ok()) return outputs;
    // Not expected (the rest takes every extent); the per-content stage is the fallback.
    log_info("{}: the stage after the host ops did not run ({}); compiling it for this content",
             graph_.source, outputs.status().message());
  }
  std::vector<bool> input(handed.size());
  for (size_t i = 0; i < handed.size(); ++i)
    input[i] = is_input(i, handed[i]);
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledModel> next, next_stage(handed));
  std::vector<Tensor> all = inputs; // then the handed-over values it takes as inputs
  for (size_t i = 0; i < handed.size(); ++i) {
    if (input[i]) all.push_back(std::move(handed[i]));
  }
  return next->run(all, options);
}

Result<std::vector<Tensor>> Stages::HostOp::run(const std::vector<Tensor>& values) const {
  std::vector<Value> ins(node->inputs.size());
  Node n = *node;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.inputs[i] || handed[i] < 0) continue;
    ins[i].type = values[static_cast<size_t>(handed[i])].type();
    ins[i].constant = std::make_shared<const Tensor>(values[static_cast<size_t>(handed[i])]);
    n.inputs[i] = &ins[i];
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, evaluate_on_host(n));
  outs.resize(std::min(outs.size(), n.outputs.size())); // Unique's trailing outputs may be absent
  return outs;
}

const Stages::SymbolicRest* Stages::symbolic_rest(const std::vector<Tensor>& inputs,
                                                  const std::vector<Tensor>& handed) const {
  std::call_once(symbolic_once_, [&] {
    Result<SymbolicRest> built = build_symbolic_rest(inputs, handed);
    if (built.ok()) {
      symbolic_ = std::make_unique<SymbolicRest>(std::move(built).value());
      log_info("{}: the stage after the host ops compiled once, over symbolic extents",
               graph_.source);
    } else {
      log_info("{}: the stage after the host ops compiles per content: {}", graph_.source,
               built.status().message());
    }
  });
  return symbolic_.get();
}

Result<Stages::SymbolicRest> Stages::build_symbolic_rest(const std::vector<Tensor>& inputs,
                                                         const std::vector<Tensor>& handed) const {
  SymbolicRest rest;
  Graph g = graph_.clone();
  std::vector<Tensor> samples = inputs;
  std::vector<const Value*> handed_inputs;
  for (size_t h = 0; h < handed_over_.size(); ++h) {
    Value* v = g.find_value(handed_over_[h]);
    Value* in = g.add_value(g.unique_name(v->name + "_handed"), v->type);
    g.replace_all_uses(v, in);
    g.inputs.push_back(in);
    handed_inputs.push_back(in);
    samples.push_back(handed[h]);
  }
  std::vector<const Node*> host;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    if (!is_data_dependent(n)) continue;
    if (n.op_type == Op::kIf || n.op_type == Op::kLoop || n.op_type == Op::kScan)
      return Status::error(fmt::format("{} '{}' rewrites the graph", n.op_type, n.name));
    if (n.conditional)
      return Status::error(fmt::format("{} '{}' is in a branch of an If", n.op_type, n.name));
    HostOp op{graph_.nodes()[i].get(), {}};
    for (const Value* v : n.inputs) {
      auto it = std::find(handed_inputs.begin(), handed_inputs.end(), v);
      if (v && !v->is_constant() && it == handed_inputs.end())
        return Status::error(
            fmt::format("{} '{}' reads a value computed after the first stage", n.op_type, n.name));
      op.handed.push_back(it == handed_inputs.end() ? -1
                                                    : static_cast<int>(it - handed_inputs.begin()));
    }
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(handed));
    // The output types by the op's shape function, whatever the model declares: a
    // data-dependent extent is a symbol of its own (one per count: Unique's outputs share it).
    if (!n.def->infer)
      return Status::error(fmt::format("{} '{}' has no shape function", n.op_type, n.name));
    WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types, n.def->infer(n));
    std::map<std::string, Dim> counts;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      Value* v = n.outputs[o];
      if (!v || o >= types.size() || !types[o].shape)
        return Status::error(
            fmt::format("{} '{}' has an output of unknown rank", n.op_type, n.name));
      TensorType type = types[o];
      for (Dim& d : *type.shape) {
        if (d.is_static()) continue;
        auto [it, added] = counts.try_emplace(d.symbol_name(), 0);
        if (added) {
          std::string symbol = fmt::format("host{}_count{}", rest.host_ops.size(), counts.size());
          g.note_symbol(symbol);
          it->second = Dim::symbol(symbol);
        }
        d = it->second;
      }
      Value* in = g.add_value(g.unique_name(v->name + "_host"), type);
      g.replace_all_uses(v, in);
      g.inputs.push_back(in);
      samples.push_back(std::move(outs[o]));
    }
    host.push_back(&n);
    rest.host_ops.push_back(std::move(op));
  }
  g.remove_nodes_if(
      [&](const Node& n) { return std::find(host.begin(), host.end(), &n) != host.end(); });
  WEFT_RETURN_IF_ERROR(eliminate_dead_code(g));
  std::vector<int> frozen_inputs;
  WEFT_RETURN_IF_ERROR(stages::specialize(g, samples, true, &frozen_inputs));
  CompileSettings settings = settings_;
  settings.dynamic_shapes = true;
  auto model = std::make_shared<CompiledModel>();
  stages::PhaseTimer timer(&model->phases);
  stages::Dumper no_dump("");
  model->output_names = stages::output_names_of(g);
  WEFT_RETURN_IF_ERROR(
      stages::compile_graph(std::move(g), frozen_, settings, no_dump, timer, *model));
  rest.model = std::move(model);
  return rest;
}

bool Stages::is_input(size_t i, const Tensor& value) const {
  return i >= needed_ && value.num_elements() > kMaxFoldedElements;
}

Result<std::shared_ptr<const CompiledModel>> Stages::next_stage(std::vector<Tensor>& handed) const {
  std::string key;
  for (size_t i = 0; i < handed.size(); ++i) {
    if (is_input(i, handed[i])) continue;
    key += handed[i].type().to_string();
    key += std::string_view(reinterpret_cast<const char*>(handed[i].data()), handed[i].num_bytes());
  }
  key = hash_hex(key);
  std::lock_guard<std::mutex> lock(mutex_); // later stages compile one at a time
  for (const auto& [k, stage] : kept_) {
    if (k == key) return stage;
  }
  // The constants: the host ops run on them (as constants, a detector's feature maps had made
  // each of the 8 stages kept hold hundreds of megabytes).
  Graph graph = graph_.clone();
  for (size_t i = 0; i < handed.size(); ++i) {
    Value* v = graph.find_value(handed_over_[i]);
    if (!is_input(i, handed[i])) {
      graph.replace_all_uses(
          v, graph.add_constant(graph.unique_name(v->name + "_value"), std::move(handed[i])));
      continue;
    }
    Value* in = graph.add_value(graph.unique_name(v->name + "_handed"), v->type);
    graph.replace_all_uses(v, in);
    graph.inputs.push_back(in);
  }
  WEFT_RETURN_IF_ERROR(refold(graph, "handed over"));
  WEFT_RETURN_IF_ERROR(stages::run_host_ops(graph));
  auto next = std::make_shared<CompiledModel>();
  stages::PhaseTimer timer(&next->phases);
  stages::Dumper no_dump("");
  next->output_names = stages::output_names_of(graph);
  WEFT_RETURN_IF_ERROR(
      stages::compile_graph(std::move(graph), frozen_, settings_, no_dump, timer, *next));
  if (kept_.size() == kKept) kept_.erase(kept_.begin());
  kept_.emplace_back(key, next);
  return std::shared_ptr<const CompiledModel>(next);
}

} // namespace weft
