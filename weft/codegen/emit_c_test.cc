#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/emit_c.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::codegen {
namespace {

// The kernel function, without the dialect's prelude.
std::string function_of(const kernel::Kernel& k) {
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  Result<std::string> src = emit_kernel(k, s->loops, Dialect::kCpu);
  EXPECT_TRUE(src.ok()) << src.status().to_string();
  return src->substr(src->find("// kernel"));
}

TEST(EmitC, RowSumGolden) {
  EXPECT_EQ(function_of(testing::row_sum_kernel(Dim::symbol("N"), 64)),
            R"(// kernel row_sum
extern "C" void weft_row_sum(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // x
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // y
  const int64_t s0 = extents[0];  // N
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 < s0); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b1[c0] = t0;
    }
    {  // accumulate in a register
      float acc = b1[c0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {  // reduction
        {  // update
          const float t0 = b0[c0 * 64 + c1];
          acc = acc + t0;
        }
      }
      b1[c0] = acc;
    }
  }
}
)");
}

TEST(EmitC, BroadcastIndexAndAllReduction) {
  std::string bias = function_of(testing::bias_add_kernel(Dim::symbol("B"), 16));
  EXPECT_NE(bias.find("const float t1 = b1[c1];"), std::string::npos) << bias;
  EXPECT_NE(bias.find("b2[c0 * 16 + c1] = t2;"), std::string::npos) << bias;
  std::string max = function_of(testing::all_max_kernel(7));
  EXPECT_NE(max.find("static_cast<float>(-INFINITY)"), std::string::npos) << max;
  // max accumulates in a register, in order (no simd reduction), so that NaN propagates.
  EXPECT_NE(max.find("acc = weft_max(acc, t0);"), std::string::npos) << max;
  EXPECT_EQ(max.find("omp simd"), std::string::npos) << max;
}

TEST(EmitC, IndirectLoadWrapsAndClampsItsIndex) {
  std::string gather = function_of(testing::gather_rows_kernel(5, 8, 3));
  EXPECT_NE(gather.find("const int64_t t0 = b1[c0];"), std::string::npos) << gather;
  EXPECT_NE(gather.find("const float t1 = b0[weft_wrap_index(t0, 5) * 8 + c1];"), std::string::npos)
      << gather;
}

// A scatter's target moves with the data: it combines in memory, not in a register.
TEST(EmitC, IndirectWriteCombinesInPlace) {
  std::string scatter = function_of(testing::scatter_add_rows_kernel(5, 8, 3));
  EXPECT_NE(scatter.find("b2[weft_wrap_index(t0, 5) * 8 + c1] = b2[weft_wrap_index(t0, 5) * 8 + "
                         "c1] + t1;"),
            std::string::npos)
      << scatter;
  EXPECT_EQ(scatter.find("acc"), std::string::npos) << scatter;
}

TEST(EmitC, KernelSymbolsAreSorted) {
  kernel::Kernel k = testing::bias_add_kernel(Dim::symbol("rows"), Dim::symbol("cols"));
  EXPECT_EQ(kernel_symbols(k), (std::vector<std::string>{"cols", "rows"}));
}

} // namespace
} // namespace weft::codegen
