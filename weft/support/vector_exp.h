// exp, tanh and the logistic sigmoid for f32 that GCC vectorizes, for host code that runs
// them over long rows (the attention call's softmax, the recurrent call's gates). The
// generated kernels carry the same algorithms (codegen/dialect.cc: weft_exp_in_range,
// weft_shifted_exp, weft_tanh and the sigmoid as 1 / (1 + weft_exp(-x)), where their
// derivations and errors are written); tests hold them to float64's within 2 ulp
// (vector_exp_test.cc, kernel_library_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace weft {

// Inlined always: a call per element leaves the caller's loop scalar (GCC had stopped inlining
// them into the recurrent call's gate functions, 20% of a step).
#define WEFT_VECTOR_INLINE __attribute__((always_inline)) inline

WEFT_VECTOR_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

WEFT_VECTOR_INLINE float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// x = n ln2 + r: sets r and q (e^r = 1 + r q) and returns y, whose low bits hold n.
WEFT_VECTOR_INLINE float exp_reduce(float x, float* r, float* q) {
  float y = x * 1.44269504088896341f + 12582912.0f, fn = y - 12582912.0f;
  *r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  *q = ((((1.3843654e-3f * *r + 8.3741555e-3f) * *r + 4.1668002e-2f) * *r + 1.6666432e-1f) * *r +
        4.9999994e-1f) *
           *r +
       1.0f;
  return y;
}

WEFT_VECTOR_INLINE float exp_in_range(float x) {
  float r, q, y = exp_reduce(x, &r, &q);
  return bits_float(float_bits(r * q + 1.0f) + (float_bits(y) << 23));
}

// tanh: a + a^3 P(a^2) below 0.625, else e / (e + 2) with e = expm1(2a), on a = |x| (capped
// at 9.5, where the ratio rounds to 1), the sign put back; NaN through.
WEFT_VECTOR_INLINE float vector_tanh(float x) {
  uint32_t sign = float_bits(x) & 0x80000000u;
  float a = bits_float(float_bits(x) ^ sign), z = a * a;
  float p = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
              1.33314422036e-1f) *
                 z -
             3.33332819422e-1f) *
                z * a +
            a;
  float r, q, y = exp_reduce(2.0f * (a > 9.5f ? 9.5f : a), &r, &q);
  float s = bits_float(float_bits(1.0f) + (float_bits(y) << 23));
  float e = s * (r * q) + (s - 1.0f);
  float t = a < 0.625f ? p : e / (e + 2.0f);
  return bits_float(float_bits(t) | sign);
}

// 1 / (1 + e^-x), with -x capped into exp_in_range's range (below -87 the result rounds to
// 1, above 87 to 1e-38 or less); NaN through.
WEFT_VECTOR_INLINE float vector_sigmoid(float x) {
  float m = std::min(std::max(-x, -87.0f), 87.0f); // (min and max: two instructions)
  float s = 1.0f / (1.0f + exp_in_range(m));
  return x != x ? x : s;
}

// exp(x) for x <= 88.7 (x less the maximum of its row): 0 below FLT_MIN's logarithm, NaN
// through.
WEFT_VECTOR_INLINE float shifted_exp(float x) {
  bool in = x >= -87.33654f;
  float e = exp_in_range(in ? x : 0.0f);
  float out = x < -87.33654f ? 0.0f : x;
  return in ? e : out;
}

} // namespace weft
