#include <gtest/gtest.h>

#include "weft/runtime/cuda/restrict_check.h"

namespace weft::runtime::cuda {
namespace {

// The shape of the softmax part that an H100 ran wrong: lane 0 stores the row's max and sum
// into b2 and b3, the group's lanes load them after __syncwarp.
std::string softmax_part(const std::string& b2, const std::string& b3) {
  return "// launch weft_k0_Softmax_p0 block=256 grid=device\n"
         "extern \"C\" __global__ void __launch_bounds__(256) weft_k0_Softmax_p0(const float* "
         "__restrict__ b0, float* __restrict__ b1, float* " +
         b2 + "b2, float* " + b3 +
         "b3) {\n"
         "  for (int64_t weft_p = weft_first; weft_p < 10; weft_p += weft_groups) {\n"
         "    if (weft_lane == 0) {\n"
         "      b2[i0] = -INFINITY;\n"
         "    }\n"
         "    __syncwarp(weft_mask);\n"
         "    b3[i0] += b0[i0 * 20 + i1];\n"
         "    __syncwarp(weft_mask);\n"
         "    b1[i0 * 20 + i1] = expf(b0[i0 * 20 + i1] - b2[i0]) / b3[i0];\n"
         "  }\n"
         "}\n";
}

TEST(RestrictCheck, RefusesARestrictBufferThatLanesShare) {
  Status s = check_restrict(softmax_part("__restrict__ ", ""));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("weft_k0_Softmax_p0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("b2"), std::string::npos) << s.message();
  // A compound assignment both loads and stores.
  EXPECT_FALSE(check_restrict(softmax_part("", "__restrict__ ")).ok());
}

TEST(RestrictCheck, AcceptsSharedBuffersWithoutRestrict) {
  // Inputs only loaded and outputs only stored keep __restrict__.
  EXPECT_TRUE(check_restrict(softmax_part("", "")).ok());
}

TEST(RestrictCheck, AnAtomicAddressIsALoadAndAStore) {
  std::string src = "extern \"C\" __global__ void __launch_bounds__(256) f(const float* "
                    "__restrict__ b0, float* __restrict__ b1) {\n"
                    "  atomicAdd(&b1[0], b0[threadIdx.x]);\n"
                    "  __threadfence();\n"
                    "}\n";
  EXPECT_FALSE(check_restrict(src).ok());
}

// A vector load's address (and its alignment check) only loads; launch bounds that ask for
// blocks per SM are still a signature the check reads.
TEST(RestrictCheck, AVectorLoadAddressIsALoad) {
  std::string src = "extern \"C\" __global__ void __launch_bounds__(256, 8) f(const float* "
                    "__restrict__ b0, float* __restrict__ b1) {\n"
                    "  if (weft_aligned16(&b0[0])) acc += weft_load4(&b0[4 * i]).x;\n"
                    "  __syncthreads();\n"
                    "  b1[0] = acc;\n"
                    "}\n";
  EXPECT_TRUE(check_restrict(src).ok());
  // An output checked for alignment and stored as float4 (a row held in registers) is stored
  // only, and a comment that names it does not use it: LayerNorm's y, which the check refused
  // on an H200.
  std::string stored = src;
  stored.replace(stored.find("  b1[0] = acc;"), 13,
                 "  {  // store b1[4 * i] by quads\n"
                 "  if (weft_aligned16(&b1[0])) weft_store4(&b1[4 * i], a, b, c, d);");
  EXPECT_TRUE(check_restrict(stored).ok()) << check_restrict(stored).message();
  std::string shared = src;
  shared.replace(shared.find("b1[0] = acc"), 5, "b0[0]");
  shared.replace(shared.find("const float* __restrict__ b0"), 28, "float* __restrict__ b0");
  Status s = check_restrict(shared);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("b0"), std::string::npos) << s.message();
}

TEST(RestrictCheck, WithoutABarrierThreadsShareNothing) {
  std::string src = "extern \"C\" __global__ void __launch_bounds__(256) f(float* __restrict__ "
                    "b1) {\n"
                    "  b1[threadIdx.x] = b1[threadIdx.x] * 2.0f;\n"
                    "}\n";
  EXPECT_TRUE(check_restrict(src).ok());
}

} // namespace
} // namespace weft::runtime::cuda
