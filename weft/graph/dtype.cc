#include "weft/graph/dtype.h"

namespace weft {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::kF32, "f32", 4},   {DType::kF64, "f64", 8}, {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2}, {DType::kI8, "i8", 1},   {DType::kI16, "i16", 2},
    {DType::kI32, "i32", 4},   {DType::kI64, "i64", 8}, {DType::kU8, "u8", 1},
    {DType::kU16, "u16", 2},   {DType::kU32, "u32", 4}, {DType::kU64, "u64", 8},
    {DType::kBool, "bool", 1},
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

bool dtype_is_float(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}
bool dtype_is_signed_int(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}
bool dtype_is_unsigned_int(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

} // namespace weft
