#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/quantized_products.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;

// fold_constants (which folds the bias's DequantizeLinear, as the pipeline does before), then
// quantized_products with "library_takes", dead code removed and the graph verified: whether
// the pass changed something.
bool run_pass(Graph& g, bool library_takes) {
  EXPECT_TRUE(fold_constants(g).ok());
  Result<bool> changed = quantized_products(g, [&](const Node&) { return library_takes; });
  EXPECT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(eliminate_dead_code(g).ok());
  Status v = verify_graph(g, "quantized_products");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return changed.ok() && *changed;
}

const Node* only(const Graph& g, Op op) {
  const Node* found = nullptr;
  for (const auto& n : g.nodes()) {
    if (n->op_type == op) {
      EXPECT_EQ(found, nullptr) << "more than one " << op;
      found = n.get();
    }
  }
  return found;
}

// A QDQ Linear written as Gemm with transB and a bias (int32 in units of xs * ws, as ONNX
// Runtime's quantizer writes it): one QLinearMatMulBias on the [K, N] transpose of the int8
// weights and the int32 bias, where the library takes it; the Gemm stays where it does not.
TEST(QuantizedProducts, QdqGemmWithBiasBecomesOneInt8Product) {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 3] x) => (float[4, 2] y)
      <int8[2, 3] w = {1, -2, 3, -4, 5, -6}, float[2] ws = {0.5, 0.25}, int8[2] wz = {0, 0},
       int32[2] b = {10, -20}, float[2] bs = {0.05, 0.025}, int32[2] bz = {0, 0},
       float s = {0.1}, uint8 z = {128}> {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      wd = DequantizeLinear <axis = 0> (w, ws, wz)
      bd = DequantizeLinear <axis = 0> (b, bs, bz)
      h = Gemm <transB = 1> (xd, wd, bd)
      hq = QuantizeLinear(h, s, z)
      y = DequantizeLinear(hq, s, z)
    })";
  Graph g = graph_from_text(text);
  ASSERT_TRUE(run_pass(g, true));
  EXPECT_EQ(count_ops(g, Op::kGemm), 0);
  const Node* product = only(g, Op::kQLinearMatMulBias);
  ASSERT_NE(product, nullptr);
  ASSERT_EQ(product->inputs.size(), 9u);
  const Value *w = product->inputs[3], *bias = product->inputs[8];
  ASSERT_TRUE(w->is_constant() && bias->is_constant());
  EXPECT_EQ(w->constant->to_string(), "i8[3,2]{1, -4, -2, 5, 3, -6}");
  EXPECT_EQ(bias->constant->to_string(), "i32[2]{10, -20}");
  EXPECT_EQ(product->outputs[0]->type.to_string(), "u8[4,2]");

  Graph refused = graph_from_text(text);
  EXPECT_FALSE(run_pass(refused, false));
  EXPECT_EQ(count_ops(refused, Op::kGemm), 1);
}

// A MaxPool between a DequantizeLinear and a QuantizeLinear of the same scale and zero point
// runs on the 8-bit values, whatever the library; with another scale it stays in float.
TEST(QuantizedProducts, MaxPoolBetweenEqualQuantizationsRunsOnTheQuantizedValues) {
  auto text = [](const char* out_scale) {
    return std::string(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 2, 4, 4] x) => (float[1, 2, 2, 2] y)
        <float s = {0.1}, float t = {0.2}, uint8 z = {128}> {
        xq = QuantizeLinear(x, s, z)
        xd = DequantizeLinear(xq, s, z)
        p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
        pq = QuantizeLinear(p, )") +
           out_scale + R"(, z)
        y = DequantizeLinear(pq, )" +
           out_scale + R"(, z)
      })";
  };
  Graph g = graph_from_text(text("s"));
  ASSERT_TRUE(run_pass(g, false));
  const Node* pool = only(g, Op::kMaxPool);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->inputs[0]->name, "xq");
  EXPECT_EQ(pool->outputs[0]->type.to_string(), "u8[1,2,2,2]");
  EXPECT_EQ(count_ops(g, Op::kQuantizeLinear), 1);

  Graph other = graph_from_text(text("t"));
  EXPECT_FALSE(run_pass(other, false));
  EXPECT_EQ(count_ops(other, Op::kQuantizeLinear), 2);
}

} // namespace
} // namespace weft
