#include "weft/graph/dtype.h"

namespace weft {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kI8, "i8", 1},
    {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},
    {DType::kI64, "i64", 8},
    {DType::kU8, "u8", 1},
    {DType::kU16, "u16", 2},
    {DType::kU32, "u32", 4},
    {DType::kU64, "u64", 8},
    {DType::kBool, "bool", 1},
    {DType::kF8E4M3FN, "f8e4m3fn", 1},
    {DType::kF8E4M3FNUZ, "f8e4m3fnuz", 1},
    {DType::kF8E5M2, "f8e5m2", 1},
    {DType::kF8E5M2FNUZ, "f8e5m2fnuz", 1},
    {DType::kF8E8M0, "f8e8m0", 1},
    {DType::kF4E2M1, "f4e2m1", 1},
    {DType::kI4, "i4", 1},
    {DType::kU4, "u4", 1},
    {DType::kI2, "i2", 1},
    {DType::kU2, "u2", 1},
};
const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
} // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
int dtype_size(DType t) { return info(t).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kInfo) {
    if (i.name == name) return i.type;
  }
  return std::nullopt;
}

bool dtype_is_float8_or_4(DType t) {
  return t == DType::kF8E4M3FN || t == DType::kF8E4M3FNUZ || t == DType::kF8E5M2 ||
         t == DType::kF8E5M2FNUZ || t == DType::kF8E8M0 || t == DType::kF4E2M1;
}
bool dtype_is_float(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16 ||
         dtype_is_float8_or_4(t);
}
bool dtype_is_signed_int(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64 ||
         t == DType::kI4 || t == DType::kI2;
}
bool dtype_is_unsigned_int(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64 ||
         t == DType::kU4 || t == DType::kU2;
}
std::optional<MiniFloat> dtype_minifloat(DType t) {
  switch (t) {
    case DType::kF8E4M3FN: return kFloat8E4M3FN;
    case DType::kF8E4M3FNUZ: return kFloat8E4M3FNUZ;
    case DType::kF8E5M2: return kFloat8E5M2;
    case DType::kF8E5M2FNUZ: return kFloat8E5M2FNUZ;
    case DType::kF4E2M1: return kFloat4E2M1;
    default: return std::nullopt;
  }
}
int dtype_packed_bits(DType t) {
  if (t == DType::kF4E2M1 || t == DType::kI4 || t == DType::kU4) return 4;
  if (t == DType::kI2 || t == DType::kU2) return 2;
  return 8 * dtype_size(t);
}

} // namespace weft
