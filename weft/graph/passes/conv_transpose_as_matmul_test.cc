#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/conv_transpose_as_matmul.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;

// A 2x2, stride-2 ConvTranspose from 2 to 1 channels: a product with the weights as
// [C, kh * kw * M] columns, the pixel shuffle, the bias and the way back to NCHW.
TEST(ConvTransposeAsMatmul, NonOverlappingWindowsBecomeAProduct) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 2, 3, 4] x) => (float[1, 1, 6, 8] y)
      <float[2, 1, 2, 2] w = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}, float[1] b = {0.5}> {
      y = ConvTranspose <kernel_shape = [2, 2], strides = [2, 2]> (x, w, b)
    })");
  Result<bool> changed = conv_transpose_as_matmul(g);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(eliminate_dead_code(g).ok());
  Status v = verify_graph(g, "conv_transpose_as_matmul");
  ASSERT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(g, Op::kConvTranspose), 0);
  ASSERT_EQ(count_ops(g, Op::kMatMul), 1);
  for (const auto& n : g.nodes()) {
    if (n->op_type != Op::kMatMul) continue;
    const Tensor& columns = *n->inputs[1]->constant;
    ASSERT_EQ(columns.dims(), (std::vector<int64_t>{2, 4}));
    // Column (i, j) of input channel c is w[c, 0, i, j].
    for (int64_t k = 0; k < 8; ++k)
      EXPECT_EQ(columns.get_double(k), static_cast<double>(k + 1)) << k;
    EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,3,4,4]");
  }
  EXPECT_EQ(g.outputs[0]->name, "y");
  EXPECT_EQ(shape_to_string(*g.outputs[0]->type.shape), "[1,1,6,8]");
}

// Overlapping windows (kernel 3, stride 2), padding and groups stay ConvTransposes, and so
// do weights that are not constant.
TEST(ConvTransposeAsMatmul, NothingToDoForOverlappingOrPaddedWindows) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 2, 3, 4] x, float[2, 1, 2, 2] v) => (float[1, 1, 7, 9] a, float[1, 1, 4, 6] p,
        float[1, 2, 6, 8] q, float[1, 1, 6, 8] r)
      <float[2, 1, 3, 3] w3 = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
                               1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0},
       float[2, 1, 2, 2] w2 = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}> {
      a = ConvTranspose <kernel_shape = [3, 3], strides = [2, 2]> (x, w3)
      p = ConvTranspose <kernel_shape = [2, 2], strides = [2, 2], pads = [1, 1, 1, 1]> (x, w2)
      q = ConvTranspose <kernel_shape = [2, 2], strides = [2, 2], group = 2> (x, w2)
      r = ConvTranspose <kernel_shape = [2, 2], strides = [2, 2]> (x, v)
    })");
  Result<bool> changed = conv_transpose_as_matmul(g);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(count_ops(g, Op::kConvTranspose), 4);
}

} // namespace
} // namespace weft
