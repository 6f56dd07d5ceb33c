// Element types of tensors in the graph IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft {

enum class DType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kBool,
};

inline constexpr DType kAllDTypes[] = {
    DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI8,  DType::kI16, DType::kI32,
    DType::kI64, DType::kU8,  DType::kU16, DType::kU32,  DType::kU64, DType::kBool};

// "f32", "bf16", "i64", "bool": the spelling used by the printer.
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size(DType t); // bytes per element
bool dtype_is_float(DType t);
bool dtype_is_signed_int(DType t);
bool dtype_is_unsigned_int(DType t);

} // namespace weft
