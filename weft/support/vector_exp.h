// exp for f32 that GCC vectorizes, for host code that runs exp over long rows (the attention
// call's softmax). The generated kernels carry the same algorithm (codegen/dialect.cc:
// weft_exp_in_range and weft_shifted_exp, where its derivation and error are written); tests
// hold both to float64's exp within 2 ulp (vector_exp_test.cc, kernel_library_test.cc).
#pragma once

#include <cstdint>
#include <cstring>

namespace weft {

inline float exp_in_range(float x) {
  auto as_bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  float y = x * 1.44269504088896341f + 12582912.0f, fn = y - 12582912.0f;
  float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  float q = (((1.3843654e-3f * r + 8.3741555e-3f) * r + 4.1668002e-2f) * r + 1.6666432e-1f) * r;
  q = (q + 4.9999994e-1f) * r + 1.0f;
  uint32_t bits = as_bits(r * q + 1.0f) + (as_bits(y) << 23);
  float e;
  std::memcpy(&e, &bits, 4);
  return e;
}

// exp(x) for x <= 88.7 (x less the maximum of its row): 0 below FLT_MIN's logarithm, NaN
// through.
inline float shifted_exp(float x) {
  bool in = x >= -87.33654f;
  float e = exp_in_range(in ? x : 0.0f);
  float out = x < -87.33654f ? 0.0f : x;
  return in ? e : out;
}

} // namespace weft
