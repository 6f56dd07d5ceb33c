// Lowering goldens: one-node models, one per op of kernel/lower_node.cc's table (and some
// elementwise ops), lowered by the compile driver's stage without fusion, must print the
// kernels in tests/golden/lowering/OP.txt; each golden must read back as it is printed.
// scripts/update-goldens.sh rewrites them (WEFT_UPDATE_GOLDENS=1).
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/goldens.h"
#include "tests/testing/onnx_text.h"
#include "weft/driver/pipeline.h"
#include "weft/driver/stages.h"
#include "weft/kernel/kernel_text.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

const fs::path kLoweringDir = fs::path(WEFT_SOURCE_DIR) / "tests" / "golden" / "lowering";

struct OneNode {
  const char* op; // the golden's name
  int opset;
  const char* graph; // ONNX text of the graph: "(inputs) => (outputs) { nodes }"
};

const OneNode kModels[] = {
    // Elementwise.
    {"Add", 13, "(float[2, 3] a, float[3] b) => (float[2, 3] y) { y = Add(a, b) }"},
    {"Div", 13, "(int32[4] a, int32[4] b) => (int32[4] y) { y = Div(a, b) }"},
    {"Relu", 13, "(float[2, 3] x) => (float[2, 3] y) { y = Relu(x) }"},
    {"LeakyRelu", 13, "(float[4] x) => (float[4] y) { y = LeakyRelu <alpha = 0.1> (x) }"},
    {"Sigmoid", 13, "(float16[4] x) => (float16[4] y) { y = Sigmoid(x) }"},
    {"Erf", 13, "(float[4] x) => (float[4] y) { y = Erf(x) }"},
    {"Where", 13,
     "(bool[2, 3] c, float[2, 3] a, float[3] b) => (float[2, 3] y) { y = Where(c, a, b) }"},
    {"Less", 13, "(float[4] a, float[4] b) => (bool[4] y) { y = Less(a, b) }"},
    {"Cast", 13, "(float[4] x) => (int8[4] y) { y = Cast <to = 3> (x) }"},
    {"Clip", 13,
     "(float[4] x) => (float[4] y) { lo = Constant <value = float {-1.0}> () "
     "hi = Constant <value = float {6.0}> () y = Clip(x, lo, hi) }"},
    {"BitShift", 13,
     "(uint8[4] x, uint8[4] s) => (uint8[4] y) { y = BitShift <direction = \"LEFT\"> (x, s) }"},
    {"IsNaN", 13, "(float[4] x) => (bool[4] y) { y = IsNaN(x) }"},
    {"Mod", 13, "(float[4] a, float[4] b) => (float[4] y) { y = Mod <fmod = 1> (a, b) }"},
    // Reductions and normalizations.
    {"ReduceSum", 13,
     "(float[N, 8] x) => (float[N] y) { axes = Constant <value = int64[1] {1}> () "
     "y = ReduceSum <keepdims = 0> (x, axes) }"},
    {"ReduceMean", 13,
     "(float[4, N, 3] x) => (float[4, 1, 3] y) { y = ReduceMean <axes = [1]> (x) }"},
    {"ReduceMax", 13,
     "(float[4, 6] x) => (float[6] y) { y = ReduceMax <axes = [0], keepdims = 0> (x) }"},
    {"ReduceL2", 13, "(float[4, 6] x) => (float[4, 1] y) { y = ReduceL2 <axes = [1]> (x) }"},
    {"ReduceLogSumExp", 13,
     "(float[4, 6] x) => (float[4, 1] y) { y = ReduceLogSumExp <axes = [1]> (x) }"},
    {"ArgMax", 13, "(float[4, 6] x) => (int64[4, 1] y) { y = ArgMax <axis = 1> (x) }"},
    {"Softmax", 13, "(float[N, 16] x) => (float[N, 16] y) { y = Softmax <axis = -1> (x) }"},
    {"LogSoftmax", 13, "(float[4, 16] x) => (float[4, 16] y) { y = LogSoftmax <axis = 1> (x) }"},
    {"LayerNormalization", 17,
     "(float[N, 8] x, float[8] s, float[8] b) => (float[N, 8] y) "
     "{ y = LayerNormalization <axis = -1, epsilon = 0.001> (x, s, b) }"},
    {"InstanceNormalization", 13,
     "(float[2, 3, 5] x, float[3] s, float[3] b) => (float[2, 3, 5] y) "
     "{ y = InstanceNormalization(x, s, b) }"},
    {"BatchNormalization", 15,
     "(float[2, 3, 4] x, float[3] s, float[3] b, float[3] m, float[3] v) => (float[2, 3, 4] y) "
     "{ y = BatchNormalization(x, s, b, m, v) }"},
    // Movement.
    {"Transpose", 13,
     "(float[2, N, 4] x) => (float[4, 2, N] y) { y = Transpose <perm = [2, 0, 1]> (x) }"},
    {"Slice", 13,
     "(float[6, 8] x) => (float[2, 3] y) { st = Constant <value = int64[2] {1, 1}> () "
     "en = Constant <value = int64[2] {5, 7}> () ax = Constant <value = int64[2] {0, 1}> () "
     "sp = Constant <value = int64[2] {2, 2}> () y = Slice(x, st, en, ax, sp) }"},
    {"Concat", 13,
     "(float[2, 3] a, float[2, 5] b) => (float[2, 8] y) { y = Concat <axis = 1> (a, b) }"},
    {"Split", 13,
     "(float[2, 6] x) => (float[2, 2] a, float[2, 4] b) { s = Constant <value = int64[2] {2, 4}> "
     "() "
     "a, b = Split <axis = 1> (x, s) }"},
    {"Tile", 13,
     "(float[2, 3] x) => (float[4, 9] y) { r = Constant <value = int64[2] {2, 3}> () "
     "y = Tile(x, r) }"},
    {"Pad", 13,
     "(float[2, 3] x) => (float[2, 7] y) { p = Constant <value = int64[4] {0, 2, 0, 2}> () "
     "y = Pad <mode = \"edge\"> (x, p) }"},
    {"DepthToSpace", 13,
     "(float[1, 8, 2, 3] x) => (float[1, 2, 4, 6] y) { y = DepthToSpace <blocksize = 2> (x) }"},
    {"Trilu", 14, "(float[4, 5] x) => (float[4, 5] y) { y = Trilu <upper = 0> (x) }"},
    // Gathers and scatters.
    {"Gather", 13,
     "(float[5, 4] x, int64[3] i) => (float[3, 4] y) { y = Gather <axis = 0> (x, i) }"},
    {"GatherElements", 13,
     "(float[3, 4] x, int64[3, 2] i) => (float[3, 2] y) { y = GatherElements <axis = 1> (x, i) }"},
    {"GatherND", 13, "(float[3, 4, 5] x, int64[2, 2] i) => (float[2, 5] y) { y = GatherND(x, i) }"},
    {"ScatterElements", 16,
     "(float[3, 4] x, int64[3, 2] i, float[3, 2] u) => (float[3, 4] y) "
     "{ y = ScatterElements <axis = 1, reduction = \"add\"> (x, i, u) }"},
    {"ScatterND", 13,
     "(float[4, 5] x, int64[2, 1] i, float[2, 5] u) => (float[4, 5] y) { y = ScatterND(x, i, u) }"},
    {"OneHot", 11,
     "(int64[3] i, float[2] v) => (float[3, 5] y) { d = Constant <value = int64 {5}> () "
     "y = OneHot(i, d, v) }"},
    // Products.
    {"MatMul", 13, "(float[2, 3, 4] a, float[4, 5] b) => (float[2, 3, 5] y) { y = MatMul(a, b) }"},
    {"Gemm", 13,
     "(float[4, 3] a, float[5, 4] b, float[5] c) => (float[3, 5] y) "
     "{ y = Gemm <transA = 1, transB = 1, alpha = 0.5> (a, b, c) }"},
    {"MatMulInteger", 13,
     "(uint8[2, 3] a, int8[3, 4] b) => (int32[2, 4] y) { y = MatMulInteger(a, b) }"},
    // Not a matrix product (canonicalize makes those MatMuls): i is summed within a alone.
    {"Einsum", 13,
     "(float[2, 3] a, float[3, 4] b) => (float[4, 3] y) { y = Einsum <equation = \"ij,jk->kj\"> "
     "(a, b) }"},
    {"Conv", 13,
     "(float[1, 2, 5, 5] x, float[4, 2, 3, 3] w, float[4] b) => (float[1, 4, 3, 3] y) "
     "{ y = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b) }"},
    {"ConvTranspose", 13,
     "(float[1, 2, 3, 3] x, float[2, 3, 2, 2] w) => (float[1, 3, 6, 6] y) "
     "{ y = ConvTranspose <strides = [2, 2]> (x, w) }"},
    // Windows.
    {"MaxPool", 13,
     "(float[1, 2, 6, 6] x) => (float[1, 2, 3, 3] y) "
     "{ y = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x) }"},
    {"AveragePool", 13,
     "(float[1, 2, 5, 5] x) => (float[1, 2, 5, 5] y) "
     "{ y = AveragePool <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x) }"},
    {"GlobalAveragePool", 13,
     "(float[1, 3, N, 4] x) => (float[1, 3, 1, 1] y) { y = GlobalAveragePool(x) }"},
    {"LRN", 13, "(float[1, 5, 2, 2] x) => (float[1, 5, 2, 2] y) { y = LRN <size = 3> (x) }"},
    {"CumSum", 14,
     "(float[3, 4] x) => (float[3, 4] y) { a = Constant <value = int64 {1}> () "
     "y = CumSum <reverse = 1> (x, a) }"},
    {"TopK", 13,
     "(float[3, 6] x) => (float[3, 2] v, int64[3, 2] i) { k = Constant <value = int64[1] {2}> () "
     "v, i = TopK <axis = 1> (x, k) }"},
    // Resize.
    {"ResizeLinear", 13,
     "(float[1, 1, 2, 3] x) => (float[1, 1, 4, 6] y) "
     "{ s = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> () "
     "y = Resize <mode = \"linear\"> (x, , s) }"},
    {"ResizeNearest", 13,
     "(float[1, 1, 2, 3] x) => (float[1, 1, 4, 6] y) "
     "{ s = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> () "
     "y = Resize <mode = \"nearest\"> (x, , s) }"},
    // Quantization.
    {"QuantizeLinear", 13,
     "(float[2, 3] x, float s, uint8 z) => (uint8[2, 3] y) { y = QuantizeLinear(x, s, z) }"},
    {"DequantizeLinear", 13,
     "(int8[2, 3] x, float[3] s, int8[3] z) => (float[2, 3] y) "
     "{ y = DequantizeLinear <axis = 1> (x, s, z) }"},
    {"DynamicQuantizeLinear", 13,
     "(float[2, 3] x) => (uint8[2, 3] y, float s, uint8 z) { y, s, z = DynamicQuantizeLinear(x) }"},
    {"QLinearMatMul", 13,
     "(uint8[2, 3] a, float as, uint8 az, uint8[3, 4] b, float bs, uint8 bz, float ys, uint8 yz) "
     "=> (uint8[2, 4] y) { y = QLinearMatMul(a, as, az, b, bs, bz, ys, yz) }"},
    // Positional.
    {"EyeLike", 13, "(float[3, 4] x) => (float[3, 4] y) { y = EyeLike <k = 1> (x) }"},
    {"Range", 13,
     "(float s, float d) => (float[5] y) { l = Constant <value = float {5.0}> () "
     "y = Range(s, l, d) }"},
    // Others.
    {"Det", 13, "(float[2, 3, 3] x) => (float[2] y) { y = Det(x) }"},
    {"NegativeLogLikelihoodLoss", 13,
     "(float[2, 3] x, int64[2] t) => (float y) "
     "{ y = NegativeLogLikelihoodLoss <reduction = \"mean\"> (x, t) }"},
    {"SoftmaxCrossEntropyLoss", 13,
     "(float[2, 3] x, int64[2] t) => (float y) { y = SoftmaxCrossEntropyLoss(x, t) }"},
};

// The kernels of "m" after lowering (no fusion), printed one after another.
Result<std::string> lowered_kernels(const OneNode& m) {
  std::string model =
      fmt::format("<ir_version: 8, opset_import: [\"\" : {}]>\ng {}", m.opset, m.graph);
  WEFT_ASSIGN_OR_RETURN(Graph g, run_graph_pipeline(ModelSource::memory(
                                     testing::model_bytes(model), std::string(m.op) + ".onnx")));
  WEFT_ASSIGN_OR_RETURN(std::vector<fusion::Step> steps, stages::lower_graph(g, {}));
  std::string out;
  for (const fusion::Step& s : steps) {
    for (const fusion::FusedKernel& k : s.kernels) {
      std::string text = kernel::print_kernel(k.bound.kernel);
      // The text holds the kernel: it reads back to the same fields.
      WEFT_ASSIGN_OR_RETURN(kernel::Kernel parsed, kernel::parse_kernel(text));
      if (std::string d = kernel::kernel_difference(k.bound.kernel, parsed); !d.empty())
        return Status::error(fmt::format("{} does not read back: {}\n{}", m.op, d, text));
      out += (out.empty() ? "" : "\n") + text;
    }
  }
  return out;
}

TEST(LoweringGoldens, KernelsMatchGoldens) {
  for (const OneNode& m : kModels) {
    SCOPED_TRACE(m.op);
    Result<std::string> text = lowered_kernels(m);
    ASSERT_TRUE(text.ok()) << text.status().to_string();
    EXPECT_FALSE(testing::kernel_texts(*text).empty()) << "no kernels";
    testing::check_golden(kLoweringDir / (std::string(m.op) + ".txt"), *text);
  }
}

TEST(LoweringGoldens, GoldensParseBack) {
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(kLoweringDir)) {
    ++files;
    std::string text = testing::read_file(e.path());
    testing::expect_kernels_round_trip(e.path().filename().string(), text);
    std::string reprinted;
    for (const std::string& k : testing::kernel_texts(text))
      reprinted += (reprinted.empty() ? "" : "\n") + k;
    EXPECT_EQ(reprinted, text) << e.path() << " has text that is not a printed kernel";
  }
  EXPECT_GE(files, 40);
}

// The check fails on a one-character change to a golden, and says where.
TEST(LoweringGoldens, OneCharacterChangeIsCaught) {
  std::string golden = testing::read_file(kLoweringDir / "Softmax.txt");
  size_t at = golden.find("+=");
  ASSERT_NE(at, std::string::npos) << golden;
  std::string changed = golden;
  changed[at] = '*';
  std::optional<std::string> diff = testing::golden_mismatch("Softmax.txt", changed, golden);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("Softmax.txt line "), std::string::npos) << *diff;
  EXPECT_NE(diff->find("in k0_Softmax"), std::string::npos) << *diff;
}

} // namespace
} // namespace weft
