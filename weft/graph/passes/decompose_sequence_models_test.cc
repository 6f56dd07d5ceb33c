#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/decompose.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;
using testing::import_text;
using testing::print_body;

std::string decomposed(const std::string& model) {
  Graph g = graph_from_text(model);
  Status s = decompose(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  Status v = verify_graph(g, "decompose");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

// "linear": per step, the write (Mul, Add) and the read (one MatMul of the group of query heads
// against its KV head's state); the outputs keep their names and types.
TEST(DecomposeSequenceModels, LinearAttentionUnrollsEachStep) {
  std::string body = decomposed(R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float[1,3,4] q, float[1,3,2] k, float[1,3,2] v) => (float[1,3,4] y, float[1,1,2,2] s) {
      y, s = LinearAttention <q_num_heads = 2, kv_num_heads = 1, update_rule = "linear"> (q, k, v)
    })");
  EXPECT_EQ(count_ops(body, "LinearAttention"), 0) << body;
  EXPECT_EQ(count_ops(body, "MatMul"), 3) << body;
  EXPECT_EQ(count_ops(body, "Exp"), 0) << body;
  EXPECT_NE(body.find("%y: f32[1,3,4] = "), std::string::npos) << body;
  EXPECT_NE(body.find("%s: f32[1,1,2,2] = "), std::string::npos) << body;
  // The two query heads of the KV head read its state as one [2, dk] x [dk, dv] MatMul.
  EXPECT_NE(body.find("f32[1,1,2,2] = MatMul("), std::string::npos) << body;
}

// "gated_delta": each step also decays the state (Exp) and retrieves S^T k (a second MatMul).
TEST(DecomposeSequenceModels, GatedDeltaDecaysAndCorrectsEachStep) {
  std::string body = decomposed(R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float16[1,2,4] q, float16[1,2,4] k, float16[1,2,4] v, float16[1,2,2] decay,
       float16[1,2,2] beta) => (float16[1,2,4] y, float16[1,2,2,2] s) {
      y, s = LinearAttention <q_num_heads = 2, kv_num_heads = 2> (q, k, v, , decay, beta)
    })");
  EXPECT_EQ(count_ops(body, "Exp"), 2) << body;
  EXPECT_EQ(count_ops(body, "MatMul"), 4) << body;
  EXPECT_NE(body.find("%s: f16[1,2,2,2] = "), std::string::npos) << body;
}

TEST(DecomposeSequenceModels, LinearAttentionRefusesAMissingDecayByName) {
  Result<Graph> g = import_text(R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float[1,2,4] q, float[1,2,4] k, float[1,2,4] v, float[1,2,2] beta)
        => (float[1,2,4] y, float[1,2,2,2] s) {
      y, s = LinearAttention <q_num_heads = 2, kv_num_heads = 2> (q, k, v, , , beta)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("(LinearAttention, opset 27): the gated update rules need "
                                      "the input 'decay'"),
            std::string::npos)
      << g.status().message();
}

TEST(DecomposeSequenceModels, LinearAttentionRefusesAnUnknownUpdateRule) {
  Result<Graph> g = import_text(R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float[1,2,4] q, float[1,2,4] k, float[1,2,4] v) => (float[1,2,4] y, float[1,2,2,2] s) {
      y, s = LinearAttention <q_num_heads = 2, kv_num_heads = 2, update_rule = "mamba"> (q, k, v)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("attribute 'update_rule' has unknown value 'mamba'"),
            std::string::npos)
      << g.status().message();
}

// The state's padding before the input, the depthwise Conv (in f32 for f16), the SiLU, and the
// present state sliced from the padded input.
TEST(DecomposeSequenceModels, CausalConvIsAPaddedDepthwiseConv) {
  std::string body = decomposed(R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float16[2,3,5] x, float16[3,1,4] w, float16[2,3,3] past)
        => (float16[2,3,5] y, float16[2,3,3] s) {
      y, s = CausalConvWithState <activation = "silu"> (x, w, , past)
    })");
  EXPECT_EQ(count_ops(body, "CausalConvWithState"), 0) << body;
  EXPECT_NE(body.find("f16[2,3,8] = Concat(%past, %x)"), std::string::npos) << body;
  EXPECT_NE(body.find("f32[2,3,5] = Conv("), std::string::npos) << body;
  EXPECT_NE(body.find("group=3"), std::string::npos) << body;
  EXPECT_EQ(count_ops(body, "Sigmoid"), 1) << body;
  EXPECT_NE(body.find("%s: f16[2,3,3] = "), std::string::npos) << body;
}

// The score modifier's nodes are rebuilt between the scores and the Softmax, reading the outer
// value it captured.
TEST(DecomposeSequenceModels, FlexAttentionInlinesItsScoreModifier) {
  std::string body = decomposed(R"(
    <ir_version: 10, opset_import: ["" : 26, "ai.onnx.preview" : 1]>
    g (float[1,2,3,4] q, float[1,1,5,4] k, float[1,1,5,4] v, float bias) => (float[1,2,3,4] y) {
      y = ai.onnx.preview.FlexAttention <score_mod = m (float[B,H,L,S] s) => (float[B,H,L,S] o) {
            o = Add(s, bias)
          }> (q, k, v)
    })");
  EXPECT_EQ(count_ops(body, "ai.onnx.preview.FlexAttention"), 0) << body;
  EXPECT_NE(body.find("f32[1,2,3,5] = Add("), std::string::npos) << body;
  EXPECT_NE(body.find(", %bias)"), std::string::npos) << body;
  EXPECT_EQ(count_ops(body, "Softmax"), 1) << body;
  EXPECT_NE(body.find("%y: f32[1,2,3,4] = "), std::string::npos) << body;
}

// Dims known only at run time: the nodes wait for specialization.
TEST(DecomposeSequenceModels, NothingToDoWithoutStaticShapes) {
  const char* model = R"(
    <ir_version: 10, opset_import: ["" : 27]>
    g (float[1,T,4] q, float[1,T,4] k, float[1,T,4] v) => (float[1,T,4] y, float[1,2,2,2] s) {
      y, s = LinearAttention <q_num_heads = 2, kv_num_heads = 2, update_rule = "linear"> (q, k, v)
    })";
  EXPECT_EQ(decomposed(model), print_body(graph_from_text(model)));
}

} // namespace
} // namespace weft
