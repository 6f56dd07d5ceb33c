#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/codegen/emit_c.h"
#include "weft/driver/stages.h"
#include "weft/graph/op_table.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/strategy.h"
#include "weft/support/log.h"

namespace weft::stages {

namespace {

using runtime::Slot;

// The slots and launches of the plan, built as the kernels are bound.
class PlanBuilder {
public:
  explicit PlanBuilder(const Graph& g) : graph_(g) {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      add(g.inputs[i], Slot::input(static_cast<int>(i)));
  }

  void alias(const Value* out, const Value* of) { add(out, Slot::alias_of(slot_of(of))); }

  // A value that a graph output only views (a Reshape's, through any chain of them) is
  // written into that output's memory (Slot::output) rather than the arena, which the run
  // would then copy out: an LSTM's [steps, 1, batch, H] reshaped, 3 MB and 0.2 ms of a run.
  // Not a value with a slot already (an input, a constant, another output).
  void write_viewed_outputs(const std::vector<fusion::Step>& steps) {
    std::unordered_map<const Value*, const Value*> views; // alias -> the value it views
    for (const fusion::Step& step : steps) {
      if (step.alias) views[step.alias] = step.alias_of;
    }
    for (size_t o = 0; o < graph_.outputs.size(); ++o) {
      const Value* v = graph_.outputs[o];
      if (!views.contains(v)) continue;
      while (views.contains(v))
        v = views.at(v);
      if (v->is_constant() || slot_.contains(v) || output_index(v) >= 0 ||
          viewed_output_.contains(v))
        continue;
      viewed_output_[v] = static_cast<int>(o);
    }
  }

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

  // Launch "launch"'s output slot "out" may take the storage of its input slot "in"
  // (library::LibraryCall::output_in_place_of: the call reads that input nowhere else). It
  // does when that storage is arena memory that dies there and "out" an arena slot of its
  // size born there: "out" becomes an alias of it, which lives on in its place. Decided by
  // place(), once every launch is bound and so every lifetime known.
  void share(int launch, int in, int out) { shares_.push_back({launch, in, out}); }

  // Places the arena slots; returns the arena size.
  size_t place() {
    for (auto [launch, input, out] : shares_) {
      auto u = [](int s) { return static_cast<size_t>(s); };
      int in = storage(input); // an alias, or made one by an earlier share
      Slot& a = slots_[u(in)];
      Slot& b = slots_[u(out)];
      if (a.kind != Slot::Kind::kArena || b.kind != Slot::Kind::kArena || last_[u(in)] != launch ||
          first_[u(out)] != launch || !a.bytes.is_static() || !(a.bytes == b.bytes))
        continue;
      b = Slot::alias_of(in);
      last_[u(in)] = std::max(last_[u(in)], last_[u(out)]);
      log_debug("launch {}: its output takes the memory of the input it sums into it", launch);
    }
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
  int launches() const { return static_cast<int>(launches_); }

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
    if (slot_.contains(v) || v->is_constant()) return slot_of(v);
    if (output_index(v) >= 0) return add(v, Slot::output(output_index(v)));
    if (auto it = viewed_output_.find(v); it != viewed_output_.end())
      return add(v, Slot::output(it->second));
    return add(v, Slot::arena(bytes_of(v->type.dtype, *v->type.shape)));
  }
  // Constants get theirs when first bound: a run reads the address of each (Tensor::data),
  // and one that no kernel binds (weights a call holds in its own layout) is not read in.
  int slot_of(const Value* v) {
    if (!slot_.contains(v) && v->is_constant()) return add(v, Slot::constant_of(v->constant));
    return slot_.at(v);
  }
  // The slot that holds the storage behind "slot" (through aliases).
  int storage(int slot) const {
    while (slots_[static_cast<size_t>(slot)].kind == Slot::Kind::kAlias)
      slot = slots_[static_cast<size_t>(slot)].index;
    return slot;
  }
  // Extends the lifetime of the storage behind "slot" to cover "launch".
  void touch(int slot, int launch) {
    size_t s = static_cast<size_t>(storage(slot));
    first_[s] = std::min(first_[s], launch);
    last_[s] = std::max(last_[s], launch);
  }

  const Graph& graph_;
  std::vector<Slot> slots_;
  std::vector<int> first_, last_;
  std::unordered_map<const Value*, int> slot_;
  std::unordered_map<const Value*, int> viewed_output_; // see write_viewed_outputs()
  size_t launches_ = 0;
  struct Share {
    int launch, in, out;
  };
  std::vector<Share> shares_; // see share()
};

// The elements of buffer "b" that kernel "k" moves: all of them, but for one that it reads at
// fewer points than it holds (an embedding's table at data-dependent indices, a Gather's at
// constant ones, a Slice's source), at most one per point read. These are the elements used:
// a read of every other element still brings whole cache lines in.
Dim moved_elements(const kernel::Kernel& k, int b) {
  Dim all = kernel::num_elements(k.buffers[static_cast<size_t>(b)].shape);
  int64_t points = 0;
  for (const kernel::Statement& s : k.statements) {
    for (const kernel::Access& a : s.reads) {
      if (a.buffer != b) continue;
      Dim n = kernel::num_elements(s.domain);
      if (!n.is_static()) return all;
      points += n.value();
    }
  }
  return all.is_static() && points > 0 && points < all.value() ? Dim(points) : all;
}

// The profile's view of a kernel: its nodes, strategy, buffer types and bytes moved.
runtime::LaunchInfo launch_info(const fusion::FusedKernel& fk) {
  const kernel::Kernel& k = fk.bound.kernel;
  std::vector<std::string> ops;
  for (const Node* n : fk.nodes)
    ops.push_back(std::string(op_name(shown_op(n->op_type))));
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
    info.moved.push_back(
        dim_mul(moved_elements(k, static_cast<int>(i)), static_cast<int64_t>(dtype_size(b.dtype))));
  }
  info.shapes = fmt::format("{} -> {}", fmt::join(ins, ", "), fmt::join(outs, ", "));
  return info;
}

// The same for a library call: the node's own values.
// The floating-point operations of a library call's convolution or products (attention's
// two), 2 per multiply-add (0 for other calls, and where the weights' shape is not static).
Dim call_flops(const library::LibraryCall& call) {
  Dim products = 0;
  for (const Node* n : call.nodes) {
    const Value* x = n->input(0);
    bool quantized = n->op_type == Op::kQLinearConv || n->op_type == Op::kQLinearConvChannelsLast ||
                     n->op_type == Op::kQLinearMatMul || n->op_type == Op::kQLinearMatMulBias;
    const Value* w = n->input(quantized ? 3 : 1);
    const Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!x || !w || !y || !x->type.shape || !w->type.shape || !y->type.shape) continue;
    const Shape& ws = *w->type.shape;
    Dim out = kernel::num_elements(*y->type.shape);
    switch (n->op_type.id()) {
      case Op::kConv:
      case Op::kQLinearConv: // (integer operations)
      case Op::kQLinearConvChannelsLast:
      case Op::kConvChannelsLast: // y elements x the MACs of each: C/group x the window
      case Op::kConvTranspose: {  // x elements x the MACs of each: M/group x the window
        if (!w->type.has_static_shape() || ws.empty() || ws[0].value() == 0) return 0;
        int64_t per = kernel::num_elements(ws).value() / ws[0].value();
        Dim elements = n->op_type == Op::kConvTranspose ? kernel::num_elements(*x->type.shape) : out;
        return dim_mul(elements, 2 * per);
      }
      case Op::kMatMul:
      case Op::kMatMulInteger: // (integer operations)
      case Op::kQLinearMatMul:
      case Op::kQLinearMatMulBias:
      case Op::kGemm: {        // y elements x the inner extent
        const Shape& a = *x->type.shape;
        if (a.empty()) return 0;
        bool trans_a = n->op_type == Op::kGemm && n->attrs_as<GemmAttrs>().trans_a;
        Dim inner = trans_a && a.size() == 2 ? a[0] : a.back();
        Dim flops = dim_mul(dim_mul(out, inner), 2);
        products = products == Dim(0) ? flops : dim_add(products, flops).value_or(products);
        break;
      }
      default: break;
    }
  }
  return products;
}

runtime::LaunchInfo library_launch_info(const library::LibraryCall& call) {
  std::vector<std::string> names, ops;
  for (const Node* n : call.nodes) {
    names.push_back(n->name);
    ops.push_back(std::string(op_name(shown_op(n->op_type))));
  }
  runtime::LaunchInfo info{fmt::format("{}", fmt::join(names, ", ")),
                           fmt::format("{}", fmt::join(ops, "+")), call.kernel->describe(), ""};
  const std::vector<Value*>& written = call.nodes.back()->outputs;
  std::vector<std::string> ins, outs;
  std::vector<const Value*> read = call.values;
  read.insert(read.end(), call.held.begin(), call.held.end());
  for (const Value* v : read) {
    bool output = std::find(written.begin(), written.end(), v) != written.end();
    (output ? outs : ins).push_back(v->type.to_string());
    info.moved.push_back(dim_mul(kernel::num_elements(*v->type.shape),
                                 static_cast<int64_t>(dtype_size(v->type.dtype))));
  }
  info.shapes = fmt::format("{} -> {}", fmt::join(ins, ", "), fmt::join(outs, ", "));
  info.flops = call_flops(call);
  return info;
}

// Do the symbols of the inputs' dims determine every symbolic size: of arena slots, kernel
// extents and outputs? Runs bind only those (runtime::Executable::bind).
Status check_symbols(const Graph& graph, const std::vector<Slot>& slots,
                     const std::vector<runtime::Launch>& launches) {
  std::set<std::string> bound_names; // each symbol an input binds
  for (const Value* in : graph.inputs) {
    for (const Dim& d : in->type.shape.value_or(Shape{})) {
      if (std::optional<std::string> symbol = bound_symbol(d)) bound_names.insert(*symbol);
    }
  }
  // Over bound symbols only (not evaluated at 1s: (T-3)/1 is negative there).
  auto bound = [&](const Dim& d) { return dim_over(d, bound_names); };
  // A dim over symbols (unify_dims's, a handed-over value's 90*min(1000,N)) is checked once
  // other inputs bind them (Executable::bind).
  for (const Value* in : graph.inputs) {
    for (const Dim& d : in->type.shape.value_or(Shape{})) {
      if (!d.is_static() && !bound(d))
        return Status::error(fmt::format("{}: input '{}' has the dim '{}', which is not a name",
                                         graph.source, in->name, d.to_string()));
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
    if (!bound(d)) {
      return Status::error(
          fmt::format("{}: the dim '{}' is known only at run time and not from the inputs' dims",
                      graph.source, d.to_string()));
    }
  }
  return Status();
}

} // namespace

Result<Plan> plan_buffers(const Graph& graph, std::vector<fusion::Step> steps,
                          LibrarySelection& library, bool cuda) {
  Plan out;
  PlanBuilder plan(graph);
  plan.write_viewed_outputs(steps);
  for (fusion::Step& step : steps) {
    if (step.alias) {
      plan.alias(step.alias, step.alias_of);
      continue;
    }
    if (step.library) {
      library::LibraryCall& call = library.calls.at(step.library);
      runtime::LaunchInfo info = library_launch_info(call);
      log_debug("library call: node '{}' ({}), {}, {}", info.node, info.op_type, info.strategy,
                info.shapes);
      int launch = plan.launches();
      std::vector<int> slots = plan.bind(call.values);
      if (call.output_in_place_of) {
        auto [in, dst] = *call.output_in_place_of;
        plan.share(launch, slots[static_cast<size_t>(in)], slots[static_cast<size_t>(dst)]);
      }
      out.launches.push_back({fmt::format("{}{}_{}", cuda ? "gemm" : "dnnl", out.launches.size(),
                                          op_name(shown_op(step.library->op_type))),
                              nullptr, std::move(slots), std::move(info), call.kernel,
                              call.symbols});
      continue;
    }
    for (fusion::FusedKernel& k : step.kernels) {
      runtime::LaunchInfo info = launch_info(k);
      log_debug("kernel {}: node '{}' ({}), {}, {}", k.bound.kernel.name, info.node, info.op_type,
                info.strategy, info.shapes);
      out.kernel_launch.push_back(out.launches.size());
      std::vector<Dim> symbols;
      for (const std::string& symbol : codegen::kernel_symbols(k.bound.kernel))
        symbols.push_back(Dim::symbol(symbol));
      out.launches.push_back({k.bound.kernel.name, nullptr, plan.bind(k.bound), std::move(info),
                              nullptr, std::move(symbols)});
      out.kernels.push_back(std::move(k.bound.kernel));
      out.sites.push_back(location_of(graph, *k.nodes.front()));
    }
  }
  out.output_slots = plan.output_slots();
  out.arena = plan.place();
  out.slots = plan.slots();
  WEFT_RETURN_IF_ERROR(check_symbols(graph, out.slots, out.launches));
  return out;
}

} // namespace weft::stages
