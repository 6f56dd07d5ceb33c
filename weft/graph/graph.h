// The graph IR.
//
// Semantics (see docs/ir.md):
// - A Graph is a list of Nodes in topological order over Values. Each Value is defined once:
//   as a graph input, as a constant (initializer or folded result), or as an output of
//   exactly one node. Value names are unique within a graph and are the ONNX names.
// - A Node is an ONNX op at the model's ai.onnx opset, with attributes parsed once into a
//   typed struct (attrs.h). An omitted optional input or output is a null Value pointer.
// - Types follow ONNX: a dtype and a shape whose dims are integers or named symbols; the
//   shape is missing when the rank is unknown.
// - Graph outputs are Values; an output may also be an input or a constant.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "weft/graph/attrs.h"
#include "weft/graph/op.h"
#include "weft/graph/shape.h"
#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

struct Node;
struct OpDef;

struct Value {
  std::string name;
  TensorType type;
  Node* producer = nullptr; // null for graph inputs and constants
  TensorRef constant;       // set for constants

  bool is_constant() const { return constant != nullptr; }
};

// The keys of an output that the model declares as a sequence of maps, one per row, from each
// key to the row's value in its column (ai.onnx.ml's ZipMap, which import replaces by its input
// tensor [N, C]): C integer labels or C strings.
struct MapKeys {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

// What a model file says about itself (ModelProto's fields beside the graph).
struct ModelProtoInfo {
  std::string producer_name, producer_version, domain, doc_string, graph_name, graph_doc_string;
  int64_t model_version = 0; // INT64_MAX where the model has none, as ONNX Runtime says
  std::map<std::string, std::string> props; // metadata_props, by key (the last of a repeated key)
};

struct Node {
  std::string name; // unique within the graph
  OpType op_type;   // e.g. Op::kConv
  int opset = 0;    // the model's ai.onnx opset
  const OpDef* def = nullptr;
  OpAttrs attrs;
  std::vector<Value*> inputs;  // null: omitted optional input
  std::vector<Value*> outputs; // null: omitted optional output
  // Imported from a branch of an If: it runs only when its branch is taken, so a shape
  // function that rejects it (a Squeeze of the untaken branch, say) is no error until then.
  bool conditional = false;

  // The input at "i", or null when absent or omitted.
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  template <typename T> T& attrs_as() { return std::get<T>(attrs); }
  template <typename T> const T& attrs_as() const { return std::get<T>(attrs); }
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // A deep copy: the same names, types, attributes and order; constants are shared
  // (they are immutable).
  Graph clone() const;

  std::string source; // the model file, for diagnostics
  int opset = 0;      // ai.onnx opset of the model
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::vector<DimLimit> dim_limits;
  // Outputs computed as tensors [N, C] that the model declares as maps, by name (MapKeys).
  std::map<std::string, MapKeys> map_outputs;
  // int64 outputs that the model declares as strings (class labels looked up in a table of
  // strings): value i stands for the i-th string, by output name.
  std::map<std::string, std::vector<std::string>> label_outputs;
  // int64 inputs that the model declares as strings (categories): value i stands for the
  // i-th string of its vocabulary, -1 for any other string, by input name.
  std::map<std::string, std::vector<std::string>> string_inputs;
  ModelProtoInfo metadata; // the imported model's

  // Factories. Names must be unique (use unique_name for fresh ones).
  Value* add_value(std::string name, TensorType type);
  Value* add_constant(std::string name, Tensor tensor);
  // Appends a node; its inputs must already be defined, its outputs must have no producer.
  Node* add_node(Node node);
  // Inserts a node right before "position", keeping the node list topologically ordered.
  Node* insert_node_before(const Node* position, Node node);
  // Gives "value" the name "name", which must be unused.
  void rename_value(Value* value, const std::string& name);
  // Gives "node" the name "name", which no node may have.
  void rename_node(Node* node, const std::string& name);

  // Names not yet used by any value (or node), built from "base". Values and nodes have
  // separate namespaces, as in ONNX.
  std::string unique_name(const std::string& base);
  std::string unique_node_name(const std::string& base);
  Value* find_value(const std::string& name) const;

  // Symbolic dims. Every symbol of the model is noted at import, so that a fresh one
  // ("unk0", "unk1", ...) never equals a dim it is unrelated to.
  void note_symbol(const std::string& name) { symbols_.insert(name); }
  // A new symbol named from "base" (noted), unequal to every symbol of the graph.
  Dim unique_symbol(const std::string& base);
  Dim fresh_symbol();
  // Is "d" one of fresh_symbol's: a dim no shape function could tell?
  bool is_fresh(const Dim& d) const { return fresh_.contains(d.symbol_name()); }

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  // Makes every use of "from" (node inputs and graph outputs) a use of "to".
  void replace_all_uses(Value* from, Value* to);
  // Turns "value" into a constant holding "tensor" and detaches it from its producer.
  void make_constant(Value* value, Tensor tensor);
  void make_constant(Value* value, TensorRef tensor); // shared, not copied
  // Removes the nodes for which "dead" is true, then values that nothing defines or uses.
  template <typename Pred> void remove_nodes_if(Pred dead) {
    std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) {
      if (!dead(*n)) return false;
      node_names_.erase(n->name);
      for (Value* out : n->outputs) {
        if (out && out->producer == n.get()) out->producer = nullptr;
      }
      return true;
    });
    remove_unreferenced_values();
  }
  // Number of node inputs and graph outputs that refer to each value.
  std::unordered_map<const Value*, int> use_counts() const;
  bool is_graph_output(const Value* v) const;
  bool is_graph_input(const Value* v) const;

private:
  void remove_unreferenced_values();
  std::unique_ptr<Node> make_node(Node node);

  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_set<std::string> names_; // of values
  std::unordered_set<std::string> node_names_;
  std::unordered_map<std::string, Value*> value_by_name_;
  std::unordered_set<std::string> symbols_;
  std::unordered_set<std::string> fresh_; // the symbols fresh_symbol made
  int next_symbol_ = 0;
};

// Every dim "graph" holds, for "visit" to read or replace: the values' types, the dims over
// symbols that fold_shape_values puts in attributes, and the dim limits. A visit that returns
// false stops the walk, which then returns false.
template <typename F> bool for_each_dim(Graph& graph, F&& visit) {
  auto shape = [&](std::optional<Shape>& s) {
    if (!s) return true;
    for (Dim& d : *s) {
      if (!visit(d)) return false;
    }
    return true;
  };
  for (const auto& v : graph.values()) {
    if (!shape(v->type.shape)) return false;
  }
  for (const auto& n : graph.nodes()) {
    bool ok = std::visit(
        [&](auto& a) {
          using A = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<A, ReshapeAttrs> || std::is_same_v<A, ExpandAttrs> ||
                        std::is_same_v<A, RangeAttrs> || std::is_same_v<A, ConstantOfShapeAttrs>)
            return shape(a.symbolic_shape);
          else if constexpr (std::is_same_v<A, SliceAttrs>)
            return shape(a.symbolic_ends) && shape(a.symbolic_starts);
          else if constexpr (std::is_same_v<A, TileAttrs>)
            return shape(a.symbolic_repeats);
          else if constexpr (std::is_same_v<A, TopKAttrs>)
            return !a.symbolic_k || visit(*a.symbolic_k);
          else
            return true;
        },
        n->attrs);
    if (!ok) return false;
  }
  for (DimLimit& l : graph.dim_limits) {
    if (!visit(l.dim) || !visit(l.bound)) return false;
  }
  return true;
}

// Where "node" is, for messages: "FILE: node 'conv_3' (Conv, opset 13)".
inline Location location_of(const Graph& graph, const Node& node) {
  return {graph.source, node.name, std::string(node.op_type.name()), node.opset};
}

} // namespace weft
