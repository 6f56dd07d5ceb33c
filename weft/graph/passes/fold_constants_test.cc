#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

// Value "name", computed by a fill in the test's text, made a constant of "dims" as an
// initializer would be (the fill itself is too large to fold).
void make_initializer(Graph& g, const std::string& name, DType dtype, std::vector<int64_t> dims) {
  Node* fill = g.find_value(name)->producer;
  g.make_constant(g.find_value(name), Tensor(dtype, std::move(dims)));
  g.remove_nodes_if([&](const Node& n) { return &n == fill; });
}

std::string fold(const std::string& model) {
  Graph g = graph_from_text(model);
  Status s = fold_constants(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  Status v = verify_graph(g, "fold_constants");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

// The pattern PyTorch emits for x.view(x.size(0), -1).
TEST(FoldConstants, ExporterShapeSubgraphBecomesAConstantTarget) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x) => (float[2, 12] y) {
      s = Shape(x)
      zero = Constant <value = int64 {0}> ()
      n = Gather <axis = 0> (s, zero)
      axes = Constant <value = int64[1] {0}> ()
      n1 = Unsqueeze(n, axes)
      minus1 = Constant <value = int64[1] {-1}> ()
      target = Concat <axis = 0> (n1, minus1)
      y = Reshape(x, target)
    })"),
            "  input %x: f32[2,3,4]\n"
            "  const %target = i64[2]{2, -1}\n"
            "  node Reshape_7: %y: f32[2,12] = Reshape(%x, %target) {allowzero=0}\n"
            "  output %y: f32[2,12]\n");
}

TEST(FoldConstants, ConstantOfShapeAndRange) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y, float[4] r) {
      s = Shape(x)
      z = ConstantOfShape <value = float[1] {2.5}> (s)
      y = Add(x, z)
      start = Constant <value = float {0}> ()
      limit = Constant <value = float {2}> ()
      delta = Constant <value = float {0.5}> ()
      r = Range(start, limit, delta)
    })"),
            "  input %x: f32[3]\n"
            "  const %z = f32[3]{2.5, 2.5, 2.5}\n"
            "  const %r = f32[4]{0, 0.5, 1, 1.5}\n"
            "  node Add_2: %y: f32[3] = Add(%x, %z)\n"
            "  output %y: f32[3]\n"
            "  output %r: f32[4]\n");
}

// The attention scale as PyTorch exports 1 / d ** 0.5: the MatMul's epilogue then scales by a
// constant.
TEST(FoldConstants, AttentionScaleFromPowAndReciprocal) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 2] x) => (float[2, 2] y) {
      d = Constant <value = float {64}> ()
      half = Constant <value = float {0.5}> ()
      root = Pow(d, half)
      scale = Reciprocal(root)
      y = Mul(x, scale)
    })"),
            "  input %x: f32[2,2]\n"
            "  const %scale = f32[]{0.125}\n"
            "  node Mul_4: %y: f32[2,2] = Mul(%x, %scale)\n"
            "  output %y: f32[2,2]\n");
}

TEST(FoldConstants, SymbolicShapesStay) {
  std::string body = fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 4] x) => (int64[2] s) {
      s = Shape(x)
    })");
  EXPECT_NE(body.find("= Shape(%x)"), std::string::npos) << body;
}

TEST(FoldConstants, LargeResultsAreLeftToKernels) {
  std::string body = fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[1000, 1000] y) {
      shape = Constant <value = int64[2] {1000, 1000}> ()
      z = ConstantOfShape(shape)
      y = Add(x, z)
    })");
  EXPECT_NE(body.find("= ConstantOfShape(%shape)"), std::string::npos) << body;
}

// A GatherND from a constant table folds, beyond kMaxFoldedElements too (Swin3D's
// relative-position bias): rows [1, 0] and [0, 2] of a 2x3 table, then its Transpose.
TEST(FoldConstants, TableLookupsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y)
      <float[2, 3] table = {0.0, 1.0, 2.0, 10.0, 11.0, 12.0}, int64[2, 2] idx = {1, 0, 0, 2}> {
      picked = GatherND(table, idx)
      y = Add(x, picked)
    })"),
            "  input %x: f32[2]\n"
            "  const %picked = f32[2]{10, 2}\n"
            "  node Add_1: %y: f32[2] = Add(%x, %picked)\n"
            "  output %y: f32[2]\n");
  // 90,000 elements gathered from a [2, 300] table, then transposed: both fold.
  std::string big = fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[300, 300] y) {
      shape = Constant <value = int64[2] {2, 300}> ()
      table = ConstantOfShape <value = float[1] {1.5}> (shape)
      start = Constant <value = int64 {0}> ()
      limit = Constant <value = int64 {300}> ()
      delta = Constant <value = int64 {1}> ()
      r = Range(start, limit, delta)
      two = Constant <value = int64 {2}> ()
      idx = Mod(r, two)
      picked = Gather <axis = 0> (table, idx)
      t = Transpose(picked)
      y = Add(x, t)
    })");
  EXPECT_EQ(big.find("Gather"), std::string::npos) << big;
  EXPECT_EQ(big.find("Transpose"), std::string::npos) << big;
  EXPECT_NE(big.find("const %t = f32[300,300]"), std::string::npos) << big;
}

// A Transpose of a weight larger than any folding limit folds: it makes no more elements
// than it reads, and left in the graph it would move the whole weight every run (ALBERT).
TEST(FoldConstants, TransposedWeightsFoldAtAnySize) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4, 2100] x) => (float[4, 2100] y) {
      shape = Constant <value = int64[2] {2100, 2100}> ()
      w = ConstantOfShape <value = float[1] {0.5}> (shape)
      t = Transpose(w)
      y = MatMul(x, t)
    })");
  make_initializer(g, "w", DType::kF32, {2100, 2100});
  ASSERT_TRUE(fold_constants(g).ok());
  std::string body = print_body(g);
  EXPECT_EQ(body.find("Transpose"), std::string::npos) << body;
  EXPECT_NE(body.find("const %t = f32[2100,2100]"), std::string::npos) << body;
}

// Folding transposes in tiles (graph/evaluate.cc): every element lands where the definition
// puts it, at each element width, across tile edges (33 and 70), with leading dims moved.
TEST(FoldConstants, TransposesMatchTheirDefinition) {
  for (auto [name, dtype] : {std::pair{"float", DType::kF32},
                             {"int64", DType::kI64},
                             {"int16", DType::kI16},
                             {"uint8", DType::kU8}}) {
    Graph g = graph_from_text(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g ({0}[1] x) => ({0}[70, 3, 33] y) {{
        shape = Constant <value = int64[3] {{3, 33, 70}}> ()
        w = ConstantOfShape <value = {0}[1] {{0}}> (shape)
        t = Transpose <perm = [2, 0, 1]> (w)
        y = Add(t, x)
      }})",
                                          name));
    Tensor w(dtype, {3, 33, 70});
    for (int64_t i = 0; i < w.num_elements(); ++i)
      w.set_int64(i, i % 251);
    Node* fill = g.find_value("w")->producer;
    g.make_constant(g.find_value("w"), w);
    g.remove_nodes_if([&](const Node& n) { return &n == fill; });
    ASSERT_TRUE(fold_constants(g).ok()) << name;
    const Value* t = g.find_value("t");
    ASSERT_TRUE(t && t->is_constant()) << name;
    const Tensor& got = *t->constant;
    ASSERT_EQ(got.dims(), (std::vector<int64_t>{70, 3, 33})) << name;
    for (int64_t k = 0; k < 70; ++k) {
      for (int64_t a = 0; a < 3; ++a) {
        for (int64_t b = 0; b < 33; ++b) {
          ASSERT_EQ(got.get_int64((k * 3 + a) * 33 + b), ((a * 33 + b) * 70 + k) % 251)
              << name << " at " << k << ", " << a << ", " << b;
        }
      }
    }
  }
}

// weight_norm's g * v / ||v|| folds, though the weight is past kMaxFoldedElements: the result
// is no larger than v. The norms themselves: ReduceL2, ReduceSumSquare and ReduceL1.
TEST(FoldConstants, NormalizedWeightsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[1] a, float[1] b, float[1] c) {
      v = Constant <value = float[2] {3.0, -4.0}> ()
      l2 = ReduceL2 <keepdims = 0> (v)
      a = Add(x, l2)
      sq = ReduceSumSquare <keepdims = 0> (v)
      b = Add(x, sq)
      l1 = ReduceL1 <keepdims = 0> (v)
      c = Add(x, l1)
    })"),
            "  input %x: f32[1]\n"
            "  const %l2 = f32[]{5}\n"
            "  const %sq = f32[]{25}\n"
            "  const %l1 = f32[]{7}\n"
            "  node Add_2: %a: f32[1] = Add(%x, %l2)\n"
            "  node Add_4: %b: f32[1] = Add(%x, %sq)\n"
            "  node Add_6: %c: f32[1] = Add(%x, %l1)\n"
            "  output %a: f32[1]\n"
            "  output %b: f32[1]\n"
            "  output %c: f32[1]\n");
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1, 300, 300] x) => (float[1, 300, 300] y) {
      shape = Constant <value = int64[2] {300, 300}> ()
      v = ConstantOfShape <value = float[1] {0.5}> (shape)
      gshape = Constant <value = int64[2] {1, 300}> ()
      gain = ConstantOfShape <value = float[1] {2.0}> (gshape)
      norm = ReduceL2 <axes = [0], keepdims = 1> (v)
      scale = Div(gain, norm)
      w = Mul(v, scale)
      y = Mul(x, w)
    })");
  make_initializer(g, "v", DType::kF32, {300, 300});
  ASSERT_TRUE(fold_constants(g).ok());
  std::string body = print_body(g);
  EXPECT_NE(body.find("const %w = f32[300,300]"), std::string::npos) << body;
  EXPECT_EQ(body.find("ReduceL2"), std::string::npos) << body;
  // A Cast of int8 weights to f32 would make the model 4x their size: it stays.
  Graph q = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[300, 300] x) => (float[300, 300] y) {
      shape = Constant <value = int64[2] {300, 300}> ()
      v = ConstantOfShape <value = int8[1] {3}> (shape)
      w = Cast <to = 1> (v)
      y = Mul(x, w)
    })");
  make_initializer(q, "v", DType::kI8, {300, 300});
  ASSERT_TRUE(fold_constants(q).ok());
  std::string cast = print_body(q);
  EXPECT_NE(cast.find("= Cast(%v)"), std::string::npos) << cast;
}

// T5's relative-position buckets take the log of constant distances: Log and Exp fold.
TEST(FoldConstants, LogAndExpFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      c = Constant <value = float[2] {1.0, 0.0}> ()
      l = Log(c)
      e = Exp(l)
      y = Add(x, e)
    })"),
            "  input %x: f32[2]\n"
            "  const %e = f32[2]{1, 0}\n"
            "  node Add_3: %y: f32[2] = Add(%x, %e)\n"
            "  output %y: f32[2]\n");
}

TEST(FoldConstants, OutOfRangeGatherIsAnErrorNamingTheNode) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (int64 n) <int64[2] s = {2, 3}> {
      minus5 = Constant <value = int64 {-5}> ()
      i = Abs(minus5)
      n = Gather <axis = 0> (s, i)
    })");
  Status s = fold_constants(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("(Gather, opset 13): Gather index 5 is out of range"),
            std::string::npos)
      << s.message();
}

// Scatters of constants fold (BEiT's relative-position tables, written in forward): each
// update at its index, negative ones from the end, duplicates combined by the reduction.
TEST(FoldConstants, ScattersOfConstantsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2, 3] x) => (float[2, 3] y, float[2, 3] z)
      <float[2, 3] d = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, int64[2, 2] i = {2, -3, 0, 1},
       int64[2, 2] j = {2, 2, 0, 0}, float[2, 2] u = {10.0, 20.0, 30.0, 40.0}> {
      set = ScatterElements <axis = 1> (d, i, u)
      sum = ScatterElements <axis = -1, reduction = "add"> (d, j, u)
      y = Add(x, set)
      z = Add(x, sum)
    })"),
            "  input %x: f32[2,3]\n"
            "  const %set = f32[2,3]{20, 1, 10, 30, 40, 5}\n"
            "  const %sum = f32[2,3]{0, 1, 32, 73, 4, 5}\n"
            "  node Add_2: %y: f32[2,3] = Add(%x, %set)\n"
            "  node Add_3: %z: f32[2,3] = Add(%x, %sum)\n"
            "  output %y: f32[2,3]\n"
            "  output %z: f32[2,3]\n");
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[3, 2] x) => (float[3, 2] y, float[3, 2] z)
      <float[3, 2] d = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, int64[2, 1] i = {2, -3},
       int64[2, 1] j = {1, 1}, float[2, 2] u = {10.0, 11.0, 12.0, 13.0},
       float[2, 2] v = {7.0, 1.0, 0.0, 9.0}> {
      set = ScatterND(d, i, u)
      most = ScatterND <reduction = "max"> (d, j, v)
      y = Add(x, set)
      z = Add(x, most)
    })"),
            "  input %x: f32[3,2]\n"
            "  const %set = f32[3,2]{12, 13, 2, 3, 10, 11}\n"
            "  const %most = f32[3,2]{0, 1, 7, 9, 4, 5}\n"
            "  node Add_2: %y: f32[3,2] = Add(%x, %set)\n"
            "  node Add_3: %z: f32[3,2] = Add(%x, %most)\n"
            "  output %y: f32[3,2]\n"
            "  output %z: f32[3,2]\n");
}

// GatherElements (a negative index from the axis's end), Tile, and CumSum (inclusive; exclusive
// and reversed) of constants fold: position tables that models build in forward.
TEST(FoldConstants, GathersTilesAndCumSumsOfConstantsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[2, 2] x, float[2, 3] z) => (float[2, 2] y, float[2, 3] t, float[2, 3] c, float[2, 3] e)
      <float[2, 3] d = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, int64[2, 2] i = {2, 0, -3, 1},
       float[2, 1] p = {1.0, 2.0}, int64[2] r = {1, 3}, int64[1] axis = {1}> {
      gathered = GatherElements <axis = 1> (d, i)
      tiled = Tile(p, r)
      sums = CumSum(d, axis)
      before = CumSum <exclusive = 1, reverse = 1> (d, axis)
      y = Add(x, gathered)
      t = Add(z, tiled)
      c = Add(z, sums)
      e = Add(z, before)
    })"),
            "  input %x: f32[2,2]\n"
            "  input %z: f32[2,3]\n"
            "  const %gathered = f32[2,2]{2, 0, 3, 4}\n"
            "  const %tiled = f32[2,3]{1, 1, 1, 2, 2, 2}\n"
            "  const %sums = f32[2,3]{0, 1, 3, 3, 7, 12}\n"
            "  const %before = f32[2,3]{3, 2, 0, 9, 5, 0}\n"
            "  node Add_4: %y: f32[2,2] = Add(%x, %gathered)\n"
            "  node Add_5: %t: f32[2,3] = Add(%z, %tiled)\n"
            "  node Add_6: %c: f32[2,3] = Add(%z, %sums)\n"
            "  node Add_7: %e: f32[2,3] = Add(%z, %before)\n"
            "  output %y: f32[2,2]\n"
            "  output %t: f32[2,3]\n"
            "  output %c: f32[2,3]\n"
            "  output %e: f32[2,3]\n");
}

// A weight standardization as timm's NF-ResNets export it: the weights' per-channel mean and
// variance (ReduceMean without keepdims), then BatchNormalization with them; integer means
// truncate.
TEST(FoldConstants, MeansAndBatchNormsOfConstantsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[1, 2, 3] x, int64[2] z) => (float[1, 2, 3] y, int64[2] m)
      <float[1, 2, 3] w = {0.0, 1.0, 2.0, 2.0, 2.0, 8.0}, float[2] s = {1.0, 2.0},
       float[2] b = {0.0, 10.0}, int64[2, 2] k = {1, 2, -3, 6}> {
      mean = ReduceMean <axes = [0, 2], keepdims = 0> (w)
      kept = ReduceMean <axes = [0, 2], keepdims = 1> (w)
      d = Sub(w, kept)
      d2 = Mul(d, d)
      var = ReduceMean <axes = [0, 2], keepdims = 0> (d2)
      n = BatchNormalization <epsilon = 0.0> (w, s, b, mean, var)
      y = Add(x, n)
      im = ReduceMean <axes = [1], keepdims = 0> (k)
      m = Add(z, im)
    })"),
            "  input %x: f32[1,2,3]\n"
            "  input %z: i64[2]\n"
            "  const %n = f32[1,2,3]{-1.2247448, 0, 1.2247448, 8.585787, 8.585787, 12.828427}\n"
            "  const %im = i64[2]{1, 1}\n"
            "  node Add_6: %y: f32[1,2,3] = Add(%x, %n)\n"
            "  node Add_8: %m: i64[2] = Add(%z, %im)\n"
            "  output %y: f32[1,2,3]\n"
            "  output %m: i64[2]\n");
}

// Products of constants fold, batch dims broadcast and 1-D operands as numpy's: a = [[1, 2]],
// [[3, 4]] times b = [[1, 0], [1, 1]] is [[3, 2]], [[7, 4]]; v = [1, -1] times b is [0, -1].
// A Softmax over the last axis folds too: [0, 1, 2] gives e^i / (1 + e + e^2).
TEST(FoldConstants, ProductsAndSoftmaxesOfConstantsFold) {
  EXPECT_EQ(fold(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 2, 2] x, float[2] z, float[3] w) => (float[2, 2, 2] y, float[2] u, float[3] s)
      <float[2, 1, 2] a = {1.0, 2.0, 3.0, 4.0}, float[2, 2] b = {1.0, 0.0, 1.0, 1.0},
       float[2] v = {1.0, -1.0}, float[3] t = {0.0, 1.0, 2.0}> {
      ab = MatMul(a, b)
      y = Add(x, ab)
      vb = MatMul(v, b)
      u = Add(z, vb)
      st = Softmax <axis = -1> (t)
      s = Add(w, st)
    })"),
            "  input %x: f32[2,2,2]\n"
            "  input %z: f32[2]\n"
            "  input %w: f32[3]\n"
            "  const %ab = f32[2,1,2]{3, 2, 7, 4}\n"
            "  const %vb = f32[2]{0, -1}\n"
            "  const %st = f32[3]{0.09003057, 0.24472848, 0.66524094}\n"
            "  node Add_1: %y: f32[2,2,2] = Add(%x, %ab)\n"
            "  node Add_3: %u: f32[2] = Add(%z, %vb)\n"
            "  node Add_5: %s: f32[3] = Add(%w, %st)\n"
            "  output %y: f32[2,2,2]\n"
            "  output %u: f32[2]\n"
            "  output %s: f32[3]\n");
}

// An outer product that would hold many times the elements of its operands stays a MatMul
// (folding it would grow the model, not save work), as does a Softmax over another axis than
// the last, whose form differs before opset 13.
TEST(FoldConstants, InflatingProductsAndInnerSoftmaxesStay) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[300, 300] x, float[2, 3] z) => (float[300, 300] y, float[2, 3] s) <float[2, 3] t =
        {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}> {
      cs = Constant <value = int64[2] {300, 1}> ()
      c = ConstantOfShape <value = float[1] {1.0}> (cs)
      rs = Constant <value = int64[2] {1, 300}> ()
      r = ConstantOfShape <value = float[1] {2.0}> (rs)
      p = MatMul(c, r)
      y = Add(x, p)
      st = Softmax <axis = 0> (t)
      s = Add(z, st)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  std::string body = print_body(g);
  EXPECT_NE(body.find("= MatMul(%c, %r)"), std::string::npos) << body;
  EXPECT_NE(body.find("= Softmax(%t)"), std::string::npos) << body;
}

TEST(FoldConstants, OutOfRangeScatterIsAnErrorNamingTheNode) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y) <float[3] d = {0.0, 1.0, 2.0}, int64[1] i = {3},
                                    float[1] u = {5.0}> {
      s = ScatterElements <axis = 0> (d, i, u)
      y = Add(x, s)
    })");
  Status s = fold_constants(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ScatterElements index 3 is out of range for extent 3"),
            std::string::npos)
      << s.message();
}

// BitCast keeps the bytes: 1.0f is 0x3f800000, -2.5f is 0xc0200000.
TEST(FoldConstants, BitCastKeepsTheBytes) {
  std::string body = fold(R"(
    <ir_version: 10, opset_import: ["" : 26]>
    g (int32[2] x) => (int32[2] y) {
      f = Constant <value = float[2] {1.0, -2.5}> ()
      b = BitCast <to = 6> (f)
      y = Add(x, b)
    })");
  EXPECT_NE(body.find("i32[2]{1065353216, -1071644672}"), std::string::npos) << body;
}

TEST(FoldConstants, BitCastBetweenWidthsIsRefusedWithTheNode) {
  Result<Graph> g = testing::import_text(R"(
    <ir_version: 10, opset_import: ["" : 26]>
    g (float[2] x) => (int64[2] y) {
      y = BitCast <to = 7> (x)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("(BitCast, opset 26): cannot reinterpret f32 as i64"),
            std::string::npos)
      << g.status().message();
}

TEST(FoldConstants, AConstantNodesValueIsSharedNotCopied) {
  // Import makes MatMulNBits' 4-bit weights a Constant node: a copy here held a language
  // model's weights twice while the pipeline ran.
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y) {
      c = Constant <value = float[3] {1, 2, 3}> ()
      y = Add(x, c)
    })");
  Value* c = g.find_value("c");
  TensorRef value = c->producer->attrs_as<ConstantAttrs>().value;
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->constant.get(), value.get());
  EXPECT_EQ(c->type.to_string(), "f32[3]");
}

TEST(FoldConstants, NothingToDo) {
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 4] x) => (float[N, 4] y) {
      y = Relu(x)
    })";
  Graph before = graph_from_text(model);
  EXPECT_EQ(fold(model), print_body(before));
}

} // namespace
} // namespace weft
