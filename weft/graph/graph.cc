#include "weft/graph/graph.h"

#include <algorithm>

#include "weft/support/check.h"

namespace weft {

Value* Graph::add_value(std::string name, TensorType type) {
  WEFT_CHECK(!name.empty() && !names_.contains(name), "value names are unique and non-empty");
  names_.insert(name);
  auto value = std::make_unique<Value>();
  value->name = std::move(name);
  value->type = std::move(type);
  Value* v = value.get();
  value_by_name_[v->name] = v;
  values_.push_back(std::move(value));
  return v;
}

Value* Graph::add_constant(std::string name, Tensor tensor) {
  Value* v = add_value(std::move(name), tensor.type());
  v->constant = std::make_shared<const Tensor>(std::move(tensor));
  return v;
}

std::unique_ptr<Node> Graph::make_node(Node node) {
  WEFT_CHECK(!node.name.empty() && !node_names_.contains(node.name), "node names are unique");
  node_names_.insert(node.name);
  auto owned = std::make_unique<Node>(std::move(node));
  for (Value* out : owned->outputs) {
    if (!out) continue;
    WEFT_CHECK(out->producer == nullptr && !out->is_constant(), "a value has one definition");
    out->producer = owned.get();
  }
  return owned;
}

Node* Graph::add_node(Node node) {
  nodes_.push_back(make_node(std::move(node)));
  return nodes_.back().get();
}

Node* Graph::insert_node_before(const Node* position, Node node) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const std::unique_ptr<Node>& n) { return n.get() == position; });
  WEFT_CHECK(it != nodes_.end(), "insert position is in the graph");
  return nodes_.insert(it, make_node(std::move(node)))->get();
}

void Graph::rename_value(Value* value, const std::string& name) {
  WEFT_CHECK(!names_.contains(name), "new value name is unused");
  names_.erase(value->name);
  value_by_name_.erase(value->name);
  value->name = name;
  names_.insert(name);
  value_by_name_[name] = value;
}

void Graph::rename_node(Node* node, const std::string& name) {
  WEFT_CHECK(!node_names_.contains(name), "new node name is unused");
  node_names_.erase(node->name);
  node->name = name;
  node_names_.insert(name);
}

Graph Graph::clone() const {
  Graph copy;
  copy.source = source;
  copy.opset = opset;
  copy.dim_limits = dim_limits;
  copy.map_outputs = map_outputs;
  copy.label_outputs = label_outputs;
  copy.string_inputs = string_inputs;
  copy.metadata = metadata;
  copy.names_ = names_;
  copy.node_names_ = node_names_;
  copy.symbols_ = symbols_;
  copy.fresh_ = fresh_;
  copy.next_symbol_ = next_symbol_;
  std::unordered_map<const Value*, Value*> map;
  for (const auto& v : values_) {
    copy.values_.push_back(std::make_unique<Value>(Value{v->name, v->type, nullptr, v->constant}));
    map[v.get()] = copy.values_.back().get();
    copy.value_by_name_[v->name] = copy.values_.back().get();
  }
  auto mapped = [&](const std::vector<Value*>& values) {
    std::vector<Value*> out;
    for (const Value* v : values)
      out.push_back(v ? map.at(v) : nullptr);
    return out;
  };
  for (const auto& n : nodes_) {
    auto node = std::make_unique<Node>(*n);
    node->inputs = mapped(n->inputs);
    node->outputs = mapped(n->outputs);
    for (Value* out : node->outputs) {
      if (out) out->producer = node.get();
    }
    copy.nodes_.push_back(std::move(node));
  }
  copy.inputs = mapped(inputs);
  copy.outputs = mapped(outputs);
  return copy;
}

namespace {
std::string unique_in(const std::unordered_set<std::string>& taken, const std::string& base) {
  if (!taken.contains(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!taken.contains(candidate)) return candidate;
  }
}
} // namespace

std::string Graph::unique_name(const std::string& base) { return unique_in(names_, base); }
std::string Graph::unique_node_name(const std::string& base) {
  return unique_in(node_names_, base);
}

Value* Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? nullptr : it->second;
}

Dim Graph::unique_symbol(const std::string& base) {
  std::string name = unique_in(symbols_, base);
  symbols_.insert(name);
  return Dim::symbol(name);
}

Dim Graph::fresh_symbol() {
  std::string name;
  do {
    name = "unk" + std::to_string(next_symbol_++);
  } while (symbols_.contains(name));
  symbols_.insert(name);
  fresh_.insert(name);
  return Dim::symbol(name);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& node : nodes_) {
    std::replace(node->inputs.begin(), node->inputs.end(), from, to);
  }
  std::replace(outputs.begin(), outputs.end(), from, to);
}

void Graph::make_constant(Value* value, Tensor tensor) {
  make_constant(value, std::make_shared<const Tensor>(std::move(tensor)));
}

void Graph::make_constant(Value* value, TensorRef tensor) {
  value->type = tensor->type();
  value->constant = std::move(tensor);
  value->producer = nullptr;
}

std::unordered_map<const Value*, int> Graph::use_counts() const {
  std::unordered_map<const Value*, int> uses;
  for (const auto& node : nodes_) {
    for (const Value* in : node->inputs) {
      if (in) ++uses[in];
    }
  }
  for (const Value* out : outputs)
    ++uses[out];
  return uses;
}

bool Graph::is_graph_output(const Value* v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

bool Graph::is_graph_input(const Value* v) const {
  return std::find(inputs.begin(), inputs.end(), v) != inputs.end();
}

void Graph::remove_unreferenced_values() {
  std::unordered_set<const Value*> live(inputs.begin(), inputs.end());
  live.insert(outputs.begin(), outputs.end());
  for (const auto& node : nodes_) {
    live.insert(node->inputs.begin(), node->inputs.end());
    live.insert(node->outputs.begin(), node->outputs.end());
  }
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) {
    if (live.contains(v.get())) return false;
    names_.erase(v->name);
    value_by_name_.erase(v->name);
    return true;
  });
}

} // namespace weft
