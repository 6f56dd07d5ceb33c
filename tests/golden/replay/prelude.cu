#ifndef WEFT_CUDA_EMULATION  // (runtime/cuda/emulator.h brings its own)
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
WEFT_D int64_t weft_imin(int64_t a, int64_t b) { return a < b ? a : b; }
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
// x / d where d does not move in a loop (Emitter::hoist_reciprocals): r, computed once, is
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
