#include "weft/codegen/dialect.h"

#include <fmt/format.h>

namespace weft::codegen {

namespace {

// Generated code is self-contained: it is compiled apart from Weft and links to nothing of
// it. A prelude is the dialect's head (types, the WEFT_D qualifier, float bit casts, exp),
// then the helpers both dialects share, then the dialect's tail.

// C++17 with OpenMP, for the system compiler; everything in an anonymous namespace.
constexpr std::string_view kCpuHead = R"(#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

// libm's float functions that Weft has no vector form of (below) have one in glibc's libmvec
// on x86-64. Declared "omp declare simd" here (as glibc's math.h does itself only under
// -ffast-math; outside any namespace, or GCC ignores it), GCC calls their 4-, 8- or 16-lane
// forms from vector loops (-lm links libmvec) instead of a scalar call per element: within 4
// ulp of float64 (tan 3.9, asin 3.0, the others 2.4 or less, over every 13th float).
#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(__clang__)
extern "C" {
#if __GLIBC_PREREQ(2, 22)
#pragma omp declare simd notinbranch
float sinf(float) noexcept;
#pragma omp declare simd notinbranch
float cosf(float) noexcept;
#pragma omp declare simd notinbranch
float powf(float, float) noexcept;
#endif
#if __GLIBC_PREREQ(2, 35)
#pragma omp declare simd notinbranch
float tanf(float) noexcept;
#pragma omp declare simd notinbranch
float asinf(float) noexcept;
#pragma omp declare simd notinbranch
float acosf(float) noexcept;
#pragma omp declare simd notinbranch
float atanf(float) noexcept;
#pragma omp declare simd notinbranch
float sinhf(float) noexcept;
#pragma omp declare simd notinbranch
float coshf(float) noexcept;
#pragma omp declare simd notinbranch
float asinhf(float) noexcept;
#pragma omp declare simd notinbranch
float acoshf(float) noexcept;
#pragma omp declare simd notinbranch
float atanhf(float) noexcept;
#endif
}
#endif
namespace {
// Math is called unqualified, so that one spelling serves every dialect.
using std::abs; using std::acos; using std::acosh; using std::asin; using std::asinh;
using std::atan; using std::atanh; using std::ceil; using std::cos; using std::cosh;
using std::erf; using std::exp; using std::floor; using std::fmod; using std::isinf;
using std::isnan; using std::log; using std::nearbyint; using std::pow; using std::sin;
using std::sinh; using std::sqrt; using std::tan; using std::tanh;
#define WEFT_D inline
WEFT_D float weft_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
WEFT_D uint32_t weft_as_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
// c ? a : b on the bits (Emitter::blended_selects): GCC keeps it out of its if-conversion.
WEFT_D float weft_blend(bool c, float a, float b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return weft_as_float((weft_as_bits(a) & m) | (weft_as_bits(b) & ~m));
}
// exp for f32 that vectorizes (libm's expf does not without fast-math): x = n ln2 + r with
// |r| <= ln2/2 (Cody-Waite), exp(r) = 1 + r q(r) with q of degree 5 (a relative-error minimax
// fit made for Weft), and 2^n added to the result's exponent bits: within 1.05 ulp of every
// normal result (checked over every 3rd float). Results below FLT_MIN (x < -87.34) are 0, as
// in XNNPACK's softmax: a denormal result costs a microcode assist per element (6 ns instead
// of 0.6 here). Out of range the arithmetic runs on 0, or on x itself where GCC drops that
// select (it may under -fno-trapping-math, which Weft builds with; the NaN and overflow this
// leaves for -inf, -1e9 or -3.4e38 measured no slower), and the selects at the end give inf
// above the range, NaN through (both x + inf) and 0 below. Written so that GCC vectorizes it
// even under -ftrapping-math: no std::floor, no float-to-int conversion, no float min/max
// (each leaves the loop scalar or masks every later operation). n is rounded by adding
// 1.5 * 2^23, whose low mantissa bits then hold it: shifted by 23, that float's bits are n << 23.
// weft_exp_reduce sets r and q (e^r = 1 + r q) and returns y; weft_exp_in_range adds n.
WEFT_D float weft_exp_reduce(float x, float* r, float* q) {
  float y = x * 1.44269504088896341f + 12582912.0f, fn = y - 12582912.0f;
  *r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  *q = ((((1.3843654e-3f * *r + 8.3741555e-3f) * *r + 4.1668002e-2f) * *r + 1.6666432e-1f) * *r +
        4.9999994e-1f) * *r + 1.0f;
  return y;
}
WEFT_D float weft_exp_in_range(float x) {
  float r, q, y = weft_exp_reduce(x, &r, &q);
  return weft_as_float(weft_as_bits(r * q + 1.0f) + (weft_as_bits(y) << 23));
}
// kBlend: the final select as a bit blend, for a value that another function with range
// checks takes (exp(exp(x)), log(exp(x)): Emitter::blended_selects), which GCC otherwise
// leaves scalar.
template <bool kBlend> WEFT_D float weft_exp_t(float x) {
  bool in = x >= -87.33654f && x <= 88.72283f;
  float e = weft_exp_in_range(in ? x : 0.0f);
  float out = !(x < 0.0f) ? x + INFINITY : 0.0f;
  return kBlend ? weft_blend(in, e, out) : in ? e : out;
}
WEFT_D float weft_exp(float x) { return weft_exp_t<false>(x); }
WEFT_D float weft_exp_blended(float x) { return weft_exp_t<true>(x); }
// exp(x) for x <= 88.7 (ExprOp::kShiftedExp: x - max(x) in softmax and its kin), without the
// upper half of the range check: 2 compares and 2 masked moves per 16 elements instead of
// 3 and 2. (Spelled "x != x ? x : 0", the NaN case costs GCC 2 compares more.)
WEFT_D float weft_shifted_exp(float x) {
  bool in = x >= -87.33654f;
  float e = weft_exp_in_range(in ? x : 0.0f);
  float out = x < -87.33654f ? 0.0f : x; // NaN through
  return in ? e : out;
}
// erf for f32 that vectorizes (libm's erff does not), in the same style: x * P(x^2) for
// |x| <= 1, else 1 - Q(|x| - 2) with the sign of x, and 1 from 3.92 on (where erf rounds to
// 1). P and Q are weighted least-squares fits made for Weft, Q one of erfc on [1, 3.92] to
// 3e-8 of erf; relative error below 2e-7 (about 2 ulp) everywhere. Both branches are plain
// polynomials: no exp, no division (an earlier tail, 1 - exp(-x^2) * R(1/|x|), cost twice as
// much). NaN passes through.
WEFT_D float weft_erf(float x) {
  float a = x < 0.0f ? -x : x, t = x * x, u = a - 2.0f;
  float p = ((((-5.667873193e-4f * t + 4.927389789e-3f) * t - 2.672086656e-2f) * t + 1.128057763e-1f) * t -
             3.761239052e-1f) * t + 1.128379107f;
  float q = (((((((((((9.055497685e-06f * u - 7.543087850e-05f) * u + 2.039686078e-04f) * u +
                     4.749949585e-05f) * u - 1.520166756e-03f) * u + 3.354370361e-03f) * u -
                  4.976230557e-04f) * u - 1.307105366e-02f) * u + 3.445466980e-02f) * u -
               4.822724685e-02f) * u + 4.133299366e-02f) * u - 2.066672407e-02f) * u + 4.677752964e-03f;
  float tail = a >= 3.92f ? 1.0f : 1.0f - q;
  float signed_tail = x < 0.0f ? -tail : tail;
  return a <= 1.0f ? x * p : signed_tail;
}
// tanh for f32 that vectorizes (libm's tanhf is a scalar call, ~33 ns per element here), on
// a = |x|, x's sign bit put back at the end: a + a^3 P(a^2) below 0.625 (Cephes' coefficients),
// else e / (e + 2) with e = expm1(2a) = s (r q) + (s - 1), s = 2^n, from weft_exp_reduce (no
// 1 + r q - 1 to cancel); both computed, then selected. a is capped at 9.5, where the ratio
// rounds to 1. Within 1.5 ulp of every float's tanh (checked over all of them); +-inf give
// +-1, -0 gives -0, NaN passes through the arithmetic. Without weft_exp's range checks and
// selects, 0.31 ns an element where 1 - 2 / (weft_exp(2a) + 1) took 0.40 (0.45 and 0.77
// with AVX2), one thread.
WEFT_D float weft_tanh(float x) {
  uint32_t sign = weft_as_bits(x) & 0x80000000u;
  float a = weft_as_float(weft_as_bits(x) ^ sign), z = a * a;
  float p = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
              1.33314422036e-1f) * z - 3.33332819422e-1f) * z * a + a;
  float r, q, y = weft_exp_reduce(2.0f * (a > 9.5f ? 9.5f : a), &r, &q);
  float s = weft_as_float(weft_as_bits(1.0f) + (weft_as_bits(y) << 23));
  float e = s * (r * q) + (s - 1.0f);
  float t = a < 0.625f ? p : e / (e + 2.0f);
  return weft_as_float(weft_as_bits(t) | sign);
}
// log for f32 that vectorizes (libm's logf is a scalar call, 1.7 ns an element here against
// 0.3): x = 2^k m with m in [sqrt(1/2), sqrt(2)), found from the bits (subtracting
// sqrt(1/2)'s bits puts the exponent of m's range in the top 9); log(m) = f - f^2/2 +
// f^3 P(f) with f = m - 1 (exact), P Cephes' logf coefficients; k ln 2 in two parts. Within
// 0.83 ulp of every positive float's log (checked exhaustively); denormals are scaled by 2^23
// first; 0 gives -inf, negatives NaN, inf inf, NaN through.
template <bool kBlend> WEFT_D float weft_log_t(float x) { // kBlend: as weft_exp_t's
  bool tiny = x < 1.17549435e-38f;
  float s = tiny ? x * 8388608.0f : x;
  uint32_t u = weft_as_bits(s) - 0x3f3504f3u;
  float k = static_cast<float>(static_cast<int32_t>(u) >> 23) - (tiny ? 23.0f : 0.0f);
  float f = weft_as_float(weft_as_bits(s) - (u & 0xff800000u)) - 1.0f, z = f * f;
  float p = (((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f -
              1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f +
            2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f;
  float r = f * z * p - 2.12194440e-4f * k - 0.5f * z + f + 0.693359375f * k;
  float out = x == 0.0f ? -INFINITY : x < 0.0f ? NAN : x;
  bool finite = x > 0.0f && x < INFINITY;
  return kBlend ? weft_blend(finite, r, out) : finite ? r : out;
}
WEFT_D float weft_log(float x) { return weft_log_t<false>(x); }
WEFT_D float weft_log_blended(float x) { return weft_log_t<true>(x); }
)";
// Streaming (non-temporal) stores of 16 floats from "src" to the 64-byte aligned "dst": the
// line goes to memory without being read first or kept in cache (Emitter::streams_write).
// weft_stream_fence() orders them before the stores that follow (the end of the region).
//
// weft_scratch: the calling thread's scratch of at least "bytes" (null if it cannot be had),
// kept from call to call and freed when the thread ends (kernel libraries are never unloaded:
// KernelLibrary::load): a COLUMN reduction's partial rows. A malloc of them at each call made
// glibc consolidate its fast bins inside the kernel, those the library calls' small
// allocations filled during the run: Sequencer2D-S's last LayerNorm and mean, 0.02 ms alone,
// took 3.3 ms in the model's profile (the run then consolidates at its next large malloc,
// outside the kernels).
constexpr std::string_view kCpuTail = R"(struct WeftScratch {
  void* p = nullptr;
  size_t n = 0;
  ~WeftScratch() { std::free(p); }
};
WEFT_D void* weft_scratch(size_t bytes) {
  static thread_local WeftScratch s;
  if (s.n < bytes) {
    std::free(s.p);
    s.p = std::malloc(bytes);
    s.n = s.p ? bytes : 0;
  }
  return s.p;
}
WEFT_D void weft_stream16(float* dst, const float* src) {
#if defined(__AVX512F__)
  _mm512_stream_ps(dst, _mm512_load_ps(src));
#elif defined(__AVX__)
  _mm256_stream_ps(dst, _mm256_load_ps(src));
  _mm256_stream_ps(dst + 8, _mm256_load_ps(src + 8));
#elif defined(__SSE2__)
  for (int i = 0; i < 16; i += 4) _mm_stream_ps(dst + i, _mm_load_ps(src + i));
#else
  std::memcpy(dst, src, 64);
#endif
}
// 16 f16 values as floats at the 64-byte aligned "dst"; 16 floats at "src" rounded to f16
// (half to even) as floats; and 16 floats of the aligned "src" stored as f16: an instruction
// per 8 or 16 values where the CPU converts halves (F16C, AVX-512), against 4-5 ns per 16
// for weft_h2f and weft_f2h, which GCC vectorizes from their integer arithmetic
// (Emitter::emit_half_blocks). NaNs keep their leading payload bits here.
WEFT_D void weft_h2f16(const uint16_t* src, float* dst) {
#if defined(__AVX512F__)
  _mm512_store_ps(dst, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))));
#elif defined(__F16C__) && defined(__AVX__)
  for (int i = 0; i < 16; i += 8)
    _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#else
  for (int i = 0; i < 16; ++i) dst[i] = weft_h2f(src[i]);
#endif
}
WEFT_D void weft_round_f16x16(const float* src, float* dst) {
#if defined(__AVX512F__)
  _mm512_store_ps(dst, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
#elif defined(__F16C__) && defined(__AVX__)
  for (int i = 0; i < 16; i += 8)
    _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
#else
  for (int i = 0; i < 16; ++i) dst[i] = weft_round_f16(src[i]);
#endif
}
WEFT_D void weft_f2h16(const float* src, uint16_t* dst) {
#if defined(__AVX512F__)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtps_ph(_mm512_load_ps(src), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(__F16C__) && defined(__AVX__)
  for (int i = 0; i < 16; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_load_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  for (int i = 0; i < 16; ++i) dst[i] = weft_f2h(src[i]);
#endif
}
WEFT_D void weft_stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
// A 16 x 16 tile of floats, row-major in "src", stored transposed: row c of "dst" (rows
// "stride" floats apart) is column c of "src" (Emitter::emit_transposing_tiles). With AVX-512,
// in registers: unpacks of pairs of rows, of pairs of pairs, then two shuffles of 128-bit
// lanes leave column c in register c (64 shuffles; a loop over the tile's columns gathered
// each, 16 gathers). With AVX (AVX2 machines), the same in each of the four 8 x 8 blocks: an
// NHWC -> NCHW Transpose of [1, 112, 112, 96] built for Haswell 0.53-0.56 -> 0.37 ms.
WEFT_D void weft_store_transposed16(float* dst, int64_t stride, const float* src) {
#if defined(__AVX512F__)
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + 16 * i);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    _mm512_storeu_ps(dst + j * stride, _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88));
    _mm512_storeu_ps(dst + (j + 8) * stride, _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd));
  }
#elif defined(__AVX__)
  for (int cb = 0; cb < 16; cb += 8) {  // both halves of a row of dst, one after the other
    for (int kb = 0; kb < 16; kb += 8) {
      __m256 r[8], t[8];
      for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + (kb + k) * 16 + cb);
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {
        r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
        r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xee);
        r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xee);
      }
      for (int c = 0; c < 4; ++c) {
        _mm256_storeu_ps(dst + (cb + c) * stride + kb, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
        _mm256_storeu_ps(dst + (cb + c + 4) * stride + kb, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
      }
    }
  }
#else
  for (int c = 0; c < 16; ++c)
    for (int k = 0; k < 16; ++k) dst[c * stride + k] = src[k * 16 + c];
#endif
}
}  // namespace
)";

// CUDA C++ for NVRTC: no standard headers, so the fixed-width types and the float bit casts
// come from CUDA's builtins. Math functions are CUDA's overloads.
constexpr std::string_view kCudaHead =
    R"(#ifndef WEFT_CUDA_EMULATION  // (runtime/cuda/emulator.h brings its own)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#endif
#define WEFT_D __device__ __forceinline__
WEFT_D float weft_as_float(uint32_t u) { return __uint_as_float(u); }
WEFT_D uint32_t weft_as_bits(float f) { return __float_as_uint(f); }
WEFT_D float weft_exp(float x) { return expf(x); }
WEFT_D float weft_shifted_exp(float x) { return expf(x); }
WEFT_D float weft_erf(float x) { return erff(x); }
WEFT_D float weft_tanh(float x) { return tanhf(x); }
WEFT_D float weft_log(float x) { return logf(x); }
)";

// The CUDA strategies' helpers (cuda_strategy.h): combine functors, group reductions over
// warp shuffles and shared memory, and atomics.
constexpr std::string_view kCudaTail =
    R"(// x / d where d does not move in a loop (Emitter::hoist_reciprocals): r, computed once, is
// 1 / d where that is a normal float (else 0: divide), and x * r is within 1.5 ulp of x / d.
WEFT_D float weft_reciprocal(float d) { const float a = fabsf(d); return a >= 1.17549435e-38f && a <= 8.50705917e37f ? 1.0f / d : 0.0f; }
WEFT_D float weft_div_by(float x, float d, float r) { return r != 0.0f ? x * r : x / d; }
// Vector loads (cuda_strategy.h): is "p" 16-byte aligned; four floats from such an address.
WEFT_D bool weft_aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15) == 0; }
#ifdef WEFT_CUDA_EMULATION
WEFT_D float4 weft_load4(const float* p) { float4 v; std::memcpy(&v, p, 16); return v; }
WEFT_D void weft_store4(float* p, float x, float y, float z, float w) { float4 v{x, y, z, w}; std::memcpy(p, &v, 16); }
#else
WEFT_D float4 weft_load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
WEFT_D void weft_store4(float* p, float x, float y, float z, float w) { *reinterpret_cast<float4*>(p) = make_float4(x, y, z, w); }
#endif
struct weft_op_add { template <typename T> WEFT_D T operator()(T a, T b) const { return a + b; } };
struct weft_op_mul { template <typename T> WEFT_D T operator()(T a, T b) const { return a * b; } };
struct weft_op_max { template <typename T> WEFT_D T operator()(T a, T b) const { return weft_max(a, b); } };
struct weft_op_min { template <typename T> WEFT_D T operator()(T a, T b) const { return weft_min(a, b); } };
template <typename T> WEFT_D T weft_shfl_xor(T v, int lanes, int width, unsigned int mask) {
  if constexpr (sizeof(T) < 4) return static_cast<T>(__shfl_xor_sync(mask, static_cast<int>(v), lanes, width));
  else return __shfl_xor_sync(mask, v, lanes, width);
}
// "v" combined over a group of G threads: G <= 32 aligned lanes of one warp ("mask"), or a
// whole block of G threads. Every thread gets the result; the order is fixed.
template <int G, typename T, typename Op> WEFT_D T weft_group_reduce(T v, Op op, unsigned int mask) {
  constexpr int kWidth = G < 32 ? G : 32;
  for (int lanes = kWidth / 2; lanes > 0; lanes /= 2) v = op(v, weft_shfl_xor(v, lanes, kWidth, mask));
  if constexpr (G > 32) {
    __shared__ T weft_warps[G / 32];
    __syncthreads();  // the previous reduction has read weft_warps
    if (threadIdx.x % 32 == 0) weft_warps[threadIdx.x / 32] = v;
    __syncthreads();
    v = weft_warps[0];
    for (int w = 1; w < G / 32; ++w) v = op(v, weft_warps[w]);
  }
  return v;
}
WEFT_D void weft_atomic_add(float* p, float v) { atomicAdd(p, v); }
WEFT_D void weft_atomic_add(double* p, double v) { atomicAdd(p, v); }
WEFT_D void weft_atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
WEFT_D void weft_atomic_add(uint32_t* p, uint32_t v) { atomicAdd(p, v); }
WEFT_D void weft_atomic_add(int64_t* p, int64_t v) { atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)); }
WEFT_D void weft_atomic_add(uint64_t* p, uint64_t v) { atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)); }
// Float max and min with integer atomics, no CAS loop: non-negative floats order as signed
// integers, negative ones in reverse as unsigned. A NaN is stored as the pattern that wins.
WEFT_D void weft_atomic_max(float* p, float v) {
  if (v != v) { atomicMax(reinterpret_cast<int*>(p), 0x7fffffff); return; }
  if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(p), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned int*>(p), __float_as_uint(v));
}
WEFT_D void weft_atomic_min(float* p, float v) {
  if (v != v) { atomicMax(reinterpret_cast<unsigned int*>(p), 0xffffffffu); return; }
  if (__float_as_int(v) >= 0) atomicMin(reinterpret_cast<int*>(p), __float_as_int(v));
  else atomicMax(reinterpret_cast<unsigned int*>(p), __float_as_uint(v));
}
WEFT_D void weft_atomic_max(double* p, double v) {
  if (v != v) { atomicMax(reinterpret_cast<long long*>(p), 0x7fffffffffffffffll); return; }
  long long bits = __double_as_longlong(v);
  if (bits >= 0) atomicMax(reinterpret_cast<long long*>(p), bits);
  else atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(bits));
}
WEFT_D void weft_atomic_min(double* p, double v) {
  if (v != v) { atomicMax(reinterpret_cast<unsigned long long*>(p), 0xffffffffffffffffull); return; }
  long long bits = __double_as_longlong(v);
  if (bits >= 0) atomicMin(reinterpret_cast<long long*>(p), bits);
  else atomicMax(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(bits));
}
WEFT_D void weft_atomic_max(int32_t* p, int32_t v) { atomicMax(p, v); }
WEFT_D void weft_atomic_min(int32_t* p, int32_t v) { atomicMin(p, v); }
WEFT_D void weft_atomic_max(uint32_t* p, uint32_t v) { atomicMax(p, v); }
WEFT_D void weft_atomic_min(uint32_t* p, uint32_t v) { atomicMin(p, v); }
WEFT_D void weft_atomic_max(int64_t* p, int64_t v) { atomicMax(reinterpret_cast<long long*>(p), static_cast<long long>(v)); }
WEFT_D void weft_atomic_min(int64_t* p, int64_t v) { atomicMin(reinterpret_cast<long long*>(p), static_cast<long long>(v)); }
WEFT_D void weft_atomic_max(uint64_t* p, uint64_t v) { atomicMax(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)); }
WEFT_D void weft_atomic_min(uint64_t* p, uint64_t v) { atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)); }
)";

// The helpers of both dialects.
constexpr std::string_view kCommon =
    R"(WEFT_D int64_t weft_imin(int64_t a, int64_t b) { return a < b ? a : b; }
WEFT_D int64_t weft_imax(int64_t a, int64_t b) { return a > b ? a : b; }
// max and min propagate NaN from either operand: "a > b ? a : b" is x86's maxps (b when
// either is NaN), then a NaN "a" is kept; 3 instructions where the "||" took 4, with a shorter
// chain through an accumulator "a" (twice as fast over a pooling's 9 taps).
template <typename T> WEFT_D T weft_max(T a, T b) { T m = a > b ? a : b; return a != a ? a : m; }
template <typename T> WEFT_D T weft_min(T a, T b) { T m = a < b ? a : b; return a != a ? a : m; }
// Combine::kShiftMax: keeps "old" when "value" is NaN, so a NaN never enters an accumulator.
template <typename T> WEFT_D T weft_shift_max(T old, T value) { return value > old ? value : old; }
// Integer modulo with the sign of the divisor (ONNX Mod, fmod = 0).
template <typename T> WEFT_D T weft_mod(T a, T b) {
  if (b == 0) return 0;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Floating-point modulo with the sign of the divisor (Mod, fmod = 0, as numpy's mod).
template <typename T> WEFT_D T weft_fmod_floor(T a, T b) {
  T r = fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
WEFT_D int64_t weft_floord(int64_t a, int64_t b) { return (a >= 0) ? a / b : -((-a + b - 1) / b); }
// Data-dependent indices: clamped into [0, n) so that no index reads outside its buffer;
// the wrapping form first counts a negative index from the end, as ONNX's gathers do. An
// empty axis gives 0: a read there is never used (a Concat's empty piece, which its select
// passes over), and the run gives empty tensors a readable element (Executable::run).
template <typename T> WEFT_D int64_t weft_clamp_index(T i, int64_t n) {
  int64_t v = static_cast<int64_t>(i);
  return v <= 0 ? 0 : (v >= n ? (n > 0 ? n - 1 : 0) : v);
}
template <typename T> WEFT_D int64_t weft_wrap_index(T i, int64_t n) {
  int64_t v = static_cast<int64_t>(i);
  return weft_clamp_index(v < 0 ? v + n : v, n);
}
// f16 <-> f32, round half to even, NaN kept quiet: branch-free, so that the loops around them
// vectorize (a Cast of 1M values took 4 ms with the per-case branches and the denormal loop,
// 0.7 ms so; equal on every f16 and on every f32). Denormal halves are exact as float
// differences from 2^-14; floats below 2^-14 round at the half's denormal quantum (2^-24)
// when added to 0.5, whose ulp that is.
WEFT_D float weft_h2f(uint16_t h) {
  uint32_t o = (uint32_t)(h & 0x7fffu) << 13, exp = o & 0x0f800000u;
  float sub = weft_as_float(o + 0x38800000u) - weft_as_float(0x38800000u);
  uint32_t bits = exp == 0x0f800000u ? o + 0x70000000u  // inf and NaN
                  : exp == 0           ? weft_as_bits(sub)
                                       : o + 0x38000000u;
  return weft_as_float(bits | (uint32_t)(h & 0x8000u) << 16);
}
WEFT_D uint16_t weft_f2h(float value) {
  uint32_t f = weft_as_bits(value), sign = (f >> 16) & 0x8000u, a = f & 0x7fffffffu;
  uint32_t sub = weft_as_bits(weft_as_float(a) + 0.5f) - 0x3f000000u;
  uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
  uint32_t big = a > 0x7f800000u ? 0x7e00u : 0x7c00u; // NaN, or inf from 65520 on
  return (uint16_t)((a >= 0x477ff000u ? big : a < 0x38800000u ? sub : normal) | sign);
}
// weft_h2f(weft_f2h(x)) in one step (a value of an f16 node rounded in a register): half the
// arithmetic, equal on every f32.
WEFT_D float weft_round_f16(float value) {
  uint32_t f = weft_as_bits(value), a = f & 0x7fffffffu;
  float sub = (weft_as_float(a) + 0.5f) - 0.5f;
  uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
  uint32_t big = a > 0x7f800000u ? 0x7fc00000u : 0x7f800000u;
  uint32_t r = a >= 0x477ff000u ? big : a < 0x38800000u ? weft_as_bits(sub) : normal;
  return weft_as_float(r | (f & 0x80000000u));
}
// The f8 and f4 formats (support/minifloat.h has the same algorithm for the host): "e" exponent
// bits, "m" mantissa bits, bias "b"; kind 0 has NaN at all ones, 1 at the sign bit alone
// (and no -0), 2 is IEEE-like, 3 has no NaN or infinity.
WEFT_D float weft_mf_decode(uint32_t v, int e, int m, int b, int kind) {
  uint32_t sign = 1u << (e + m), ex = (v >> m) & ((1u << e) - 1), mt = v & ((1u << m) - 1);
  if ((kind == 1 && v == sign) || (kind == 0 && ex == (1u << e) - 1 && mt == (1u << m) - 1) ||
      (kind == 2 && ex == (1u << e) - 1 && mt != 0)) return weft_as_float(0x7fc00000u);
  float r = kind == 2 && ex == (1u << e) - 1 ? weft_as_float(0x7f800000u)
            : ex == 0 ? ldexpf((float)mt, 1 - b - m) : ldexpf((float)(mt | (1u << m)), (int)ex - b - m);
  return (v & sign) ? -r : r;
}
WEFT_D float weft_mf_max(int e, int m, int b, int kind) {
  return ldexpf((float)((2u << m) - (kind == 0 ? 2 : 1)), (int)((1u << e) - 1) - (kind == 2 ? 1 : 0) - b - m);
}
WEFT_D uint8_t weft_mf_encode(float x, int e, int m, int b, int kind) {
  uint32_t signbit = 1u << (e + m), sign = (weft_as_bits(x) >> 31) ? signbit : 0u;
  uint32_t nan = kind == 1 ? signbit : kind == 2 ? (sign | (((1u << e) - 1) << m) | 1u) : (sign | (signbit - 1));
  uint32_t over = kind == 2 ? (sign | (((1u << e) - 1) << m)) : kind == 3 ? (sign | (signbit - 1)) : nan;
  if (x != x) return (uint8_t)(kind == 3 ? 0u : nan);
  float a = fabsf(x), mx = weft_mf_max(e, m, b, kind);
  if (a > 2 * mx) return (uint8_t)over;
  int ex = a == 0 ? 1 - b : ilogbf(a);
  if (ex < 1 - b) ex = 1 - b;
  float q = ldexpf(1.0f, ex - m), r = nearbyintf(a / q) * q;
  if (r > mx) return (uint8_t)over;
  if (r == 0) return (uint8_t)(kind == 1 ? 0u : sign);
  ex = ilogbf(r);
  if (ex < 1 - b) return (uint8_t)(sign | (uint32_t)(r / ldexpf(1.0f, 1 - b - m)));
  return (uint8_t)(sign | ((uint32_t)(ex + b) << m) | ((uint32_t)(r / ldexpf(1.0f, ex - m)) - (1u << m)));
}
// float8 e8m0: 2^(v - 127), 0xff NaN; from f32 rounding up and saturating (Cast's defaults).
WEFT_D float weft_e8m0_decode(uint8_t v) { return v == 0xff ? weft_as_float(0x7fc00000u) : ldexpf(1.0f, (int)v - 127); }
WEFT_D uint8_t weft_e8m0_encode(float x) {
  uint32_t f = weft_as_bits(x), ex = (f >> 23) & 0xffu;
  if (ex != 0xff && (f & 0x7fffffu) != 0 && ex != 0xfe) ++ex;
  return (uint8_t)ex;
}
// int4, uint4, int2, uint2 are stored in the low "bits" bits of a byte: their value,
// sign-extended when "s".
WEFT_D int64_t weft_wrap_bits(int64_t v, int bits, int s) {
  int64_t w = v & ((1ll << bits) - 1);
  return s && w >= (1ll << (bits - 1)) ? w - (1ll << bits) : w;
}
WEFT_D float weft_bf2f(uint16_t b) { return weft_as_float((uint32_t)b << 16); }
WEFT_D uint16_t weft_f2bf(float value) {
  uint32_t f = weft_as_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40u);
  return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}
// weft_bf2f(weft_f2bf(x)) in one step, equal on every f32.
WEFT_D float weft_round_bf16(float value) {
  uint32_t f = weft_as_bits(value);
  uint32_t r = (f & 0x7fffffffu) > 0x7f800000u ? f | 0x00400000u : f + 0x7fffu + ((f >> 16) & 1u);
  return weft_as_float(r & 0xffff0000u);
}
)";

std::string call(std::string_view fn, const std::vector<std::string>& args) {
  return fmt::format("{}({})", fn, fmt::join(args, ", "));
}

// Integer pow and fmod compute in double (exact below 2^53), as CPU C++ does implicitly;
// CUDA has no integer overloads to pick from.
std::string through_double(DType t, std::string_view fn, const std::vector<std::string>& a) {
  return fmt::format("static_cast<{}>({}(static_cast<double>({}), static_cast<double>({})))",
                     compute_type(t), fn, a[0], a[1]);
}

} // namespace

const DialectTable& cpu_dialect() {
  static const DialectTable table{fmt::format("{}{}{}", kCpuHead, kCommon, kCpuTail),
                                  "extern \"C\" ",
                                  "#pragma omp parallel for schedule(static)",
                                  "#pragma omp parallel for simd schedule(static)",
                                  "#pragma omp parallel for collapse(2) schedule(static)",
                                  "#pragma omp simd",
                                  "#pragma omp simd reduction(+ : acc)",
                                  true};
  return table;
}

const DialectTable& cuda_dialect() {
  static const DialectTable table{fmt::format("{}{}{}", kCudaHead, kCommon, kCudaTail),
                                  "extern \"C\" __global__ ",
                                  "",
                                  "",
                                  "",
                                  "",
                                  "",
                                  false};
  return table;
}

std::string_view storage_type(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    case DType::kF16:
    case DType::kBF16:
    case DType::kU16: return "uint16_t";
    case DType::kI8: return "int8_t";
    case DType::kI16: return "int16_t";
    case DType::kI32: return "int32_t";
    case DType::kI64: return "int64_t";
    case DType::kU8:
    case DType::kBool:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
    case DType::kF4E2M1:
    case DType::kU4:
    case DType::kU2:
    case DType::kI4:
    case DType::kI2: return "uint8_t";
    case DType::kU32: return "uint32_t";
    case DType::kU64: return "uint64_t";
  }
  return "void";
}

std::string_view compute_type(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16: return "float";
    case DType::kBool: return "bool";
    case DType::kI4:
    case DType::kI2: return "int8_t";
    default: return dtype_is_float8_or_4(t) ? "float" : storage_type(t);
  }
}

namespace {
// The arguments of weft_mf_decode/encode after the value: "e, m, b, kind".
std::string minifloat_args(MiniFloat f) {
  return fmt::format("{}, {}, {}, {}", f.exponent_bits, f.mantissa_bits, f.bias,
                     static_cast<int>(f.kind));
}
} // namespace

std::string from_storage(DType t, const std::string& stored) {
  if (t == DType::kF16) return "weft_h2f(" + stored + ")";
  if (t == DType::kBF16) return "weft_bf2f(" + stored + ")";
  if (t == DType::kBool) return "(" + stored + " != 0)";
  if (t == DType::kF8E8M0) return "weft_e8m0_decode(" + stored + ")";
  if (auto f = dtype_minifloat(t))
    return fmt::format("weft_mf_decode({}, {})", stored, minifloat_args(*f));
  if (t == DType::kI4 || t == DType::kI2)
    return fmt::format("static_cast<int8_t>(weft_wrap_bits({}, {}, 1))", stored,
                       dtype_packed_bits(t));
  return stored;
}

std::string to_storage(DType t, const std::string& value) {
  if (t == DType::kF16) return "weft_f2h(" + value + ")";
  if (t == DType::kBF16) return "weft_f2bf(" + value + ")";
  if (t == DType::kBool) return "static_cast<uint8_t>(" + value + ")";
  if (t == DType::kF8E8M0) return "weft_e8m0_encode(" + value + ")";
  if (auto f = dtype_minifloat(t))
    return fmt::format("weft_mf_encode({}, {})", value, minifloat_args(*f));
  if (t == DType::kI4 || t == DType::kU4 || t == DType::kI2 || t == DType::kU2)
    return fmt::format("static_cast<uint8_t>(weft_wrap_bits(static_cast<int64_t>({}), {}, 0))",
                       value, dtype_packed_bits(t));
  return value;
}

std::string combine_expr(kernel::Combine c, const std::string& old, const std::string& value) {
  switch (c) {
    case kernel::Combine::kNone: break;
    case kernel::Combine::kSum: return fmt::format("{} + {}", old, value);
    case kernel::Combine::kProd: return fmt::format("{} * {}", old, value);
    case kernel::Combine::kMax: return fmt::format("weft_max({}, {})", old, value);
    case kernel::Combine::kMin: return fmt::format("weft_min({}, {})", old, value);
    case kernel::Combine::kShiftMax: return fmt::format("weft_shift_max({}, {})", old, value);
  }
  return value;
}

// weft_max's NaN test of its first operand costs a compare and a blend more, which GCC turns
// into a chain of mask operations when a Clip's max and min follow each other: a generated
// depthwise convolution's Clip [1,56,56,144] took 40% of its kernel, whose time went
// 0.195 -> 0.139 ms with this form (AMD EPYC, 2 threads, 2026-12-02).
std::string bound_by_constant(kernel::ExprOp op, const std::string& x, const std::string& bound) {
  return fmt::format("({1} {2} {0} ? {1} : {0})", x, bound,
                     op == kernel::ExprOp::kMax ? ">=" : "<=");
}

std::string apply_op(kernel::ExprOp op, DType t, const std::vector<std::string>& a) {
  using kernel::ExprOp;
  bool is_float = dtype_is_float(t);
  switch (op) {
    case ExprOp::kCast:
      if (t == DType::kBool) return fmt::format("({} != 0)", a[0]);
      // A narrow type rounds (or wraps) here, as its store would: a Cast to f16 and back
      // is not the identity.
      if (t == DType::kF16) return call("weft_round_f16", a);
      if (t == DType::kBF16) return call("weft_round_bf16", a);
      if (storage_type(t) != compute_type(t) || dtype_packed_bits(t) < 8)
        return from_storage(t, to_storage(t, a[0]));
      return fmt::format("static_cast<{}>({})", compute_type(t), a[0]);
    case ExprOp::kNeg: return fmt::format("(-{})", a[0]);
    case ExprOp::kAbs: return dtype_is_unsigned_int(t) || t == DType::kBool ? a[0] : call("abs", a);
    case ExprOp::kExp: return t == DType::kF64 ? call("exp", a) : call("weft_exp", a);
    case ExprOp::kShiftedExp:
      return t == DType::kF64 ? call("exp", a) : call("weft_shifted_exp", a);
    case ExprOp::kLog: return t == DType::kF64 ? call("log", a) : call("weft_log", a);
    case ExprOp::kSqrt: return call("sqrt", a);
    case ExprOp::kRsqrt: return fmt::format("(1 / sqrt({}))", a[0]);
    case ExprOp::kTanh: return t == DType::kF64 ? call("tanh", a) : call("weft_tanh", a);
    case ExprOp::kSigmoid:
      return fmt::format("(1 / (1 + {}(-{})))", t == DType::kF64 ? "exp" : "weft_exp", a[0]);
    case ExprOp::kErf: return t == DType::kF64 ? call("erf", a) : call("weft_erf", a);
    case ExprOp::kFloor: return is_float ? call("floor", a) : a[0];
    case ExprOp::kCeil: return is_float ? call("ceil", a) : a[0];
    case ExprOp::kRound: return is_float ? call("nearbyint", a) : a[0]; // half to even
    case ExprOp::kSin: return call("sin", a);
    case ExprOp::kCos: return call("cos", a);
    case ExprOp::kTan: return call("tan", a);
    case ExprOp::kAsin: return call("asin", a);
    case ExprOp::kAcos: return call("acos", a);
    case ExprOp::kAtan: return call("atan", a);
    case ExprOp::kSinh: return call("sinh", a);
    case ExprOp::kCosh: return call("cosh", a);
    case ExprOp::kAsinh: return call("asinh", a);
    case ExprOp::kAcosh: return call("acosh", a);
    case ExprOp::kAtanh: return call("atanh", a);
    // Logical on bool, bitwise on integers (BitwiseNot, BitwiseAnd, ...).
    case ExprOp::kNot:
      return t == DType::kBool ? fmt::format("(!{})", a[0])
                               : fmt::format("static_cast<{}>(~{})", compute_type(t), a[0]);
    case ExprOp::kIsNan: return call("isnan", a);
    case ExprOp::kIsInf: return call("isinf", a);
    case ExprOp::kAdd: return fmt::format("({} + {})", a[0], a[1]);
    case ExprOp::kSub: return fmt::format("({} - {})", a[0], a[1]);
    case ExprOp::kMul: return fmt::format("({} * {})", a[0], a[1]);
    case ExprOp::kDiv:
      return is_float ? fmt::format("({} / {})", a[0], a[1])
                      : fmt::format("({1} == 0 ? 0 : {0} / {1})", a[0], a[1]);
    case ExprOp::kMax: return call("weft_max", a);
    case ExprOp::kMin: return call("weft_min", a);
    case ExprOp::kPow: return is_float ? call("pow", a) : through_double(t, "pow", a);
    case ExprOp::kMod: return is_float ? call("weft_fmod_floor", a) : call("weft_mod", a);
    case ExprOp::kFmod: return is_float ? call("fmod", a) : through_double(t, "fmod", a);
    case ExprOp::kLt: return fmt::format("({} < {})", a[0], a[1]);
    case ExprOp::kLe: return fmt::format("({} <= {})", a[0], a[1]);
    case ExprOp::kGt: return fmt::format("({} > {})", a[0], a[1]);
    case ExprOp::kGe: return fmt::format("({} >= {})", a[0], a[1]);
    case ExprOp::kEq: return fmt::format("({} == {})", a[0], a[1]);
    case ExprOp::kAnd:
    case ExprOp::kOr:
    case ExprOp::kXor: {
      if (t != DType::kBool) {
        const char* bitwise = op == ExprOp::kAnd ? "&" : op == ExprOp::kOr ? "|" : "^";
        return fmt::format("static_cast<{}>({} {} {})", compute_type(t), a[0], bitwise, a[1]);
      }
      const char* logical = op == ExprOp::kAnd ? "&&" : op == ExprOp::kOr ? "||" : "!=";
      return fmt::format("({} {} {})", a[0], logical, a[1]);
    }
    case ExprOp::kShiftLeft:
    case ExprOp::kShiftRight: {
      // A shift by a negative amount or by the width or more gives 0, or -1 for a negative
      // value shifted right (an arithmetic shift all the way).
      bool sign = op == ExprOp::kShiftRight && !dtype_is_unsigned_int(t);
      std::string out_of_range = sign ? fmt::format("({} < 0 ? -1 : 0)", a[0]) : "0";
      return fmt::format("static_cast<{0}>(static_cast<uint64_t>({2}) >= 8 * sizeof({0}) ? {4} "
                         ": {1} {3} {2})",
                         compute_type(t), a[0], a[1], op == ExprOp::kShiftLeft ? "<<" : ">>",
                         out_of_range);
    }
    case ExprOp::kSelect: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
    case ExprOp::kLoad:
    case ExprOp::kConstant:
    case ExprOp::kExtent:
    case ExprOp::kIterator: break; // handled by the emitter
  }
  return "?";
}

} // namespace weft::codegen
