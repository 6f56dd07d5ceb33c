#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

// canonicalize runs after fold_constants and infer_shapes in the pipeline; dead constants go
// afterwards.
std::string canonical(const std::string& model) {
  Graph g = graph_from_text(model);
  EXPECT_TRUE(fold_constants(g).ok());
  EXPECT_TRUE(infer_shapes(g).ok());
  Status s = canonicalize(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(eliminate_dead_code(g).ok());
  Status v = verify_graph(g, "canonicalize");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

TEST(Canonicalize, ReduceAxesInputBecomesSortedNonNegativeAttribute) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x) => (float[3] y) {
      axes = Constant <value = int64[2] {-1, 0}> ()
      y = ReduceSum <keepdims = 0> (x, axes)
    })"),
            "  input %x: f32[2,3,4]\n"
            "  node ReduceSum_1: %y: f32[3] = ReduceSum(%x) {axes=[0, 2], keepdims=0, "
            "noop_with_empty_axes=0}\n"
            "  output %y: f32[3]\n");
}

// Scalar scales of a MatMul's operands (scaled_dot_product_attention's q and k, each by the
// square root of the scale) multiply its result instead, once; a Mul with another reader, or
// of a tensor that is not one element, stays.
TEST(Canonicalize, ScalarScalesOfMatMulOperandsMoveAfterIt) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 8, 4] q, float[2, 4, 8] k, float[8, 4] v) => (float[2, 8, 8] s, float[2, 8, 4] t,
                                                           float[8, 4] v2) {
      half = Constant <value = float[1] {0.5}> ()
      quarter = Constant <value = float {0.25}> ()
      row = Constant <value = float[4] {1, 2, 3, 4}> ()
      qs = Mul(q, half)
      ks = Mul(quarter, k)
      s = MatMul(qs, ks)
      vs = Mul(v, half)
      t = MatMul(s, vs)
      v2 = Mul(vs, row)
    })");
  EXPECT_NE(body.find("node MatMul_5: %s_unscaled: f32[2,8,8] = MatMul(%q, %k)"), std::string::npos)
      << body;
  EXPECT_NE(body.find("%s: f32[2,8,8] = Mul(%s_unscaled, %MatMul_5_scale)"), std::string::npos)
      << body;
  EXPECT_NE(body.find("const %MatMul_5_scale = f32[]{0.125}"), std::string::npos) << body;
  // vs has a second reader: the product reads it as it is.
  EXPECT_NE(body.find("= MatMul(%s, %vs)"), std::string::npos) << body;
}

// Tanh(Softplus(x)), Mish as the TorchScript exporter writes it, becomes the exp and the
// ratio that Mish's lowering computes, 1 past 20; a Softplus that is also an output stays.
TEST(Canonicalize, TanhOfSoftplusIsARatioOfExponentials) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[8] x, float[8] z) => (float[8] y, float[8] w, float[8] s2) {
      s = Softplus(x)
      t = Tanh(s)
      y = Mul(x, t)
      s2 = Softplus(z)
      w = Tanh(s2)
    })");
  EXPECT_NE(body.find("= Exp(%x)"), std::string::npos) << body;
  EXPECT_NE(body.find("= Greater(%x, %"), std::string::npos) << body;
  EXPECT_NE(body.find("%t: f32[8] = Where("), std::string::npos) << body;
  EXPECT_NE(body.find("%w: f32[8] = Tanh(%s2)"), std::string::npos) << body;
  EXPECT_EQ(body.find("Tanh(%s)"), std::string::npos) << body;
}

// 1 + Tanh(u), as GPT-2's tanh GELU spells it, is 2 Sigmoid(2 u) (the 1 on either side, of
// any rank up to the Tanh's); not where the Tanh has another reader or the constant is not 1.
TEST(Canonicalize, OnePlusTanhIsTwiceASigmoid) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 8] x, float[8] z, float[8] v, float16[4] h) => (float[2, 8] y, float[8] w, float[8] q,
                                                                float[8] r, float16[4] hy) {
      one = Constant <value = float[1, 1] {1.0}> ()
      one1 = Constant <value = float {1.0}> ()
      two = Constant <value = float {2.0}> ()
      t = Tanh(x)
      y = Add(one, t)
      s = Tanh(z)
      w = Add(s, one1)
      q = Mul(s, z)
      k = Tanh(v)
      r = Add(k, two)
      one16 = Cast <to = 10> (one1)
      ht = Tanh(h)
      hy = Add(ht, one16)
    })");
  EXPECT_NE(body.find("%hy: f16[4] = Mul(%"), std::string::npos) << body;
  EXPECT_NE(body.find("= Sigmoid(%"), std::string::npos) << body;
  EXPECT_NE(body.find("%y: f32[2,8] = Mul(%"), std::string::npos) << body;
  EXPECT_EQ(body.find("Tanh(%x)"), std::string::npos) << body;
  EXPECT_NE(body.find("%w: f32[8] = Add(%s, "), std::string::npos) << body;
  EXPECT_NE(body.find("%r: f32[8] = Add(%k, "), std::string::npos) << body;
}

// An Add of one value per output channel after a Conv read by it alone is the Conv's bias:
// computed at run time (a time embedding, any batch), folded where both are constants; not
// where the Conv has other readers or the operand varies along more than the channels.
TEST(Canonicalize, PerChannelAddAfterConvIsItsBias) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 4, 6, 6] x, float[1, 4, 1, 1] t, float[1, 4, 6, 1] u)
        => (float[2, 4, 6, 6] y, float[2, 4, 6, 6] z, float[2, 4, 6, 6] p, float[2, 4, 6, 6] q,
            float[2, 4, 6, 6] c2) {
      w = Constant <value = float[4, 4, 1, 1] {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}> ()
      b = Constant <value = float[4] {1, 2, 3, 4}> ()
      c = Conv (x, w, b)
      y = Add (c, t)
      k = Constant <value = float[4, 1, 1] {10, 20, 30, 40}> ()
      c1 = Conv (x, w, b)
      z = Add (k, c1)
      c2 = Conv (x, w)
      p = Add (c2, t)
      c3 = Conv (x, w, b)
      q = Add (c3, u)
    })");
  EXPECT_NE(body.find("%y: f32[2,4,6,6] = Conv(%x, %w, %"), std::string::npos) << body;
  EXPECT_NE(body.find("= Reshape(%t) {allowzero=0, shape=[4]"), std::string::npos) << body;
  EXPECT_NE(body.find("%z: f32[2,4,6,6] = Conv(%x, %w, %"), std::string::npos) << body;
  EXPECT_NE(body.find("= f32[4]{11, 22, 33, 44}"), std::string::npos) << body;
  EXPECT_NE(body.find("%p: f32[2,4,6,6] = Add(%c2, %t)"), std::string::npos) << body;
  EXPECT_NE(body.find("%q: f32[2,4,6,6] = Add(%c3, %u)"), std::string::npos) << body;
}

// Two convolutions of one input summed are one, the 1x1 kernel added at the 1x3's centre (its
// pads 0 against 1: the same output points): weights {1, 1, 1} + 2 at the centre, biases
// summed. Not where the output points differ (a 3x3 unpadded beside a 1x1), the strides
// differ or a branch is read elsewhere too.
TEST(Canonicalize, ParallelConvolutionsSumIntoOne) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 1, 5, 5] x) => (float[1, 1, 5, 5] y, float[1, 1, 3, 3] z, float[1, 1, 3, 3] s,
                                float[1, 1, 5, 5] r, float[1, 1, 5, 5] e) {
      w13 = Constant <value = float[1, 1, 1, 3] {1, 1, 1}> ()
      w3 = Constant <value = float[1, 1, 3, 3] {1, 1, 1, 1, 1, 1, 1, 1, 1}> ()
      w1 = Constant <value = float[1, 1, 1, 1] {2}> ()
      b3 = Constant <value = float[1] {0.5}> ()
      b1 = Constant <value = float[1] {0.25}> ()
      a = Conv <pads = [0, 1, 0, 1]> (x, w13, b3)
      c = Conv (x, w1, b1)
      y = Add (a, c)
      a2 = Conv (x, w3)
      c2 = Conv <strides = [2, 2]> (x, w1)
      z = Add (a2, c2)
      a3 = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w3)
      c3 = Conv (x, w1)
      s = Add (a3, a3)
      a4 = Conv <pads = [1, 1, 1, 1]> (x, w3)
      c4 = Conv (x, w1)
      r = Add (c4, a4)
      e = Relu (c4)
    })");
  EXPECT_NE(body.find("%y: f32[1,1,5,5] = Conv(%x, %"), std::string::npos) << body;
  EXPECT_NE(body.find("= f32[1,1,1,3]{1, 3, 1}"), std::string::npos) << body;
  EXPECT_NE(body.find("= f32[1]{0.75}"), std::string::npos) << body;
  EXPECT_NE(body.find("%z: f32[1,1,3,3] = Add("), std::string::npos) << body;
  EXPECT_NE(body.find("%r: f32[1,1,5,5] = Add("), std::string::npos) << body;
}

// The key's transpose as scaled_dot_product_attention exports it (heads merged, transposed,
// split again) is one Transpose of the heads' [B, H, S, D], composed with the Transpose that
// made them; a Reshape that splits a dim the Transpose then moves apart stays.
TEST(Canonicalize, ReshapeTransposeReshapeOfWholeDimsIsATranspose) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 128, 4, 64] k, float[6, 8] y) => (float[1, 4, 64, 128] kt, float[2, 8, 3] z) {
      heads = Transpose <perm = [0, 2, 1, 3]> (k)
      shape1 = Constant <value = int64[3] {4, 128, 64}> ()
      merged = Reshape <allowzero = 0> (heads, shape1)
      swapped = Transpose <perm = [0, 2, 1]> (merged)
      shape2 = Constant <value = int64[4] {1, 4, 64, 128}> ()
      kt = Reshape <allowzero = 0> (swapped, shape2)
      shape3 = Constant <value = int64[3] {2, 3, 8}> ()
      y3 = Reshape (y, shape3)
      yt = Transpose <perm = [0, 2, 1]> (y3)
      shape4 = Constant <value = int64[3] {2, 8, 3}> ()
      z = Reshape (yt, shape4)
    })");
  EXPECT_NE(body.find("%kt: f32[1,4,64,128] = Transpose(%k) {perm=[0, 2, 3, 1]}"),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("%merged"), std::string::npos) << body;
  EXPECT_NE(body.find("%z: f32[2,8,3] = Reshape(%yt)"), std::string::npos) << body;
}

TEST(Canonicalize, ReduceWithoutAxesListsAllAxes) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 11]>
    g (float[2, 3] x) => (float[1, 1] y) {
      y = ReduceMax(x)
    })"),
            "  input %x: f32[2,3]\n"
            "  node ReduceMax_0: %y: f32[1,1] = ReduceMax(%x) {axes=[0, 1], keepdims=1, "
            "noop_with_empty_axes=0}\n"
            "  output %y: f32[1,1]\n");
}

TEST(Canonicalize, NoopWithEmptyAxesBecomesIdentity) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[2, 3] y) {
      y = ReduceSum <noop_with_empty_axes = 1> (x)
    })");
  EXPECT_NE(body.find("= Identity(%x)"), std::string::npos) << body;
}

TEST(Canonicalize, LegacyBroadcastAlignsAtAxis) {
  // Opset 6: B of shape [3] broadcasts onto A [2,3,4] at axis 1, i.e. as [3,1].
  EXPECT_EQ(canonical(R"(
    <ir_version: 3, opset_import: ["" : 6]>
    g (float[2, 3, 4] a, float[3] b) => (float[2, 3, 4] y) {
      y = Add <broadcast = 1, axis = 1> (a, b)
    })"),
            "  input %a: f32[2,3,4]\n"
            "  input %b: f32[3]\n"
            "  node Add_0_align: %b_aligned: f32[3,1] = Unsqueeze(%b) {axes=[1]}\n"
            "  node Add_0: %y: f32[2,3,4] = Add(%a, %b_aligned)\n"
            "  output %y: f32[2,3,4]\n");
}

TEST(Canonicalize, ClipSliceAndSqueezeInputsBecomeAttributes) {
  EXPECT_EQ(
      canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 1, 6] x) => (float[4, 3] y) {
      lo = Constant <value = float {0}> ()
      hi = Constant <value = float {6}> ()
      c = Clip(x, lo, hi)
      axes = Constant <value = int64[1] {-2}> ()
      s = Squeeze(c, axes)
      starts = Constant <value = int64[1] {1}> ()
      ends = Constant <value = int64[1] {100}> ()
      sl_axes = Constant <value = int64[1] {-1}> ()
      steps = Constant <value = int64[1] {2}> ()
      y = Slice(s, starts, ends, sl_axes, steps)
    })"),
      "  input %x: f32[4,1,6]\n"
      "  node Clip_2: %c: f32[4,1,6] = Clip(%x) {min=0, max=6}\n"
      "  node Squeeze_4: %s: f32[4,6] = Squeeze(%c) {axes=[1]}\n"
      "  node Slice_9: %y: f32[4,3] = Slice(%s) {starts=[1], ends=[100], axes=[1], steps=[2]}\n"
      "  output %y: f32[4,3]\n");
}

TEST(Canonicalize, ReshapeTargetIsSpelledOut) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x) => (float[2, 12] y) {
      t = Constant <value = int64[2] {0, -1}> ()
      y = Reshape(x, t)
    })"),
            "  input %x: f32[2,3,4]\n"
            "  node Reshape_1: %y: f32[2,12] = Reshape(%x) {allowzero=0, shape=[2, 12]}\n"
            "  output %y: f32[2,12]\n");
}

// A division by a float constant is a multiplication by its reciprocal, unless that is not
// a normal number; integer division, and division by a computed value, stay.
TEST(Canonicalize, DivisionByAFloatConstantMultipliesByItsReciprocal) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, int64[4] i, float[4] z) => (float[2, 4] y, float[4] d, int64[4] j, float[4] w) {
      c = Constant <value = float[2, 1] {1.41421356, 4.0}> ()
      y = Div(x, c)
      huge = Constant <value = float {1e38}> ()
      d = Div(x, huge)
      three = Constant <value = int64 {3}> ()
      j = Div(i, three)
      w = Div(x, z)
    })");
  EXPECT_NE(body.find("%y: f32[2,4] = Mul(%x, %c_reciprocal)"), std::string::npos) << body;
  EXPECT_NE(body.find("= Div(%x, %huge)"), std::string::npos) << body; // 1e-38 is denormal
  EXPECT_NE(body.find("= Div(%i, %three)"), std::string::npos) << body;
  EXPECT_NE(body.find("= Div(%x, %z)"), std::string::npos) << body;
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[2, 4] y) {
      c = Constant <value = float[2, 1] {1.41421356, 4.0}> ()
      y = Div(x, c)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  const Node& div = *g.nodes().back();
  ASSERT_EQ(div.op_type, Op::kMul);
  const Tensor& r = *div.inputs[1]->constant;
  EXPECT_EQ(r.get_double(0), static_cast<double>(1.0f / 1.41421356f));
  EXPECT_EQ(r.get_double(1), 0.25);
}

TEST(Canonicalize, SmallIntegerPowersAreProducts) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 15]>
    g (float[4] x, int32[4] i) => (float[4] a, float[4] b, float[4] c, float[4] d, int32[4] e,
                                   float[1, 4] f) {
      two = Constant <value = float {2.0}> ()
      three = Constant <value = int64 {3}> ()
      four = Constant <value = float[1] {4.0}> ()
      half = Constant <value = float {0.5}> ()
      wide = Constant <value = float[1, 1] {3.0}> ()
      a = Pow(x, two)
      b = Pow(x, three)
      c = Pow(x, four)
      d = Pow(x, half)
      e = Pow(i, three)
      f = Pow(x, wide)
    })");
  EXPECT_NE(body.find("%a: f32[4] = Mul(%x, %x)"), std::string::npos) << body;
  EXPECT_NE(body.find("%Pow_6_Mul: f32[4] = Mul(%x, %x)"), std::string::npos) << body;
  EXPECT_NE(body.find("%b: f32[4] = Mul(%Pow_6_Mul, %x)"), std::string::npos) << body;
  EXPECT_NE(body.find("%c: f32[4] = Mul(%Pow_7_Mul, %Pow_7_Mul)"), std::string::npos) << body;
  EXPECT_NE(body.find("%d: f32[4] = Pow(%x, %half)"), std::string::npos) << body;
  EXPECT_NE(body.find("%e: i32[4] = Pow(%i, %three)"), std::string::npos) << body;
  EXPECT_NE(body.find("%f: f32[1,4] = Pow(%x, %wide)"), std::string::npos) << body;
}

// Tokens to an image and back around a channels-last convolution (SegFormer's Mix-FFN): each
// round trip is the same bytes, a Reshape. A pair that really moves elements stays.
TEST(Canonicalize, TransposesAroundAReshapeThatKeepTheOrderAreAReshape) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 12, 8] x, float[1, 3, 4, 8] c, float[1, 12, 8] z) => (float[1, 3, 4, 8] y,
                                                                      float[1, 12, 8] t,
                                                                      float[1, 4, 3, 8] w) {
      image = Constant <value = int64[4] {1, 8, 3, 4}> ()
      a = Transpose <perm = [0, 2, 1]> (x)
      b = Reshape(a, image)
      y = Transpose <perm = [0, 2, 3, 1]> (b)
      flat = Constant <value = int64[3] {1, 8, 12}> ()
      d = Transpose <perm = [0, 3, 1, 2]> (c)
      e = Reshape(d, flat)
      t = Transpose <perm = [0, 2, 1]> (e)
      f = Transpose <perm = [0, 2, 1]> (z)
      g = Reshape(f, image)
      w = Transpose <perm = [0, 3, 2, 1]> (g)
    })");
  EXPECT_NE(body.find("%y: f32[1,3,4,8] = Reshape(%x) {allowzero=0, shape=[1, 3, 4, 8]"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("%t: f32[1,12,8] = Reshape(%c) {allowzero=0, shape=[1, 12, 8]"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("%w: f32[1,4,3,8] = Transpose(%g)"), std::string::npos) << body;
}

TEST(Canonicalize, NothingToDo) {
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 4] x) => (float[N, 4] y) {
      y = Softmax <axis = 1> (x)
    })";
  EXPECT_EQ(canonical(model), print_body(graph_from_text(model)));
}

// Dilated by 3 over 2 rows, the first and last rows of taps read only padding: the weights
// keep the middle row, the rows' pads go; the columns' taps all read inside and stay.
TEST(Canonicalize, ConvTapsReadingOnlyPaddingAreDropped) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 1, 2, 4] x) => (float[1, 1, 2, 4] y) {
      w = Constant <value = float[1, 1, 3, 3] {1, 2, 3, 4, 5, 6, 7, 8, 9}> ()
      y = Conv <dilations = [3, 1], pads = [3, 1, 3, 1]> (x, w)
    })"),
            "  input %x: f32[1,1,2,4]\n"
            "  const %w_taps = f32[1,1,1,3]{4, 5, 6}\n"
            "  node Conv_1: %y: f32[1,1,2,4] = Conv(%x, %w_taps) {auto_pad=NOTSET, "
            "dilations=[1, 1], group=1, kernel_shape=[1, 3], pads=[0, 1, 0, 1], strides=[]}\n"
            "  output %y: f32[1,1,2,4]\n");
}

// A Pad of zeros on the spatial dims before a Conv is the Conv's padding, added to its own;
// a Pad of channels, of another value, or one the Conv reads with auto_pad stays.
TEST(Canonicalize, ConvTakesAZeroPadOfItsInputAsPadding) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 2, 4, 4] x, float[3, 2, 3, 3] w) => (float[1, 3, 4, 3] y) {
      pads = Constant <value = int64[8] {0, 0, 1, 0, 0, 0, 0, 1}> ()
      p = Pad(x, pads)
      y = Conv <pads = [1, 0, 0, 0]> (p, w)
    })"),
            "  input %x: f32[1,2,4,4]\n"
            "  input %w: f32[3,2,3,3]\n"
            "  node Conv_2: %y: f32[1,3,4,3] = Conv(%x, %w) {auto_pad=NOTSET, dilations=[], "
            "group=1, kernel_shape=[], pads=[2, 0, 0, 1], strides=[]}\n"
            "  output %y: f32[1,3,4,3]\n");
  const std::string zeros = "pads = Constant <value = int64[8] {0, 0, 1, 0, 0, 0, 0, 1}> ()\n";
  for (const auto& [kept, channels] : std::vector<std::pair<std::string, int>>{
           {"pads = Constant <value = int64[8] {0, 1, 1, 0, 0, 0, 0, 1}> ()\n p = Pad(x, pads)", 3},
           {zeros + " one = Constant <value = float {1.0}> ()\n p = Pad(x, pads, one)", 2},
           {zeros + " p = Pad <mode = \"reflect\"> (x, pads)", 2}}) {
    std::string body = canonical(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 2, 4, 4] x, float[3, )" +
                                 std::to_string(channels) + R"(, 3, 3] w) => (float[1, 3, 3, 3] y) {
        )" + kept + R"(
        y = Conv(p, w)
      })");
    EXPECT_NE(body.find("= Pad("), std::string::npos) << body;
    EXPECT_NE(body.find("Conv(%p, %w)"), std::string::npos) << body;
  }
}

// Dilated by 12 over 16x16, as DeepLabV3's ASPP: a quarter of the taps read inside. Along
// each side outputs 0-3 read taps 1-2 (rows 0-15 of x), 4-11 tap 1 (rows 4-11), 12-15 taps
// 0-1 (rows 0-15): nine Convs of those taps over what they read (a Slice of x, but for the
// four corners, which read all of it), joined by Concats.
TEST(Canonicalize, ConvMostlyReadingPaddingSplitsIntoPieces) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 128, 16, 16] x, float[128, 128, 3, 3] w) => (float[1, 128, 16, 16] y) {
      y = Conv <dilations = [12, 12], pads = [12, 12, 12, 12]> (x, w)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  Node& conv = *g.nodes().back(); // constant weights, too many to spell out above
  conv.inputs[1] = g.add_constant("w_constant", Tensor(DType::kF32, {128, 128, 3, 3}));
  ASSERT_TRUE(canonicalize(g).ok());
  Status v = verify_graph(g, "canonicalize");
  ASSERT_TRUE(v.ok()) << v.to_string();
  std::map<std::string, int> ops;
  std::vector<std::string> kernels;
  for (const auto& n : g.nodes()) {
    ops[fmt::format("{}", n->op_type)]++;
    if (n->op_type == Op::kConv)
      kernels.push_back(fmt::format("{}", fmt::join(n->attrs_as<ConvAttrs>().kernel_shape, "x")));
  }
  EXPECT_EQ(ops["Conv"], 9);
  EXPECT_EQ(ops["Slice"], 5);
  EXPECT_EQ(ops["Concat"], 4); // three rows of three, then the rows
  EXPECT_EQ(fmt::format("{}", fmt::join(kernels, " ")), "2x2 2x1 2x2 1x2 1x1 1x2 2x2 2x1 2x2");
}

// Without an axis, the input is flattened; the kept positions become a constant.
TEST(Canonicalize, CompressWithConstantConditionIsAGather) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[2] y) {
      c = Constant <value = bool[4] {0, 1, 0, 1}> ()
      y = Compress (x, c)
    })"),
            "  input %x: f32[2,3]\n"
            "  const %Compress_1_kept = i64[2]{1, 3}\n"
            "  node Compress_1_flatten: %x_flat: f32[6] = Reshape(%x) {allowzero=0, shape=[6]}\n"
            "  node Compress_1: %y: f32[2] = Gather(%x_flat, %Compress_1_kept) {axis=0}\n"
            "  output %y: f32[2]\n");
}

// A Gather with one index from an axis of extent 1 is a Reshape (torch's unfold over a [k, 1]
// window); with more indices, or from a longer axis, it stays a Gather.
TEST(Canonicalize, GatherOfOneIndexFromAUnitAxisIsAReshape) {
  EXPECT_EQ(canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 1] x, int64[1, 1] i, int64[2] j, float[2, 3] z) => (float[2, 3, 1, 1] y,
                                                             float[2, 2] u) {
      y = Gather <axis = -1> (x, i)
      u = Gather <axis = 1> (z, j)
    })"),
            "  input %x: f32[2,3,1]\n"
            "  input %i: i64[1,1]\n"
            "  input %j: i64[2]\n"
            "  input %z: f32[2,3]\n"
            "  node Gather_0: %y: f32[2,3,1,1] = Reshape(%x) {allowzero=0, shape=[2, 3, 1, 1]}\n"
            "  node Gather_1: %u: f32[2,2] = Gather(%z, %j) {axis=1}\n"
            "  output %y: f32[2,3,1,1]\n"
            "  output %u: f32[2,2]\n");
}

// x[1:3] = u, as torch.onnx's dynamo exporter writes it for the first axis.
TEST(Canonicalize, SliceAssignmentScatterIsAConcat) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[5, 3] x, float[2, 3] u) => (float[5, 3] y, float[5, 3] z) {
      i = Constant <value = int64[2, 1] {1, 2}> ()
      y = ScatterND(x, i, u)
      gaps = Constant <value = int64[2, 1] {1, 3}> ()
      z = ScatterND(x, gaps, u)
    })");
  EXPECT_NE(body.find("= Slice(%x) {starts=[0], ends=[1], axes=[0], steps=[1]}"), std::string::npos)
      << body;
  EXPECT_NE(body.find("= Slice(%x) {starts=[3], ends=[5], axes=[0], steps=[1]}"), std::string::npos)
      << body;
  EXPECT_NE(body.find("%y: f32[5,3] = Concat("), std::string::npos) << body;
  // Indices that are not a run of consecutive rows stay a scatter.
  EXPECT_NE(body.find("%z: f32[5,3] = ScatterND(%x, %gaps, %u)"), std::string::npos) << body;
}

// x[:, 1:3] = u as the exporter writes it: the sliced axis moved first and back by
// Transposes. The Concat runs along that axis of x itself, and the Transposes compose away.
TEST(Canonicalize, TransposedSliceAssignmentConcatsAlongTheAxis) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[3, 5] x, float[3, 2] u) => (float[3, 5] y) {
      d = Transpose <perm = [1, 0]> (x)
      v = Transpose <perm = [1, 0]> (u)
      i = Constant <value = int64[2, 1] {1, 2}> ()
      s = ScatterND(d, i, v)
      y = Transpose <perm = [1, 0]> (s)
    })");
  EXPECT_NE(body.find("= Slice(%x) {starts=[0], ends=[1], axes=[1], steps=[1]}"), std::string::npos)
      << body;
  EXPECT_NE(body.find("f32[3,5] = Concat(%"), std::string::npos) << body;
  EXPECT_NE(body.find(", %u, "), std::string::npos) << body; // the updates untransposed
  EXPECT_NE(body.find("%y: f32[3,5] = Identity("), std::string::npos) << body;
  EXPECT_EQ(body.find("= ScatterND("), std::string::npos) << body;
  EXPECT_EQ(body.find("= Transpose("), std::string::npos) << body;
}

TEST(Canonicalize, TransposesCompose) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x) => (float[4, 2, 3] y) {
      t = Transpose <perm = [1, 2, 0]> (x)
      y = Transpose <perm = [1, 2, 0]> (t)
    })");
  EXPECT_NE(body.find("%y: f32[4,2,3] = Transpose(%x) {perm=[2, 0, 1]}"), std::string::npos)
      << body;
}

// torch.onnx's LSTM exports transpose Y's [steps, 1, batch, H] to [steps, batch, 1, H]: the
// elements stay in place, a Reshape (over symbols too); a Transpose that swaps two dims of
// more than one element stays.
TEST(Canonicalize, TransposeMovingOnlyUnitDimsIsAReshape) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 1, 3, 4] x, float[T, 1, B, 4] w, float[2, 1, 3] z) =>
        (float[5, 3, 1, 4] y, float[T, B, 1, 4] s, float[3, 1, 2] u) {
      y = Transpose <perm = [0, 2, 1, 3]> (x)
      s = Transpose <perm = [0, 2, 1, 3]> (w)
      u = Transpose <perm = [2, 1, 0]> (z)
    })");
  EXPECT_NE(body.find("%y: f32[5,3,1,4] = Reshape(%x) {allowzero=0, shape=[5, 3, 1, 4]}"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("%s: f32[T,B,1,4] = Reshape(%w)"), std::string::npos) << body;
  EXPECT_NE(body.find("%u: f32[3,1,2] = Transpose(%z) {perm=[2, 1, 0]}"), std::string::npos)
      << body;
}

// A batched matrix product written as Einsum becomes a MatMul, the operand whose last two
// labels are swapped read through a Transpose; other Einsums stay.
TEST(Canonicalize, BatchedProductEinsumIsAMatMul) {
  std::string body = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 5, 4] q, float[2, 3, 6, 4] k) => (float[2, 3, 5, 6] y) {
      y = Einsum <equation = "b h i d, b h j d -> b h i j"> (q, k)
    })");
  EXPECT_NE(body.find("Transpose(%k) {perm=[0, 1, 3, 2]}"), std::string::npos) << body;
  EXPECT_NE(body.find("%y: f32[2,3,5,6] = MatMul(%q, "), std::string::npos) << body;
  std::string plain = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 5, 4] a, float[2, 4, 6] b) => (float[2, 5, 6] y) {
      y = Einsum <equation = "bik,bkj->bij"> (a, b)
    })");
  EXPECT_NE(plain.find("%y: f32[2,5,6] = MatMul(%a, %b)"), std::string::npos) << plain;
  // Labels summed within one operand, repeated, or no label contracted (an outer product).
  for (auto [equation, dims] : {std::pair{"bij,bjk->bkj", "2, 4, 4"},
                                {"bii,bij->bij", "2, 4, 4"},
                                {"bij,bjk->bijk", "2, 4, 4, 4"}}) {
    std::string other = canonical(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2, 4, 4] a, float[2, 4, 4] b) => (float[{}] y) {{
        y = Einsum <equation = "{}"> (a, b)
      }})",
                                              dims, equation));
    EXPECT_NE(other.find("Einsum"), std::string::npos) << equation << "\n" << other;
  }
}

// Einsums of other matrix products: the result transposed; an operand's labels merged into
// one dim (Funnel-Transformer's positional projection, "td,dnh->tnh", its weights [D, N, H]);
// an operand without a batch label (Transformer-XL's "binh,tnh->bnit").
TEST(Canonicalize, EinsumProductsAreMatMuls) {
  std::string transposed = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 5, 4] a, float[2, 4, 6] b) => (float[2, 6, 5] y) {
      y = Einsum <equation = "bik,bkj->bji"> (a, b)
    })");
  EXPECT_NE(transposed.find("f32[2,5,6] = MatMul(%a, %b)"), std::string::npos) << transposed;
  EXPECT_NE(transposed.find("%y: f32[2,6,5] = Transpose("), std::string::npos) << transposed;
  std::string merged = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[7, 12] x, float[12, 3, 4] w) => (float[7, 3, 4] y) {
      y = Einsum <equation = "td,dnh->tnh"> (x, w)
    })");
  EXPECT_NE(merged.find("f32[12,12] = Reshape(%w)"), std::string::npos) << merged;
  EXPECT_NE(merged.find("f32[7,12] = MatMul(%x, "), std::string::npos) << merged;
  EXPECT_NE(merged.find("%y: f32[7,3,4] = Reshape("), std::string::npos) << merged;
  EXPECT_EQ(merged.find("Transpose"), std::string::npos) << merged;
  std::string unbatched = canonical(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 5, 3, 4] q, float[6, 3, 4] r) => (float[2, 3, 5, 6] y) {
      y = Einsum <equation = "binh,tnh->bnit"> (q, r)
    })");
  // q to [n, b, i, h], merged to [n, b * i, h]; r to [n, h, t]; the product [n, b * i, t]
  // split and transposed to [b, n, i, t].
  EXPECT_NE(unbatched.find("Transpose(%q) {perm=[2, 0, 1, 3]}"), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("f32[3,10,4] = Reshape("), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("Transpose(%r) {perm=[1, 2, 0]}"), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("f32[3,10,6] = MatMul("), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("f32[3,2,5,6] = Reshape("), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("%y: f32[2,3,5,6] = Transpose("), std::string::npos) << unbatched;
  EXPECT_NE(unbatched.find("{perm=[1, 0, 2, 3]}"), std::string::npos) << unbatched;
}

} // namespace
} // namespace weft
