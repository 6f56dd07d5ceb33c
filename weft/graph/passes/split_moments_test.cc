#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/split_moments.h"
#include "weft/graph/verify_graph.h"

namespace weft {
namespace {

using testing::graph_from_text;
using testing::print_body;

std::string split(const std::string& model) {
  Graph g = graph_from_text(model);
  EXPECT_TRUE(fold_constants(g).ok());
  EXPECT_TRUE(canonicalize(g).ok());
  Status s = split_moments(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(eliminate_dead_code(g).ok());
  Status v = verify_graph(g, "split_moments");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return print_body(g);
}

// BatchNorm's training statistics over N, H and W of NCHW: per-row moments over H and W
// (256 elements), then the mean of the row means and the mean of the row variances plus
// the rows' squared shifts.
TEST(SplitMoments, BatchStatisticsBecomePerRowMomentsCombined) {
  EXPECT_EQ(split(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[8, 4, 16, 16] x) => (float[1, 4, 1, 1] m, float[4] v) {
      m = ReduceMean <axes = [0, 2, 3]> (x)
      d = Sub(x, m)
      s = Mul(d, d)
      v = ReduceMean <axes = [0, 2, 3], keepdims = 0> (s)
    })"),
            "  input %x: f32[8,4,16,16]\n"
            "  node ReduceMean_0_ReduceMean: %ReduceMean_0_ReduceMean: f32[8,4,1,1] = "
            "ReduceMean(%x) {axes=[2, 3], "
            "keepdims=1, noop_with_empty_axes=0}\n"
            "  node ReduceMean_0_Sub: %ReduceMean_0_Sub: f32[8,4,16,16] = Sub(%x, "
            "%ReduceMean_0_ReduceMean)\n"
            "  node ReduceMean_0_Mul: %ReduceMean_0_Mul: f32[8,4,16,16] = Mul(%ReduceMean_0_Sub, "
            "%ReduceMean_0_Sub)\n"
            "  node ReduceMean_0_ReduceMean_1: %ReduceMean_0_ReduceMean_1: f32[8,4,1,1] = "
            "ReduceMean(%ReduceMean_0_Mul) "
            "{axes=[2, 3], keepdims=1, noop_with_empty_axes=0}\n"
            "  node ReduceMean_0: %m: f32[1,4,1,1] = ReduceMean(%ReduceMean_0_ReduceMean) "
            "{axes=[0, 2, 3], "
            "keepdims=1, noop_with_empty_axes=0}\n"
            "  node ReduceMean_3_Sub: %ReduceMean_3_Sub: f32[8,4,1,1] = "
            "Sub(%ReduceMean_0_ReduceMean, %m)\n"
            "  node ReduceMean_3_Mul: %ReduceMean_3_Mul: f32[8,4,1,1] = Mul(%ReduceMean_3_Sub, "
            "%ReduceMean_3_Sub)\n"
            "  node ReduceMean_3_Add: %ReduceMean_3_Add: f32[8,4,1,1] = "
            "Add(%ReduceMean_0_ReduceMean_1, %ReduceMean_3_Mul)\n"
            "  node ReduceMean_3: %v: f32[4] = ReduceMean(%ReduceMean_3_Add) {axes=[0, 2, 3], "
            "keepdims=0, "
            "noop_with_empty_axes=0}\n"
            "  output %m: f32[1,4,1,1]\n"
            "  output %v: f32[4]\n");
}

// Pow(d, 2) is a square too.
TEST(SplitMoments, PowOfTwoIsASquare) {
  std::string body = split(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[8, 4, 64] x) => (float[1, 4, 1] v) {
      m = ReduceMean <axes = [0, 2]> (x)
      d = Sub(x, m)
      two = Constant <value = float {2}> ()
      s = Pow(d, two)
      v = ReduceMean <axes = [0, 2]> (s)
    })");
  EXPECT_NE(body.find("ReduceMean(%x) {axes=[2]"), std::string::npos) << body;
  EXPECT_EQ(body.find("Pow("), std::string::npos) << body;
}

// Left alone: axes that are one trailing run already (LayerNorm), no trailing run (a column
// variance), rows under 64 elements, one row per channel, and a mean of another tensor.
TEST(SplitMoments, LeavesWhatItCannotSplitOrWhatWouldNotGain) {
  auto unchanged = [](const std::string& shape, const std::string& axes, const std::string& x2) {
    std::string model = R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float)" + shape +
                        R"( x, float)" + shape + R"( x2) => (float[K] v) {
        m = ReduceMean <axes = )" +
                        axes + R"(> ()" + x2 + R"()
        d = Sub(x, m)
        s = Mul(d, d)
        v = ReduceMean <axes = )" +
                        axes + R"(, keepdims = 0> (s)
      })";
    Graph g = graph_from_text(model);
    EXPECT_TRUE(canonicalize(g).ok());
    std::string before = print_body(g);
    EXPECT_TRUE(split_moments(g).ok());
    EXPECT_EQ(print_body(g), before) << shape << " " << axes;
  };
  unchanged("[8, 4, 256]", "[1, 2]", "x");
  unchanged("[256, 4]", "[0]", "x");
  unchanged("[8, 4, 32]", "[0, 2]", "x");
  unchanged("[1, 4, 256]", "[0, 2]", "x");
  unchanged("[8, 4, 256]", "[0, 2]", "x2");
}

} // namespace
} // namespace weft
