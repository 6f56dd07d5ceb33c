#include <gtest/gtest.h>

#include "weft/graph/graph.h"
#include "weft/graph/op_table.h"
#include "weft/graph/print_graph.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

// x -> Relu -> y, built through the factories.
Graph relu_graph() {
  Graph g;
  g.source = "g.onnx";
  g.opset = 13;
  Value* x = g.add_value("x", {DType::kF32, Shape{Dim::symbol("N"), 4}});
  Value* y = g.add_value("y", {DType::kF32, Shape{Dim::symbol("N"), 4}});
  g.inputs = {x};
  Node n;
  n.name = "relu";
  n.op_type = Op::kRelu;
  n.opset = 13;
  n.def = find_op(Op::kRelu, 13);
  n.inputs = {x};
  n.outputs = {y};
  g.add_node(std::move(n));
  g.outputs = {y};
  return g;
}

TEST(Graph, PrintsEveryValueWithItsType) {
  Graph g = relu_graph();
  EXPECT_EQ(print_graph(g), "graph \"g.onnx\" opset 13\n"
                            "  input %x: f32[N,4]\n"
                            "  node relu: %y: f32[N,4] = Relu(%x)\n"
                            "  output %y: f32[N,4]\n");
  ASSERT_TRUE(verify_graph(g, "test").ok());
}

TEST(Graph, JsonHasOpsWithShapes) {
  nlohmann::json j = graph_to_json(relu_graph());
  ASSERT_EQ(j["ops"].size(), 1u);
  EXPECT_EQ(j["ops"][0]["op_type"], "Relu");
  EXPECT_EQ(j["ops"][0]["outputs"][0]["shape"], nlohmann::json::parse(R"(["N", 4])"));
}

TEST(Graph, ReplaceUsesAndRemoveNodes) {
  Graph g = relu_graph();
  Value* x = g.inputs[0];
  g.replace_all_uses(g.outputs[0], x);
  g.remove_nodes_if([](const Node& n) { return n.op_type == Op::kRelu; });
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.outputs[0], x);
  EXPECT_EQ(g.find_value("y"), nullptr); // unreferenced values go with their node
}

TEST(Graph, NodeAndValueNamesAreSeparate) {
  Graph g = relu_graph();
  EXPECT_EQ(g.unique_name("relu"), "relu");
  EXPECT_EQ(g.unique_name("x"), "x_1");
  EXPECT_EQ(g.unique_node_name("relu"), "relu_1");
}

TEST(Graph, CloneIsDeepAndIndependent) {
  Graph g = relu_graph();
  Graph c = g.clone();
  EXPECT_EQ(print_graph(c), print_graph(g));
  ASSERT_TRUE(verify_graph(c, "clone").ok());
  EXPECT_NE(c.inputs[0], g.inputs[0]);
  EXPECT_EQ(c.nodes()[0]->inputs[0], c.inputs[0]);
  EXPECT_EQ(c.outputs[0]->producer, c.nodes()[0].get());
  c.replace_all_uses(c.outputs[0], c.inputs[0]);
  c.remove_nodes_if([](const Node&) { return true; });
  EXPECT_EQ(g.nodes().size(), 1u);    // the original is untouched
  EXPECT_EQ(c.unique_name("y"), "y"); // names follow the copy's own values
}

TEST(Verifier, CatchesUseBeforeDefinition) {
  Graph g = relu_graph();
  Value* orphan = g.add_value("orphan", {DType::kF32, Shape{4}});
  const_cast<Node&>(*g.nodes()[0]).inputs[0] = orphan;
  Status s = verify_graph(g, "some_pass");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("after pass 'some_pass'"), std::string::npos);
  EXPECT_NE(s.message().find("before its definition"), std::string::npos);
}

TEST(Verifier, CatchesTypesThatContradictTheShapeFunction) {
  Graph g = relu_graph();
  g.outputs[0]->type = {DType::kF32, Shape{Dim::symbol("N"), 5}};
  Status s = verify_graph(g, "p");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shape function gives f32[N,4]"), std::string::npos) << s.message();
}

TEST(OpTable, RangesAndLookups) {
  EXPECT_NE(find_op(Op::kSoftmax, 13), nullptr);
  EXPECT_EQ(find_op(Op::kReshape, 4), nullptr); // shape as an attribute: not supported
  EXPECT_EQ(find_op(op_from_name("NoSuchOp"), 13), nullptr);
  EXPECT_TRUE(supported_opsets(op_from_name("NoSuchOp")).empty());
  EXPECT_EQ(supported_opsets(Op::kReshape), (std::vector<std::pair<int, int>>{{5, kMaxOpset}}));
  for (const OpDef& def : all_ops()) {
    EXPECT_LE(def.min_opset, def.max_opset) << def.op;
    EXPECT_NE(def.parse, nullptr) << def.op;
  }
}

} // namespace
} // namespace weft
