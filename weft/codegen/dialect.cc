#include "weft/codegen/dialect.h"

#include <fmt/format.h>

namespace weft::codegen {

namespace {

// Self-contained: generated code is compiled apart from Weft and links to nothing of it.
constexpr std::string_view kCpuPrelude = R"(#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {
// max and min propagate NaN from either operand.
template <typename T> inline T weft_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> inline T weft_min(T a, T b) { return (a < b || a != a) ? a : b; }
// Integer modulo with the sign of the divisor (ONNX Mod, fmod = 0).
template <typename T> inline T weft_mod(T a, T b) {
  if (b == 0) return 0;
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline int64_t weft_floord(int64_t a, int64_t b) { return (a >= 0) ? a / b : -((-a + b - 1) / b); }
// Data-dependent indices: clamped into [0, n) so that no index reads outside its buffer;
// the wrapping form first counts a negative index from the end, as ONNX's gathers do.
template <typename T> inline int64_t weft_clamp_index(T i, int64_t n) {
  int64_t v = static_cast<int64_t>(i);
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}
template <typename T> inline int64_t weft_wrap_index(T i, int64_t n) {
  int64_t v = static_cast<int64_t>(i);
  return weft_clamp_index(v < 0 ? v + n : v, n);
}
inline float weft_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) bits = sign | 0x7f800000u | (mant << 13);
  else if (exp != 0) bits = sign | ((exp + 112) << 23) | (mant << 13);
  else if (mant == 0) bits = sign;
  else { int s = 0; while (!(mant & 0x400u)) { mant <<= 1; ++s; } bits = sign | ((uint32_t)(113 - s) << 23) | ((mant & 0x3ffu) << 13); }
  float f; std::memcpy(&f, &bits, 4); return f;
}
inline uint16_t weft_f2h(float value) {
  uint32_t f; std::memcpy(&f, &value, 4);
  uint16_t sign = (uint16_t)((f >> 16) & 0x8000u); uint32_t a = f & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u);
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return sign;
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e, hm = m >> sh, r = m & ((1u << sh) - 1), hw = 1u << (sh - 1);
    if (r > hw || (r == hw && (hm & 1u))) ++hm;
    return sign | (uint16_t)hm;
  }
  return sign | (uint16_t)((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13);
}
// exp for f32 that vectorizes (libm's expf does not without fast-math): x = n ln2 + r with
// |r| <= ln2/2 (Cody-Waite), exp(r) by a degree-6 polynomial (Cephes' coefficients), and
// 2^n applied as two halves so that gradual underflow and overflow to inf stay exact.
inline float weft_exp(float x) {
  bool nan = x != x;
  float c = nan ? 0.0f : (x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x));
  float fn = std::floor(c * 1.44269504088896341f + 0.5f);
  float r = c - fn * 0.693359375f + fn * 2.12194440e-4f;
  float z = r * r;
  float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
              1.6666665459e-1f) * r + 5.0000001201e-1f) * z + r + 1.0f;
  int32_t n = static_cast<int32_t>(fn), n1 = n >> 1, n2 = n - n1;
  uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return nan ? x : p * s1 * s2;
}
inline float weft_bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline uint16_t weft_f2bf(float value) {
  uint32_t f; std::memcpy(&f, &value, 4);
  if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40u);
  return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}
}  // namespace
)";

std::string call(std::string_view fn, const std::vector<std::string>& args) {
  return fmt::format("{}({})", fn, fmt::join(args, ", "));
}

} // namespace

const DialectTable& cpu_dialect() {
  static const DialectTable table{kCpuPrelude, "extern \"C\" ",
                                  "#pragma omp parallel for schedule(static)"};
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
    case DType::kBool: return "uint8_t";
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
    default: return storage_type(t);
  }
}

std::string apply_op(kernel::ExprOp op, DType t, const std::vector<std::string>& a) {
  using kernel::ExprOp;
  bool is_float = dtype_is_float(t);
  switch (op) {
    case ExprOp::kCast:
      return t == DType::kBool ? fmt::format("({} != 0)", a[0])
                               : fmt::format("static_cast<{}>({})", compute_type(t), a[0]);
    case ExprOp::kNeg: return fmt::format("(-{})", a[0]);
    case ExprOp::kAbs:
      return dtype_is_unsigned_int(t) || t == DType::kBool ? a[0] : call("std::abs", a);
    case ExprOp::kExp: return t == DType::kF64 ? call("std::exp", a) : call("weft_exp", a);
    case ExprOp::kLog: return call("std::log", a);
    case ExprOp::kSqrt: return call("std::sqrt", a);
    case ExprOp::kRsqrt: return fmt::format("(1 / std::sqrt({}))", a[0]);
    case ExprOp::kTanh: return call("std::tanh", a);
    case ExprOp::kSigmoid:
      return fmt::format("(1 / (1 + {}(-{})))", t == DType::kF64 ? "std::exp" : "weft_exp", a[0]);
    case ExprOp::kErf: return call("std::erf", a);
    case ExprOp::kFloor: return is_float ? call("std::floor", a) : a[0];
    case ExprOp::kCeil: return is_float ? call("std::ceil", a) : a[0];
    case ExprOp::kRound: return is_float ? call("std::nearbyint", a) : a[0]; // half to even
    case ExprOp::kSin: return call("std::sin", a);
    case ExprOp::kCos: return call("std::cos", a);
    case ExprOp::kTan: return call("std::tan", a);
    case ExprOp::kAsin: return call("std::asin", a);
    case ExprOp::kAcos: return call("std::acos", a);
    case ExprOp::kAtan: return call("std::atan", a);
    case ExprOp::kSinh: return call("std::sinh", a);
    case ExprOp::kCosh: return call("std::cosh", a);
    case ExprOp::kAsinh: return call("std::asinh", a);
    case ExprOp::kAcosh: return call("std::acosh", a);
    case ExprOp::kAtanh: return call("std::atanh", a);
    case ExprOp::kNot: return fmt::format("(!{})", a[0]);
    case ExprOp::kIsNan: return call("std::isnan", a);
    case ExprOp::kIsInf: return call("std::isinf", a);
    case ExprOp::kAdd: return fmt::format("({} + {})", a[0], a[1]);
    case ExprOp::kSub: return fmt::format("({} - {})", a[0], a[1]);
    case ExprOp::kMul: return fmt::format("({} * {})", a[0], a[1]);
    case ExprOp::kDiv:
      return is_float ? fmt::format("({} / {})", a[0], a[1])
                      : fmt::format("({1} == 0 ? 0 : {0} / {1})", a[0], a[1]);
    case ExprOp::kMax: return call("weft_max", a);
    case ExprOp::kMin: return call("weft_min", a);
    case ExprOp::kPow: return call("std::pow", a);
    case ExprOp::kMod: return is_float ? call("std::fmod", a) : call("weft_mod", a);
    case ExprOp::kFmod: return call("std::fmod", a);
    case ExprOp::kLt: return fmt::format("({} < {})", a[0], a[1]);
    case ExprOp::kLe: return fmt::format("({} <= {})", a[0], a[1]);
    case ExprOp::kGt: return fmt::format("({} > {})", a[0], a[1]);
    case ExprOp::kGe: return fmt::format("({} >= {})", a[0], a[1]);
    case ExprOp::kEq: return fmt::format("({} == {})", a[0], a[1]);
    case ExprOp::kAnd: return fmt::format("({} && {})", a[0], a[1]);
    case ExprOp::kOr: return fmt::format("({} || {})", a[0], a[1]);
    case ExprOp::kShiftLeft:
    case ExprOp::kShiftRight:
      return fmt::format("static_cast<{0}>({2} >= 8 * sizeof({0}) ? 0 : {1} {3} {2})",
                         compute_type(t), a[0], a[1], op == ExprOp::kShiftLeft ? "<<" : ">>");
    case ExprOp::kXor: return fmt::format("({} != {})", a[0], a[1]);
    case ExprOp::kSelect: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
    case ExprOp::kLoad:
    case ExprOp::kConstant:
    case ExprOp::kIterator: break; // handled by the emitter
  }
  return "?";
}

} // namespace weft::codegen
