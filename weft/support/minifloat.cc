#include "weft/support/minifloat.h"

#include <bit>
#include <cmath>
#include <limits>

namespace weft {

namespace {
uint32_t all_ones(int bits) { return (1u << bits) - 1; }
} // namespace

float minifloat_max(MiniFloat f) {
  // The largest exponent field holds finite values except in kIeee; in kFiniteNan the
  // all-ones mantissa there is NaN.
  int top = static_cast<int>(all_ones(f.exponent_bits)) - (f.kind == MiniFloatKind::kIeee ? 1 : 0);
  uint32_t mantissa = (2u << f.mantissa_bits) - (f.kind == MiniFloatKind::kFiniteNan ? 2 : 1);
  return std::ldexp(static_cast<float>(mantissa), top - f.bias - f.mantissa_bits);
}

float minifloat_to_float(uint8_t bits, MiniFloat f) {
  uint32_t v = bits;
  uint32_t sign_bit = 1u << (f.exponent_bits + f.mantissa_bits);
  uint32_t e = (v >> f.mantissa_bits) & all_ones(f.exponent_bits);
  uint32_t m = v & all_ones(f.mantissa_bits);
  float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.kind == MiniFloatKind::kUnsignedZeroNan && v == sign_bit) return nan;
  if (f.kind == MiniFloatKind::kFiniteNan && e == all_ones(f.exponent_bits) &&
      m == all_ones(f.mantissa_bits))
    return nan;
  bool negative = (v & sign_bit) != 0;
  if (f.kind == MiniFloatKind::kIeee && e == all_ones(f.exponent_bits)) {
    if (m != 0) return nan;
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  }
  float r = e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.mantissa_bits)
                   : std::ldexp(static_cast<float>(m | (1u << f.mantissa_bits)),
                                static_cast<int>(e) - f.bias - f.mantissa_bits);
  return negative ? -r : r;
}

uint8_t float_to_minifloat(float value, MiniFloat f) {
  uint32_t sign_bit = 1u << (f.exponent_bits + f.mantissa_bits);
  uint32_t sign = std::signbit(value) ? sign_bit : 0;
  uint32_t nan = f.kind == MiniFloatKind::kUnsignedZeroNan ? sign_bit
                 : f.kind == MiniFloatKind::kIeee
                     ? sign | (all_ones(f.exponent_bits) << f.mantissa_bits) | 1u
                     : sign | all_ones(f.exponent_bits + f.mantissa_bits);
  float max = minifloat_max(f);
  auto overflow = [&]() -> uint8_t {
    switch (f.kind) {
      case MiniFloatKind::kIeee:
        return static_cast<uint8_t>(sign | (all_ones(f.exponent_bits) << f.mantissa_bits));
      case MiniFloatKind::kFinite:
        return static_cast<uint8_t>(sign | all_ones(f.exponent_bits + f.mantissa_bits));
      default: return static_cast<uint8_t>(nan);
    }
  };
  if (std::isnan(value)) return f.kind == MiniFloatKind::kFinite ? 0 : static_cast<uint8_t>(nan);
  float a = std::fabs(value);
  if (a > 2 * max) return overflow();
  int min_exponent = 1 - f.bias;
  int e = std::ilogb(a); // a == 0 gives a large negative value
  if (e < min_exponent) e = min_exponent;
  float quantum = std::ldexp(1.0f, e - f.mantissa_bits);
  float r = std::nearbyint(a / quantum) * quantum; // exact: quantum is a power of two
  if (r > max) return overflow();
  if (r == 0) return static_cast<uint8_t>(f.kind == MiniFloatKind::kUnsignedZeroNan ? 0 : sign);
  e = std::ilogb(r);
  if (e < min_exponent)
    return static_cast<uint8_t>(
        sign | static_cast<uint32_t>(r / std::ldexp(1.0f, min_exponent - f.mantissa_bits)));
  uint32_t mantissa =
      static_cast<uint32_t>(r / std::ldexp(1.0f, e - f.mantissa_bits)) - (1u << f.mantissa_bits);
  return static_cast<uint8_t>(sign | (static_cast<uint32_t>(e + f.bias) << f.mantissa_bits) |
                              mantissa);
}

float e8m0_to_float(uint8_t bits) {
  if (bits == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

uint8_t float_to_e8m0(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint32_t e = (f >> 23) & 0xffu;
  if (e == 0xff) return 0xff;
  if ((f & 0x7fffffu) != 0 && e != 0xfe) ++e;
  return static_cast<uint8_t>(e);
}

} // namespace weft
