#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "weft/support/float16.h"

namespace weft {
namespace {

TEST(Float16, KnownBitPatterns) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);               // largest half
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);                   // overflows to inf
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001); // smallest subnormal
  EXPECT_EQ(half_to_float(0x0001), 5.960464477539063e-08f);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(Float16, RoundTripsEveryHalf) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), bits) << bits;
  }
}

TEST(Float16, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half; ties go to the even pattern.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(BFloat16, RoundTripAndRounding) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
}

} // namespace
} // namespace weft
