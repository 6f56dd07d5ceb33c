#include "weft/onnx/inline_functions.h"

#include <map>
#include <optional>
#include <vector>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

namespace weft {

namespace {

// Fields that IR 10 added and Debian's libonnx 1.12 protobuf classes do not have: protobuf
// keeps them as unknown fields, read here by number (onnx.proto of onnx 1.14 on).
constexpr int kNodeOverload = 8;             // NodeProto.overload
constexpr int kFunctionAttributeProto = 11;  // FunctionProto.attribute_proto (defaults)
constexpr int kFunctionOverload = 13;        // FunctionProto.overload

std::vector<std::string> unknown_bytes(const google::protobuf::Message& m, int number) {
  std::vector<std::string> out;
  const google::protobuf::UnknownFieldSet& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(f.length_delimited());
  }
  return out;
}

std::string overload_of(const google::protobuf::Message& m, int number) {
  std::vector<std::string> v = unknown_bytes(m, number);
  return v.empty() ? std::string() : v.back();
}

// The graphs an attribute holds (If's branches, Loop's and Scan's bodies).
std::vector<onnx::GraphProto*> nested(onnx::AttributeProto& a) {
  std::vector<onnx::GraphProto*> graphs;
  if (a.has_g()) graphs.push_back(a.mutable_g());
  for (onnx::GraphProto& g : *a.mutable_graphs())
    graphs.push_back(&g);
  return graphs;
}

bool is_onnx_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Calls nested deeper than this are taken as recursion.
constexpr int kMaxDepth = 32;

using FunctionKey = std::tuple<std::string, std::string, std::string>; // domain, name, overload

class Inliner {
public:
  Inliner(const onnx::ModelProto& model, std::string name) : name_(std::move(name)) {
    for (const auto& imp : model.opset_import()) {
      if (is_onnx_domain(imp.domain())) model_opset_ = imp.version();
    }
    for (const auto& f : model.functions())
      functions_[{f.domain(), f.name(), overload_of(f, kFunctionOverload)}] = &f;
  }

  bool any() const { return !functions_.empty(); }

  // Replaces every call in "graph" (and its nested graphs) by the callee's nodes.
  Status inline_graph(onnx::GraphProto& graph, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (onnx::NodeProto& node : *graph.mutable_node()) {
      WEFT_RETURN_IF_ERROR(inline_subgraphs(node, depth));
      auto it = functions_.find({node.domain(), node.op_type(), overload_of(node, kNodeOverload)});
      if (it == functions_.end()) {
        *out.Add() = std::move(node);
        continue;
      }
      if (depth >= kMaxDepth) {
        return Status::error(fmt::format("{}: function '{}' calls itself (nested more than {} deep)",
                                         name_, node.op_type(), kMaxDepth));
      }
      WEFT_ASSIGN_OR_RETURN(onnx::GraphProto body, expand(node, *it->second));
      WEFT_RETURN_IF_ERROR(inline_graph(body, depth + 1));
      for (onnx::NodeProto& n : *body.mutable_node())
        *out.Add() = std::move(n);
    }
    graph.mutable_node()->Swap(&out);
    return Status();
  }

private:
  Status inline_subgraphs(onnx::NodeProto& node, int depth) {
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      for (onnx::GraphProto* g : nested(a))
        WEFT_RETURN_IF_ERROR(inline_graph(*g, depth));
    }
    return Status();
  }

  // The callee's nodes for one call, renamed, with attribute references resolved.
  Result<onnx::GraphProto> expand(const onnx::NodeProto& call, const onnx::FunctionProto& f) {
    std::string where = call.name().empty()
                            ? fmt::format("{}: a call of function {}", name_, f.name())
                            : fmt::format("{}: node '{}' (function {})", name_, call.name(), f.name());
    for (const auto& imp : f.opset_import()) {
      if (is_onnx_domain(imp.domain()) && model_opset_ && imp.version() != *model_opset_) {
        return Status::error(fmt::format(
            "{}: the function imports ai.onnx opset {}, the model opset {} (Weft imports one "
            "ai.onnx opset per model)",
            where, imp.version(), *model_opset_));
      }
    }
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size()) {
      return Status::error(fmt::format("{}: the call has {} inputs and {} outputs, the function "
                                       "{} and {}",
                                       where, call.input_size(), call.output_size(),
                                       f.input_size(), f.output_size()));
    }
    std::unordered_map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() ? call.output(i) : "";
    std::string prefix = fmt::format("{}__{}_{}/", call.name().empty() ? f.name() : call.name(),
                                     f.name(), calls_++);
    std::map<std::string, onnx::AttributeProto> attrs;
    for (const std::string& bytes : unknown_bytes(f, kFunctionAttributeProto)) {
      onnx::AttributeProto a;
      if (!a.ParseFromString(bytes))
        return Status::error(fmt::format("{}: an attribute default does not parse", where));
      attrs[a.name()] = std::move(a);
    }
    for (const auto& a : call.attribute())
      attrs[a.name()] = a;

    onnx::GraphProto body;
    for (const onnx::NodeProto& n : f.node()) {
      onnx::NodeProto copy = n;
      if (!copy.name().empty()) copy.set_name(prefix + copy.name());
      rename_values(copy, rename, prefix);
      WEFT_RETURN_IF_ERROR(resolve_attributes(copy, attrs, where));
      *body.add_node() = std::move(copy);
    }
    return body;
  }

  // Formal parameters become the call's values; any other name gets "prefix". A nested
  // graph's names are renamed alike, so that two calls' branches stay apart.
  static void rename_values(onnx::NodeProto& node,
                            const std::unordered_map<std::string, std::string>& rename,
                            const std::string& prefix) {
    auto map = [&](std::string* value) {
      if (value->empty()) return;
      auto it = rename.find(*value);
      *value = it != rename.end() ? it->second : prefix + *value;
    };
    for (std::string& in : *node.mutable_input())
      map(&in);
    for (std::string& out : *node.mutable_output())
      map(&out);
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      for (onnx::GraphProto* g : nested(a)) {
        for (auto* infos : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()}) {
          for (onnx::ValueInfoProto& vi : *infos)
            map(vi.mutable_name());
        }
        for (onnx::TensorProto& t : *g->mutable_initializer())
          map(t.mutable_name());
        for (onnx::NodeProto& n : *g->mutable_node())
          rename_values(n, rename, prefix);
      }
    }
  }

  // Attributes that reference the function's own (ref_attr_name) take the call's value,
  // else the function's default; without either they are left out, as ONNX specifies.
  static Status resolve_attributes(onnx::NodeProto& node,
                                   const std::map<std::string, onnx::AttributeProto>& attrs,
                                   const std::string& where) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> out;
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (a.ref_attr_name().empty()) {
        for (onnx::GraphProto* g : nested(a)) {
          for (onnx::NodeProto& n : *g->mutable_node())
            WEFT_RETURN_IF_ERROR(resolve_attributes(n, attrs, where));
        }
        *out.Add() = std::move(a);
        continue;
      }
      auto it = attrs.find(a.ref_attr_name());
      if (it == attrs.end()) continue;
      onnx::AttributeProto value = it->second;
      if (value.type() != a.type() && a.type() != onnx::AttributeProto::UNDEFINED) {
        return Status::error(fmt::format("{}: attribute '{}' is given with the wrong type", where,
                                         a.ref_attr_name()));
      }
      value.set_name(a.name());
      *out.Add() = std::move(value);
    }
    node.mutable_attribute()->Swap(&out);
    return Status();
  }

  std::string name_;
  std::optional<int64_t> model_opset_;
  std::map<FunctionKey, const onnx::FunctionProto*> functions_;
  int calls_ = 0;
};

} // namespace

Status inline_local_functions(onnx::ModelProto& model, const std::string& name) {
  Inliner inliner(model, name);
  if (!inliner.any()) return Status();
  WEFT_RETURN_IF_ERROR(inliner.inline_graph(*model.mutable_graph(), 0));
  model.clear_functions();
  return Status();
}

} // namespace weft
