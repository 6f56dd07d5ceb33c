#include "weft/driver/compile_model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/codegen/compile_cpu.h"
#include "weft/codegen/emit_c.h"
#include "weft/codegen/generate.h"
#include "weft/driver/pipeline.h"
#include "weft/driver/tuning_cache.h"
#include "weft/fusion/fuse.h"
#include "weft/graph/control_flow.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/channels_last.h"
#include "weft/graph/passes/decompose.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/eliminate_identity.h"
#include "weft/graph/passes/expand_recurrent.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/fold_shape_values.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/graph/passes/split_moments.h"
#include "weft/graph/print_graph.h"
#include "weft/graph/verify_graph.h"
#include "weft/kernel/lower_node.h"
#include "weft/kernel/strategy.h"
#include "weft/library/cuda_library.h"
#include "weft/library/dnnl.h"
#include "weft/library/shape_call.h"
#include "weft/runtime/cuda/cuda_kernel.h"
#include "weft/runtime/cuda/device.h"
#include "weft/runtime/cuda/nvrtc.h"
#include "weft/support/grouped_list.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"
#include "weft/support/parallel.h"

namespace weft {

namespace {

using runtime::Slot;

// Folding what constants determine, to a fixed point (folding makes shapes static, which
// lets more Shape ops fold); then the clean-up passes.
Status refold(Graph& graph, std::string_view after) {
  for (size_t before = 0; before != graph.nodes().size();) {
    before = graph.nodes().size();
    WEFT_RETURN_IF_ERROR(fold_constants(graph));
    WEFT_RETURN_IF_ERROR(infer_shapes(graph));
  }
  // Needs static sequence lengths. The slices of the weights it takes fold when the weights
  // are constant.
  WEFT_RETURN_IF_ERROR(expand_recurrent(graph));
  WEFT_RETURN_IF_ERROR(fold_constants(graph));
  WEFT_RETURN_IF_ERROR(decompose(graph)); // those whose rank only specialization gave
  WEFT_RETURN_IF_ERROR(canonicalize(graph));
  WEFT_RETURN_IF_ERROR(eliminate_identity(graph));
  WEFT_RETURN_IF_ERROR(split_moments(graph));
  WEFT_RETURN_IF_ERROR(eliminate_dead_code(graph));
  return verify_graph(graph, after);
}

// WEFT_ONEDNN=0: no library calls (docs/knobs.md).
bool library_off() {
  const char* onednn = std::getenv("WEFT_ONEDNN");
  return onednn && std::string(onednn) == "0";
}

// Will the CPU's library calls (oneDNN) run this compile's convolutions?
bool onednn_calls(const CompileSettings& settings) {
  return settings.device == "cpu" && settings.library && !library_off();
}

// "given" with the symbolic dims that "declared" has in their places.
TensorType keep_symbols(const TensorType& declared, TensorType given) {
  if (!declared.shape || declared.shape->size() != given.shape->size()) return given;
  for (size_t d = 0; d < given.shape->size(); ++d) {
    if (!(*declared.shape)[d].is_static()) (*given.shape)[d] = (*declared.shape)[d];
  }
  return given;
}

// Binding input types (and shape-operand values), then folding what they determine. With
// "dynamic_shapes", the inputs' symbolic dims stay symbols.
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
  // (a resolved Reshape's shape feeds the next).
  for (bool resolved = true; resolved;) {
    WEFT_ASSIGN_OR_RETURN(resolved, fold_shape_values(graph));
    if (resolved) WEFT_RETURN_IF_ERROR(refold(graph, "fold_shape_values"));
  }
  return Status();
}

// One message listing every node that cannot run yet, grouped by op.
Status check_lowerable(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> nodes; // (op, node)
  for (const auto& n : graph.nodes()) {
    // (Shapes over symbols run as calls: library::shape_call.)
    bool symbolic_shape = (n->op_type == "Shape" || n->op_type == "Size") &&
                          n->inputs[0]->type.shape && !shape_is_static(*n->inputs[0]->type.shape);
    // (channels_last makes these only where oneDNN runs the convolutions.)
    bool library_only = n->op_type == kConvChannelsLastOp;
    if (!kernel::can_lower(*n) && !symbolic_shape && !library_only)
      nodes.emplace_back(fmt::format("{} (opset {})", n->op_type, n->opset), n->name);
  }
  if (nodes.empty()) return Status();
  return Status::error(
      fmt::format("{}: ops Weft cannot execute yet: {}", graph.source, format_grouped(nodes)));
}

std::string kernel_name(size_t index, const std::string& op) {
  std::string name = fmt::format("k{}_{}", index, op);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

struct LoweredKernel {
  kernel::BoundKernel bound;
  std::string name;
};

// The slots and launches of the plan, built as the kernels are bound.
class PlanBuilder {
public:
  explicit PlanBuilder(const Graph& g) : graph_(g) {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      add(g.inputs[i], Slot::input(static_cast<int>(i)));
    for (const auto& v : g.values()) {
      if (v->is_constant()) add(v.get(), Slot::constant_of(v->constant));
    }
  }

  void alias(const Value* out, const Value* of) { add(out, Slot::alias_of(slot_of(of))); }

  // Slots of a kernel's buffers; node outputs get theirs on first write.
  std::vector<int> bind(const kernel::BoundKernel& k) {
    std::vector<int> slots;
    for (size_t b = 0; b < k.values.size(); ++b) {
      // A null value is a temporary of this launch only.
      slots.push_back(
          k.values[b] ? slot_for(k.values[b])
                      : new_arena(bytes_of(k.kernel.buffers[b].dtype, k.kernel.buffers[b].shape)));
      touch(slots.back(), static_cast<int>(launches_));
    }
    ++launches_;
    return slots;
  }

  // Slots of the values a library call binds.
  std::vector<int> bind(const std::vector<const Value*>& values) {
    std::vector<int> slots;
    for (const Value* v : values) {
      slots.push_back(slot_for(v));
      touch(slots.back(), static_cast<int>(launches_));
    }
    ++launches_;
    return slots;
  }

  std::vector<int> output_slots() {
    std::vector<int> out;
    for (const Value* v : graph_.outputs) {
      out.push_back(slot_of(v));
      touch(slot_of(v), std::numeric_limits<int>::max()); // alive until the final copy
    }
    return out;
  }

  // Places the arena slots; returns the arena size.
  size_t place() {
    std::vector<runtime::Lifetime> lifetimes;
    std::vector<int> arena_slots;
    bool symbolic = false;
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      if (slot.kind != Slot::Kind::kArena) continue;
      slot.first = first_[s];
      slot.last = std::min(last_[s], static_cast<int>(launches_));
      symbolic |= !slot.bytes.is_static();
      if (symbolic) continue;
      arena_slots.push_back(static_cast<int>(s));
      lifetimes.push_back({static_cast<size_t>(slot.bytes.value()), slot.first, slot.last});
    }
    if (symbolic) return 0; // placed per run (runtime::Executable)
    std::vector<size_t> offsets;
    size_t total = runtime::plan_arena(lifetimes, &offsets);
    for (size_t i = 0; i < arena_slots.size(); ++i)
      slots_[static_cast<size_t>(arena_slots[i])].offset = offsets[i];
    return total;
  }

  std::vector<Slot> slots() const { return slots_; }

private:
  static Dim bytes_of(DType t, const Shape& s) {
    if (shape_is_static(s))
      return static_cast<int64_t>(shape_num_elements(s).value_or(0)) * dtype_size(t);
    Dim n = dtype_size(t);
    for (const Dim& d : s)
      n = dim_mul(n, d);
    return n;
  }
  int output_index(const Value* v) const {
    auto it = std::find(graph_.outputs.begin(), graph_.outputs.end(), v);
    return it == graph_.outputs.end() ? -1 : static_cast<int>(it - graph_.outputs.begin());
  }
  int add(const Value* v, Slot s) {
    slots_.push_back(std::move(s));
    first_.push_back(std::numeric_limits<int>::max());
    last_.push_back(-1);
    int id = static_cast<int>(slots_.size()) - 1;
    if (v) slot_[v] = id;
    return id;
  }
  int new_arena(Dim bytes) { return add(nullptr, Slot::arena(std::move(bytes))); }
  int slot_for(const Value* v) {
    if (slot_.contains(v)) return slot_of(v);
    return output_index(v) >= 0 ? add(v, Slot::output(output_index(v)))
                                : add(v, Slot::arena(bytes_of(v->type.dtype, *v->type.shape)));
  }
  int slot_of(const Value* v) const { return slot_.at(v); }
  // Extends the lifetime of the storage behind "slot" to cover "launch".
  void touch(int slot, int launch) {
    while (slots_[static_cast<size_t>(slot)].kind == Slot::Kind::kAlias)
      slot = slots_[static_cast<size_t>(slot)].index;
    size_t s = static_cast<size_t>(slot);
    first_[s] = std::min(first_[s], launch);
    last_[s] = std::max(last_[s], launch);
  }

  const Graph& graph_;
  std::vector<Slot> slots_;
  std::vector<int> first_, last_;
  std::unordered_map<const Value*, int> slot_;
  size_t launches_ = 0;
};

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Appends one PhaseTime per end(), timing from the previous end().
class PhaseTimer {
public:
  explicit PhaseTimer(std::vector<PhaseTime>* phases) : phases_(phases) {}
  void end(std::string phase) {
    auto now = Clock::now();
    phases_->push_back({std::move(phase), ms_between(start_, now)});
    start_ = now;
  }

private:
  std::vector<PhaseTime>* phases_;
  Clock::time_point start_ = Clock::now();
};

// The dump directory: explicit, or one per model and input types under $WEFT_DUMP_DIR.
std::string dump_dir_for(const ModelSource& model, const std::vector<Tensor>& inputs,
                         const CompileSettings& settings) {
  if (!settings.dump_dir.empty()) return settings.dump_dir;
  const char* root = std::getenv("WEFT_DUMP_DIR");
  if (!root || !*root) return "";
  std::string key = model.path;
  for (const Tensor& t : inputs)
    key += "," + t.type().to_string();
  std::string stem = std::filesystem::path(model.path).stem().string();
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return (std::filesystem::path(root) / fmt::format("{}-{}", stem, hash_hex(key).substr(0, 8)))
      .string();
}

// Writes files into a directory, if there is one; remembers the first failure.
class Dumper {
public:
  explicit Dumper(std::string dir) : dir_(std::move(dir)) {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      status_ = Status::error(
          fmt::format("{}: cannot create the dump directory: {}", dir_, ec.message()));
  }
  void write(const std::string& name, const std::string& text) {
    if (dir_.empty() || !status_.ok()) return;
    std::filesystem::path path = std::filesystem::path(dir_) / name;
    std::ofstream out(path);
    out << text;
    if (!out) status_ = Status::error(fmt::format("{}: cannot write the file", path.string()));
  }
  const std::string& dir() const { return dir_; }
  const Status& status() const { return status_; }

private:
  std::string dir_;
  Status status_;
};

// The profile's view of a kernel: its nodes, strategy, buffer types and bytes moved.
runtime::LaunchInfo launch_info(const fusion::FusedKernel& fk) {
  const kernel::Kernel& k = fk.bound.kernel;
  std::vector<std::string> ops;
  for (const Node* n : fk.nodes)
    ops.push_back(std::string(shown_op_type(n->op_type)));
  runtime::LaunchInfo info{fusion::node_names(fk), fmt::format("{}", fmt::join(ops, "+")),
                           kernel::describe_strategy(k), ""};
  std::vector<std::string> ins, outs;
  std::set<const Value*> counted; // a value viewed with two shapes moves once
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const kernel::Buffer& b = k.buffers[i];
    if (b.role == kernel::BufferRole::kTemp) continue;
    TensorType type{b.dtype, b.shape};
    (b.role == kernel::BufferRole::kInput ? ins : outs).push_back(type.to_string());
    const Value* v = fk.bound.values[i];
    if (v && !counted.insert(v).second) continue;
    info.moved.push_back(dim_mul(kernel::num_elements(b.shape), static_cast<int64_t>(dtype_size(b.dtype))));
  }
  info.shapes = fmt::format("{} -> {}", fmt::join(ins, ", "), fmt::join(outs, ", "));
  return info;
}

// The same for a library call: the node's own values.
runtime::LaunchInfo library_launch_info(const library::LibraryCall& call) {
  std::vector<std::string> names, ops;
  for (const Node* n : call.nodes) {
    names.push_back(n->name);
    ops.push_back(std::string(shown_op_type(n->op_type)));
  }
  runtime::LaunchInfo info{fmt::format("{}", fmt::join(names, ", ")),
                           fmt::format("{}", fmt::join(ops, "+")), call.kernel->describe(), ""};
  const std::vector<Value*>& written = call.nodes.back()->outputs;
  std::vector<std::string> ins, outs;
  for (const Value* v : call.values) {
    bool output = std::find(written.begin(), written.end(), v) != written.end();
    (output ? outs : ins).push_back(v->type.to_string());
    info.moved.push_back(
        dim_mul(kernel::num_elements(*v->type.shape), static_cast<int64_t>(dtype_size(v->type.dtype))));
  }
  info.shapes = fmt::format("{} -> {}", fmt::join(ins, ", "), fmt::join(outs, ", "));
  return info;
}

Location location_of(const Graph& graph, const Node& node) {
  return {graph.source, node.name, node.op_type, node.opset};
}

// Each kernel's function, from the function cache or scheduled on isl and emitted; kernels
// are independent (one isl context each), so they are generated on all cores.
Status generate_all(const std::vector<kernel::Kernel>& kernels,
                    const std::vector<codegen::CpuSchedule>& schedules,
                    const std::vector<Location>& sites, codegen::Dialect dialect,
                    const codegen::CudaOptions& cuda, const std::string& cache_dir,
                    std::vector<std::string>* functions, int* hits) {
  std::vector<Status> failures(kernels.size());
  std::atomic<int> cached = 0;
  parallel_for(kernels.size(), [&](size_t k) {
    Result<codegen::GeneratedFunction> f =
        codegen::generate_function(kernels[k], dialect, cache_dir, schedules[k], cuda);
    if (!f.ok()) {
      failures[k] = f.status().with_location(sites[k]);
      return;
    }
    (*functions)[k] = std::move(f->source);
    cached += f->cache_hit ? 1 : 0;
  });
  *hits = cached;
  for (const Status& s : failures)
    WEFT_RETURN_IF_ERROR(s);
  return Status();
}

// NVRTC builds of "source" for each arch. Without an arch there is nothing to build for.
Status build_ptx(const std::string& model, const std::string& source,
                 const std::vector<std::string>& archs,
                 std::vector<std::pair<std::string, std::string>>* ptx) {
  if (archs.empty()) {
    return Status::error(fmt::format("{}: the CUDA runtime has not landed yet: Weft generates "
                                     "CUDA kernels and compiles them with NVRTC for named "
                                     "architectures, but cannot run them",
                                     model));
  }
  WEFT_ASSIGN_OR_RETURN(const runtime::cuda::Nvrtc* nvrtc, runtime::cuda::Nvrtc::get());
  for (const std::string& arch : archs) {
    WEFT_ASSIGN_OR_RETURN(std::string code, nvrtc->compile_to_ptx(source, model + ".cu", arch));
    ptx->emplace_back(arch, std::move(code));
  }
  return Status();
}

void log_phases(const std::string& model, const std::vector<PhaseTime>& phases) {
  std::string times;
  for (const PhaseTime& p : phases)
    times += fmt::format(" {} {:.1f} ms,", p.phase, p.ms);
  log_info("compiled {}:{}", model, times.substr(0, times.size() - 1));
}

std::unique_ptr<runtime::Executable>
make_executable(const Graph& graph, const PlanBuilder& plan, std::vector<runtime::Launch> launches,
                std::vector<int> output_slots, size_t arena,
                std::vector<std::shared_ptr<runtime::KernelLibrary>> libraries) {
  std::vector<runtime::TensorInfo> inputs, outputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type});
  for (const Value* v : graph.outputs)
    outputs.push_back({v->name, v->type});
  return std::make_unique<runtime::Executable>(std::move(inputs), std::move(outputs), plan.slots(),
                                               std::move(launches), std::move(output_slots), arena,
                                               std::move(libraries));
}

// Loads the library at "path" and looks up every launch's function.
Result<std::shared_ptr<runtime::KernelLibrary>>
load_kernels(const std::string& path, std::vector<runtime::Launch>& launches) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<runtime::KernelLibrary> library,
                        runtime::KernelLibrary::load(path));
  for (runtime::Launch& launch : launches) {
    if (launch.library) continue;
    WEFT_ASSIGN_OR_RETURN(launch.fn, library->function(launch.name));
  }
  return library;
}

} // namespace

Result<std::vector<runtime::TensorInfo>> model_inputs(const ModelSource& model) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(model));
  std::vector<runtime::TensorInfo> inputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type});
  return inputs;
}

namespace {

std::vector<std::string> output_names_of(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value* v : graph.outputs)
    names.push_back(v->name);
  return names;
}

// Input positions whose values the compile bound (freeze_shape_operands), with the values.
using Frozen = std::vector<std::pair<int, Tensor>>;

// Runs the data-dependent nodes whose inputs are all constant on the host, replacing their
// outputs with constants, then refolds; repeats while any ran.
Status run_host_ops(Graph& graph) {
  for (;;) {
    Node* node = nullptr; // the first host op whose inputs are known
    for (const auto& n : graph.nodes()) {
      bool waiting = false;
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Value* v = n->inputs[i];
        waiting |= v && !v->is_constant() && needs_value(*n, i);
      }
      if (is_data_dependent(*n) && !waiting) {
        node = n.get();
        break;
      }
    }
    if (!node) return Status();
    bool done = true;
    if (node->op_type == "Loop" || node->op_type == "Scan") {
      Status s = node->op_type == "Loop" ? unroll_loop_step(graph, *node, &done)
                                         : unroll_scan(graph, *node);
      if (!s.ok()) return s.with_location(location_of(graph, *node));
    } else if (node->op_type == "If") { // the chosen branch's outputs pass through
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
    if (done) graph.remove_nodes_if([&](const Node& n) { return &n == node; });
    WEFT_RETURN_IF_ERROR(refold(graph, "host ops"));
  }
}

// The values the host ops of "graph" need from a first stage: the non-constant inputs of
// the data-dependent nodes that no other data-dependent node feeds. Notes those nodes.
std::vector<std::string> host_op_inputs(const Graph& graph, std::vector<std::string>* host_ops) {
  std::set<const Value*> downstream; // of a data-dependent node
  std::vector<std::string> names;
  for (const auto& node : graph.nodes()) {
    // An If is fed only through its condition: its branches' values just pass through.
    size_t inputs = node->op_type == "If" ? 1 : node->inputs.size();
    bool fed = std::any_of(node->inputs.begin(), node->inputs.begin() + inputs,
                           [&](const Value* v) { return downstream.contains(v); });
    // A host op of an If branch waits for its If: the branch may never run.
    if (is_data_dependent(*node) && !fed && !node->conditional) {
      host_ops->push_back(fmt::format("{} '{}'", node->op_type, node->name));
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        const Value* v = node->inputs[i];
        if (v && !v->is_constant() && needs_value(*node, i) &&
            std::find(names.begin(), names.end(), v->name) == names.end())
          names.push_back(v->name);
      }
    }
    if (is_data_dependent(*node) || fed)
      downstream.insert(node->outputs.begin(), node->outputs.end());
  }
  return names;
}

Status compile_graph(Graph graph, const Frozen& frozen, const CompileSettings& settings,
                     Dumper& dump, PhaseTimer& timer, CompiledModel& out);

// Do the symbols of the inputs' dims determine every symbolic size: of arena slots, kernel
// extents and outputs? Runs bind only those (runtime::Executable::bind).
Status check_symbols(const Graph& graph, const std::vector<Slot>& slots,
                     const std::vector<runtime::Launch>& launches) {
  std::map<std::string, int64_t> ones; // each input symbol bound to 1
  for (const Value* in : graph.inputs) {
    for (const Dim& d : in->type.shape.value_or(Shape{})) {
      if (d.is_static()) continue;
      // Products spell their factors with '*' and constants with digits (dim_mul).
      const std::string& name = d.symbol_name();
      if (std::isdigit(static_cast<unsigned char>(name[0])) || name.find('*') != name.npos)
        return Status::error(fmt::format("{}: input '{}' has the dim '{}', which is not a name",
                                         graph.source, in->name, name));
      ones[name] = 1;
    }
  }
  std::vector<Dim> dims;
  for (const Slot& slot : slots) {
    if (slot.kind == Slot::Kind::kArena) dims.push_back(slot.bytes);
  }
  for (const runtime::Launch& launch : launches)
    dims.insert(dims.end(), launch.symbols.begin(), launch.symbols.end());
  for (const Value* out : graph.outputs) {
    if (!out->type.shape)
      return Status::error(
          fmt::format("{}: output '{}' has an unknown rank", graph.source, out->name));
    dims.insert(dims.end(), out->type.shape->begin(), out->type.shape->end());
  }
  for (const Dim& d : dims) {
    if (!eval_dim(d, ones)) {
      return Status::error(
          fmt::format("{}: the dim '{}' is known only at run time and not from the inputs' dims",
                      graph.source, d.to_string()));
    }
  }
  return Status();
}

} // namespace

// The stages after the first, in a model with data-dependent ops: the specialized graph,
// the values the first stage hands over to its host ops, and the next stage compiled for
// each handed-over content (the most recent few kept).
class Stages {
public:
  Stages(Graph graph, std::vector<std::string> handed_over, Frozen frozen, CompileSettings settings)
      : graph_(std::move(graph)), handed_over_(std::move(handed_over)), frozen_(std::move(frozen)),
        settings_(std::move(settings)) {
    settings_.dump_dir.clear();
  }

  Result<std::vector<Tensor>> run(const runtime::Executable& first,
                                  const std::vector<Tensor>& inputs,
                                  const runtime::RunOptions& options) const {
    WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> handed, first.run(inputs, options));
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledModel> next, next_stage(handed));
    return next->run(inputs, options);
  }

private:
  static constexpr size_t kKept = 8;

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
    WEFT_RETURN_IF_ERROR(run_host_ops(graph));
    auto next = std::make_shared<CompiledModel>();
    PhaseTimer timer(&next->phases);
    Dumper no_dump("");
    next->output_names = output_names_of(graph);
    WEFT_RETURN_IF_ERROR(
        compile_graph(std::move(graph), frozen_, settings_, no_dump, timer, *next));
    if (kept_.size() == kKept) kept_.erase(kept_.begin());
    kept_.emplace_back(key, next);
    return std::shared_ptr<const CompiledModel>(next);
  }

  Graph graph_;
  std::vector<std::string> handed_over_;
  Frozen frozen_;
  CompileSettings settings_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const CompiledModel>>> kept_;
};

namespace {

// Compiles "graph" (specialized) into "out": kernels, plan and executable. A graph with
// data-dependent ops compiles the stage that computes their inputs, and hands the rest to
// Stages.
Status compile_graph(Graph graph, const Frozen& frozen, const CompileSettings& settings,
                     Dumper& dump, PhaseTimer& timer, CompiledModel& out) {
  std::vector<std::string> handed_over = host_op_inputs(graph, &out.host_ops);
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
  WEFT_RETURN_IF_ERROR(check_lowerable(graph));
  WEFT_RETURN_IF_ERROR(check_conditional_shapes(graph)); // the branches that stayed
  timer.end("specialize");

  bool cuda = settings.device == "cuda";
  if (!cuda && settings.device != "cpu")
    return Status::error(fmt::format("unknown device '{}'", settings.device));
  std::vector<fusion::Step> steps;
  std::map<const Node*, library::LibraryCall> library_calls;
  std::set<const Node*> absorbed;            // nodes library calls absorbed
  std::map<const Node*, const Node*> run_at; // last node of a call -> its node
  std::vector<fusion::Decision> epilogue_decisions;
  // A CUDA build runs on the device, which takes the GEMMs; a compile-only one has none, and
  // generates them, except over symbolic dims, where only a library call can run them: it then
  // selects the calls a device would make, so that the kernels around them compile as they
  // would run.
  std::shared_ptr<runtime::cuda::Device> device;
  if (cuda && settings.generate && settings.build && settings.cuda_archs.empty()) {
    WEFT_ASSIGN_OR_RETURN(device, runtime::cuda::open_device());
  }
  bool use_library =
      (!cuda || device || settings.dynamic_shapes) && settings.library && !library_off();
  std::unordered_map<const Value*, std::vector<const Node*>> readers;
  for (const auto& node : graph.nodes()) {
    for (const Value* v : node->inputs)
      readers[v].push_back(node.get());
  }
  std::set<const Value*> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  library::SoleReader sole_reader = [&](const Value* v) -> const Node* {
    auto it = readers.find(v);
    if (!settings.fusion || it == readers.end() || it->second.size() != 1 ||
        graph_outputs.contains(v))
      return nullptr;
    return it->second[0];
  };
  // First the library calls, which may absorb nodes before and after them.
  for (const auto& node : graph.nodes()) {
    std::optional<library::LibraryCall> call = cuda ? std::nullopt : library::shape_call(*node);
    if (call) {
      library_calls[node.get()] = std::move(*call);
      run_at[node.get()] = node.get();
      continue;
    }
    if (!use_library || absorbed.contains(node.get())) continue;
    std::string why_not;
    call = cuda ? library::cuda_library_call(*node, device, settings.allow_tf32, &why_not)
                : library::dnnl_call(
                      *node, sole_reader, [&](const Node* n) { return !absorbed.contains(n); },
                      &why_not);
    if (!call) {
      if (!why_not.empty())
        log_debug("node '{}' ({}): generated code, not a library call: {}", node->name,
                  node->op_type, why_not);
      continue;
    }
    for (const Node* n : call->nodes) {
      if (n == node.get()) continue;
      absorbed.insert(n);
      epilogue_decisions.push_back({n->name, node->name, true, "absorbed by the oneDNN call"});
    }
    // The call runs where its last node was: an epilogue's other operands (a residual from
    // a later branch, say) exist only from there on.
    run_at[call->nodes.back()] = node.get();
    library_calls[node.get()] = std::move(*call);
  }
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    if (auto it = run_at.find(node.get()); it != run_at.end())
      steps.push_back({{}, nullptr, nullptr, it->second});
    if (absorbed.contains(node.get()) || library_calls.contains(node.get())) {
      ++index;
      continue;
    }
    Result<kernel::LoweredNode> lowered =
        kernel::lower_node(*node, kernel_name(index++, node->op_type));
    if (!lowered.ok()) return lowered.status().with_location(location_of(graph, *node));
    if (lowered->alias_of) {
      steps.push_back({{}, node->outputs[0], lowered->alias_of});
      continue;
    }
    for (kernel::BoundKernel& k : lowered->kernels)
      steps.push_back({{{std::move(k), {node.get()}}}, nullptr, nullptr});
  }
  timer.end("lower");
  if (settings.fusion) {
    std::set<const Value*> pinned(graph.outputs.begin(), graph.outputs.end());
    // A library call reads what it binds, which includes the inputs of the nodes it absorbed
    // (a Transpose before a MatMul), not only those of its own node: none may become a
    // temporary of another kernel.
    for (const auto& [node, call] : library_calls)
      pinned.insert(call.values.begin(), call.values.end());
    fusion::FusionResult fused = fusion::fuse(std::move(steps), pinned);
    steps = std::move(fused.steps);
    out.fusion_decisions = std::move(epilogue_decisions);
    out.fusion_decisions.insert(out.fusion_decisions.end(), fused.decisions.begin(),
                                fused.decisions.end());
    timer.end("fuse");
  }
  PlanBuilder plan(graph);
  std::vector<runtime::Launch> launches; // functions are looked up once the library loads
  std::vector<kernel::Kernel> kernels;   // the generated ones
  std::vector<size_t> kernel_launch;     // the launch of each
  std::vector<Location> sites;           // the node of each
  for (fusion::Step& step : steps) {
    if (step.alias) {
      plan.alias(step.alias, step.alias_of);
      continue;
    }
    if (step.library) {
      library::LibraryCall& call = library_calls.at(step.library);
      runtime::LaunchInfo info = library_launch_info(call);
      log_debug("library call: node '{}' ({}), {}, {}", info.node, info.op_type, info.strategy,
                info.shapes);
      launches.push_back(
          {fmt::format("{}{}_{}", cuda ? "gemm" : "dnnl", launches.size(),
                       shown_op_type(step.library->op_type)),
           nullptr, plan.bind(call.values), std::move(info), call.kernel, call.symbols});
      continue;
    }
    for (fusion::FusedKernel& k : step.kernels) {
      runtime::LaunchInfo info = launch_info(k);
      log_debug("kernel {}: node '{}' ({}), {}, {}", k.bound.kernel.name, info.node, info.op_type,
                info.strategy, info.shapes);
      kernel_launch.push_back(launches.size());
      std::vector<Dim> symbols;
      for (const std::string& symbol : codegen::kernel_symbols(k.bound.kernel))
        symbols.push_back(Dim::symbol(symbol));
      launches.push_back({k.bound.kernel.name, nullptr, plan.bind(k.bound), std::move(info),
                          nullptr, std::move(symbols)});
      kernels.push_back(std::move(k.bound.kernel));
      sites.push_back(location_of(graph, *k.nodes.front()));
    }
  }
  std::vector<int> output_slots = plan.output_slots();
  size_t arena = plan.place();
  WEFT_RETURN_IF_ERROR(check_symbols(graph, plan.slots(), launches));
  codegen::CpuCompiler compiler = codegen::CpuCompiler::from_environment();
  std::optional<TuningCache> tuning;
  if (settings.tuning && !cuda) tuning.emplace(compiler, kernel_threads());
  std::vector<codegen::CpuSchedule> schedules(kernels.size());
  std::string kernels_text;
  for (size_t l = 0, k = 0; l < launches.size(); ++l) {
    const runtime::LaunchInfo& info = launches[l].info;
    KernelSummary summary;
    summary.name = launches[l].name;
    summary.info = info;
    summary.ir = "(a library call)\n";
    summary.library = launches[l].library != nullptr;
    if (!summary.library) {
      summary.ir = kernel::print_kernel(kernels[k]);
      summary.kernel = std::make_shared<const kernel::Kernel>(kernels[k]);
      if (std::optional<TuningRecord> record = tuning ? tuning->lookup(summary.ir) : std::nullopt) {
        summary.schedule = schedules[k] = record->schedule;
        summary.tuned = true;
      }
      ++k;
    }
    kernels_text += fmt::format("# node '{}' ({}): {}{}\n{}\n", info.node, info.op_type,
                                info.strategy, summary.tuned ? " (tuned)" : "", summary.ir);
    out.kernels.push_back(std::move(summary));
  }
  timer.end("plan");
  if (!settings.generate) {
    log_phases(graph.source, out.phases);
    out.graph = std::move(graph);
    return Status();
  }

  codegen::Dialect dialect = cuda ? codegen::Dialect::kCuda : codegen::Dialect::kCpu;
  std::vector<std::string> functions(kernels.size());
  int hits = 0;
  WEFT_RETURN_IF_ERROR(generate_all(kernels, schedules, sites, dialect, {settings.deterministic},
                                    compiler.cache_dir, &functions, &hits));
  timer.end("generate");
  std::string source = codegen::emit_prelude(dialect);
  for (size_t k = 0; k < kernels.size(); ++k)
    source += "\n" + functions[k];
  log_info("{}: {} generated kernels, {} from the function cache; {} library calls", graph.source,
           kernels.size(), hits, launches.size() - kernels.size());

  dump.write("kernels.txt", kernels_text);
  if (cuda) {
    dump.write("kernels.cu", source);
    WEFT_RETURN_IF_ERROR(dump.status());
    out.dump_dir = dump.dir();
    if (settings.build && !settings.cuda_archs.empty()) {
      WEFT_RETURN_IF_ERROR(build_ptx(graph.source, source, settings.cuda_archs, &out.ptx));
      timer.end("build");
    } else if (settings.build) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::cuda::Module> module,
                            device->load(source, graph.source));
      timer.end("build");
      for (size_t k = 0; k < kernels.size(); ++k) {
        launches[kernel_launch[k]].library = std::make_shared<runtime::cuda::CudaKernel>(
            device, module, runtime::cuda::parse_launch_lines(functions[k]),
            kernels[k].buffers.size(), launches[kernel_launch[k]].symbols.size());
      }
      out.executable =
          make_executable(graph, plan, std::move(launches), std::move(output_slots), arena, {});
      out.executable->place_on(device);
      for (const auto& [i, value] : frozen)
        out.executable->freeze_input(i, value);
      timer.end("load");
    }
    log_phases(graph.source, out.phases);
    out.graph = std::move(graph);
    out.source = std::move(source);
    return Status();
  }
  dump.write("kernels.cc", source);
  dump.write("build.sh", "#!/bin/sh\n# Rebuilds kernels.so from kernels.cc as Weft built it.\n"
                         "cd \"$(dirname \"$0\")\" && " +
                             codegen::shell_line(
                                 codegen::compile_command(compiler, "kernels.cc", "kernels.so")) +
                             "\n");
  WEFT_RETURN_IF_ERROR(dump.status());
  out.dump_dir = dump.dir();
  if (!dump.dir().empty()) log_info("dumped {} to {}", graph.source, dump.dir());
  if (settings.build) {
    WEFT_ASSIGN_OR_RETURN(codegen::CompiledLibrary built, codegen::compile_cpu(source, compiler));
    timer.end("build");
    Result<std::shared_ptr<runtime::KernelLibrary>> library = load_kernels(built.path, launches);
    if (!library.ok() && built.cache_hit) {
      // A damaged cache entry (a full disk, say) is rebuilt once rather than trusted.
      log_info("kernel cache entry {} is unusable ({}); rebuilding", built.path,
               library.status().message());
      std::error_code ec;
      std::filesystem::remove(built.path, ec);
      WEFT_ASSIGN_OR_RETURN(built, codegen::compile_cpu(source, compiler));
      library = load_kernels(built.path, launches);
    }
    if (!library.ok()) return library.status();
    out.executable = make_executable(graph, plan, std::move(launches), std::move(output_slots),
                                     arena, {*library});
    for (const auto& [i, value] : frozen)
      out.executable->freeze_input(i, value);
    out.cache_hit = built.cache_hit;
    timer.end("load");
  }
  log_phases(graph.source, out.phases);
  out.graph = std::move(graph);
  out.source = std::move(source);
  return Status();
}

} // namespace

Result<CompiledModel> compile_model(const ModelSource& model,
                                    const std::vector<Tensor>& sample_inputs,
                                    const CompileSettings& settings) {
  CompiledModel out;
  PhaseTimer timer(&out.phases);
  Dumper dump(dump_dir_for(model, sample_inputs, settings));
  int pass_index = 0;
  auto observe = [&](std::string_view pass, const Graph& g) {
    dump.write(fmt::format("{:02}_{}.txt", pass_index++, pass), print_graph(g));
  };
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(model, observe));
  timer.end("graph passes");
  std::vector<int> frozen_inputs;
  WEFT_RETURN_IF_ERROR(specialize(graph, sample_inputs, settings.dynamic_shapes, &frozen_inputs));
  WEFT_RETURN_IF_ERROR(run_host_ops(graph));
  observe("specialize", graph);
  if (onednn_calls(settings)) {
    WEFT_ASSIGN_OR_RETURN(bool changed, channels_last(graph));
    if (changed) {
      WEFT_RETURN_IF_ERROR(refold(graph, "channels_last"));
      observe("channels_last", graph);
    }
  }
  out.output_names = output_names_of(graph);
  Frozen frozen;
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
