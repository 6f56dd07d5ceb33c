// Each rewrite of fuse() on its own (rewrites.h): a graph lowered node by node, the rewrite
// run, the kernels before and after; and a case where it has nothing to do.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/driver/pipeline.h"
#include "weft/driver/stages.h"
#include "weft/fusion/rewrites.h"

namespace weft::fusion {
namespace {

// The graph after the graph passes (constants folded, attributes canonical), as lowering
// sees it.
Graph graph_from_text(const std::string& text) {
  Result<Graph> g = run_graph_pipeline(ModelSource::memory(testing::model_bytes(text)));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(g).value() : Graph();
}

// The graph's nodes lowered into steps by the compile driver's stage (no library calls).
std::vector<Step> lowered(const Graph& g) {
  Result<std::vector<Step>> steps = stages::lower_graph(g, {});
  EXPECT_TRUE(steps.ok()) << steps.status().to_string();
  return steps.ok() ? std::move(steps).value() : std::vector<Step>{};
}

// The kernels of "steps", printed, in order.
std::vector<std::string> kernels(const std::vector<Step>& steps) {
  std::vector<std::string> out;
  for (const Step& s : steps) {
    for (const FusedKernel& k : s.kernels)
      out.push_back(kernel::print_kernel(k.bound.kernel));
  }
  return out;
}

std::set<const Value*> outputs(const Graph& g) { return {g.outputs.begin(), g.outputs.end()}; }

const char* kExpThenAdd = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4, 8] x) => (float[4, 8] y) {
    one = Constant <value = float {1.0}> ()
    e = Exp(x)
    y = Add(e, one)
  })";

TEST(InlineProducers, ElementwiseProducerJoinsItsReader) {
  Graph g = graph_from_text(kExpThenAdd);
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(kernels(steps).size(), 2u);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  std::vector<std::string> after = kernels(steps);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0].find("exp("), std::string::npos) << after[0];
  ASSERT_FALSE(decisions.empty());
  EXPECT_TRUE(decisions[0].fused);
  EXPECT_EQ(decisions[0].how, "inlined");
}

TEST(InlineProducers, NothingToDoWhenTheProducerIsAnOutput) {
  Graph g = graph_from_text(kExpThenAdd);
  std::vector<Step> steps = lowered(g);
  std::vector<std::string> before = kernels(steps);
  std::set<const Value*> pinned = outputs(g);
  pinned.insert(g.find_value("e")); // as if e were a graph output too
  std::vector<Decision> decisions;
  inline_producers(steps, pinned, decisions);
  EXPECT_EQ(kernels(steps), before);
}

// A residual stream that each layer's normalization reads (GPT-2): h1 = x + a, h2 = h1 + b,
// each read by a LayerNormalization (several statements) and by the next Add.
const char* kResidualStream = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  g (float[4, 8] x, float[4, 8] a, float[4, 8] b, float[4, 8] c, float[8] s)
      => (float[4, 8] n1, float[4, 8] n2, float[4, 8] n3) {
    h1 = Add(x, a)
    n1 = LayerNormalization <axis = -1> (h1, s)
    h2 = Add(h1, b)
    n2 = LayerNormalization <axis = -1> (h2, s)
    h3 = Add(h2, c)
    n3 = LayerNormalization <axis = -1> (h3, s)
  })";

// Inlined into every reader, the stream would be recomputed from all its terms in each
// layer: the last normalization would read x, a, b and c.
TEST(InlineProducers, AStreamReadManyTimesIsComputedOnce) {
  Graph g = graph_from_text(kResidualStream);
  std::vector<Step> steps = lowered(g);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  for (const std::string& k : kernels(steps))
    EXPECT_FALSE(k.find("%x") != std::string::npos && k.find("%c") != std::string::npos) << k;
  EXPECT_TRUE(std::any_of(decisions.begin(), decisions.end(), [](const Decision& d) {
    return !d.fused && d.how.find("streams 2 inputs") != std::string::npos;
  }));
}

// h = a + b, read by two kernels: recomputed in each, it streams a and b twice (16 bytes a
// point); made once, a and b once and h three times. In f32 (12 bytes) recomputing is
// cheaper; in f16 (6 bytes: an f16 model's residual between its f32 convolutions) it is
// not.
TEST(InlineProducers, RecomputationIsWeighedInBytes) {
  for (const char* type : {"float", "float16"}) {
    Graph g = graph_from_text(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[4, 8] a, float[4, 8] b) => ({0}[4, 8] y, {0}[4, 8] z) {{
        s = Add(a, b)
        h = Cast <to = {1}> (s)
        y = Neg(h)
        z = Abs(h)
      }})",
                                          type, type == std::string("float") ? 1 : 10));
    std::vector<Step> steps = lowered(g);
    std::vector<Decision> decisions;
    inline_producers(steps, outputs(g), decisions);
    bool f16 = type != std::string("float");
    EXPECT_EQ(kernels(steps).size(), f16 ? 3u : 2u) << type;
    EXPECT_EQ(std::any_of(decisions.begin(), decisions.end(),
                          [](const Decision& d) {
                            return !d.fused && d.how.find("streams 2 inputs") != std::string::npos;
                          }),
              f16)
        << type;
  }
}

// A squeeze-and-excitation block's gate: the Sigmoid of one value per channel, read by a Mul
// over every pixel. Inlined, the Mul would compute the Sigmoid once per pixel (64x here),
// though it is a single op: a transcendental one is not cheap to recompute.
TEST(InlineProducers, ACostlyProducerIsNotRecomputedPerBroadcastElement) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 64, 32] x, float[1, 1, 32] s) => (float[1, 64, 32] y) {
      gate = Sigmoid(s)
      y = Mul(x, gate)
    })");
  std::vector<Step> steps = lowered(g);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  ASSERT_EQ(kernels(steps).size(), 2u);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_FALSE(decisions[0].fused);
  EXPECT_NE(decisions[0].how.find("recompute"), std::string::npos) << decisions[0].how;
}

// A gathered value read by a Mul over every head (an attention mask picked by GatherND, as
// SqueezeBERT's): inlined, each head would load the index and bounds-check it again at every
// point; it stays its own kernel.
TEST(InlineProducers, AnIndirectReadIsNotRecomputedPerBroadcastElement) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 32, 32] x, float[100, 32] m, int64[32] i) => (float[4, 32, 32] y) {
      picked = Gather <axis = 0> (m, i)
      y = Mul(x, picked)
    })");
  std::vector<Step> steps = lowered(g);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  ASSERT_EQ(kernels(steps).size(), 2u);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_FALSE(decisions[0].fused);
  EXPECT_NE(decisions[0].how.find("recompute"), std::string::npos) << decisions[0].how;
}

// A Transpose read by a product, whose statement reads each point of it 16 times (once per
// column of the result): inlined, each read would go strided; it stays its own kernel. Read
// by a Slice (fewer points than it makes), it is inlined: only the sliced points move.
const char* kTransposeThenProduct = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[16, 8] x, float[16, 16] w) => (float[8, 16] y, float[4, 16] z) {
    t = Transpose <perm = [1, 0]> (x)
    y = MatMul(t, w)
    u = Transpose <perm = [1, 0]> (w)
    starts = Constant <value = int64[1] {0}> ()
    ends = Constant <value = int64[1] {4}> ()
    z = Slice(u, starts, ends)
  })";

TEST(InlineProducers, APermutationIsNotInlinedWhereEachPointIsReadOften) {
  Graph g = graph_from_text(kTransposeThenProduct);
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(kernels(steps).size(), 4u);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  ASSERT_EQ(kernels(steps).size(), 3u); // the product's Transpose stays, the Slice's goes
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_FALSE(decisions[0].fused);
  EXPECT_NE(decisions[0].how.find("several times"), std::string::npos) << decisions[0].how;
  EXPECT_TRUE(decisions[1].fused);
}

const char* kExpReshapeNeg = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4, 8] x) => (float[32] y) {
    shape = Constant <value = int64[1] {32}> ()
    e = Exp(x)
    r = Reshape(e, shape)
    y = Neg(r)
  })";

TEST(InlineThroughAliases, ProducerJoinsItsReaderThroughAReshape) {
  Graph g = graph_from_text(kExpReshapeNeg);
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(kernels(steps).size(), 2u);
  std::vector<Decision> decisions;
  inline_through_aliases(steps, outputs(g), decisions);
  std::vector<std::string> after = kernels(steps);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0].find("exp("), std::string::npos) << after[0];
}

// PyTorch's head split, in small: [S, B, E] seen as [S, B * H, D] (E = H * D), moved to
// [B * H, S, D].
const char* kExpHeadsTranspose = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[6, 2, 4] x) => (float[4, 6, 2] y) {
    shape = Constant <value = int64[3] {6, 4, 2}> ()
    e = Exp(x)
    r = Reshape(e, shape)
    y = Transpose <perm = [1, 0, 2]> (r)
  })";

TEST(InlineThroughAliases, ATransposeOfAReshapeSplitsItsIteratorAndReadsTheProducer) {
  Graph g = graph_from_text(kExpHeadsTranspose);
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(kernels(steps).size(), 2u);
  std::vector<Decision> decisions;
  inline_through_aliases(steps, outputs(g), decisions);
  std::vector<std::string> after = kernels(steps);
  ASSERT_EQ(after.size(), 1u);
  // The Transpose's iterator over B * H split into B and H:
  // y[b * H + h, s, d] = exp(x[s, b, h * D + d])
  EXPECT_NE(after[0].find("[i0 < 2, i1 < 2, i2 < 6, i3 < 2]"), std::string::npos) << after[0];
  EXPECT_NE(after[0].find("[2*i0 + i1, i2, i3] = exp(b0[i2, i0, 2*i1 + i3])"), std::string::npos)
      << after[0];
}

TEST(InlineThroughAliases, NothingToDoWithoutAnAlias) {
  Graph g = graph_from_text(kExpThenAdd);
  std::vector<Step> steps = lowered(g);
  std::vector<std::string> before = kernels(steps);
  std::vector<Decision> decisions;
  inline_through_aliases(steps, outputs(g), decisions);
  EXPECT_EQ(kernels(steps), before);
}

// A channels-last GroupNorm's statistics: [N, S, G, C/G] over S and C/G, C/G = 4.
const char* kGroupMoments = R"(
  <ir_version: 8, opset_import: ["" : 18]>
  g (float[1, 256, 8, 4] x) => (float[1, 1, 8, 1] v) {
    axes = Constant <value = int64[2] {1, 3}> ()
    m = ReduceMean <keepdims = 1> (x, axes)
    d = Sub(x, m)
    sq = Mul(d, d)
    v = ReduceMean <keepdims = 1> (sq, axes)
  })";

TEST(InlineProducers, SquaredDeviationsJoinAReductionOverMergedChannels) {
  Graph g = graph_from_text(kGroupMoments);
  std::vector<Step> steps = lowered(g);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  std::vector<std::string> after = kernels(steps);
  // The variance reads x: its COLUMN step over [256, 32] subtracts the mean copied per channel.
  ASSERT_EQ(after.size(), 2u) << fmt::format("{}", fmt::join(after, "\n"));
  EXPECT_NE(after[1].find("expand[i0 < 8, i1 < 4]"), std::string::npos) << after[1];
  EXPECT_NE(after[1].find("[i0 < 256, i1 < 32]"), std::string::npos) << after[1];
  EXPECT_EQ(after[1].find("i2 < 4"), std::string::npos) << after[1];
}

TEST(MergeShortInnerDims, APerGroupOperandIsCopiedAlongTheShortDim) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64, 8, 4] x, float[8, 1] m) => (float[64, 8, 4] y) {
      y = Sub(x, m)
    })");
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(steps.size(), 1u);
  kernel::BoundKernel& k = steps[0].kernels.at(0).bound;
  merge_short_inner_dims(k);
  std::string after = kernel::print_kernel(k.kernel);
  ASSERT_EQ(k.kernel.statements.size(), 2u) << after;
  EXPECT_NE(after.find("expand[i0 < 8, i1 < 4]: expanded[4*i0 + i1] = b1[i0, 0]"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("[i0 < 64, i1 < 32]: b2_1[i0, i1] = (b0_1[i0, i1] - expanded[i1])"),
            std::string::npos)
      << after;
  EXPECT_EQ(after.find("aliased"), std::string::npos) << after; // x and y keep __restrict__
}

TEST(MergeShortInnerDims, APerGroupSubexpressionIsComputedOncePerChannel) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64, 8, 4] x, float[8, 1] v) => (float[64, 8, 4] y) {
      s = Sqrt(v)
      y = Div(x, s)
    })");
  std::vector<Step> steps = lowered(g);
  std::vector<Decision> decisions;
  inline_producers(steps, outputs(g), decisions);
  ASSERT_EQ(kernels(steps).size(), 1u);
  kernel::BoundKernel& k = steps.back().kernels.at(0).bound;
  merge_short_inner_dims(k);
  std::string after = kernel::print_kernel(k.kernel);
  EXPECT_NE(after.find("expanded[4*i0 + i1] = sqrt("), std::string::npos) << after;
  EXPECT_NE(after.find("[i0 < 64, i1 < 32]"), std::string::npos) << after;
}

TEST(MergeShortInnerDims, NothingToDoForALongInnerDim) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64, 8, 32] x, float[8, 1] m) => (float[64, 8, 32] y) {
      y = Sub(x, m)
    })");
  std::vector<Step> steps = lowered(g);
  kernel::BoundKernel& k = steps[0].kernels.at(0).bound;
  std::string before = kernel::print_kernel(k.kernel);
  merge_short_inner_dims(k);
  EXPECT_EQ(kernel::print_kernel(k.kernel), before);
}

TEST(Stitch, AReductionAndItsElementwiseReaderShareAKernel) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64, 256] x) => (float[64, 256] y) {
      s = ReduceMax <axes = [1], keepdims = 1> (x)
      y = Sub(x, s)
    })");
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(kernels(steps).size(), 2u);
  std::vector<Decision> decisions;
  stitch(steps, outputs(g), decisions);
  std::vector<std::string> after = kernels(steps);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0].find("temp"), std::string::npos) << after[0]; // s, no longer in memory
}

TEST(Stitch, NothingToDoForOneKernel) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64, 256] x) => (float[64, 1] s) {
      s = ReduceMax <axes = [1], keepdims = 1> (x)
    })");
  std::vector<Step> steps = lowered(g);
  std::vector<std::string> before = kernels(steps);
  std::vector<Decision> decisions;
  stitch(steps, outputs(g), decisions);
  EXPECT_EQ(kernels(steps), before);
}

TEST(AccumulateInOutputs, AMiddleSumAccumulatesInItsOutput) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 8, 16] x) => (float[4, 16] y) {
      axes = Constant <value = int64[1] {1}> ()
      y = ReduceSum <keepdims = 0> (x, axes)
    })");
  std::vector<Step> steps = lowered(g);
  ASSERT_EQ(steps.size(), 1u);
  kernel::BoundKernel& k = steps[0].kernels.at(0).bound;
  std::string before = kernel::print_kernel(k.kernel);
  accumulate_in_outputs(k);
  std::string after = kernel::print_kernel(k.kernel);
  EXPECT_NE(after, before);
  EXPECT_LT(k.kernel.buffers.size(), lowered(g)[0].kernels[0].bound.kernel.buffers.size())
      << before << "\n"
      << after;
}

TEST(AccumulateInOutputs, NothingToDoForAnElementwiseKernel) {
  Graph g = graph_from_text(kExpThenAdd);
  std::vector<Step> steps = lowered(g);
  kernel::BoundKernel& k = steps[0].kernels.at(0).bound;
  std::string before = kernel::print_kernel(k.kernel);
  accumulate_in_outputs(k);
  EXPECT_EQ(kernel::print_kernel(k.kernel), before);
}

} // namespace
} // namespace weft::fusion
