#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/fold_shape_values.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/passes/specialize_shapes.h"

namespace weft {
namespace {

// The graph's inputs frozen for the given values.
std::vector<int> frozen(const std::string& model, const std::vector<Tensor>& values) {
  Graph g = testing::graph_from_text(model);
  return freeze_shape_operands(g, values);
}

// A window size reaches Range's bound through a Cast: it determines the output's shape, so
// it is frozen although it also feeds data. The data input x reaches a Reshape only
// through Shape, which reads no values: it stays an input.
TEST(FreezeShapeOperands, FollowsFoldableArithmeticButNotShape) {
  std::vector<int> f = frozen(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64 n, float[4] x) => (float[N] r, float[M] y) {
      zero = Constant <value = float {0.0}> ()
      one = Constant <value = float {1.0}> ()
      size = Cast <to = 1> (n)
      step = Div (one, size)
      r = Range (zero, size, step)
      s = Shape (x)
      y = Reshape (x, s)
    })",
                              {Tensor::scalar_i64(5), Tensor(DType::kF32, {4})});
  EXPECT_EQ(f, std::vector<int>{0});
}

TEST(FreezeShapeOperands, NothingToDo) {
  std::vector<int> f = frozen(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      y = Relu (x)
    })",
                              {Tensor(DType::kF32, {4})});
  EXPECT_TRUE(f.empty());
}

// A later stage's input of min(100,N) boxes (a handed-over value), bound to 100: the dims over
// it become static, in value types and in the Reshape target that fold_shape_values wrote
// over symbols. (Mask R-CNN's per-content stage had kept 20*min(100,N) and could not run.)
TEST(SpecializeShapes, DimsOverABoundInputDimBecomeStatic) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[B, 4] boxes) => (float[C] flat) {
      n = Shape <start = 0, end = 1> (boxes)
      twenty = Constant <value = int64[1] {20}> ()
      count = Mul (n, twenty)
      five = Constant <value = int64[1] {5}> ()
      to_flat = Div (count, five)
      flat = Reshape (boxes, to_flat)
    })");
  Dim boxes = Dim::symbol("min(100,N)");
  (*g.inputs[0]->type.shape)[0] = boxes;
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(fold_shape_values(g).ok());
  const Node& reshape = *g.find_value("flat")->producer;
  ASSERT_TRUE(reshape.attrs_as<ReshapeAttrs>().symbolic_shape);
  EXPECT_EQ(shape_to_string(*reshape.attrs_as<ReshapeAttrs>().symbolic_shape), "[4*min(100,N)]");

  Status s = specialize_shapes(g, {TensorType{DType::kF32, Shape{Dim(100), Dim(4)}}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(shape_to_string(*reshape.attrs_as<ReshapeAttrs>().symbolic_shape), "[400]");
  EXPECT_EQ(g.find_value("flat")->type.to_string(), "f32[400]");
}

} // namespace
} // namespace weft
