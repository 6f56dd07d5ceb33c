// Element types of tensors in the graph IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "weft/support/minifloat.h"

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
  // Narrow types: stored one element per byte (the 4- and 2-bit ones in the low bits of
  // theirs, as ml_dtypes keeps them; ONNX files pack them), computed in f32 (floats) or in
  // i8/u8 (integers).
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0,
  kF4E2M1,
  kI4,
  kU4,
  kI2,
  kU2,
};

inline constexpr DType kAllDTypes[] = {
    DType::kF32,    DType::kF64,        DType::kF16,    DType::kBF16,     DType::kI8,
    DType::kI16,    DType::kI32,        DType::kI64,    DType::kU8,       DType::kU16,
    DType::kU32,    DType::kU64,        DType::kBool,   DType::kF8E4M3FN, DType::kF8E4M3FNUZ,
    DType::kF8E5M2, DType::kF8E5M2FNUZ, DType::kF8E8M0, DType::kF4E2M1,   DType::kI4,
    DType::kU4,     DType::kI2,         DType::kU2};

// "f32", "bf16", "i64", "bool": the spelling used by the printer.
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size(DType t); // bytes per element
bool dtype_is_float(DType t);
bool dtype_is_signed_int(DType t);
bool dtype_is_unsigned_int(DType t);
// f8, f4 and e8m0: a float format whose arithmetic runs in f32 (as for f16 and bf16).
bool dtype_is_float8_or_4(DType t);
// The format of the f8 and f4 types except e8m0; nullopt for the others.
std::optional<MiniFloat> dtype_minifloat(DType t);
// Bits per element in ONNX's packed form: 4 or 2 for the sub-byte types, else 8 * size.
int dtype_packed_bits(DType t);

} // namespace weft
