#include <algorithm>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/channels_last.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/eliminate_identity.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;

// channels_last on "g", then its dead code removed and the graph verified: whether all that
// went well and the pass changed something. "int8_call": the QLinearConvs a library runs.
bool run_pass(Graph& g, const std::function<bool(const Node&)>& int8_call = {}) {
  Result<bool> changed = channels_last(g, int8_call);
  EXPECT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(eliminate_dead_code(g).ok());
  Status v = verify_graph(g, "channels_last");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return changed.ok() && *changed && v.ok();
}

// Two convolutions, a ReLU, a per-channel scale and a residual Add between them: all run
// channels-last; Transposes stay only where the region starts and before the pooling.
TEST(ChannelsLast, ActivationsStayChannelsLastBetweenConvolutions) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 3, 3] w1, float[4, 4, 1, 1] w2) => (float[1, 4, 1, 1] y)
      <float[4, 1, 1] s = {1.0, 2.0, 3.0, 4.0}> {
      a = Conv <pads = [1, 1, 1, 1]> (x, w1)
      r = Relu(a)
      b = Conv(r, w2)
      m = Mul(b, s)
      sum = Add(m, r)
      y = GlobalAveragePool(sum)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kConv), 0);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2);
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kRelu || n->op_type == Op::kAdd) {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,8,8,4]") << n->name;
    }
    if (n->op_type == Op::kMul) { // the scale, transposed with it
      EXPECT_EQ(shape_to_string(*n->inputs[1]->type.shape), "[1,1,1,4]");
    }
  }
  EXPECT_EQ(g.outputs[0]->name, "y");
}

// EfficientNet's SiLU and squeeze-and-excitation: the Transpose after a convolution sinks
// into both readers of its output (Sigmoid and Mul), and through the spatial mean, which
// reduces channels-last's axes 1 and 2; only the region's two ends keep a Transpose.
TEST(ChannelsLast, SinksIntoSeveralReadersAndThroughReductions) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[2, 4, 1, 1] w2, float[4, 2, 1, 1] w3)
        => (float[1, 4, 8, 8] y) {
      a = Conv(x, w1)
      s = Sigmoid(a)
      h = Mul(a, s)
      p = ReduceMean <axes = [2, 3], keepdims = 1> (h)
      q = Conv(p, w2)
      r = Relu(q)
      z = Conv(r, w3)
      gate = Sigmoid(z)
      y = Mul(h, gate)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 3);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2);
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kReduceMean) {
      EXPECT_EQ(n->attrs_as<ReduceAttrs>().axes, (Ints{1, 2}));
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,1,1,4]");
    }
  }
}

// ConvNeXt-V2's global response normalization between two convolutions: the spatial L2 norm
// per channel, then its mean over the channels, [1, 1, 1, 1], plus a scalar. That value's
// Transpose sinks through the Add like any other (it once stayed before it, and the pass sank
// it again at every step, without end). The activations stay channels-last: the Transposes
// besides the region's two ends move the per-channel norms, 4 floats.
TEST(ChannelsLast, SinksThroughAnAllOnesValue) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[4, 4, 1, 1] w2) => (float[1, 4, 8, 8] y)
      <float e = {0.000001}> {
      a = Conv(x, w1)
      n = ReduceL2 <axes = [2, 3], keepdims = 1> (a)
      m = ReduceMean <axes = [1], keepdims = 1> (n)
      me = Add(m, e)
      d = Div(n, me)
      g = Mul(a, d)
      y = Conv(g, w2)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  int large = 0;
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kTranspose && shape_num_elements(*n->outputs[0]->type.shape) > 4) ++large;
  }
  EXPECT_EQ(large, 2);
}

// Comparisons, logic and the other elementwise ops are pointwise too: Mish as canonicalize
// writes TorchScript's export of it (Exp, a ratio, Greater, Where) between two convolutions
// keeps the region whole, its bool value channels-last with the rest.
TEST(ChannelsLast, ComparisonsAndSelectsStayInTheRegion) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[4, 4, 1, 1] w2) => (float[1, 4, 8, 8] y)
      <float twenty = {20.0}, float one = {1.0}> {
      a = Conv(x, w1)
      e = Exp(a)
      l = Log(e)
      past = Greater(a, twenty)
      small = Not(past)
      t = Where(small, l, one)
      y = Conv(t, w2)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2); // x's in and y's out
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kNot) {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,8,8,4]");
    }
  }
}

// GroupNorm as PyTorch exports it (Reshape to [N, G, X], InstanceNormalization, which
// canonicalize expands, Reshape back, per-channel affine) and SiLU between two convolutions:
// channels-last the groups are [N, S, G, C/G], the statistics over axes 1 and 3, and no
// Transpose remains inside the region.
TEST(ChannelsLast, GroupNormStaysChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 8, 6, 6] x, float[8, 8, 1, 1] w1, float[8, 8, 1, 1] w2) => (float[1, 8, 6, 6] y)
      <int64[3] grouped = {0, 2, -1}, int64[4] back = {1, 8, 6, 6}, float[2] ones = {1.0, 1.0},
       float[2] zeros = {0.0, 0.0}, float[8, 1, 1] gamma = {1, 2, 3, 4, 5, 6, 7, 8},
       float[8, 1, 1] beta = {8, 7, 6, 5, 4, 3, 2, 1}> {
      a = Conv(x, w1)
      r = Reshape(a, grouped)
      n = InstanceNormalization <epsilon = 0.00001> (r, ones, zeros)
      b = Reshape(n, back)
      s = Mul(b, gamma)
      t = Add(s, beta)
      sig = Sigmoid(t)
      u = Mul(t, sig)
      y = Conv(u, w2)
    })");
  ASSERT_TRUE(canonicalize(g).ok());
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2); // x's in and y's out
  int reductions = 0;
  for (const auto& n : g.nodes()) {
    if (n->op_type != Op::kReduceMean) continue;
    ++reductions;
    EXPECT_EQ(n->attrs_as<ReduceAttrs>().axes, (Ints{1, 3}));
    EXPECT_EQ(shape_to_string(*n->inputs[0]->type.shape), "[1,36,2,4]");
    EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,1,2,1]");
  }
  EXPECT_EQ(reductions, 2);
}

// PoolFormer's block: a GroupNorm of one group whose input a residual Add also reads. The
// GroupNorm still goes channels-last, and so does the Add: no Transpose remains inside the
// region (it had stayed channels-first, a Transpose on each side of it).
TEST(ChannelsLast, GroupNormOfAValueWithOtherReaders) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 8, 6, 6] x, float[8, 8, 1, 1] w1, float[8, 8, 1, 1] w2) => (float[1, 8, 6, 6] y)
      <int64[3] grouped = {0, 1, -1}, int64[4] back = {1, 8, 6, 6}, float[1] ones = {1.0},
       float[1] zeros = {0.0}, float[8, 1, 1] gamma = {1, 2, 3, 4, 5, 6, 7, 8},
       float[8, 1, 1] beta = {8, 7, 6, 5, 4, 3, 2, 1}> {
      a = Conv(x, w1)
      r = Reshape(a, grouped)
      n = InstanceNormalization <epsilon = 0.00001> (r, ones, zeros)
      b = Reshape(n, back)
      s = Mul(b, gamma)
      t = Add(s, beta)
      sum = Add(a, t)
      y = Conv(sum, w2)
    })");
  ASSERT_TRUE(canonicalize(g).ok());
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2); // x's in and y's out
  for (const auto& n : g.nodes()) {
    if (n->op_type != Op::kReduceMean) continue;
    EXPECT_EQ(n->attrs_as<ReduceAttrs>().axes, (Ints{1, 3}));
    EXPECT_EQ(shape_to_string(*n->inputs[0]->type.shape), "[1,36,1,8]");
  }
}

// YOLO's upsampling: a nearest Resize between convolutions, into a Concat, runs channels-last
// with its scales permuted; a bilinear one before a graph output keeps its Transpose (after
// it, it would transpose 4 times the data).
TEST(ChannelsLast, SinksThroughResizesThatFeedTheRegion) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[1, 4, 16, 16] x2, float[4, 4, 1, 1] w, float[4, 8, 1, 1] w2)
        => (float[1, 4, 16, 16] y, float[1, 4, 32, 32] big)
      <float[4] up = {1.0, 1.0, 2.0, 2.0}, float[8] roi = {0, 0, 0, 0, 1, 1, 1, 1}> {
      a = Conv(x, w)
      u = Resize <mode = "nearest"> (a, roi, up)
      b = Conv(x2, w)
      c = Concat <axis = 1> (u, b)
      y = Conv(c, w2)
      big = Resize <mode = "linear"> (y, roi, up)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 3);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 3); // x's, x2's, and y's back
  for (const auto& n : g.nodes()) {
    if (n->op_type != Op::kResize) continue;
    const Tensor& scales = *n->inputs[2]->constant;
    if (n->attrs_as<ResizeAttrs>().mode == ResizeMode::kNearest) {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,16,16,4]");
      EXPECT_EQ(scales.get_double(1), 2.0);
      EXPECT_EQ(scales.get_double(3), 1.0);
    } else {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,4,32,32]");
      EXPECT_EQ(scales.get_double(1), 1.0);
    }
  }
}

// SqueezeNet's fire module before a pooling: the Concat stays channels-last (the Transpose
// after it is not hoisted over it), for pools_between_regions to run the pooling so.
TEST(ChannelsLast, KeepsAConcatBeforeAPoolingChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w, float[4, 8, 1, 1] w2) => (float[1, 4, 4, 4] y) {
      a = Conv(x, w)
      b = Conv(x, w)
      c = Concat <axis = 1> (a, b)
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (c)
      y = Conv(p, w2)
    })");
  ASSERT_TRUE(run_pass(g));
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kConcat) {
      EXPECT_EQ(n->attrs_as<AxisAttrs>().axis, 3);
    }
  }
}

// Two convolutions reading one value share its Transpose, and a spatial mean without
// keepdims ([N, C] either way) needs none after it: one Transpose is left, at the input.
TEST(ChannelsLast, SharesInputTransposesAndEndsAtAFlatMean) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[4, 4, 1, 1] w2, float[4, 4, 3, 3] w3)
        => (float[1, 4] y) {
      a = Conv(x, w1)
      r = Relu(a)
      b = Conv(r, w2)
      c = Conv <pads = [1, 1, 1, 1]> (r, w3)
      d = Add(b, c)
      y = ReduceMean <axes = [2, 3], keepdims = 0> (d)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 3);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 1);
  EXPECT_EQ(g.outputs[0]->producer->op_type, Op::kReduceMean);
  EXPECT_EQ(g.outputs[0]->producer->attrs_as<ReduceAttrs>().axes, (Ints{1, 2}));
}

// The TorchScript exporter's global pooling (GlobalAveragePool, GlobalMaxPool before a
// Flatten): a mean or max over channels-last's spatial axes, keeping them, and the Transposes
// left move only its [N, 1, 1, C] result. Read channels-first, the 7x7x2048 activations of
// ResNet-50's last convolution went through a Transpose first (0.11 ms against 0.005).
TEST(ChannelsLast, GlobalPoolingsReduceChannelsLast) {
  for (const std::string pool : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Graph g = graph_from_text(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 4, 8, 8] x, float[16, 4, 1, 1] w) => (float[1, 16] y) {
        a = Conv(x, w)
        r = Relu(a)
        p = )" + pool + R"((r)
        y = Flatten(p)
      })");
    ASSERT_TRUE(run_pass(g)) << pool;
    Op reduce = pool == "GlobalAveragePool" ? Op::kReduceMean : Op::kReduceMax;
    ASSERT_EQ(count_ops(g, reduce), 1) << pool;
    EXPECT_EQ(count_ops(g, Op::kGlobalAveragePool) + count_ops(g, Op::kGlobalMaxPool), 0);
    for (const auto& n : g.nodes()) {
      if (n->op_type == reduce) {
        EXPECT_EQ(n->inputs[0]->producer->op_type, Op::kRelu);
        EXPECT_EQ(n->attrs_as<ReduceAttrs>().axes, (Ints{1, 2}));
        EXPECT_TRUE(n->attrs_as<ReduceAttrs>().keepdims);
      }
      if (n->op_type == Op::kTranspose && n->inputs[0]->producer) { // (not the input's)
        EXPECT_EQ(n->inputs[0]->producer->op_type, reduce) << pool;
      }
    }
  }
}

// Reflection padding between convolutions (style transfer's, CycleGAN's): the Pad of the
// spatial dims runs channels-last, its widths permuted; no Transpose is left between the
// convolutions. A Pad of channels ends the region.
TEST(ChannelsLast, SpatialPadsStayChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 3, 3] w1, float[4, 4, 3, 3] w2) => (float[1, 4, 8, 6] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w1)
      r = Relu(a)
      pads = Constant <value = int64[8] {0, 0, 1, 0, 0, 0, 1, 0}> ()
      p = Pad <mode = "reflect"> (r, pads)
      y = Conv(p, w2)
    })");
  ASSERT_TRUE(fold_constants(g).ok() && infer_shapes(g).ok() && canonicalize(g).ok());
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2); // the input's and the output's
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kPad) {
      EXPECT_EQ(*n->attrs_as<PadAttrs>().pads, (Ints{0, 1, 0, 0, 0, 1, 0, 0}));
      EXPECT_EQ(n->inputs[0]->producer->op_type, Op::kRelu);
    }
  }
  Graph channels = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 3, 3] w1, float[4, 6, 3, 3] w2) => (float[1, 4, 6, 6] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w1)
      pads = Constant <value = int64[8] {0, 1, 0, 0, 0, 1, 0, 0}> ()
      p = Pad(a, pads)
      y = Conv(p, w2)
    })");
  ASSERT_TRUE(fold_constants(channels).ok() && infer_shapes(channels).ok() &&
              canonicalize(channels).ok());
  ASSERT_TRUE(run_pass(channels));
  EXPECT_EQ(count_ops(channels, Op::kTranspose), 4);
}

// A GAN's upsampling: a ConvTranspose between convolutions, then InstanceNormalization
// (which canonicalize expands after it) and ReLU. The ConvTranspose lies between two
// Transposes, which its call absorbs, and the normalization's means run over channels-last's
// spatial axes: no Transpose between the regions but that pair.
TEST(ChannelsLast, ConvTransposeFeedingANormalizationWritesChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 3, 3] w1, float[4, 4, 3, 3] wt, float[4, 4, 3, 3] w2)
        => (float[1, 4, 16, 16] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w1)
      u = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]> (a, wt)
      s = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
      b = Constant <value = float[4] {0.5, 0.5, 0.5, 0.5}> ()
      n = InstanceNormalization(u, s, b)
      r = Relu(n)
      y = Conv <pads = [1, 1, 1, 1]> (r, w2)
    })");
  ASSERT_TRUE(fold_constants(g).ok() && infer_shapes(g).ok() && canonicalize(g).ok());
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kReduceMean), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 4); // the input's, the output's, and the pair
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kReduceMean) {
      EXPECT_EQ(n->attrs_as<ReduceAttrs>().axes, (Ints{1, 2}));
    }
    if (n->op_type == Op::kConvTranspose) {
      EXPECT_EQ(n->inputs[0]->producer->op_type, Op::kTranspose);
      for (const auto& r : g.nodes()) {
        if (std::find(r->inputs.begin(), r->inputs.end(), n->outputs[0]) != r->inputs.end()) {
          EXPECT_EQ(r->op_type, Op::kTranspose);
        }
      }
    }
  }
}

// ShuffleNetV2's unit: a channel split, a convolution on one part, a Concat and a channel
// shuffle (Reshape, Transpose of the channel factors, Reshape). The Transposes sink through
// the shuffle, which permutes channels-last's last axis instead, and through the Split: only
// the input's and the output's reorders stay (the output's one per input of the last Concat,
// hoisted over it).
TEST(ChannelsLast, SinksThroughChannelShufflesAndSplits) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[2, 2, 1, 1] w2) => (float[1, 4, 8, 8] y)
      <int64[5] parts = {1, 2, 2, 8, 8}, int64[4] whole = {1, 4, 8, 8}, int64[2] halves = {2, 2}> {
      a = Conv(x, w1)
      r = Relu(a)
      v = Reshape(r, parts)
      t = Transpose <perm = [0, 2, 1, 3, 4]> (v)
      m = Reshape(t, whole)
      p0, p1 = Split <axis = 1> (m, halves)
      c = Conv(p1, w2)
      y = Concat <axis = 1> (p0, c)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  int reorders = 0;
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kTranspose) {
      const Ints& perm = *n->attrs_as<TransposeAttrs>().perm;
      if (perm.size() == 4) {
        ++reorders;
      } else {
        EXPECT_EQ(perm, (Ints{0, 1, 2, 4, 3})) << n->name; // the shuffle, channels-last
      }
    }
    if (n->op_type == Op::kSplit) {
      EXPECT_EQ(n->attrs_as<SplitAttrs>().axis, 3);
    }
    if (n->op_type == Op::kReshape && n->outputs[0]->type.shape->size() == 5) {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,8,8,2,2]");
    }
  }
  EXPECT_EQ(reorders, 3);
  EXPECT_EQ(count_ops(g, Op::kReshape), 2);
}

// A Reshape that moves elements across channels and pixels is no shuffle: the Transpose
// stays before it.
TEST(ChannelsLast, StopsAtOtherReshapes) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w) => (float[1, 8, 4, 8] y)
      <int64[4] shape = {1, 8, 4, 8}> {
      a = Conv(x, w)
      y = Reshape(a, shape)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2);
  EXPECT_EQ(g.outputs[0]->producer->inputs[0]->producer->op_type, Op::kTranspose);
}

// DenseNet: a pooling whose output a Concat and a BatchNormalization read (the features and
// the next layer's pre-activation). The pooling gets a Transpose to channels-last as its
// only reader, and the Transpose back sinks through both; BatchNormalization becomes a
// per-channel scale and shift, which sink as any scale does. Only the input's and the
// output's reorders stay.
TEST(ChannelsLast, SinksThroughPoolingsAndBatchNorms) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[4, 4, 1, 1] w2) => (float[1, 8, 4, 4] y)
      <float[4] gamma = {1.0, 2.0, 3.0, 4.0}, float[4] beta = {0.5, 0.0, -0.5, 1.0},
       float[4] mean = {0.1, 0.2, 0.3, 0.4}, float[4] var = {1.0, 0.5, 2.0, 4.0}> {
      a = Conv(x, w1)
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (a)
      n = BatchNormalization(p, gamma, beta, mean, var)
      r = Relu(n)
      b = Conv(r, w2)
      y = Concat <axis = 1> (p, b)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kBatchNormalization), 0);
  const Node* pool = g.find_value("p")->producer;
  int readers = 0;
  for (const auto& n : g.nodes()) {
    if (std::count(n->inputs.begin(), n->inputs.end(), pool->outputs[0]) == 0) continue;
    ++readers;
    EXPECT_EQ(n->op_type, Op::kTranspose);
  }
  EXPECT_EQ(readers, 1);
  EXPECT_EQ(pool->inputs[0]->producer->op_type, Op::kTranspose);
  // x's reorder, the pair around the pooling, y's reorders: one per input of its Concat, each
  // writing its part (hoisted over the Concat).
  EXPECT_EQ(count_ops(g, Op::kTranspose), 5);
  const Node* concat = g.outputs[0]->producer;
  ASSERT_EQ(concat->op_type, Op::kConcat);
  EXPECT_EQ(concat->attrs_as<AxisAttrs>().axis, 1);
  for (const Value* part : concat->inputs)
    EXPECT_EQ(part->producer->op_type, Op::kTranspose);
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kMul) { // the scale: gamma / sqrt(var + eps), channels-last
      const Tensor& scale = *n->inputs[1]->constant;
      EXPECT_EQ(scale.dims(), (std::vector<int64_t>{1, 1, 1, 4}));
      EXPECT_NEAR(scale.get_double(1), 2.0 / std::sqrt(0.5 + 1e-5), 1e-6);
    }
  }
}

// Inception: a stride-2 pooling that convolutions read, and so does a pooling branch.
// channels_last leaves the branch reading the pooling's output through a Transpose to
// channels-last and one back, which canonicalize composes away: the first pooling then has
// two readers, and neither sits between two Transposes. pools_between_regions, which runs
// after canonicalize, gives each one a Transpose on either side, then makes each its
// channels-last form in their place: no reorder is left between the convolutions.
TEST(ChannelsLast, PoolingsBetweenRegionsRunChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, float[4, 4, 1, 1] w1, float[4, 4, 1, 1] w2, float[4, 4, 1, 1] w3)
        => (float[1, 8, 4, 4] y) {
      a = Conv(x, w1)
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (a)
      b = Conv(p, w2)
      q = MaxPool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (p)
      c = Conv(q, w3)
      y = Concat <axis = 1> (b, c)
    })");
  ASSERT_TRUE(channels_last(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  ASSERT_TRUE(eliminate_identity(g).ok());
  ASSERT_TRUE(eliminate_dead_code(g).ok());
  auto between = [&](const std::string& pool) {
    const Node* n = g.find_value(pool)->producer;
    const Node* before = n->inputs[0]->producer;
    int readers = 0, after = 0;
    for (const auto& m : g.nodes()) {
      if (std::count(m->inputs.begin(), m->inputs.end(), n->outputs[0]) == 0) continue;
      ++readers;
      if (m->op_type == Op::kTranspose) ++after;
    }
    return before && before->op_type == Op::kTranspose && readers == 1 && after == 1;
  };
  EXPECT_FALSE(between("p"));
  Result<bool> changed = pools_between_regions(g);
  ASSERT_TRUE(changed.ok()) << changed.status().to_string();
  EXPECT_TRUE(*changed);
  Status v = verify_graph(g, "pools_between_regions");
  ASSERT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(g, Op::kMaxPool), 0);
  EXPECT_EQ(count_ops(g, Op::kMaxPoolChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 3); // x's, and y's over each part of its Concat
  for (const auto& n : g.nodes()) {
    if (n->op_type != Op::kMaxPoolChannelsLast) continue;
    EXPECT_EQ(*n->outputs[0]->type.shape, (Shape{1, 4, 4, 4}));
    EXPECT_NE(n->inputs[0]->producer->op_type, Op::kTranspose);
  }
  changed = pools_between_regions(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

// 3-D convolutions (video models) run channels-last too: [N, D, H, W, C] between them, with
// the activation, a residual Add and a per-channel scale.
TEST(ChannelsLast, ThreeDimensionalConvolutionsStayChannelsLast) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 3, 6, 6] x, float[4, 4, 3, 3, 3] w1, float[4, 4, 1, 1, 1] w2)
        => (float[1, 4, 3, 6, 6] y) <float[4, 1, 1, 1] s = {1.0, 2.0, 3.0, 4.0}> {
      a = Conv <pads = [1, 1, 1, 1, 1, 1]> (x, w1)
      r = Relu(a)
      b = Conv(r, w2)
      m = Mul(b, s)
      y = Add(m, r)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2); // x's and y's
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kTranspose) {
      const Ints& perm = *n->attrs_as<TransposeAttrs>().perm;
      EXPECT_TRUE(perm == (Ints{0, 2, 3, 4, 1}) || perm == (Ints{0, 4, 1, 2, 3})) << n->name;
    }
    if (n->op_type == Op::kRelu || n->op_type == Op::kAdd) {
      EXPECT_EQ(shape_to_string(*n->outputs[0]->type.shape), "[1,3,6,6,4]") << n->name;
    }
    if (n->op_type == Op::kMul) {
      EXPECT_EQ(shape_to_string(*n->inputs[1]->type.shape), "[1,1,1,1,4]");
      EXPECT_EQ(n->inputs[1]->constant->get_double(3), 4.0);
    }
  }
}

// 1-D convolutions of one group over constant weights (a sequence classifier's): the model's
// Transpose of its embeddings cancels with the first one's, a residual that is a graph input
// takes a Transpose of its own (which stays: in 1-D it reads as to channels-first too, and
// sinking it looped), and the max over time after ends the region without one.
TEST(ChannelsLast, OneDimensionalConvolutionsStayChannelsLast) {
  std::string ones;
  for (int i = 0; i < 48; ++i)
    ones += i ? ", 1.0" : "1.0";
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 10, 4] e, float[1, 4, 10] r) => (float[1, 4] y)
        <float[4, 4, 3] w1 = {)" +
                            ones + R"(}, float[4, 4, 3] w2 = {)" + ones + R"(}> {
      x = Transpose <perm = [0, 2, 1]> (e)
      a = Conv <pads = [1, 1]> (x, w1)
      h = Relu(a)
      s = Add(h, r)
      b = Conv <pads = [1, 1]> (s, w2)
      c = Add(b, s)
      y = ReduceMax <axes = [2], keepdims = 0> (c)
    })");
  ASSERT_TRUE(run_pass(g));
  EXPECT_EQ(count_ops(g, Op::kConvChannelsLast), 2);
  ASSERT_EQ(count_ops(g, Op::kTranspose), 1);
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kTranspose) {
      EXPECT_EQ(n->inputs[0]->name, "r");
    }
    if (n->op_type == Op::kConvChannelsLast) {
      EXPECT_EQ(n->inputs[0]->type.shape->size(), 3u);
    }
    if (n->op_type == Op::kReduceMax) {
      EXPECT_EQ(*n->attrs_as<ReduceAttrs>().axes, Ints{1});
      EXPECT_EQ(n->outputs[0]->name, "y");
    }
  }
}

// Nothing to do without a 2-D or 3-D f32 convolution, or a 1-D one over constant weights.
TEST(ChannelsLast, LeavesOtherGraphsAlone) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8] x, float[4, 4, 3] w) => (float[1, 4, 6] y) {
      y = Conv(x, w)
    })");
  Result<bool> changed = channels_last(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

// A QDQ model's int8 convolutions (QLinearConv, where the library runs them): the 8-bit
// activations stay channels-last between them, through the per-tensor QuantizeLinear and
// DequantizeLinear and the residual Add; Transposes only at the region's two ends. Where
// the library does not run them, the QLinearConvs stay.
TEST(ChannelsLast, Int8ConvolutionsKeepTheirActivationsChannelsLast) {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 4, 8, 8] x, int8[4, 4, 3, 3] w) => (float[1, 4, 8, 8] y)
      <float s = {0.1}, uint8 z = {128}, float ws = {0.01}, int8 wz = {0}> {
      xq = QuantizeLinear(x, s, z)
      a = QLinearConv <pads = [1, 1, 1, 1]> (xq, s, z, w, ws, wz, s, z)
      b = QLinearConv <pads = [1, 1, 1, 1]> (a, s, z, w, ws, wz, s, z)
      ad = DequantizeLinear(a, s, z)
      bd = DequantizeLinear(b, s, z)
      y = Add(ad, bd)
    })";
  Graph g = graph_from_text(text);
  ASSERT_TRUE(run_pass(g, [](const Node&) { return true; }));
  EXPECT_EQ(count_ops(g, Op::kQLinearConvChannelsLast), 2);
  EXPECT_EQ(count_ops(g, Op::kQLinearConv), 0);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2);
  for (const auto& n : g.nodes()) {
    if (n->op_type == Op::kQLinearConvChannelsLast) {
      EXPECT_EQ(n->outputs[0]->type.to_string(), "u8[1,8,8,4]") << n->name;
    }
  }
  Graph plain = graph_from_text(text);
  Result<bool> changed = channels_last(plain, [](const Node&) { return false; });
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(count_ops(plain, Op::kQLinearConv), 2);
}

} // namespace
} // namespace weft
