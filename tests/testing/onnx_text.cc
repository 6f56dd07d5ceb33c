#include "tests/testing/onnx_text.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "weft/graph/print_graph.h"
#include "weft/onnx/import_model.h"

namespace weft::testing {

std::string model_bytes(const std::string& text) {
  onnx::ModelProto model;
  onnx::OnnxParser parser(text.c_str());
  auto status = parser.Parse(model);
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
  return model.SerializeAsString();
}

Result<Graph> import_text(const std::string& text) {
  return import_model_bytes(model_bytes(text), "test.onnx", ".");
}

Graph graph_from_text(const std::string& text) {
  Result<Graph> graph = import_text(text);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  return graph.ok() ? std::move(graph).value() : Graph();
}

std::string print_body(const Graph& graph) {
  std::string text = print_graph(graph);
  return text.substr(text.find('\n') + 1);
}

int count_ops(const std::string& body, const std::string& op) {
  int n = 0;
  for (size_t at = body.find(" = " + op + "("); at != std::string::npos;
       at = body.find(" = " + op + "(", at + 1))
    ++n;
  return n;
}

int count_ops(const Graph& graph, Op op) {
  int n = 0;
  for (const auto& node : graph.nodes())
    n += node->op_type == op;
  return n;
}

} // namespace weft::testing
