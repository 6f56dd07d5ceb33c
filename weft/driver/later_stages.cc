#include "weft/driver/later_stages.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/driver/pipeline.h"
#include "weft/graph/control_flow.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"

namespace weft {

namespace {

// A key of the handed-over values for which "keyed[i]" holds: their types and contents.
std::string key_of(const std::vector<Tensor>& handed, const std::vector<bool>& keyed) {
  std::string key;
  for (size_t i = 0; i < handed.size(); ++i) {
    if (!keyed[i]) continue;
    key += handed[i].type().to_string();
    key += std::string_view(reinterpret_cast<const char*>(handed[i].data()), handed[i].num_bytes());
  }
  return hash_hex(key);
}

// Gives each input dim over symbols that no input binds alone (90*min(1000,N), handed over
// from a stage where N was a host op's count) a symbol of its own, one per such dim: a run
// binds inputs' symbols from their extents.
void name_input_dims(Graph& g) {
  std::set<std::string> bound;
  for (const Value* v : g.inputs) {
    for (const Dim& d : v->type.shape.value_or(Shape{}))
      if (std::optional<std::string> symbol = bound_symbol(d)) bound.insert(*symbol);
  }
  std::map<std::string, Dim> named;
  for (Value* v : g.inputs) {
    if (!v->type.shape) continue;
    for (Dim& d : *v->type.shape) {
      if (d.is_static() || bound_symbol(d)) continue;
      std::vector<std::string> symbols = dim_symbols(d);
      if (std::all_of(symbols.begin(), symbols.end(),
                      [&](const std::string& s) { return bound.contains(s); }))
        continue;
      auto [it, added] = named.try_emplace(d.symbol_name(), 0);
      if (added) it->second = g.unique_symbol("handed_dim");
      d = it->second;
    }
  }
}

// Control flow that rewrites the graph (control_flow.h): If, Scan, and a Loop that unrolls.
bool rewrites_graph(const Node& n) {
  return n.op_type == Op::kIf || n.op_type == Op::kScan ||
         (n.op_type == Op::kLoop && !loop_runs_on_host(n));
}

} // namespace

Stages::Stages(Graph graph, std::vector<std::string> handed_over, size_t needed,
               stages::Frozen frozen, CompileSettings settings)
    : graph_(std::move(graph)), handed_over_(std::move(handed_over)), needed_(needed),
      frozen_(std::move(frozen)), settings_(std::move(settings)),
      keyed_(handed_over_.size(), false) {
  settings_.dump_dir.clear();
  for (const auto& n : graph_.nodes()) {
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* v = n->inputs[i];
      if (!v) continue;
      auto it = std::find(handed_over_.begin(), handed_over_.begin() + needed_, v->name);
      if (it == handed_over_.begin() + needed_) continue;
      bool control = rewrites_graph(*n) && needs_value(*n, i);
      bool shape = !is_data_dependent(*n) && is_shape_operand(*n, i) && !settings_.dynamic_shapes &&
                   stages::waits_for_shape_values(*n);
      if (control || shape) keyed_[static_cast<size_t>(it - handed_over_.begin())] = true;
    }
  }
}

Result<std::vector<Tensor>> Stages::run(const runtime::Executable& first,
                                        std::vector<Tensor> inputs,
                                        const runtime::RunOptions& options) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> handed, first.run(inputs, options));
  std::optional<std::vector<Tensor>> host_outputs; // when building the rest ran the host ops
  if (std::shared_ptr<const SymbolicRest> rest = symbolic_rest(inputs, handed, &host_outputs)) {
    // The handed-over values move (a detector's heads hand over tens of megabytes): to the
    // host ops, shared, then into the rest's inputs.
    std::vector<std::shared_ptr<Tensor>> owned;
    std::vector<TensorRef> shared;
    for (Tensor& t : handed) {
      owned.push_back(std::make_shared<Tensor>(std::move(t)));
      shared.push_back(owned.back());
    }
    if (!host_outputs) {
      host_outputs.emplace();
      for (const HostOp& op : rest->host_ops) {
        WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(shared));
        for (size_t o = 0; o < outs.size(); ++o) {
          if (op.node.outputs[o]) host_outputs->push_back(std::move(outs[o]));
        }
      }
    }
    shared.clear();
    std::vector<Tensor> all = std::move(inputs); // then the handed-over values it does not fold
    for (size_t i = 0; i < owned.size(); ++i) {
      if (!keyed_[i]) all.push_back(std::move(*owned[i]));
    }
    std::move(host_outputs->begin(), host_outputs->end(), std::back_inserter(all));
    return rest->model->run(std::move(all), options);
  }
  std::vector<bool> input(handed.size());
  for (size_t i = 0; i < handed.size(); ++i)
    input[i] = is_input(i, handed[i]);
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledModel> next, next_stage(inputs, handed));
  std::vector<Tensor> all = std::move(inputs); // then the handed-over values it takes as inputs
  for (size_t i = 0; i < handed.size(); ++i) {
    if (input[i]) all.push_back(std::move(handed[i]));
  }
  return next->run(std::move(all), options);
}

Result<std::vector<Tensor>> Stages::HostOp::run(const std::vector<TensorRef>& values) const {
  std::vector<TensorRef> inputs(node.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (node.inputs[i])
      inputs[i] = handed[i] < 0 ? known[i] : values[static_cast<size_t>(handed[i])];
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> results, evaluate_with_values(node, inputs));
  // Unique's trailing outputs may be absent
  results.resize(std::min(results.size(), node.outputs.size()));
  return results;
}

std::shared_ptr<const Stages::SymbolicRest>
Stages::symbolic_rest(const std::vector<Tensor>& inputs, const std::vector<Tensor>& handed,
                      std::optional<std::vector<Tensor>>* host_outputs) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (symbolic_failed_) return nullptr;
  std::string key = key_of(handed, keyed_);
  for (const auto& [k, rest] : symbolic_) {
    if (k == key) return rest;
  }
  Result<SymbolicRest> built = build_symbolic_rest(inputs, handed, host_outputs);
  if (!built.ok()) {
    log_info("{}: the stage after the host ops compiles per content: {}", graph_.source,
             built.status().message());
    symbolic_failed_ = true;
    return nullptr;
  }
  bool keyed = std::find(keyed_.begin(), keyed_.end(), true) != keyed_.end();
  log_info("{}: the stage after the host ops compiled {}, over symbolic extents", graph_.source,
           keyed ? "for these values of the handed-over ones that decide control flow or shapes"
                 : "once");
  if (symbolic_.size() == kKept) symbolic_.erase(symbolic_.begin());
  symbolic_.emplace_back(key, std::make_shared<const SymbolicRest>(std::move(built).value()));
  return symbolic_.back().second;
}

Result<Stages::SymbolicRest>
Stages::build_symbolic_rest(const std::vector<Tensor>& inputs, const std::vector<Tensor>& handed,
                            std::optional<std::vector<Tensor>>* host_outputs) const {
  SymbolicRest rest;
  Graph g = graph_.clone();
  std::vector<Tensor> samples = inputs;
  std::vector<const Value*> handed_inputs(handed_over_.size(), nullptr);
  std::vector<TensorRef> shared; // for the host ops' first run
  for (const Tensor& t : handed)
    shared.push_back(std::make_shared<const Tensor>(t));
  for (size_t h = 0; h < handed_over_.size(); ++h) {
    Value* v = g.find_value(handed_over_[h]);
    if (keyed_[h]) {
      g.replace_all_uses(v, g.add_constant(g.unique_name(v->name + "_value"), handed[h]));
      continue;
    }
    Value* in = g.add_value(g.unique_name(v->name + "_handed"), v->type);
    g.replace_all_uses(v, in);
    g.inputs.push_back(in);
    handed_inputs[h] = in;
    samples.push_back(handed[h]);
  }
  // The keyed values choose the Ifs' branches, unroll Loops and fold shapes.
  if (std::find(keyed_.begin(), keyed_.end(), true) != keyed_.end()) {
    WEFT_RETURN_IF_ERROR(refold(g, "handed over"));
    WEFT_RETURN_IF_ERROR(stages::run_host_ops(g));
  }
  // The host ops: the data-dependent nodes that read only handed-over values and constants.
  // Those further on stay, and stage the compile of the rest again.
  std::vector<const Node*> host;
  size_t first_host_sample = 0; // their outputs' place in "samples"
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    if (!is_data_dependent(n) || rewrites_graph(n) || n.conditional) continue;
    HostOp op{n, {}, {}};
    bool reads_handed = true;
    for (const Value* v : n.inputs) {
      auto it = std::find(handed_inputs.begin(), handed_inputs.end(), v);
      reads_handed &= !v || v->is_constant() || it != handed_inputs.end();
      op.known.push_back(v && v->is_constant() ? v->constant : nullptr);
      op.handed.push_back(
          !v || it == handed_inputs.end() ? -1 : static_cast<int>(it - handed_inputs.begin()));
    }
    if (!reads_handed) continue;
    if (host.empty()) first_host_sample = samples.size();
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(shared));
    // The output types by the op's shape function, whatever the model declares: a
    // data-dependent extent is a symbol of its own (one per count: Unique's outputs share it).
    if (!n.def->infer)
      return Status::error(fmt::format("{} '{}' has no shape function", n.op_type, n.name));
    WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types, n.def->infer(n));
    std::map<std::string, Dim> counts;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      Value* v = n.outputs[o];
      if (!v) continue;
      if (o >= types.size())
        return Status::error(
            fmt::format("{} '{}' has no type for output {}", n.op_type, n.name, o));
      TensorType type = types[o];
      if (!type.shape) // its rank as computed (a Loop's carried values may change rank)
        type.shape = Shape(static_cast<size_t>(outs[o].rank()), Dim::unknown());
      for (size_t axis = 0; axis < type.shape->size(); ++axis) {
        Dim& d = (*type.shape)[axis];
        // (Dims over the inputs' symbols stay: Unique's inverse indices, one per element.)
        if (d.is_static() || (!d.is_unknown() && n.op_type != Op::kLoop)) continue;
        // (A Loop's unknown extents are unrelated: its carried values grow as its body says.)
        std::string name = n.op_type == Op::kLoop && d.is_unknown() ? fmt::format("{}:{}", o, axis)
                                                                    : d.symbol_name();
        auto [it, added] = counts.try_emplace(name, 0);
        if (added)
          it->second =
              g.unique_symbol(fmt::format("host{}_count{}", rest.host_ops.size(), counts.size()));
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
  name_input_dims(g);
  std::vector<int> frozen_inputs;
  WEFT_RETURN_IF_ERROR(stages::specialize(g, samples, true, &frozen_inputs));
  WEFT_RETURN_IF_ERROR(stages::run_host_ops(g)); // a Loop whose trip count folded unrolls
  CompileSettings settings = settings_;
  settings.dynamic_shapes = true;
  WEFT_ASSIGN_OR_RETURN(bool unrolled, stages::recurrent_forms(g, settings));
  if (unrolled) WEFT_RETURN_IF_ERROR(refold(g, "recurrent forms"));
  auto model = std::make_shared<CompiledModel>();
  stages::PhaseTimer timer(&model->phases);
  stages::Dumper no_dump("");
  model->output_names = stages::output_names_of(g);
  WEFT_RETURN_IF_ERROR(
      stages::compile_graph(std::move(g), frozen_, settings, no_dump, timer, *model));
  rest.model = std::move(model);
  // This run's host outputs, computed above: a Loop on the host pastes 100 masks.
  if (!host.empty())
    *host_outputs = std::vector<Tensor>(
        std::make_move_iterator(samples.begin() + static_cast<std::ptrdiff_t>(first_host_sample)),
        std::make_move_iterator(samples.end()));
  else
    host_outputs->emplace();
  return rest;
}

bool Stages::is_input(size_t i, const Tensor& value) const {
  return i >= needed_ && value.num_elements() > kMaxFoldedElements;
}

Result<std::shared_ptr<const CompiledModel>> Stages::next_stage(const std::vector<Tensor>& inputs,
                                                                std::vector<Tensor>& handed) const {
  std::vector<bool> constant(handed.size());
  std::vector<TensorType> types; // of its inputs
  for (const Tensor& t : inputs)
    types.push_back(t.type());
  for (size_t i = 0; i < handed.size(); ++i) {
    constant[i] = !is_input(i, handed[i]);
    if (!constant[i]) types.push_back(handed[i].type());
  }
  std::string key = key_of(handed, constant);
  for (const TensorType& t : types)
    key += t.to_string();
  std::lock_guard<std::mutex> lock(mutex_);
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
  // A stage of a compile over symbols compiles for this content's static shapes, as the
  // stages of a static compile do: it may wait for shape values, as Mask R-CNN's pasting does.
  CompileSettings settings = settings_;
  if (settings.dynamic_shapes) {
    WEFT_RETURN_IF_ERROR(specialize_shapes(graph, types));
    settings.dynamic_shapes = false;
  }
  WEFT_RETURN_IF_ERROR(refold(graph, "handed over"));
  WEFT_RETURN_IF_ERROR(stages::run_host_ops(graph));
  WEFT_ASSIGN_OR_RETURN(bool unrolled, stages::recurrent_forms(graph, settings));
  if (unrolled) WEFT_RETURN_IF_ERROR(refold(graph, "recurrent forms"));
  auto next = std::make_shared<CompiledModel>();
  stages::PhaseTimer timer(&next->phases);
  stages::Dumper no_dump("");
  next->output_names = stages::output_names_of(graph);
  WEFT_RETURN_IF_ERROR(
      stages::compile_graph(std::move(graph), frozen_, settings, no_dump, timer, *next));
  if (kept_.size() == kKept) kept_.erase(kept_.begin());
  kept_.emplace_back(key, next);
  return std::shared_ptr<const CompiledModel>(next);
}

} // namespace weft
