#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/shape_functions.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::import_text;

TEST(BroadcastShapes, NumpyRules) {
  auto b = broadcast_shapes({Shape{2, 1, 4}, Shape{3, 1}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(shape_to_string(*b), "[2,3,4]");
  EXPECT_FALSE(broadcast_shapes({Shape{3}, Shape{4}}).ok());
}

TEST(BroadcastShapes, SymbolsBroadcastAgainstOneAndMatchThemselves) {
  auto b = broadcast_shapes({Shape{Dim::symbol("N"), 1}, Shape{1, Dim::symbol("M")}});
  EXPECT_EQ(shape_to_string(*b), "[N,M]");
  auto c = broadcast_shapes({Shape{Dim::symbol("N")}, Shape{Dim::symbol("K")}});
  EXPECT_TRUE(c->at(0).is_unknown()); // N vs K: known only at run time
  auto d = broadcast_shapes({Shape{Dim::symbol("N")}, Shape{5}});
  EXPECT_EQ(shape_to_string(*d), "[5]");
}

// A window's output over a symbolic extent is a quotient: it multiplies as a symbol does,
// nests into one quotient, and evaluates at run time.
TEST(SymbolicDims, QuotientsOfWindows) {
  Dim w = Dim::symbol("W");
  Dim half = dim_floor_div(w, 1, 2); // a 3x3 stride-2 window with padding 1
  EXPECT_EQ(half.to_string(), "(W+1)/2");
  EXPECT_EQ(dim_floor_div(half, 1, 2).to_string(), "(W+3)/4"); // nested, folded
  EXPECT_EQ(dim_floor_div(w, 0, 1), w);
  EXPECT_EQ(dim_floor_div(Dim(9), 1, 2), Dim(5));
  Dim area = dim_mul(dim_mul(Dim::symbol("N"), half), 64);
  EXPECT_EQ(area.to_string(), "64*(W+1)/2*N");
  EXPECT_EQ(dim_div(area, half), dim_mul(Dim::symbol("N"), 64));
  std::map<std::string, int64_t> at = {{"N", 3}, {"W", 97}};
  EXPECT_EQ(eval_dim(area, at), 64 * 49 * 3);
  EXPECT_EQ(eval_dim(dim_floor_div(dim_mul(w, Dim::symbol("N")), -5, 3), at), (97 * 3 - 5) / 3);
  EXPECT_EQ(eval_dim(dim_floor_div(w, -100, 2), at), std::nullopt); // negative: no extent
  EXPECT_EQ(eval_dim(half, {{"N", 3}}), std::nullopt);               // W unbound
  EXPECT_EQ(dim_symbols(area), (std::vector<std::string>{"W", "N"}));
}

// A range of dims multiplies as dim_mul does; an unknown dim in it makes it unknown.
TEST(SymbolicDims, DimsProduct) {
  Shape s = {Dim(2), Dim::symbol("N"), Dim(3), Dim::unknown()};
  EXPECT_EQ(dims_product(s, 0, 3).to_string(), "6*N");
  EXPECT_EQ(dims_product(s, 2, 3), Dim(3));
  EXPECT_EQ(dims_product(s, 1, 1), Dim(1));
  EXPECT_TRUE(dims_product(s).is_unknown());
  EXPECT_EQ(dims_product(Shape{Dim(4), Dim(0), Dim::symbol("T")}), Dim(0));
}

// A Slice from a symbolic start to its end: sums lose a term, other dims spell a difference,
// which evaluates at run time (nothing when negative) and multiplies as a symbol does.
TEST(SymbolicDims, Differences) {
  Dim p = Dim::symbol("P"), t = Dim::symbol("T"), m = Dim::symbol("M");
  EXPECT_EQ(dim_sub(*dim_add(p, t), p), t);
  EXPECT_EQ(dim_sub(*dim_add(*dim_add(p, t), m), t)->to_string(), "(M+P)/1");
  EXPECT_EQ(dim_sub(p, p), Dim(0));
  EXPECT_EQ(dim_sub(Dim(7), Dim(3)), Dim(4));
  EXPECT_EQ(dim_sub(m, 2)->to_string(), "(M-2)/1");
  Dim rest = *dim_sub(m, p);
  EXPECT_EQ(rest.to_string(), "(M-P)/1");
  EXPECT_EQ(eval_dim(dim_mul(rest, 4), {{"M", 9}, {"P", 5}}), 16);
  EXPECT_EQ(eval_dim(rest, {{"M", 4}, {"P", 5}}), std::nullopt);
  EXPECT_EQ(dim_symbols(rest), (std::vector<std::string>{"M", "P"}));
  EXPECT_EQ(dim_sub(Dim(7), p), std::nullopt);
  EXPECT_EQ(dim_sub(m, *dim_add(p, t)), std::nullopt); // only a product is taken away
}

TEST(NormalizeAxis, Range) {
  EXPECT_EQ(normalize_axis(-1, 3).value(), 2);
  EXPECT_FALSE(normalize_axis(3, 3).ok());
  EXPECT_FALSE(normalize_axis(-4, 3).ok());
}

// Types the importer builds agree with ONNX's own shape inference: the importer checks each
// node's shape function against it. These cover symbolic dims through the main families.
TEST(ShapeFunctions, AgreeWithOnnxOnSymbolicGraph) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 3, 32, 32] x, float[8, 3, 3, 3] w, float[N, 16] a, float[16, 4] b) => (
        float[N, 8, 16, 16] c, float[N, 8, 8, 8] p, float[N, 4] m, float[N, 1, 1, 1] r,
        float[N, 16] s, int64[N] am) {
      c = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w)
      p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (c)
      m = MatMul(a, b)
      r = ReduceMean <axes = [1, 2, 3]> (x)
      s = Softmax(a)
      am = ArgMax <axis = 1, keepdims = 0> (a)
    })");
  EXPECT_EQ(testing::print_body(g).find("unk"), std::string::npos) << testing::print_body(g);
}

// The new ops' shape functions, through the importer, which fails on a contradiction
// between them, ONNX's own inference and the declared outputs.
TEST(ShapeFunctions, GathersLossesResizeAndTransposedConvolution) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 4, 3] x, int64[6, 2] i, float[2, 3, 4] s, int64[2, 4] t, float[1, 2, 3, 3] c,
       float[2, 1, 3, 3] w)
      => (float[5, 6, 2, 3] a, float[6, 3] b, float[2, 4] l, float[1, 2, 6, 4] r,
          float[5, 7, 2] p, float[1, 1, 10, 8] y) {
      a = Gather <axis = 1> (x, i)
      b = GatherND (x, i)
      l = NegativeLogLikelihoodLoss <reduction = "none"> (s, t)
      scales = Constant <value = float[4] {1.0, 1.0, 2.0, 1.5}> ()
      r = Resize (c, , scales)
      pads = Constant <value = int64[6] {0, 1, -1, 0, 2, 0}> ()
      p = Pad (x, pads)
      y = ConvTranspose <strides = [3, 2], output_shape = [10, 8]> (c, w)
    })");
  std::string body = testing::print_body(g);
  for (const char* type : {"%a: f32[5,6,2,3]", "%b: f32[6,3]", "%l: f32[2,4]", "%r: f32[1,2,6,4]",
                           "%p: f32[5,7,2]", "%y: f32[1,1,10,8]"})
    EXPECT_NE(body.find(type), std::string::npos) << type << "\n" << body;
}

// The signal ops: DFT-20 with the axis an input, forward one-sided (n / 2 + 1 frequencies)
// and inverse one-sided (n real values from n / 2 + 1); STFT's frames and bins;
// MelWeightMatrix's [dft_length / 2 + 1, num_mel_bins]; a 5-D GridSample.
TEST(ShapeFunctions, SignalOpsAndVolumetricGridSample) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 20]>
    g (float[1, 10, 6, 1] x, float[1, 10, 6, 2] f, float[1, 128, 1] s, float[1, 1, 3, 2, 2] v,
       float[1, 2, 4, 2, 3] grid, float rate, float low, float high)
      => (float[1, 10, 4, 2] r, float[1, 10, 10, 1] i, float[1, 15, 9, 2] t, float[9, 8] m,
          float[1, 1, 2, 4, 2] y) {
      axis = Constant <value = int64 {2}> ()
      r = DFT <onesided = 1> (x, , axis)
      i = DFT <onesided = 1, inverse = 1> (f)
      step = Constant <value = int64 {8}> ()
      length = Constant <value = int64 {16}> ()
      t = STFT (s, step, , length)
      bins = Constant <value = int32 {8}> ()
      dft_length = Constant <value = int32 {16}> ()
      sample_rate = Cast <to = 6> (rate)
      m = MelWeightMatrix (bins, dft_length, sample_rate, low, high)
      y = GridSample (v, grid)
    })");
  std::string body = testing::print_body(g);
  for (const char* type : {"%r: f32[1,10,4,2]", "%i: f32[1,10,10,1]", "%t: f32[1,15,9,2]",
                           "%m: f32[9,8]", "%y: f32[1,1,2,4,2]"})
    EXPECT_NE(body.find(type), std::string::npos) << type << "\n" << body;
}

// Shapes that would make an indirect access's affine dims leave a buffer are refused at
// import, naming the node, instead of reading or writing outside it at run time.
TEST(ShapeFunctions, IndexedOpsRejectShapesThatWouldLeaveTheData) {
  for (const char* body :
       {"y = GatherElements <axis = 0> (x, i)", "y = GatherND (x, j)", "y = ScatterND (x, k, u)"}) {
    Result<Graph> g = import_text(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[2, 3] x, int64[2, 5] i, int64[4, 3] j, int64[4, 1] k, float[4, 7] u)
          => (float[A, B] y) {{
        {}
      }})",
                                              body));
    ASSERT_FALSE(g.ok()) << body;
    EXPECT_NE(g.status().message().find("opset 13"), std::string::npos) << g.status().message();
  }
}

// Det drops the matrix dims; MeanVarianceNormalization keeps the shape; the training
// optimizers (qualified op types, in a model importing no ai.onnx opset) give one output
// per state tensor, typed like it.
TEST(ShapeFunctions, DetNormalizationAndOptimizers) {
  Graph det = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 3, 3] x) => (float[4] d, float[4, 3, 3] n) {
      d = Det (x)
      n = MeanVarianceNormalization <axes = [-1]> (x)
    })");
  EXPECT_NE(testing::print_body(det).find("%d: f32[4]"), std::string::npos)
      << testing::print_body(det);
  Graph adam = graph_from_text(R"(
    <ir_version: 8, opset_import: ["ai.onnx.preview.training" : 1]>
    g (float r, int64 t, float[2] x1, float[3, 1] x2, float[2] g1, float[3, 1] g2, float[2] v1,
       float[3, 1] v2, float[2] h1, float[3, 1] h2)
      => (float[2] x1n, float[3, 1] x2n, float[2] v1n, float[3, 1] v2n, float[2] h1n,
          float[3, 1] h2n) {
      x1n, x2n, v1n, v2n, h1n, h2n = ai.onnx.preview.training.Adam <alpha = 0.9>
          (r, t, x1, x2, g1, g2, v1, v2, h1, h2)
    })");
  std::string body = testing::print_body(adam);
  EXPECT_NE(body.find("ai.onnx.preview.training.Adam"), std::string::npos) << body;
  EXPECT_NE(body.find("%h2n: f32[3,1]"), std::string::npos) << body;
}

TEST(ShapeFunctions, OptimizersRejectMismatchedStateWithTheNode) {
  Result<Graph> g = import_text(R"(
    <ir_version: 8, opset_import: ["ai.onnx.preview.training" : 1]>
    g (float r, int64 t, float[2] x, float[2] g, float[3] v) => (float[2] xn, float[3] vn) {
      xn, vn = ai.onnx.preview.training.Momentum <alpha = 0.9, beta = 0.1, mode = "standard",
          norm_coefficient = 0.0> (r, t, x, g, v)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("input 4 must have the type of input 2"), std::string::npos)
      << g.status().message();
}

TEST(ShapeFunctions, RejectContradictoryInputsWithTheNode) {
  Result<Graph> g = import_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, float[4] y) => (float[4] z) {
      z = Add(x, y)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("cannot be broadcast"), std::string::npos)
      << g.status().message();
}

} // namespace
} // namespace weft
