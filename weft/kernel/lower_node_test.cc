#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/kernel/lower_node.h"

namespace weft::kernel {
namespace {

// The printed kernels of the model's last node, lowered after folding and canonicalizing.
std::string lowered(const std::string& model) {
  Graph g = testing::graph_from_text(model);
  EXPECT_TRUE(fold_constants(g).ok());
  EXPECT_TRUE(canonicalize(g).ok());
  const Node& node = *g.nodes().back();
  EXPECT_TRUE(can_lower(node)) << node.op_type;
  Result<LoweredNode> r = lower_node(node, "k");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  std::string out;
  if (r.ok()) {
    for (const BoundKernel& k : r->kernels)
      out += print_kernel(k.kernel);
  }
  return out;
}

TEST(LowerNode, GatherLoadsTheIndexThenTheWrappedRow) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 4] x, int64[2, 3] i) => (float[2, 3, 4] y) {
      y = Gather <axis = 0> (x, i)
    })"),
            "kernel k\n"
            "  in b0: f32[5,4]\n"
            "  in b1: i64[2,3]\n"
            "  out b2: f32[2,3,4]\n"
            "  gather[i0 < 2, i1 < 3, i2 < 4]: b2[i0, i1, i2] = b0[wrap(b1[i0, i1]), i2]\n");
}

// PyTorch's select (a scalar index) and evenly stepped constant indices (a strided slice):
// plain loads at affine positions, negative ones counted from the end; others stay indirect.
TEST(LowerNode, GatherAtConstantEvenlySteppedIndicesIsAPlainLoad) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 4] x) => (float[4] y) {
      i = Constant <value = int64 {-2}> ()
      y = Gather <axis = 0> (x, i)
    })"),
            "kernel k\n"
            "  in b0: f32[5,4]\n"
            "  out b1: f32[4]\n"
            "  gather[i0 < 4]: b1[i0] = b0[3, i0]\n");
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 7] x) => (float[5, 3] y) {
      i = Constant <value = int64[3] {1, 3, 5}> ()
      y = Gather <axis = 1> (x, i)
    })"),
            "kernel k\n"
            "  in b0: f32[5,7]\n"
            "  out b1: f32[5,3]\n"
            "  gather[i0 < 5, i1 < 3]: b1[i0, i1] = b0[i0, 2*i1 + 1]\n");
  EXPECT_NE(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[5, 7] x) => (float[5, 3] y) {
      i = Constant <value = int64[3] {1, 3, 4}> ()
      y = Gather <axis = 1> (x, i)
    })")
                .find("wrap("),
            std::string::npos);
}

TEST(LowerNode, GatherNDIndexesOneDimPerTupleElement) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x, int64[5, 2] i) => (float[5, 4] y) {
      y = GatherND (x, i)
    })"),
            "kernel k\n"
            "  in b0: f32[2,3,4]\n"
            "  in b1: i64[5,2]\n"
            "  out b2: f32[5,4]\n"
            "  gather_nd[i0 < 5, i1 < 4]: b2[i0, i1] = b0[wrap(b1[i0, 0]), wrap(b1[i0, 1]), i1]\n");
}

// An exclusive reverse scan: y[j] = sum of x[r] over r > j, a guarded reduction.
TEST(LowerNode, CumSumIsAGuardedReduction) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3, 5] x) => (float[3, 5] y) {
      axis = Constant <value = int64 {-1}> ()
      y = CumSum <exclusive = 1, reverse = 1> (x, axis)
    })"),
            "kernel k\n"
            "  in b0: f32[3,5]\n"
            "  out b1: f32[3,5]\n"
            "  init[i0 < 3, i1 < 5]: b1[i0, i1] = 0\n"
            "  scan[i0 < 3, i1 < 5, i2 < 5, -1*i1 + i2 + -1 >= 0]: b1[i0, i1] += b0[i0, i2]\n");
}

// Reflect padding reads the input at a mirrored, clamped position; unpadded dims stay affine.
TEST(LowerNode, ReflectPadMirrorsThePosition) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[2, 7] y) {
      pads = Constant <value = int64[4] {0, 2, 0, 2}> ()
      y = Pad <mode = "reflect"> (x, pads)
    })"),
            "kernel k\n"
            "  in b0: f32[2,3]\n"
            "  out b1: f32[2,7]\n"
            "  reflect[i0 < 2, i1 < 7]:\n"
            "    let %3 = abs((i1 - 2))\n"
            "    b1[i0, i1] = b0[i0, clamp(select((%3 > 2), (4 - %3), %3))]\n");
}

// The loss of each element reads the input at its target class; ignored targets weigh 0.
TEST(LowerNode, NegativeLogLikelihoodLossMeanDividesByTheCountedWeights) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x, int64[2] t, float[3] w) => (float y) {
      y = NegativeLogLikelihoodLoss <ignore_index = 1> (x, t, w)
    })"),
            "kernel k\n"
            "  in b0: f32[2,3,1]\n"
            "  in b1: i64[2,1]\n"
            "  in b2: f32[3]\n"
            "  out b3: f32[]\n"
            "  temp t4: f32[]\n"
            "  temp t5: f32[]\n"
            "  init_sum[]: t4[] = 0\n"
            "  sum_loss[i0 < 2, i1 < 1]:\n"
            "    let %0 = b1[i0, i1]\n"
            "    let %1 = b0[i0, clamp(%0), i1]\n"
            "    let %2 = 1:f32\n"
            "    let %3 = b2[clamp(%0)]\n"
            "    t4[] += neg((%1 * select((%0 == 1), 0, %3)))\n"
            "  init_weights[]: t5[] = 0\n"
            "  sum_weights[i0 < 2, i1 < 1]:\n"
            "    let %0 = b1[i0, i1]\n"
            "    let %1 = b0[i0, clamp(%0), i1]\n"
            "    let %2 = 1:f32\n"
            "    let %3 = b2[clamp(%0)]\n"
            "    let %7 = select((%0 == 1), 0, %3)\n"
            "    let %9 = neg((%1 * %7))\n"
            "    t5[] += f32(%7)\n"
            "  reduce_loss[]: b3[] = (t4[] / t5[])\n");
}

// Nearest resize: the resized axis reads the input at ceil(x) - 1 + (r > 0.5), x = o / 2
// (asymmetric), clamped; the unit-scale axis stays affine.
TEST(LowerNode, NearestResizeComputesTheSourceIndex) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3] x) => (float[2, 6] y) {
      scales = Constant <value = float[2] {1.0, 2.0}> ()
      y = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric"> (x, , scales)
    })"),
            "kernel k\n"
            "  in b0: f32[2,3]\n"
            "  out b1: f32[2,6]\n"
            "  resize_nearest[i0 < 2, i1 < 6]:\n"
            "    let %3 = (f64(i1) / 2)\n"
            "    let %4 = 1:f64\n"
            "    let %6 = (ceil(%3) - %4)\n"
            "    let %9 = ((%3 - %6) > 0.5)\n"
            "    let %10 = 0:f64\n"
            "    b1[i0, i1] = b0[i0, clamp(i64((%6 + select(%9, 1, %10))))]\n");
}

// Antialiased linear downsampling by 2 stretches the filter to 4 taps per axis (2 without).
TEST(LowerNode, AntialiasResizeWidensTheFilterWhenDownsampling) {
  for (int antialias : {0, 1}) {
    std::string kernel = lowered(fmt::format(R"(
      <ir_version: 8, opset_import: ["" : 18]>
      g (float[1, 8] x) => (float[1, 4] y) {{
        scales = Constant <value = float[2] {{1.0, 0.5}}> ()
        y = Resize <mode = "linear", antialias = {}> (x, , scales)
      }})",
                                             antialias));
    // The taps are spelled out, one read of x each.
    size_t reads = 0;
    for (size_t at = kernel.find("f64(b0["); at != std::string::npos;
         at = kernel.find("f64(b0[", at + 1))
      ++reads;
    EXPECT_EQ(reads, antialias ? 4u : 2u) << kernel;
  }
}

// Wrap padding reads the input at the position modulo its extent.
TEST(LowerNode, WrapPadReadsModuloTheExtent) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 19]>
    g (float[2, 3] x) => (float[2, 7] y) {
      pads = Constant <value = int64[4] {0, 2, 0, 2}> ()
      y = Pad <mode = "wrap"> (x, pads)
    })"),
            "kernel k\n"
            "  in b0: f32[2,3]\n"
            "  out b1: f32[2,7]\n"
            "  wrap[i0 < 2, i1 < 7]: b1[i0, i1] = b0[i0, clamp(mod((i1 - 2), 3))]\n");
}

// CRD puts each channel's block before the next channel.
TEST(LowerNode, SpaceToDepthCrdKeepsEachChannelsBlockTogether) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 28]>
    g (float[1, 2, 4, 6] x) => (float[1, 8, 2, 3] y) {
      y = SpaceToDepth <blocksize = 2, mode = "CRD"> (x)
    })"),
            "kernel k\n"
            "  in b0: f32[1,2,4,6]\n"
            "  out b1: f32[1,8,2,3]\n"
            "  space_to_depth[i0 < 1, i1 < 2, i2 < 2, i3 < 2, i4 < 3, i5 < 2]: "
            "b1[i0, 4*i1 + 2*i3 + i5, i2, i4] = b0[i0, i1, 2*i2 + i3, 2*i4 + i5]\n");
}

// A kept axis of extent 0: the accumulator index has no term for the iterators outside it.
TEST(LowerNode, ReductionWithAnEmptyKeptAxis) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 0, 4] x) => (float[2, 0, 1] y) {
      axes = Constant <value = int64[1] {2}> ()
      y = ReduceSum (x, axes)
    })"),
            "kernel k\n"
            "  in b0: f32[2,0,4]\n"
            "  temp t1: f32[0]\n"
            "  out b2: f32[2,0,1]\n"
            "  init[i0 < 2, i1 < 0]: t1[i1] = 0\n"
            "  update[i0 < 2, i1 < 0, i2 < 4]: t1[i1] += b0[i0, i1, i2]\n"
            "  finish[i0 < 2, i1 < 0]: b2[i0, i1, 0] = t1[i1]\n");
}

// A one-sided inverse DFT sums the 6 given frequencies into 10 real values.
TEST(LowerNode, InverseOneSidedDftSumsTheGivenFrequencies) {
  std::string kernel = lowered(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1, 6, 2] x) => (float[1, 10, 1] y) {
      y = DFT <axis = 1, inverse = 1, onesided = 1> (x)
    })");
  EXPECT_NE(kernel.find("dft[i0 < 1, i1 < 10, i2 < 1, i3 < 6]"), std::string::npos) << kernel;
}

// A repeated label reads a diagonal; the ellipsis dims broadcast (extent 1 reads index 0).
TEST(LowerNode, EinsumReadsDiagonalsAndBroadcastsEllipses) {
  EXPECT_EQ(
      lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 1, 3, 3] x, float[4, 3] v) => (float[2, 4, 3] y) {
      y = Einsum <equation = "...ii, ...i -> ...i"> (x, v)
    })"),
      "kernel k\n"
      "  out b0: f32[2,4,3]\n"
      "  in b1: f32[2,1,3,3]\n"
      "  in b2: f32[4,3]\n"
      "  init[i0 < 2, i1 < 4, i2 < 3]: b0[i0, i1, i2] = 0\n"
      "  einsum[i0 < 2, i1 < 4, i2 < 3]: b0[i0, i1, i2] += (b1[i0, 0, i2, i2] * b2[i1, i2])\n");
}

// Statistics over non-adjacent axes (N and the spatial dims): each sum is two canonical
// steps; the deviations are squared into a temporary and summed the same way.
TEST(LowerNode, MeanVarianceNormalizationSumsInCanonicalSteps) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2, 3, 4] x) => (float[2, 3, 4] y) {
      y = MeanVarianceNormalization <axes = [0, 2]> (x)
    })"),
            "kernel k\n"
            "  in b0: f32[24]\n"
            "  out b1: f32[24]\n"
            "  temp t2: f32[6]\n"
            "  temp t3: f32[3]\n"
            "  temp t4: f32[24]\n"
            "  temp t5: f32[6]\n"
            "  temp t6: f32[3]\n"
            "  init[i0 < 6]: t2[i0] = 0\n"
            "  update[i0 < 6, i1 < 4]: t2[i0] += b0[4*i0 + i1]\n"
            "  init[i0 < 3]: t3[i0] = 0\n"
            "  update[i0 < 2, i1 < 3]: t3[i1] += t2[3*i0 + i1]\n"
            "  mean[i0 < 3]: t3[i0] = (t3[i0] / 8)\n"
            "  square_deviation[i0 < 2, i1 < 3, i2 < 4]:\n"
            "    let %2 = (b0[12*i0 + 4*i1 + i2] - t3[i1])\n"
            "    t4[12*i0 + 4*i1 + i2] = (%2 * %2)\n"
            "  init[i0 < 6]: t5[i0] = 0\n"
            "  update[i0 < 6, i1 < 4]: t5[i0] += t4[4*i0 + i1]\n"
            "  init[i0 < 3]: t6[i0] = 0\n"
            "  update[i0 < 2, i1 < 3]: t6[i1] += t5[3*i0 + i1]\n"
            "  variance[i0 < 3]: t6[i0] = (t6[i0] / 8)\n"
            "  inv_std[i0 < 3]:\n"
            "    let %3 = (sqrt(t6[i0]) + 1e-09)\n"
            "    t6[i0] = (1 / %3)\n"
            "  normalize[i0 < 2, i1 < 3, i2 < 4]: b1[12*i0 + 4*i1 + i2] = ((b0[12*i0 + 4*i1 + i2] "
            "- t3[i1]) * t6[i1])\n");
}

// Momentum's momentum counts the gradient fully at the first step (T = 0).
TEST(LowerNode, MomentumIsOneStatementPerOutput) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["ai.onnx.preview.training" : 1]>
    g (float r, int64 t, float[3] x, float[3] g, float[3] v) => (float[3] xn, float[3] vn) {
      xn, vn = ai.onnx.preview.training.Momentum <alpha = 0.5, beta = 0.25, mode = "nesterov",
          norm_coefficient = 0.0> (r, t, x, g, v)
    })"),
            "kernel k\n"
            "  in b0: f32[3]\n"
            "  in b1: f32[3]\n"
            "  in b2: f32[3]\n"
            "  in b3: i64[]\n"
            "  in b4: f32[]\n"
            "  out b5: f32[3]\n"
            "  out b6: f32[3]\n"
            "  x_new[i0 < 3]:\n"
            "    let %4 = ((0 * b0[i0]) + b1[i0])\n"
            "    let %7 = (0.5 * b2[i0])\n"
            "    let %8 = 1:f32\n"
            "    let %9 = 0.25:f32\n"
            "    let %15 = (%7 + (select((b3[] > 0), %9, %8) * %4))\n"
            "    let %18 = (%4 + (0.5 * %15))\n"
            "    b5[i0] = (b0[i0] - (b4[] * %18))\n"
            "  v_new[i0 < 3]:\n"
            "    let %4 = ((0 * b0[i0]) + b1[i0])\n"
            "    let %7 = (0.5 * b2[i0])\n"
            "    let %8 = 1:f32\n"
            "    let %9 = 0.25:f32\n"
            "    b6[i0] = (%7 + (select((b3[] > 0), %9, %8) * %4))\n");
}

// With ratio 0, training-mode Dropout keeps every element: a copy and an all-true mask.
TEST(LowerNode, TrainingDropoutWithRatioZeroIsACopy) {
  EXPECT_EQ(lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y, bool[3] m) {
      r = Constant <value = float {0.0}> ()
      t = Constant <value = bool {1}> ()
      y, m = Dropout (x, r, t)
    })"),
            "kernel k\n"
            "  in b0: f32[3]\n"
            "  out b1: f32[3]\n"
            "  out b2: bool[3]\n"
            "  Dropout[i0 < 3]: b1[i0] = b0[i0]\n"
            "  mask[i0 < 3]: b2[i0] = 1\n");
}

TEST(LowerNode, TrainingDropoutWithARatioIsRefused) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x) => (float[3] y) {
      r = Constant <value = float {0.5}> ()
      t = Constant <value = bool {1}> ()
      y = Dropout (x, r, t)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  Result<LoweredNode> r = lower_node(*g.nodes().back(), "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("draws random masks"), std::string::npos);
}

// Det unrolls the elimination per column: the last column only folds its pivot in.
TEST(LowerNode, DetUnrollsTheEliminationPerColumn) {
  std::string k = lowered(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3, 2, 2] x) => (float[3] y) {
      y = Det (x)
    })");
  for (const char* s :
       {"pivot0[", "swap_down0[", "eliminate0[i0 < 3, i1 < 1, i2 < 1]", "fold_pivot1["})
    EXPECT_NE(k.find(s), std::string::npos) << s << "\n" << k;
  EXPECT_EQ(k.find("eliminate1"), std::string::npos) << k;
}

TEST(LowerNode, DetRefusesLargeMatrices) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[17, 17] x) => (float y) {
      y = Det (x)
    })");
  Result<LoweredNode> r = lower_node(*g.nodes().back(), "k");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("up to 16 rows"), std::string::npos);
}

} // namespace
} // namespace weft::kernel
