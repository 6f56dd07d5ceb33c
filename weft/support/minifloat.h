// Conversions between f32 and the 8- and 4-bit float formats of ONNX (float8 e4m3fn,
// e4m3fnuz, e5m2, e5m2fnuz, float4 e2m1, and the scale format float8 e8m0), by bit pattern.
// The generated kernels carry the same algorithm (codegen/dialect.cc: weft_mf_encode/decode);
// tests compare the two.
#pragma once

#include <cstdint>

namespace weft {

// Where a format keeps NaN and infinity.
enum class MiniFloatKind : uint8_t {
  kFiniteNan,       // "fn": no infinity; NaN is all ones (e4m3fn)
  kUnsignedZeroNan, // "fnuz": no infinity, no -0; NaN is the sign bit alone (e4m3fnuz, e5m2fnuz)
  kIeee,            // infinity and NaN at the all-ones exponent (e5m2)
  kFinite,          // neither: overflow saturates, NaN becomes 0 (e2m1)
};

struct MiniFloat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  MiniFloatKind kind;
};

inline constexpr MiniFloat kFloat8E4M3FN{4, 3, 7, MiniFloatKind::kFiniteNan};
inline constexpr MiniFloat kFloat8E4M3FNUZ{4, 3, 8, MiniFloatKind::kUnsignedZeroNan};
inline constexpr MiniFloat kFloat8E5M2{5, 2, 15, MiniFloatKind::kIeee};
inline constexpr MiniFloat kFloat8E5M2FNUZ{5, 2, 16, MiniFloatKind::kUnsignedZeroNan};
inline constexpr MiniFloat kFloat4E2M1{2, 1, 1, MiniFloatKind::kFinite};

float minifloat_to_float(uint8_t bits, MiniFloat f);
// Round to nearest even. Overflow gives infinity (kIeee), NaN (kFiniteNan, kUnsignedZeroNan)
// or the largest value (kFinite), as ml_dtypes' conversions (and so ONNX's reference) do;
// ONNX's saturating casts clamp to minifloat_max() first.
uint8_t float_to_minifloat(float value, MiniFloat f);
float minifloat_max(MiniFloat f);

// float8 e8m0: 2^(bits - 127), 0xff is NaN; no sign and no zero.
float e8m0_to_float(uint8_t bits);
// Rounds up (a fraction bumps the exponent) and saturates at 2^127: Cast's defaults.
uint8_t float_to_e8m0(float value);

} // namespace weft
