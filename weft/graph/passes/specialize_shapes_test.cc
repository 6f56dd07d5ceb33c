#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
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

} // namespace
} // namespace weft
