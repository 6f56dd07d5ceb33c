#include "weft/driver/compile_model.h"

#include <algorithm>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "weft/driver/later_stages.h"
#include "weft/driver/pipeline.h"
#include "weft/driver/stages.h"
#include "weft/graph/passes/channels_last.h"
#include "weft/graph/passes/conv_transpose_as_matmul.h"
#include "weft/graph/passes/depthwise_multiplier.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/expand_recurrent.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/passes/narrow_in_f32.h"
#include "weft/graph/passes/products_in_bf16.h"
#include "weft/graph/print_graph.h"
#include "weft/graph/verify_graph.h"
#include "weft/library/dnnl.h"
#include "weft/library/recurrent_call.h"
#include "weft/onnx/import_model.h"
#include "weft/runtime/cuda/device.h"
#include "weft/support/host_memory.h"
#include "weft/support/log.h"

namespace weft {

// The import alone: the graph passes keep the inputs as declared, and running them here
// too doubled the CLI's compile work (0.3 s for a 271 MB decoder).
Result<std::vector<runtime::TensorInfo>> model_inputs(const ModelSource& model) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, model.in_memory
                                         ? import_model_bytes(model.serialized(), model.path, ".")
                                         : import_model(model.path));
  std::vector<runtime::TensorInfo> inputs;
  for (const Value* v : graph.inputs) {
    auto words = graph.string_inputs.find(v->name);
    inputs.push_back(
        {v->name, v->type,
         words == graph.string_inputs.end() ? std::vector<std::string>{} : words->second});
  }
  return inputs;
}

std::vector<std::string> stages::output_names_of(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value* v : graph.outputs)
    names.push_back(v->name);
  return names;
}

namespace {

// Adds to "handed_over" (and to the first stage's outputs) every value the first stage
// computes that the rest of "graph" reads or outputs, so that the rest starts from them rather
// than computing them again from the inputs: RetinaNet's postprocessing reads the heads'
// outputs, and ran its backbone (0.44 s) a second time in every run (1.5 s in all).
void hand_over_what_the_rest_reads(const Graph& graph, Graph& first,
                                   std::vector<std::string>& handed_over) {
  std::set<std::string> computed; // by the first stage
  for (const auto& n : first.nodes()) {
    for (const Value* v : n->outputs)
      if (v) computed.insert(v->name);
  }
  auto hand_over = [&](const Value* v) {
    if (!v || !computed.contains(v->name) ||
        std::find(handed_over.begin(), handed_over.end(), v->name) != handed_over.end())
      return;
    handed_over.push_back(v->name);
    first.outputs.push_back(first.find_value(v->name));
  };
  for (const auto& n : graph.nodes()) {
    bool in_first = std::any_of(n->outputs.begin(), n->outputs.end(),
                                [&](const Value* v) { return v && computed.contains(v->name); });
    if (in_first) continue;
    for (const Value* v : n->inputs)
      hand_over(v);
  }
  for (const Value* v : graph.outputs)
    hand_over(v);
}

} // namespace

// The stages of stages.h from library selection to the executable. A graph with
// data-dependent ops compiles the stage that computes their inputs, and hands the rest to
// Stages (later_stages.h).
Status stages::compile_graph(Graph graph, const Frozen& frozen, const CompileSettings& settings,
                             Dumper& dump, PhaseTimer& timer, CompiledModel& out) {
  std::vector<std::string> handed_over =
      stages::host_op_inputs(graph, !settings.dynamic_shapes, &out.host_ops);
  if (!handed_over.empty()) {
    Graph first = graph.clone();
    first.outputs.clear();
    for (const std::string& name : handed_over)
      first.outputs.push_back(first.find_value(name));
    WEFT_RETURN_IF_ERROR(eliminate_dead_code(first));
    size_t needed = handed_over.size();
    hand_over_what_the_rest_reads(graph, first, handed_over);
    WEFT_RETURN_IF_ERROR(verify_graph(first, "first stage"));
    out.rest = std::make_shared<const Stages>(std::move(graph), std::move(handed_over), needed,
                                              frozen, settings);
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
  for (const auto& n : graph.nodes()) { // (check_lowerable let them through for the CPU)
    if (library::runs_recurrent(*n) && !library.calls.contains(n.get()))
      return Status::error(location_of(graph, *n),
                           fmt::format("a recurrent op over a symbolic sequence or one longer "
                                       "than {} steps runs only on the CPU (Weft's recurrent "
                                       "call)",
                                       kMaxUnrolledSteps));
  }
  for (const auto& [node, call] : library.calls) {
    for (const DimLimit& limit : call.limits) {
      if (std::find(graph.dim_limits.begin(), graph.dim_limits.end(), limit) ==
          graph.dim_limits.end())
        graph.dim_limits.push_back(limit);
    }
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<fusion::Step> steps, stages::lower_graph(graph, library));
  timer.end("lower");
  if (settings.fusion) {
    steps = stages::fuse_steps(graph, std::move(steps), library, &out.fusion_decisions);
    timer.end("fuse");
  }
  WEFT_ASSIGN_OR_RETURN(stages::Plan plan,
                        stages::plan_buffers(graph, std::move(steps), library, cuda));
  // CUDA tuning records belong to a device: a compile that will not run (inspect) reads those
  // of this machine's device, if it has one.
  std::string cuda_device = device ? device->describe() : "";
  if (cuda && !device && settings.tuning && settings.goal != CompileGoal::kPtx) {
    if (Result<std::shared_ptr<runtime::cuda::Device>> here = runtime::cuda::open_device();
        here.ok())
      cuda_device = (*here)->describe();
  }
  std::string kernels_text;
  std::vector<stages::KernelChoice> choices =
      stages::schedule_kernels(plan, settings, cuda_device, &out.kernels, &kernels_text);
  timer.end("plan");
  if (settings.goal == CompileGoal::kPlan) {
    stages::log_phases(graph.source, out.phases);
    out.graph = std::move(graph);
    return Status();
  }

  WEFT_ASSIGN_OR_RETURN(stages::GeneratedSource generated,
                        stages::generate_source(plan, choices, settings));
  timer.end("generate");
  log_info("{}: {} generated kernels, {} from the function cache, {} the same as another; {} "
           "library calls",
           graph.source, plan.kernels.size(), generated.cache_hits, generated.same_as_another,
           plan.launches.size() - plan.kernels.size());
  std::set<std::string> listed; // a kernel the same as another launches its functions
  for (const std::vector<runtime::cuda::LaunchShape>& kernel : generated.launches) {
    for (const runtime::cuda::LaunchShape& l : kernel) {
      if (listed.insert(l.function).second) out.cuda_launches.push_back(l);
    }
  }
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
    WEFT_ASSIGN_OR_RETURN(out.executable, stages::build_cpu(graph, std::move(plan), generated,
                                                            frozen, timer, &out.cache_hit));
  }
  stages::log_phases(graph.source, out.phases);
  out.graph = std::move(graph);
  out.source = std::move(generated.source);
  return Status();
}

namespace {

// The pipeline: graph passes (or a clone of "pipeline", their graph), specialization, the
// layout pass, then compile_graph's stages.
Result<CompiledModel> compile(const ModelSource& model, const Graph* pipeline,
                              const std::vector<Tensor>& sample_inputs,
                              const CompileSettings& settings) {
  CompiledModel out;
  stages::PhaseTimer timer(&out.phases);
  stages::Dumper dump(stages::dump_dir_for(model, sample_inputs, settings));
  int pass_index = 0;
  auto observe = [&](std::string_view pass, const Graph& g) {
    if (dump.dir().empty()) return; // printing a language model's graph takes milliseconds
    dump.write(fmt::format("{:02}_{}.txt", pass_index++, pass), print_graph(g));
  };
  // A dump shows the graph after each pass: those run again where the model can be read.
  bool readable = !model.in_memory || !model.serialized().empty();
  Graph graph;
  if (!pipeline || (!dump.dir().empty() && readable)) {
    WEFT_ASSIGN_OR_RETURN(graph, run_graph_pipeline(model, observe));
  } else {
    graph = pipeline->clone();
    observe("graph_passes", graph);
  }
  timer.end("graph passes");
  std::vector<int> frozen_inputs;
  WEFT_RETURN_IF_ERROR(
      stages::specialize(graph, sample_inputs, settings.dynamic_shapes, &frozen_inputs));
  WEFT_RETURN_IF_ERROR(stages::run_host_ops(graph));
  WEFT_ASSIGN_OR_RETURN(bool quantized, stages::quantized_forms(graph, settings));
  if (quantized) WEFT_RETURN_IF_ERROR(refold(graph, "quantized forms"));
  WEFT_ASSIGN_OR_RETURN(bool experts, stages::moe_forms(graph, settings));
  if (experts) WEFT_RETURN_IF_ERROR(refold(graph, "moe forms"));
  WEFT_ASSIGN_OR_RETURN(bool unrolled, stages::recurrent_forms(graph, settings));
  if (unrolled) WEFT_RETURN_IF_ERROR(refold(graph, "recurrent forms"));
  observe("specialize", graph);
  if (stages::cuda_library_calls(settings)) {
    WEFT_ASSIGN_OR_RETURN(bool widened, narrow_in_f32(graph, {Op::kConv, Op::kMatMul, Op::kGemm}));
    if (widened) WEFT_RETURN_IF_ERROR(refold(graph, "narrow_in_f32"));
  }
  if (stages::onednn_calls(settings)) { // the layout of the library calls' regions
    WEFT_ASSIGN_OR_RETURN(bool widened, narrow_in_f32(graph));
    if (widened) WEFT_RETURN_IF_ERROR(refold(graph, "narrow_in_f32"));
    if (settings.allow_bf16 && library::bf16_products_native()) {
      WEFT_ASSIGN_OR_RETURN(bool rounded, products_in_bf16(graph));
      if (rounded) WEFT_RETURN_IF_ERROR(refold(graph, "products_in_bf16"));
    }
    WEFT_ASSIGN_OR_RETURN(bool products, conv_transpose_as_matmul(graph));
    WEFT_ASSIGN_OR_RETURN(
        bool changed, channels_last(
                          graph, [](const Node& n) { return !library::int8_conv_unfit(n); },
                          [](const Node& n) {
                            return library::few_channels_a_group(n) || library::onednn_resamples(n);
                          }));
    WEFT_ASSIGN_OR_RETURN(bool repeated, depthwise_multiplier(graph));
    if (products || repeated || changed) {
      WEFT_RETURN_IF_ERROR(refold(graph, "channels_last"));
      WEFT_RETURN_IF_ERROR(pools_between_regions(graph).status());
      observe("channels_last", graph);
    }
  }
  out.output_names = stages::output_names_of(graph);
  stages::Frozen frozen;
  for (int i : frozen_inputs)
    frozen.emplace_back(i, sample_inputs[static_cast<size_t>(i)]);
  WEFT_RETURN_IF_ERROR(
      stages::compile_graph(std::move(graph), frozen, settings, dump, timer, out));
  release_cached_host_memory(); // what the stages replaced (host_memory.h)
  return out;
}

} // namespace

Result<CompiledModel> compile_model(const ModelSource& model,
                                    const std::vector<Tensor>& sample_inputs,
                                    const CompileSettings& settings) {
  return compile(model, nullptr, sample_inputs, settings);
}

Result<CompiledModel> compile_model(const ModelSource& model, const Graph& pipeline,
                                    const std::vector<Tensor>& sample_inputs,
                                    const CompileSettings& settings) {
  return compile(model, &pipeline, sample_inputs, settings);
}

Result<std::vector<Tensor>> CompiledModel::run(const std::vector<Tensor>& inputs,
                                               const runtime::RunOptions& options) const {
  if (!executable) return Status::error(fmt::format("{}: the model was not built", graph.source));
  if (!rest) return executable->run(inputs, options);
  return rest->run(*executable, inputs, options);
}

Result<std::vector<Tensor>> CompiledModel::run(std::vector<Tensor>&& inputs,
                                               const runtime::RunOptions& options) const {
  if (!executable) return Status::error(fmt::format("{}: the model was not built", graph.source));
  if (!rest) return executable->run(inputs, options);
  return rest->run(*executable, std::move(inputs), options);
}

} // namespace weft
