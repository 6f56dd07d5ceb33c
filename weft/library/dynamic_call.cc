#include "weft/library/dynamic_call.h"

#include <algorithm>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weft::library {

namespace {

constexpr int64_t kStandInExtent = 32;
constexpr size_t kKeptShapes = 8;

// The ops a call may absorb after its node (post-ops, a Transpose of the result): a superset
// of what a library takes, which its builder narrows.
bool absorbable(const Node& n) {
  static const std::set<Op> kOps = {Op::kRelu, Op::kLeakyRelu, Op::kSigmoid, Op::kTanh,
                                    Op::kClip, Op::kAdd,       Op::kSub,     Op::kMul,
                                    Op::kDiv,  Op::kTranspose};
  return kOps.contains(n.op_type);
}

// The node, the Transposes that produce its operands, and the chain of sole readers after it
// that it may absorb, in graph order.
std::vector<const Node*> region_of(const Node& node, const SoleReader& sole_reader,
                                   const std::function<bool(const Node*)>& free) {
  std::vector<const Node*> nodes;
  for (const Value* in : node.inputs) {
    const Node* p = in ? in->producer : nullptr;
    if (p && p->op_type == Op::kTranspose && free(p) &&
        std::find(nodes.begin(), nodes.end(), p) == nodes.end())
      nodes.push_back(p);
  }
  nodes.push_back(&node);
  const Value* v = node.outputs[0];
  for (const Node* e = sole_reader(v); e && free(e) && absorbable(*e); e = sole_reader(v)) {
    nodes.push_back(e);
    v = e->outputs[0];
    if (e->op_type == Op::kTranspose) break;
  }
  return nodes;
}

// The region as a graph of its own: what it reads from outside is its inputs (constants stay
// constants); what is read outside it, or not by exactly one of its nodes, is its outputs.
std::shared_ptr<const Graph> region_graph(const std::vector<const Node*>& nodes,
                                          const SoleReader& sole_reader) {
  auto g = std::make_shared<Graph>();
  std::set<const Node*> inside(nodes.begin(), nodes.end());
  std::unordered_map<const Value*, Value*> copies;
  auto copy = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto [it, fresh] = copies.try_emplace(v, nullptr);
    if (fresh) {
      it->second = g->add_value(v->name, v->type);
      it->second->constant = v->constant;
      if (!v->constant && !inside.contains(v->producer)) g->inputs.push_back(it->second);
    }
    return it->second;
  };
  for (const Node* n : nodes) {
    Node node = *n;
    node.inputs.clear();
    node.outputs.clear();
    for (const Value* v : n->inputs)
      node.inputs.push_back(copy(v));
    for (const Value* v : n->outputs)
      node.outputs.push_back(copy(v));
    g->add_node(std::move(node));
    for (const Value* v : n->outputs) {
      if (v && !inside.contains(sole_reader(v))) g->outputs.push_back(copies.at(v));
    }
  }
  return g;
}

// The symbols the dims of "g" are made of (N and T for a dim 4*N*T, W for (W+1)/2).
std::vector<std::string> symbols_of(const Graph& g) {
  std::set<std::string> names;
  for (const auto& v : g.values()) {
    for (const Dim& d : v->type.shape.value_or(Shape{})) {
      for (std::string& s : dim_symbols(d))
        names.insert(std::move(s));
    }
  }
  return {names.begin(), names.end()};
}

// "region" at these extents of its symbols: a copy with each symbolic dim evaluated; an error
// where a dim has no extent (a window larger than its input).
Result<Graph> at_extents(const Graph& region, const std::map<std::string, int64_t>& extents) {
  Graph g = region.clone();
  for (const auto& v : g.values()) {
    if (!v->type.shape) continue;
    for (Dim& d : *v->type.shape) {
      if (d.is_static()) continue;
      std::optional<int64_t> e = eval_dim(d, extents);
      if (!e) {
        return Status::error(fmt::format("{} has no extent at these input shapes (the dim {})",
                                         v->name, d.to_string()));
      }
      d = *e;
    }
  }
  return g;
}

template <typename T> std::vector<std::string> names_of(const std::vector<const T*>& items) {
  std::vector<std::string> names;
  for (const T* item : items)
    names.push_back(item->name);
  return names;
}

// The static call in "g" for its node "name", absorbing only the nodes in "form" when given.
std::optional<LibraryCall> call_in(const Graph& g, const std::string& name,
                                   const std::vector<std::string>* form,
                                   const StaticCallBuilder& build, std::string* why_not) {
  std::unordered_map<const Value*, std::vector<const Node*>> readers;
  const Node* node = nullptr;
  for (const auto& n : g.nodes()) {
    if (n->name == name) node = n.get();
    for (const Value* v : n->inputs)
      readers[v].push_back(n.get());
  }
  SoleReader sole_reader = [&](const Value* v) -> const Node* {
    auto it = readers.find(v);
    if (it == readers.end() || it->second.size() != 1 || g.is_graph_output(v)) return nullptr;
    return it->second[0];
  };
  auto free = [&](const Node* n) {
    return !form || std::find(form->begin(), form->end(), n->name) != form->end();
  };
  return build(*node, sole_reader, free, why_not, form != nullptr);
}

// A call whose outputs are all empty at a run's extents (a batch of 0): nothing to compute,
// and oneDNN takes no empty tensor.
class NothingToDo final : public runtime::LibraryKernel {
public:
  Status run(void* const*, const int64_t*) const override { return Status(); }
  std::string describe() const override { return "nothing: the outputs are empty"; }
};

bool outputs_are_empty(const Graph& g) {
  return !g.outputs.empty() && std::all_of(g.outputs.begin(), g.outputs.end(), [](const Value* v) {
    std::optional<int64_t> n = v->type.shape ? shape_num_elements(*v->type.shape) : std::nullopt;
    return n && *n == 0;
  });
}

class DynamicKernel final : public runtime::LibraryKernel {
public:
  DynamicKernel(std::shared_ptr<const Graph> region, std::string node,
                std::vector<std::string> symbols, std::vector<std::string> nodes,
                std::vector<std::string> values, StaticCallBuilder build, std::string stand_in)
      : region_(std::move(region)), node_(std::move(node)), symbols_(std::move(symbols)),
        nodes_(std::move(nodes)), values_(std::move(values)), build_(std::move(build)),
        stand_in_(std::move(stand_in)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    std::vector<int64_t> key(extents, extents + symbols_.size());
    std::shared_ptr<const runtime::LibraryKernel> kernel;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = std::find_if(kept_.begin(), kept_.end(),
                             [&](const auto& kept) { return kept.first == key; });
      if (it != kept_.end()) {
        kept_.splice(kept_.begin(), kept_, it); // most recently used first
      } else {
        WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::LibraryKernel> built, build(key));
        kept_.emplace_front(key, std::move(built));
        if (kept_.size() > kKeptShapes) kept_.pop_back();
      }
      kernel = kept_.front().second;
    }
    return kernel->run(buffers, nullptr);
  }

  std::string describe() const override {
    return fmt::format("built per shape of {}; at the stand-in {}: {}", fmt::join(symbols_, ", "),
                       kStandInExtent, stand_in_);
  }

private:
  Result<std::shared_ptr<const runtime::LibraryKernel>>
  build(const std::vector<int64_t>& key) const {
    std::map<std::string, int64_t> extents;
    std::vector<std::string> bound;
    for (size_t i = 0; i < symbols_.size(); ++i) {
      extents[symbols_[i]] = key[i];
      bound.push_back(fmt::format("{}={}", symbols_[i], key[i]));
    }
    WEFT_ASSIGN_OR_RETURN(Graph g, at_extents(*region_, extents));
    if (outputs_are_empty(g))
      return std::shared_ptr<const runtime::LibraryKernel>(std::make_shared<const NothingToDo>());
    std::string why_not;
    // Constant weights packed for an earlier shape in the same layout are taken again
    // (Tensor::derived): BERT's first run at a new length re-packed each weight, ~2 ms a
    // MatMul.
    std::optional<LibraryCall> call = call_in(g, node_, &nodes_, build_, &why_not);
    if (!call || names_of(call->nodes) != nodes_ || names_of(call->values) != values_)
      return Status::error(fmt::format("the library cannot run this call at {}{}",
                                       fmt::join(bound, ", "),
                                       why_not.empty() ? "" : ": " + why_not));
    return call->kernel;
  }

  std::shared_ptr<const Graph> region_;
  std::string node_;
  std::vector<std::string> symbols_;
  std::vector<std::string> nodes_;  // the form: the nodes the call absorbs
  std::vector<std::string> values_; // and the values it binds, in order
  StaticCallBuilder build_;
  std::string stand_in_; // what the call was at the stand-in extents
  mutable std::mutex mutex_;
  mutable std::list<std::pair<std::vector<int64_t>, std::shared_ptr<const runtime::LibraryKernel>>>
      kept_;
};

} // namespace

std::optional<LibraryCall> dynamic_call(const Node& node, const SoleReader& sole_reader,
                                        const std::function<bool(const Node*)>& free,
                                        std::string* why_not, StaticCallBuilder build) {
  std::vector<const Node*> nodes = region_of(node, sole_reader, free);
  std::shared_ptr<const Graph> region = region_graph(nodes, sole_reader);
  std::vector<std::string> symbols = symbols_of(*region);
  std::map<std::string, int64_t> stand_in;
  for (const std::string& s : symbols)
    stand_in[s] = kStandInExtent;
  Result<Graph> at_stand_in = at_extents(*region, stand_in);
  if (!at_stand_in.ok()) {
    *why_not = at_stand_in.status().message();
    return std::nullopt;
  }
  Graph& g = *at_stand_in;
  std::optional<LibraryCall> form = call_in(g, node.name, nullptr, build, why_not);
  if (!form) return std::nullopt;
  // The same nodes and values in the model's graph.
  std::unordered_map<std::string, const Node*> node_named;
  std::unordered_map<std::string, const Value*> value_named;
  for (const Node* n : nodes) {
    node_named[n->name] = n;
    for (const std::vector<Value*>* vs : {&n->inputs, &n->outputs}) {
      for (const Value* v : *vs) {
        if (v) value_named[v->name] = v;
      }
    }
  }
  LibraryCall call;
  for (const Node* n : form->nodes)
    call.nodes.push_back(node_named.at(n->name));
  for (const Value* v : form->values)
    call.values.push_back(value_named.at(v->name));
  for (const Value* v : form->held)
    call.held.push_back(value_named.at(v->name));
  for (const std::string& s : symbols)
    call.symbols.push_back(Dim::symbol(s));
  // oneDNN takes no empty input; an empty output needs no call (NothingToDo).
  const Value* out = region->outputs.empty() ? nullptr : region->outputs[0];
  for (const Value* in : region->inputs) {
    if (out && in->type.shape && !shape_is_static(*in->type.shape) && out->type.shape) {
      Dim from = dims_product(*in->type.shape), to = dims_product(*out->type.shape);
      if (!from.is_unknown() && !to.is_unknown())
        call.limits.push_back({to, from, node.name, DimLimit::Kind::kNotEmpty,
                               "a library call, which takes no empty input"});
    }
  }
  call.kernel = std::make_shared<DynamicKernel>(region, node.name, symbols, names_of(form->nodes),
                                                names_of(form->values), std::move(build),
                                                form->kernel->describe());
  return call;
}

bool has_symbolic_shapes(const Node& node) {
  for (const std::vector<Value*>* vs : {&node.inputs, &node.outputs}) {
    for (const Value* v : *vs) {
      if (v && v->type.shape && !shape_is_static(*v->type.shape)) return true;
    }
  }
  return false;
}

} // namespace weft::library
