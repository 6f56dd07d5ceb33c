#include "weft/driver/compile_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/codegen/compile_cpu.h"
#include "weft/codegen/emit_c.h"
#include "weft/driver/pipeline.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/eliminate_identity.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/graph/verify_graph.h"
#include "weft/kernel/lower_node.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/support/grouped_list.h"

namespace weft {

namespace {

using runtime::Slot;

// Binding input types (and shape-operand values), then folding what they determine.
Status specialize(Graph& graph, const std::vector<Tensor>& inputs, std::vector<int>* frozen) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs)
    types.push_back(t.type());
  WEFT_RETURN_IF_ERROR(specialize_shapes(graph, types));
  *frozen = freeze_shape_operands(graph, inputs);
  // Folding makes shapes static, which lets more Shape ops fold: repeat to a fixed point.
  for (size_t before = 0; before != graph.nodes().size();) {
    before = graph.nodes().size();
    WEFT_RETURN_IF_ERROR(fold_constants(graph));
    WEFT_RETURN_IF_ERROR(infer_shapes(graph));
  }
  WEFT_RETURN_IF_ERROR(canonicalize(graph));
  WEFT_RETURN_IF_ERROR(eliminate_identity(graph));
  WEFT_RETURN_IF_ERROR(eliminate_dead_code(graph));
  return verify_graph(graph, "specialize");
}

// One message listing every node that cannot run yet, grouped by op.
Status check_lowerable(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> nodes; // (op, node)
  for (const auto& n : graph.nodes()) {
    if (!kernel::can_lower(*n))
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
      if (v->is_constant())
        add(v.get(), {Slot::Kind::kConstant, 0, 0, v->constant->num_bytes(), v->constant});
    }
  }

  void alias(const Value* out, const Value* of) { add(out, Slot::alias_of(slot_of(of))); }

  // Slots of a kernel's buffers; node outputs get theirs on first write.
  std::vector<int> bind(const kernel::BoundKernel& k) {
    std::vector<int> slots;
    int launch = static_cast<int>(launches_);
    for (size_t b = 0; b < k.values.size(); ++b) {
      const Value* v = k.values[b];
      int slot;
      if (!v) { // a temporary of this launch only
        slot = new_arena(bytes_of(k.kernel.buffers[b].dtype, k.kernel.buffers[b].shape));
      } else if (!slot_.contains(v)) {
        slot = output_index(v) >= 0 ? add(v, Slot::output(output_index(v)))
                                    : add(v, Slot::arena(bytes_of(v->type.dtype, *v->type.shape)));
      } else {
        slot = slot_of(v);
      }
      touch(slot, launch);
      slots.push_back(slot);
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
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].kind != Slot::Kind::kArena) continue;
      arena_slots.push_back(static_cast<int>(s));
      lifetimes.push_back(
          {slots_[s].bytes, first_[s], std::min(last_[s], static_cast<int>(launches_))});
    }
    std::vector<size_t> offsets;
    size_t total = runtime::plan_arena(lifetimes, &offsets);
    for (size_t i = 0; i < arena_slots.size(); ++i)
      slots_[static_cast<size_t>(arena_slots[i])].offset = offsets[i];
    return total;
  }

  std::vector<Slot> slots() const { return slots_; }

private:
  static size_t bytes_of(DType t, const Shape& s) {
    return static_cast<size_t>(shape_num_elements(s).value_or(0)) *
           static_cast<size_t>(dtype_size(t));
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
  int new_arena(size_t bytes) { return add(nullptr, Slot::arena(bytes)); }
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

} // namespace

Result<std::vector<runtime::TensorInfo>> model_inputs(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(path));
  std::vector<runtime::TensorInfo> inputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type});
  return inputs;
}

Result<CompiledModel> compile_model(const std::string& path,
                                    const std::vector<Tensor>& sample_inputs) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, run_graph_pipeline(path));
  std::vector<int> frozen;
  WEFT_RETURN_IF_ERROR(specialize(graph, sample_inputs, &frozen));
  WEFT_RETURN_IF_ERROR(check_lowerable(graph));

  PlanBuilder plan(graph);
  std::vector<std::pair<std::string, std::vector<int>>> launches; // kernel name, slots
  std::string source = codegen::emit_prelude(codegen::Dialect::kCpu);
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    Location where{graph.source, node->name, node->op_type, node->opset};
    Result<kernel::LoweredNode> lowered =
        kernel::lower_node(*node, kernel_name(index++, node->op_type));
    if (!lowered.ok()) return lowered.status().with_location(where);
    if (lowered->alias_of) {
      plan.alias(node->outputs[0], lowered->alias_of);
      continue;
    }
    for (const kernel::BoundKernel& k : lowered->kernels) {
      Result<poly::ScheduledKernel> scheduled = poly::schedule_kernel(k.kernel);
      if (!scheduled.ok()) return scheduled.status().with_location(where);
      WEFT_ASSIGN_OR_RETURN(std::string function, codegen::emit_function(k.kernel, scheduled->loops,
                                                                         codegen::Dialect::kCpu));
      source += "\n" + function;
      launches.emplace_back(k.kernel.name, plan.bind(k));
    }
  }
  std::vector<int> output_slots = plan.output_slots();
  size_t arena = plan.place();

  WEFT_ASSIGN_OR_RETURN(codegen::CompiledLibrary built,
                        codegen::compile_cpu(source, codegen::CpuCompiler::from_environment()));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<runtime::KernelLibrary> library,
                        runtime::KernelLibrary::load(built.path));
  std::vector<runtime::Launch> launch_list;
  for (auto& [name, slots] : launches) {
    WEFT_ASSIGN_OR_RETURN(runtime::KernelFn fn, library->function(name));
    launch_list.push_back({name, fn, slots});
  }
  std::vector<runtime::TensorInfo> inputs, outputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type});
  for (const Value* v : graph.outputs)
    outputs.push_back({v->name, v->type});
  CompiledModel model;
  model.executable = std::make_unique<runtime::Executable>(
      std::move(inputs), std::move(outputs), plan.slots(), std::move(launch_list),
      std::move(output_slots), arena,
      std::vector<std::shared_ptr<runtime::KernelLibrary>>{library});
  for (int i : frozen)
    model.executable->freeze_input(i, sample_inputs[static_cast<size_t>(i)]);
  model.graph = std::move(graph);
  model.source = std::move(source);
  model.cache_hit = built.cache_hit;
  return model;
}

} // namespace weft
