#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/eliminate_identity.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

std::string eliminate(const std::string& model) {
  Graph g = graph_from_text(model);
  EXPECT_TRUE(eliminate_identity(g).ok());
  Status v = verify_graph(g, "eliminate_identity");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

TEST(EliminateIdentity, ForwardsIdentityDropoutAndSameTypeCast) {
  EXPECT_EQ(eliminate(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      a = Identity(x)
      b = Dropout(a)
      c = Cast <to = 1> (b)
      y = Relu(c)
    })"),
            "  input %x: f32[4]\n"
            "  node Relu_3: %y: f32[4] = Relu(%x)\n"
            "  output %y: f32[4]\n");
}

// A Pad of zeros goes; one that shifts (pads [1, -1]: the same shape) stays.
TEST(EliminateIdentity, ForwardsPadOfZeros) {
  EXPECT_EQ(eliminate(R"(
    <ir_version: 8, opset_import: ["" : 10]>
    g (float[4] x) => (float[4] y) {
      a = Pad <pads = [0, 0]> (x)
      b = Pad <pads = [1, -1]> (a)
      y = Relu(b)
    })"),
            "  input %x: f32[4]\n"
            "  node Pad_1: %b: f32[4] = Pad(%x) {mode=constant, pads=[1, -1], value=0}\n"
            "  node Relu_2: %y: f32[4] = Relu(%b)\n"
            "  output %y: f32[4]\n");
}

TEST(EliminateIdentity, GraphOutputKeepsItsName) {
  EXPECT_EQ(eliminate(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      r = Relu(x)
      y = Identity(r)
    })"),
            "  input %x: f32[4]\n"
            "  node Relu_0: %y: f32[4] = Relu(%x)\n"
            "  output %y: f32[4]\n");
}

TEST(EliminateIdentity, KeepsCopyBetweenInputAndOutput) {
  std::string body = eliminate(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Identity(x)
    })");
  EXPECT_NE(body.find("Identity(%x)"), std::string::npos) << body;
}

TEST(EliminateIdentity, KeepsDropoutWhoseMaskIsUsedAndRealCasts) {
  std::string body = eliminate(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y, bool[4] mask, double[4] d) {
      y, mask = Dropout(x)
      d = Cast <to = 11> (x)
    })");
  EXPECT_NE(body.find("Dropout(%x)"), std::string::npos) << body;
  EXPECT_NE(body.find("Cast(%x)"), std::string::npos) << body;
}

TEST(EliminateIdentity, NothingToDo) {
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Relu(x)
    })";
  EXPECT_EQ(eliminate(model), print_body(graph_from_text(model)));
}

} // namespace
} // namespace weft
