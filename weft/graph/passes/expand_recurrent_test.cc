#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/expand_recurrent.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;
using testing::print_body;

// The unrolling of every node (as on CUDA: the graph pass leaves f32 nodes for the device's
// choice, recurrent_forms).
std::string expand(const std::string& model) {
  Graph g = graph_from_text(model);
  Status s = unroll_recurrent(g, [](const Node&) { return false; }).status();
  EXPECT_TRUE(s.ok()) << s.to_string();
  Status v = verify_graph(g, "expand_recurrent");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

// The projection of X is one MatMul; each step is a MatMul with H, an Add and the activation; the
// steps' states are stacked into Y, and Y_h is the last one.
TEST(ExpandRecurrent, RnnUnrollsEachStep) {
  EXPECT_EQ(expand(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2,1,3] x, float[1,2,3] w, float[1,2,2] r) => (float[2,1,1,2] y, float[1,1,2] h) {
      y, h = RNN <hidden_size = 2> (x, w, r)
    })"),
            "  input %x: f32[2,1,3]\n"
            "  input %w: f32[1,2,3]\n"
            "  input %r: f32[1,2,2]\n"
            "  const %RNN_0_i0 = i64[]{0}\n"
            "  const %RNN_0_zeros = f32[4]{0, 0, 0, 0}\n"
            "  const %RNN_0_zeros_1 = f32[1,2]{0, 0}\n"
            "  const %RNN_0_i1 = i64[]{1}\n"
            "  node RNN_0_Gather: %RNN_0_Gather: f32[2,3] = Gather(%w, %RNN_0_i0) {axis=0}\n"
            "  node RNN_0_Transpose: %RNN_0_Transpose: f32[3,2] = Transpose(%RNN_0_Gather) "
            "{perm=[1, 0]}\n"
            "  node RNN_0_MatMul: %RNN_0_MatMul: f32[2,1,2] = MatMul(%x, %RNN_0_Transpose)\n"
            "  node RNN_0_Split: %RNN_0_Split: f32[2], %RNN_0_Split_1: f32[2] = "
            "Split(%RNN_0_zeros) {axis=0, split=[2, 2]}\n"
            "  node RNN_0_Gather_1: %RNN_0_Gather_1: f32[2,2] = Gather(%r, %RNN_0_i0) {axis=0}\n"
            "  node RNN_0_Transpose_1: %RNN_0_Transpose_1: f32[2,2] = Transpose(%RNN_0_Gather_1) "
            "{perm=[1, 0]}\n"
            "  node RNN_0_Add: %RNN_0_Add: f32[2] = Add(%RNN_0_Split, %RNN_0_Split_1)\n"
            "  node RNN_0_Add_1: %RNN_0_Add_1: f32[2,1,2] = Add(%RNN_0_MatMul, %RNN_0_Add)\n"
            "  node RNN_0_Gather_2: %RNN_0_Gather_2: f32[1,2] = Gather(%RNN_0_Add_1, "
            "%RNN_0_i0) {axis=0}\n"
            "  node RNN_0_MatMul_1: %RNN_0_MatMul_1: f32[1,2] = MatMul(%RNN_0_zeros_1, "
            "%RNN_0_Transpose_1)\n"
            "  node RNN_0_Add_2: %RNN_0_Add_2: f32[1,2] = Add(%RNN_0_MatMul_1, %RNN_0_Gather_2)\n"
            "  node RNN_0_Tanh: %RNN_0_Tanh: f32[1,2] = Tanh(%RNN_0_Add_2)\n"
            "  node RNN_0_Gather_3: %RNN_0_Gather_3: f32[1,2] = Gather(%RNN_0_Add_1, "
            "%RNN_0_i1) {axis=0}\n"
            "  node RNN_0_MatMul_2: %RNN_0_MatMul_2: f32[1,2] = MatMul(%RNN_0_Tanh, "
            "%RNN_0_Transpose_1)\n"
            "  node RNN_0_Add_3: %RNN_0_Add_3: f32[1,2] = Add(%RNN_0_MatMul_2, %RNN_0_Gather_3)\n"
            "  node RNN_0_Tanh_1: %RNN_0_Tanh_1: f32[1,2] = Tanh(%RNN_0_Add_3)\n"
            "  node RNN_0_Unsqueeze: %RNN_0_Unsqueeze: f32[1,1,2] = Unsqueeze(%RNN_0_Tanh) "
            "{axes=[0]}\n"
            "  node RNN_0_Unsqueeze_1: %RNN_0_Unsqueeze_1: f32[1,1,2] = Unsqueeze(%RNN_0_Tanh_1) "
            "{axes=[0]}\n"
            "  node RNN_0_Concat: %RNN_0_Concat: f32[2,1,2] = Concat(%RNN_0_Unsqueeze, "
            "%RNN_0_Unsqueeze_1) {axis=0}\n"
            "  node RNN_0_Unsqueeze_2: %y: f32[2,1,1,2] = Unsqueeze(%RNN_0_Concat) {axes=[1]}\n"
            "  node RNN_0_Unsqueeze_3: %h: f32[1,1,2] = Unsqueeze(%RNN_0_Tanh_1) {axes=[0]}\n"
            "  output %y: f32[2,1,1,2]\n"
            "  output %h: f32[1,1,2]\n");
}

// With lengths, each step's state is kept where the sequence has ended (Where on a mask
// shared by both directions), and the reverse direction runs over ReverseSequence's
// reversal of each entry's sequence.
TEST(ExpandRecurrent, LstmBidirectionalWithLengths) {
  std::string body = expand(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[3,2,4] x, float[2,12,4] w, float[2,12,3] r, int32[2] lens)
        => (float[3,2,2,3] y, float[2,2,3] h, float[2,2,3] c) {
      y, h, c = LSTM <hidden_size = 3, direction = "bidirectional"> (x, w, r, , lens)
    })");
  EXPECT_EQ(count_ops(body, "LSTM"), 0) << body;
  EXPECT_EQ(count_ops(body, "MatMul"), 2 + 3 * 2) << body; // X's projections, then per step
  EXPECT_EQ(count_ops(body, "Less"), 3) << body;
  EXPECT_EQ(count_ops(body, "ReverseSequence"), 2) << body;
  EXPECT_EQ(count_ops(body, "Where"), 3 * 3 * 2) << body; // y, h, c per step and direction
  EXPECT_NE(body.find("%y: f32[3,2,2,3] = Concat("), std::string::npos) << body;
  EXPECT_NE(body.find("%c: f32[2,2,3] = Concat("), std::string::npos) << body;
}

TEST(ExpandRecurrent, GruBatchMajorKeepsOutputNames) {
  std::string body = expand(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2,3,4] x, float[1,9,4] w, float[1,9,3] r) => (float[2,1,3] h) {
      y, h = GRU <hidden_size = 3, layout = 1, linear_before_reset = 1> (x, w, r)
    })");
  EXPECT_EQ(count_ops(body, "GRU"), 0) << body;
  EXPECT_EQ(count_ops(body, "MatMul"), 1 + 3 * 2) << body; // per step: z and r together, then h
  EXPECT_NE(body.find("%h: f32[2,1,3] = Unsqueeze("), std::string::npos) << body;
}

// The graph pass leaves f32 nodes, of any length, for the device's choice (the CPU's recurrent
// call takes them); it unrolls those of other dtypes, and refuses them past kMaxUnrolledSteps,
// as unrolling refuses f32 ones.
TEST(ExpandRecurrent, LeavesF32NodesOrRefusesOverlongSequences) {
  for (const char* steps : {"2", "2000"}) {
    Graph left = graph_from_text(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 14]>
      g (float[{},1,1] x, float[1,1,1] w, float[1,1,1] r) => (float[1,1,1] h) {{
        y, h = RNN <hidden_size = 1> (x, w, r)
      }})",
                                             steps));
    ASSERT_TRUE(expand_recurrent(left).ok());
    ASSERT_EQ(left.nodes().size(), 1u);
    EXPECT_EQ(left.nodes()[0]->op_type, Op::kRNN);
    Result<bool> unrolled = unroll_recurrent(left, [](const Node&) { return false; });
    EXPECT_EQ(unrolled.ok(), std::string(steps) == "2");
  }
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (double[2000,1,1] x, double[1,1,1] w, double[1,1,1] r) => (double[1,1,1] h) {
      y, h = RNN <hidden_size = 1> (x, w, r)
    })");
  Status s = expand_recurrent(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 'RNN_0' (RNN, opset 14)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("2000 steps"), std::string::npos) << s.message();
  Graph short_double = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (double[2,1,1] x, double[1,1,1] w, double[1,1,1] r) => (double[1,1,1] h) {
      y, h = RNN <hidden_size = 1> (x, w, r)
    })");
  ASSERT_TRUE(expand_recurrent(short_double).ok());
  EXPECT_EQ(count_ops(print_body(short_double), "RNN"), 0);
}

TEST(ExpandRecurrent, RefusesActivationsWithParameters) {
  Result<Graph> g = testing::import_text(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2,1,1] x, float[1,1,1] w, float[1,1,1] r) => (float[1,1,1] h) {
      y, h = RNN <hidden_size = 1, activations = ["LeakyRelu"]> (x, w, r)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("activation 'LeakyRelu' is not supported"), std::string::npos)
      << g.status().message();
}

// A sequence length known only at run time waits for specialization.
TEST(ExpandRecurrent, NothingToDo) {
  for (const char* model : {R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[4] x) => (float[4] y) {
      y = Tanh(x)
    })",
                            R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[S,1,1] x, float[1,1,1] w, float[1,1,1] r) => (float[1,1,1] h) {
      y, h = RNN <hidden_size = 1> (x, w, r)
    })"}) {
    EXPECT_EQ(expand(model), print_body(graph_from_text(model)));
  }
}

} // namespace
} // namespace weft
