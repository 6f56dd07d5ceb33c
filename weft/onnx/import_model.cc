#include "weft/onnx/import_model.h"

#include <filesystem>
#include <limits>

#include <onnx/onnx_pb.h>

#include "weft/onnx/contrib_ops.h"
#include "weft/onnx/graph_builder.h"
#include "weft/onnx/inline_functions.h"
#include "weft/onnx/model_checks.h"
#include "weft/onnx/string_labels.h"

namespace weft {

namespace {

ModelProtoInfo metadata_of(const onnx::ModelProto& model) {
  ModelProtoInfo m;
  m.producer_name = model.producer_name();
  m.producer_version = model.producer_version();
  m.domain = model.domain();
  m.doc_string = model.doc_string();
  m.model_version =
      model.has_model_version() ? model.model_version() : std::numeric_limits<int64_t>::max();
  m.graph_name = model.graph().name();
  m.graph_doc_string = model.graph().doc_string();
  for (const auto& p : model.metadata_props())
    m.props[p.key()] = p.value();
  return m;
}

// Weft's own checks and shape functions stand in for libonnx's checker and inference,
// which stop at IR 8 and opset 17 (docs/onnx-versions.md).
Result<Graph> import_parsed(onnx::ModelProto& model, const std::string& name,
                            const std::string& base_dir) {
  WEFT_ASSIGN_OR_RETURN(int opset, find_opset(model, name));
  WEFT_RETURN_IF_ERROR(inline_local_functions(model, name));
  std::map<std::string, std::vector<std::string>> labels =
      index_string_labels(*model.mutable_graph());
  std::map<std::string, std::vector<std::string>> vocabularies =
      index_string_inputs(*model.mutable_graph());
  WEFT_ASSIGN_OR_RETURN(auto maps, expand_contrib_ops(model, opset, name, base_dir));
  WEFT_RETURN_IF_ERROR(check_supported_ops(model.graph(), opset, name));
  WEFT_RETURN_IF_ERROR(check_node_inputs(model.graph(), opset, name));
  WEFT_RETURN_IF_ERROR(check_declared_ranks(model.graph(), name));
  WEFT_ASSIGN_OR_RETURN(Graph graph, build_graph(model, opset, name, base_dir));
  graph.map_outputs = std::move(maps);
  graph.label_outputs = std::move(labels);
  graph.string_inputs = std::move(vocabularies);
  graph.metadata = metadata_of(model);
  return graph;
}

} // namespace

Result<Graph> import_model(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  WEFT_ASSIGN_OR_RETURN(onnx::ModelProto model, parse_model(bytes, path));
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return import_parsed(model, path, base_dir.empty() ? "." : base_dir);
}

Result<Graph> import_model_bytes(std::string_view bytes, const std::string& name,
                                 const std::string& base_dir) {
  WEFT_ASSIGN_OR_RETURN(onnx::ModelProto model, parse_model(bytes, name));
  return import_parsed(model, name, base_dir);
}

} // namespace weft
