#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

TEST(RefineType, TakesStaticDimsAndFillsMissingShapesWithFreshSymbols) {
  Graph g;
  g.note_symbol("unk0"); // used by the model: fresh symbols avoid it
  TensorType stored{DType::kF32, Shape{Dim::symbol("a"), Dim::symbol("b")}};
  TensorType inferred{DType::kF32, Shape{4, Dim::unknown()}};
  EXPECT_EQ(refine_type(stored, inferred, g).to_string(), "f32[4,b]");
  EXPECT_EQ(refine_type({DType::kF32, std::nullopt}, inferred, g).to_string(), "f32[4,unk1]");
  EXPECT_EQ(refine_type({DType::kF32, std::nullopt}, {DType::kF32, Shape{2}}, g).to_string(),
            "f32[2]");
}

// An exporter's name for an expression gives way to the expression over the inputs' symbols.
TEST(RefineType, ExpressionsOverInputSymbolsReplaceDeclaredNames) {
  Graph g;
  TensorType stored{DType::kF32, Shape{Dim::symbol("N"), Dim::symbol("((W - 1)//2) + 1")}};
  TensorType inferred{DType::kF32, Shape{Dim::symbol("N"), dim_floor_div(Dim::symbol("W"), 1, 2)}};
  std::set<std::string> inputs = {"N", "W"};
  EXPECT_EQ(refine_type(stored, inferred, g, &inputs).to_string(), "f32[N,(W+1)/2]");
  EXPECT_EQ(refine_type(stored, inferred, g).to_string(), "f32[N,((W - 1)//2) + 1]");
  std::set<std::string> only_n = {"N"}; // W is no input's: nothing to prefer
  EXPECT_EQ(refine_type(stored, inferred, g, &only_n).to_string(), "f32[N,((W - 1)//2) + 1]");
}

// A Slice whose bounds are computed at run time: ONNX does not know its rank, Weft does.
TEST(InferShapes, RankFlowsThroughRuntimeSlice) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 8] x, int64[1] start) => (int64[2] s) <int64[1] end = {4}, int64[1] axes = {1}> {
      y = Slice(x, start, end, axes)
      s = Shape(y)
    })");
  ASSERT_OK(infer_shapes(g));
  ASSERT_OK(verify_graph(g, "infer_shapes"));
  EXPECT_NE(print_body(g).find("%y: f32[N,unk"), std::string::npos) << print_body(g);
}

TEST(InferShapes, ConstantTargetMakesReshapeStatic) {
  // The output is declared with a symbol; the constant target determines it.
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 6] x) => (float[a, b] y) <int64[2] t = {3, 4}> {
      y = Reshape(x, t)
    })");
  ASSERT_OK(infer_shapes(g));
  ASSERT_OK(verify_graph(g, "infer_shapes"));
  EXPECT_NE(print_body(g).find("%y: f32[3,4] = Reshape"), std::string::npos) << print_body(g);
}

TEST(InferShapes, NothingToDo) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 4] x) => (float[N, 4] y) {
      y = Relu(x)
    })");
  std::string before = print_body(g);
  ASSERT_OK(infer_shapes(g));
  EXPECT_EQ(print_body(g), before);
}

} // namespace
} // namespace weft
