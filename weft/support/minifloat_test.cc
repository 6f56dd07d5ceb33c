#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/support/minifloat.h"

namespace weft {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(MiniFloat, KnownBitPatterns) {
  EXPECT_EQ(float_to_minifloat(448.0f, kFloat8E4M3FN), 0x7e); // largest e4m3fn
  EXPECT_EQ(float_to_minifloat(464.0f, kFloat8E4M3FN), 0x7e); // halfway to 480: even
  EXPECT_EQ(float_to_minifloat(470.0f, kFloat8E4M3FN), 0x7f); // overflow: NaN
  EXPECT_EQ(float_to_minifloat(-kInf, kFloat8E4M3FN), 0xff);
  EXPECT_EQ(float_to_minifloat(0x1p-9f, kFloat8E4M3FN), 0x01); // smallest subnormal
  EXPECT_EQ(float_to_minifloat(0.5f, kFloat8E4M3FN), 0x30);
  EXPECT_EQ(float_to_minifloat(-0.0f, kFloat8E4M3FN), 0x80);
  EXPECT_EQ(float_to_minifloat(240.0f, kFloat8E4M3FNUZ), 0x7f); // largest e4m3fnuz
  EXPECT_EQ(float_to_minifloat(-0.0f, kFloat8E4M3FNUZ), 0x00);  // no -0
  EXPECT_EQ(float_to_minifloat(-1e-9f, kFloat8E4M3FNUZ), 0x00);
  EXPECT_EQ(float_to_minifloat(std::nanf(""), kFloat8E4M3FNUZ), 0x80);
  EXPECT_EQ(float_to_minifloat(57344.0f, kFloat8E5M2), 0x7b);
  EXPECT_EQ(float_to_minifloat(1e6f, kFloat8E5M2), 0x7c); // overflow: inf
  EXPECT_EQ(float_to_minifloat(1e6f, kFloat8E5M2FNUZ), 0x80);
  EXPECT_EQ(float_to_minifloat(1e6f, kFloat4E2M1), 0x07);   // saturates at 6
  EXPECT_EQ(float_to_minifloat(-0.25f, kFloat4E2M1), 0x08); // halfway to 0.5: even (-0)
  EXPECT_EQ(float_to_minifloat(2.5f, kFloat4E2M1), 0x04);   // halfway between 2 and 3: 2
  EXPECT_EQ(minifloat_max(kFloat8E4M3FN), 448.0f);
  EXPECT_EQ(minifloat_max(kFloat8E4M3FNUZ), 240.0f);
  EXPECT_EQ(minifloat_max(kFloat8E5M2), 57344.0f);
  EXPECT_EQ(minifloat_max(kFloat4E2M1), 6.0f);
  EXPECT_EQ(minifloat_to_float(0x7c, kFloat8E5M2), kInf);
  EXPECT_TRUE(std::isnan(minifloat_to_float(0x80, kFloat8E5M2FNUZ)));
}

TEST(MiniFloat, RoundTripsEveryCode) {
  for (MiniFloat f : {kFloat8E4M3FN, kFloat8E4M3FNUZ, kFloat8E5M2, kFloat8E5M2FNUZ, kFloat4E2M1}) {
    int codes = 1 << (1 + f.exponent_bits + f.mantissa_bits);
    for (int bits = 0; bits < codes; ++bits) {
      float v = minifloat_to_float(static_cast<uint8_t>(bits), f);
      if (std::isnan(v)) continue;
      ASSERT_EQ(float_to_minifloat(v, f), bits)
          << f.exponent_bits << f.mantissa_bits << " " << bits;
    }
  }
}

TEST(MiniFloat, E8M0RoundsUpAndSaturates) {
  EXPECT_EQ(float_to_e8m0(1.0f), 127);
  EXPECT_EQ(float_to_e8m0(3.0f), 129);       // 4
  EXPECT_EQ(float_to_e8m0(0x1.8p127f), 254); // saturates at 2^127
  EXPECT_EQ(float_to_e8m0(kInf), 0xff);
  EXPECT_EQ(e8m0_to_float(127), 1.0f);
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xff)));
}

} // namespace
} // namespace weft
