#include "weft/graph/print_graph.h"

#include <fmt/format.h>

namespace weft {

namespace {

std::string attr_text(int64_t v) { return std::to_string(v); }
std::string attr_text(bool v) { return v ? "1" : "0"; }
std::string attr_text(float v) { return fmt::format("{}", v); }
std::string attr_text(DType v) { return std::string(dtype_name(v)); }
std::string attr_text(AutoPad v) { return std::string(auto_pad_name(v)); }
std::string attr_text(PadMode v) { return std::string(pad_mode_name(v)); }
std::string attr_text(ScatterReduction v) { return std::string(scatter_reduction_name(v)); }
std::string attr_text(LossReduction v) { return std::string(loss_reduction_name(v)); }
std::string attr_text(DepthToSpaceMode v) { return std::string(depth_to_space_mode_name(v)); }
std::string attr_text(ResizeMode v) { return std::string(resize_mode_name(v)); }
std::string attr_text(ResizeCoordinates v) { return std::string(resize_coordinates_name(v)); }
std::string attr_text(NearestMode v) { return std::string(nearest_mode_name(v)); }
std::string attr_text(GridSampleMode v) { return std::string(grid_sample_mode_name(v)); }
std::string attr_text(GridPadding v) { return std::string(grid_padding_name(v)); }
std::string attr_text(RnnDirection v) { return std::string(rnn_direction_name(v)); }
std::string attr_text(const RnnActivations& v) {
  std::vector<std::string_view> names;
  for (RnnActivation a : v)
    names.push_back(rnn_activation_name(a));
  return fmt::format("[{}]", fmt::join(names, ", "));
}
std::string attr_text(TfIdfMode v) { return std::string(tf_idf_mode_name(v)); }
std::string attr_text(TreeAggregate v) { return std::string(tree_aggregate_name(v)); }
std::string attr_text(const std::string& v) { return fmt::format("\"{}\"", v); }
std::string attr_text(const Ints& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }
std::string attr_text(const Floats& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }
std::string attr_text(const TensorRef& v) { return v ? v->to_string() : "none"; }
std::string attr_text(const Shape& v) { return shape_to_string(v); }
std::string attr_text(const Dim& v) { return v.to_string(); }

nlohmann::json attr_json(int64_t v) { return v; }
nlohmann::json attr_json(bool v) { return v; }
nlohmann::json attr_json(float v) { return v; }
nlohmann::json attr_json(DType v) { return std::string(dtype_name(v)); }
nlohmann::json attr_json(AutoPad v) { return std::string(auto_pad_name(v)); }
nlohmann::json attr_json(PadMode v) { return std::string(pad_mode_name(v)); }
nlohmann::json attr_json(ScatterReduction v) { return std::string(scatter_reduction_name(v)); }
nlohmann::json attr_json(LossReduction v) { return std::string(loss_reduction_name(v)); }
nlohmann::json attr_json(DepthToSpaceMode v) { return std::string(depth_to_space_mode_name(v)); }
nlohmann::json attr_json(ResizeMode v) { return std::string(resize_mode_name(v)); }
nlohmann::json attr_json(ResizeCoordinates v) { return std::string(resize_coordinates_name(v)); }
nlohmann::json attr_json(NearestMode v) { return std::string(nearest_mode_name(v)); }
nlohmann::json attr_json(GridSampleMode v) { return std::string(grid_sample_mode_name(v)); }
nlohmann::json attr_json(GridPadding v) { return std::string(grid_padding_name(v)); }
nlohmann::json attr_json(RnnDirection v) { return std::string(rnn_direction_name(v)); }
nlohmann::json attr_json(const RnnActivations& v) {
  nlohmann::json out = nlohmann::json::array();
  for (RnnActivation a : v)
    out.push_back(std::string(rnn_activation_name(a)));
  return out;
}
nlohmann::json attr_json(TfIdfMode v) { return std::string(tf_idf_mode_name(v)); }
nlohmann::json attr_json(TreeAggregate v) { return std::string(tree_aggregate_name(v)); }
nlohmann::json attr_json(const std::string& v) { return v; }
nlohmann::json attr_json(const Ints& v) { return v; }
nlohmann::json attr_json(const Floats& v) { return v; }
nlohmann::json attr_json(const TensorRef& v) { return v ? v->to_string() : "none"; }
nlohmann::json attr_json(const Shape& v) { return shape_to_string(v); }
nlohmann::json attr_json(const Dim& v) { return v.to_string(); }

std::string attrs_text(const OpAttrs& attrs) {
  std::vector<std::string> parts;
  std::visit(
      [&](const auto& a) {
        a.fields([&](const char* name, const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (requires { value.has_value(); } && !std::is_same_v<T, TensorRef>) {
            if (value) parts.push_back(fmt::format("{}={}", name, attr_text(*value)));
          } else {
            parts.push_back(fmt::format("{}={}", name, attr_text(value)));
          }
        });
      },
      attrs);
  return parts.empty() ? "" : fmt::format(" {{{}}}", fmt::join(parts, ", "));
}

nlohmann::json attrs_json(const OpAttrs& attrs) {
  nlohmann::json out = nlohmann::json::object();
  std::visit(
      [&](const auto& a) {
        a.fields([&](const char* name, const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (requires { value.has_value(); } && !std::is_same_v<T, TensorRef>) {
            if (value) out[name] = attr_json(*value);
          } else {
            out[name] = attr_json(value);
          }
        });
      },
      attrs);
  return out;
}

std::string ref(const Value* v) { return v ? "%" + v->name : "_"; }
std::string typed(const Value* v) { return v ? ref(v) + ": " + v->type.to_string() : "_"; }

nlohmann::json type_json(const Value* v) {
  if (!v) return nullptr;
  nlohmann::json shape = nullptr;
  if (v->type.shape) {
    shape = nlohmann::json::array();
    for (const Dim& d : *v->type.shape) {
      if (d.is_static()) {
        shape.push_back(d.value());
      } else {
        shape.push_back(d.symbol_name());
      }
    }
  }
  return {{"name", v->name}, {"dtype", std::string(dtype_name(v->type.dtype))}, {"shape", shape}};
}

} // namespace

std::string print_node(const Node& node) {
  std::vector<std::string> outs, ins;
  for (const Value* v : node.outputs)
    outs.push_back(typed(v));
  for (const Value* v : node.inputs)
    ins.push_back(ref(v));
  return fmt::format("node {}: {} = {}({}){}", node.name, fmt::join(outs, ", "), node.op_type,
                     fmt::join(ins, ", "), attrs_text(node.attrs));
}

std::string print_graph(const Graph& graph) {
  std::string out = fmt::format("graph \"{}\" opset {}\n", graph.source, graph.opset);
  for (const Value* v : graph.inputs)
    out += "  input " + typed(v) + "\n";
  for (const auto& v : graph.values()) {
    if (v->is_constant())
      out += fmt::format("  const {} = {}\n", ref(v.get()), v->constant->to_string());
  }
  for (const auto& n : graph.nodes())
    out += "  " + print_node(*n) + "\n";
  for (const Value* v : graph.outputs)
    out += "  output " + typed(v) + "\n";
  return out;
}

nlohmann::json graph_to_json(const Graph& graph) {
  nlohmann::json j;
  j["file"] = graph.source;
  j["opset"] = graph.opset;
  j["inputs"] = nlohmann::json::array();
  for (const Value* v : graph.inputs)
    j["inputs"].push_back(type_json(v));
  j["constants"] = nlohmann::json::array();
  for (const auto& v : graph.values()) {
    if (v->is_constant()) j["constants"].push_back(type_json(v.get()));
  }
  j["ops"] = nlohmann::json::array();
  for (const auto& n : graph.nodes()) {
    nlohmann::json node = {{"name", n->name}, {"op_type", n->op_type.name()}, {"opset", n->opset}};
    node["inputs"] = nlohmann::json::array();
    for (const Value* v : n->inputs)
      node["inputs"].push_back(v ? nlohmann::json(v->name) : nullptr);
    node["outputs"] = nlohmann::json::array();
    for (const Value* v : n->outputs)
      node["outputs"].push_back(type_json(v));
    node["attrs"] = attrs_json(n->attrs);
    j["ops"].push_back(std::move(node));
  }
  j["outputs"] = nlohmann::json::array();
  for (const Value* v : graph.outputs)
    j["outputs"].push_back(type_json(v));
  return j;
}

} // namespace weft
