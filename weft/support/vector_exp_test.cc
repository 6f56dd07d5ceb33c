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

// tanh and the sigmoid against float64's, over [-30, 30] and the edges: within 2 ulp (the
// sigmoid's relative error where it is above 1e-30), NaN through.
TEST(VectorExp, TanhAndSigmoidMatchFloat64Reference) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x;
  for (double v = -30; v <= 30; v += 0.00731)
    x.push_back(static_cast<float>(v));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 0.625f, -0.625f, 9.5f, 100.0f, -100.0f, inf, -inf})
    x.push_back(v);
  for (float v : x) {
    double d = static_cast<double>(v);
    float tanh_want = static_cast<float>(std::tanh(d));
    EXPECT_NEAR(vector_tanh(v), tanh_want, 2.5e-7 * std::abs(tanh_want) + 1e-38) << "x = " << v;
    float sigmoid_want = static_cast<float>(1 / (1 + std::exp(-d)));
    if (sigmoid_want > 1e-30f)
      EXPECT_NEAR(vector_sigmoid(v), sigmoid_want, 2.5e-7 * sigmoid_want) << "x = " << v;
    else
      EXPECT_LT(vector_sigmoid(v), 1e-30f) << "x = " << v;
  }
  EXPECT_TRUE(std::isnan(vector_tanh(NAN)));
  EXPECT_TRUE(std::isnan(vector_sigmoid(NAN)));
}

} // namespace
} // namespace weft
