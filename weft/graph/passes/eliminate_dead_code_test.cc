#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

TEST(EliminateDeadCode, RemovesUnusedNodesAndConstants) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, float[4] unused_input) => (float[4] y) <float[4] w = {1, 2, 3, 4}> {
      dead = Mul(x, w)
      dead2 = Exp(dead)
      y = Relu(x)
    })");
  ASSERT_OK(eliminate_dead_code(g));
  ASSERT_OK(verify_graph(g, "eliminate_dead_code"));
  EXPECT_EQ(print_body(g), "  input %x: f32[4]\n"
                           "  input %unused_input: f32[4]\n"
                           "  node Relu_2: %y: f32[4] = Relu(%x)\n"
                           "  output %y: f32[4]\n");
}

TEST(EliminateDeadCode, KeepsNodesWithSomeOutputUsed) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[2] a) {
      a, b = Split <axis = 0> (x)
    })");
  ASSERT_OK(eliminate_dead_code(g));
  EXPECT_EQ(print_body(g), "  input %x: f32[4]\n"
                           "  node Split_0: %a: f32[2], %b: f32[2] = Split(%x) {axis=0}\n"
                           "  output %a: f32[2]\n");
}

TEST(EliminateDeadCode, NothingToDo) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Relu(x)
    })");
  std::string before = print_body(g);
  ASSERT_OK(eliminate_dead_code(g));
  EXPECT_EQ(print_body(g), before);
}

} // namespace
} // namespace weft
