#include "weft/driver/compile_model.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "weft/driver/pipeline.h"
#include "weft/driver/stages.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/passes/channels_last.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/print_graph.h"
#include "weft/graph/verify_graph.h"
#include "weft/runtime/cuda/device.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"

namespace weft {

namespace {

std::vector<std::string> output_names_of(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value* v : graph.outputs)
    names.push_back(v->name);
  return names;
}

Status compile_graph(Graph graph, const stages::Frozen& frozen, const CompileSettings& settings,
                     stages::Dumper& dump, stages::PhaseTimer& timer, CompiledModel& out);

} // namespace

Result<std::vector<runtime::TensorInfo>> model_inputs(const ModelSource& model) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(model));
  std::vector<runtime::TensorInfo> inputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type});
  return inputs;
}

// The stages after the first, in a model with data-dependent ops: the specialized graph and
// the values the first stage hands over to its host ops. Where every host op is NonZero,
// Unique, NonMaxSuppression or Compress and reads only handed-over values and constants,
// the rest of the model compiles once, over symbols for their data-dependent extents, and
// each run computes the host ops on the host and runs it (dynamic shapes' machinery: no
// compile per content). Otherwise, or where that compile fails, the next stage is compiled
// for each handed-over content (the most recent few kept).
class Stages {
public:
  Stages(Graph graph, std::vector<std::string> handed_over, stages::Frozen frozen,
         CompileSettings settings)
      : graph_(std::move(graph)), handed_over_(std::move(handed_over)), frozen_(std::move(frozen)),
        settings_(std::move(settings)) {
    settings_.dump_dir.clear();
  }

  Result<std::vector<Tensor>> run(const runtime::Executable& first,
                                  const std::vector<Tensor>& inputs,
                                  const runtime::RunOptions& options) const {
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> handed, first.run(inputs, options));
    if (const SymbolicRest* rest = symbolic_rest(inputs, handed)) {
      std::vector<Tensor> all = inputs;
      all.insert(all.end(), handed.begin(), handed.end());
      for (const HostOp& op : rest->host_ops) {
        WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(handed));
        all.insert(all.end(), outs.begin(), outs.end());
      }
      return rest->model->run(all, options);
    }
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledModel> next, next_stage(handed));
    return next->run(inputs, options);
  }

private:
  static constexpr size_t kKept = 8;

  // A host op of the symbolic rest, with where its inputs come from.
  struct HostOp {
    const Node* node;            // in graph_
    std::vector<int> handed;     // per input: the handed-over value it is, or -1 (constant)
    Result<std::vector<Tensor>> run(const std::vector<Tensor>& values) const {
      std::vector<Value> ins(node->inputs.size());
      Node n = *node;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (!n.inputs[i] || handed[i] < 0) continue;
        ins[i].type = values[static_cast<size_t>(handed[i])].type();
        ins[i].constant = std::make_shared<const Tensor>(values[static_cast<size_t>(handed[i])]);
        n.inputs[i] = &ins[i];
      }
      return evaluate_on_host(n);
    }
  };
  struct SymbolicRest {
    std::vector<HostOp> host_ops;
    std::shared_ptr<const CompiledModel> model; // inputs: the model's, handed, host outputs
  };

  const SymbolicRest* symbolic_rest(const std::vector<Tensor>& inputs,
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

  Result<SymbolicRest> build_symbolic_rest(const std::vector<Tensor>& inputs,
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
      if (n.op_type == Op::kIf || n.op_type == Op::kLoop || n.op_type == Op::kScan || n.conditional)
        return Status::error(fmt::format("{} '{}' rewrites the graph", n.op_type, n.name));
      HostOp op{graph_.nodes()[i].get(), {}};
      for (const Value* v : n.inputs) {
        auto it = std::find(handed_inputs.begin(), handed_inputs.end(), v);
        if (v && !v->is_constant() && it == handed_inputs.end())
          return Status::error(fmt::format("{} '{}' reads a value computed after the first stage",
                                           n.op_type, n.name));
        op.handed.push_back(it == handed_inputs.end() ? -1
                                                      : static_cast<int>(it - handed_inputs.begin()));
      }
      WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, op.run(handed));
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        Value* v = n.outputs[o];
        if (!v) return Status::error(fmt::format("{} '{}' omits an output", n.op_type, n.name));
        TensorType type = v->type; // its data-dependent dims become named symbols
        for (size_t d = 0; type.shape && d < type.shape->size(); ++d) {
          if ((*type.shape)[d].is_static()) continue;
          std::string symbol = fmt::format("{}_dim{}", v->name, d);
          g.note_symbol(symbol);
          (*type.shape)[d] = Dim::symbol(symbol);
        }
        Value* in = g.add_value(g.unique_name(v->name + "_host"), type);
        g.replace_all_uses(v, in);
        g.inputs.push_back(in);
        samples.push_back(std::move(outs[o]));
      }
      host.push_back(&n);
      rest.host_ops.push_back(std::move(op));
    }
    g.remove_nodes_if([&](const Node& n) {
      return std::find(host.begin(), host.end(), &n) != host.end();
    });
    WEFT_RETURN_IF_ERROR(eliminate_dead_code(g));
    std::vector<int> frozen_inputs;
    WEFT_RETURN_IF_ERROR(stages::specialize(g, samples, true, &frozen_inputs));
    CompileSettings settings = settings_;
    settings.dynamic_shapes = true;
    auto model = std::make_shared<CompiledModel>();
    stages::PhaseTimer timer(&model->phases);
    stages::Dumper no_dump("");
    model->output_names = output_names_of(g);
    WEFT_RETURN_IF_ERROR(compile_graph(std::move(g), frozen_, settings, no_dump, timer, *model));
    rest.model = std::move(model);
    return rest;
  }

  Result<std::shared_ptr<const CompiledModel>> next_stage(std::vector<Tensor>& handed) const {
    std::string key;
    for (const Tensor& t : handed) {
      key += t.type().to_string();
      key += std::string_view(reinterpret_cast<const char*>(t.data()), t.num_bytes());
    }
    key = hash_hex(key);
    std::lock_guard<std::mutex> lock(mutex_); // later stages compile one at a time
    for (const auto& [k, stage] : kept_) {
      if (k == key) return stage;
    }
    // The handed-over values become constants; the host ops run on them.
    Graph graph = graph_.clone();
    for (size_t i = 0; i < handed.size(); ++i) {
      Value* v = graph.find_value(handed_over_[i]);
      graph.replace_all_uses(
          v, graph.add_constant(graph.unique_name(v->name + "_value"), std::move(handed[i])));
    }
    WEFT_RETURN_IF_ERROR(refold(graph, "handed over"));
    WEFT_RETURN_IF_ERROR(stages::run_host_ops(graph));
    auto next = std::make_shared<CompiledModel>();
    stages::PhaseTimer timer(&next->phases);
    stages::Dumper no_dump("");
    next->output_names = output_names_of(graph);
    WEFT_RETURN_IF_ERROR(
        compile_graph(std::move(graph), frozen_, settings_, no_dump, timer, *next));
    if (kept_.size() == kKept) kept_.erase(kept_.begin());
    kept_.emplace_back(key, next);
    return std::shared_ptr<const CompiledModel>(next);
  }

  Graph graph_;
  std::vector<std::string> handed_over_;
  stages::Frozen frozen_;
  CompileSettings settings_;
  mutable std::once_flag symbolic_once_;
  mutable std::unique_ptr<SymbolicRest> symbolic_; // null: compile per content
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const CompiledModel>>> kept_;
};

namespace {

// Compiles "graph" (specialized) into "out": the stages of stages.h from library selection
// to the executable. A graph with data-dependent ops compiles the stage that computes their
// inputs, and hands the rest to Stages.
Status compile_graph(Graph graph, const stages::Frozen& frozen, const CompileSettings& settings,
                     stages::Dumper& dump, stages::PhaseTimer& timer, CompiledModel& out) {
  std::vector<std::string> handed_over = stages::host_op_inputs(graph, &out.host_ops);
  if (settings.dynamic_shapes && !handed_over.empty()) {
    return Status::error(fmt::format("{}: dims known only at run time need a model without "
                                     "data-dependent shapes",
                                     graph.source));
  }
  if (!handed_over.empty()) {
    Graph first = graph.clone();
    first.outputs.clear();
    for (const std::string& name : handed_over)
      first.outputs.push_back(first.find_value(name));
    WEFT_RETURN_IF_ERROR(eliminate_dead_code(first));
    WEFT_RETURN_IF_ERROR(verify_graph(first, "first stage"));
    out.rest =
        std::make_shared<const Stages>(std::move(graph), std::move(handed_over), frozen, settings);
    graph = std::move(first);
  }
  WEFT_RETURN_IF_ERROR(stages::check_lowerable(graph));
  WEFT_RETURN_IF_ERROR(check_conditional_shapes(graph)); // the branches that stayed
  timer.end("specialize");

  bool cuda = settings.device == DeviceKind::kCuda;
  // A CUDA build runs on the device, which takes the GEMMs; a compile-only one has none, and
  // generates them, except over symbolic dims, where only a library call can run them: it then
  // selects the calls a device would make, so that the kernels around them compile as they
  // would run.
  std::shared_ptr<runtime::cuda::Device> device;
  if (settings.goal == CompileGoal::kPtx && (!cuda || settings.cuda_archs.empty()))
    return Status::error("PTX is built for device cuda and at least one architecture");
  if (cuda && settings.goal == CompileGoal::kExecutable) {
    WEFT_ASSIGN_OR_RETURN(device, runtime::cuda::open_device());
  }
  stages::LibrarySelection library = stages::select_library_calls(graph, settings, device);
  WEFT_ASSIGN_OR_RETURN(std::vector<fusion::Step> steps, stages::lower_graph(graph, library));
  timer.end("lower");
  if (settings.fusion) {
    steps = stages::fuse_steps(graph, std::move(steps), library, &out.fusion_decisions);
    timer.end("fuse");
  }
  WEFT_ASSIGN_OR_RETURN(stages::Plan plan,
                        stages::plan_buffers(graph, std::move(steps), library, cuda));
  std::string kernels_text;
  std::vector<codegen::CpuSchedule> schedules =
      stages::schedule_kernels(plan, settings, &out.kernels, &kernels_text);
  timer.end("plan");
  if (settings.goal == CompileGoal::kPlan) {
    stages::log_phases(graph.source, out.phases);
    out.graph = std::move(graph);
    return Status();
  }

  WEFT_ASSIGN_OR_RETURN(stages::GeneratedSource generated,
                        stages::generate_source(plan, schedules, settings));
  timer.end("generate");
  log_info("{}: {} generated kernels, {} from the function cache; {} library calls", graph.source,
           plan.kernels.size(), generated.cache_hits, plan.launches.size() - plan.kernels.size());
  dump.write("kernels.txt", kernels_text);
  dump.write(cuda ? "kernels.cu" : "kernels.cc", generated.source);
  if (!cuda) dump.write("build.sh", stages::rebuild_script());
  WEFT_RETURN_IF_ERROR(dump.status());
  out.dump_dir = dump.dir();
  if (!dump.dir().empty()) log_info("dumped {} to {}", graph.source, dump.dir());

  if (settings.goal == CompileGoal::kPtx) {
    WEFT_RETURN_IF_ERROR(
        stages::build_ptx(graph.source, generated.source, settings.cuda_archs, &out.ptx));
    timer.end("build");
  } else if (settings.goal == CompileGoal::kExecutable && cuda) {
    WEFT_ASSIGN_OR_RETURN(out.executable, stages::build_cuda(graph, std::move(plan), generated,
                                                             device, frozen, timer));
  } else if (settings.goal == CompileGoal::kExecutable) {
    WEFT_ASSIGN_OR_RETURN(
        out.executable,
        stages::build_cpu(graph, std::move(plan), generated.source, frozen, timer, &out.cache_hit));
  }
  stages::log_phases(graph.source, out.phases);
  out.graph = std::move(graph);
  out.source = std::move(generated.source);
  return Status();
}

} // namespace

// The pipeline: graph passes, specialization, the layout pass, then compile_graph's stages.
Result<CompiledModel> compile_model(const ModelSource& model,
                                    const std::vector<Tensor>& sample_inputs,
                                    const CompileSettings& settings) {
  CompiledModel out;
  stages::PhaseTimer timer(&out.phases);
  stages::Dumper dump(stages::dump_dir_for(model, sample_inputs, settings));
  int pass_index = 0;
  auto observe = [&](std::string_view pass, const Graph& g) {
    dump.write(fmt::format("{:02}_{}.txt", pass_index++, pass), print_graph(g));
  };
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(model, observe));
  timer.end("graph passes");
  std::vector<int> frozen_inputs;
  WEFT_RETURN_IF_ERROR(
      stages::specialize(graph, sample_inputs, settings.dynamic_shapes, &frozen_inputs));
  WEFT_RETURN_IF_ERROR(stages::run_host_ops(graph));
  observe("specialize", graph);
  if (stages::onednn_calls(settings)) {
    WEFT_ASSIGN_OR_RETURN(bool changed, channels_last(graph));
    if (changed) {
      WEFT_RETURN_IF_ERROR(refold(graph, "channels_last"));
      observe("channels_last", graph);
    }
  }
  out.output_names = output_names_of(graph);
  stages::Frozen frozen;
  for (int i : frozen_inputs)
    frozen.emplace_back(i, sample_inputs[static_cast<size_t>(i)]);
  WEFT_RETURN_IF_ERROR(compile_graph(std::move(graph), frozen, settings, dump, timer, out));
  return out;
}

Result<std::vector<Tensor>> CompiledModel::run(const std::vector<Tensor>& inputs,
                                               const runtime::RunOptions& options) const {
  if (!executable) return Status::error(fmt::format("{}: the model was not built", graph.source));
  if (!rest) return executable->run(inputs, options);
  return rest->run(*executable, inputs, options);
}

} // namespace weft
