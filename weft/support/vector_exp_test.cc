#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/support/vector_exp.h"

namespace weft {
namespace {

// The host's shifted_exp against float64 exp, as kernel_library_test.cc holds the generated
// weft_shifted_exp: within 2 ulp (2.5e-7 relative) of every normal result, 0 where the result
// is below FLT_MIN, NaN through.
TEST(VectorExp, ShiftedExpMatchesFloat64Reference) {
  std::vector<float> x;
  for (double v = -110; v <= 88.7; v += 0.0137)
    x.push_back(static_cast<float>(v));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, -87.33f, -103.9f, -1e9f, -3.4e38f, -inf})
    x.push_back(v);
  for (float v : x) {
    float got = shifted_exp(v), want = static_cast<float>(std::exp(static_cast<double>(v)));
    if (want < std::numeric_limits<float>::min())
      EXPECT_EQ(got, 0.0f) << "x = " << v;
    else
      EXPECT_NEAR(got, want, 2.5e-7 * want) << "x = " << v;
  }
  EXPECT_TRUE(std::isnan(shifted_exp(NAN)));
}

} // namespace
} // namespace weft
