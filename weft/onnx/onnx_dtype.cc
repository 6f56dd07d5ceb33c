#include "weft/onnx/onnx_dtype.h"

#include <onnx/onnx_pb.h>

namespace weft {

namespace {
using P = onnx::TensorProto;
struct Pair {
  int onnx;
  DType weft;
};
constexpr Pair kPairs[] = {
    {P::FLOAT, DType::kF32},
    {P::DOUBLE, DType::kF64},
    {P::FLOAT16, DType::kF16},
    {P::BFLOAT16, DType::kBF16},
    {P::INT8, DType::kI8},
    {P::INT16, DType::kI16},
    {P::INT32, DType::kI32},
    {P::INT64, DType::kI64},
    {P::UINT8, DType::kU8},
    {P::UINT16, DType::kU16},
    {P::UINT32, DType::kU32},
    {P::UINT64, DType::kU64},
    {P::BOOL, DType::kBool},
    // Types newer than the onnx.proto Weft builds against (1.12), by number (onnx.proto of
    // onnx 1.18 and later).
    {17, DType::kF8E4M3FN},
    {18, DType::kF8E4M3FNUZ},
    {19, DType::kF8E5M2},
    {20, DType::kF8E5M2FNUZ},
    {21, DType::kU4},
    {22, DType::kI4},
    {23, DType::kF4E2M1},
    {24, DType::kF8E8M0},
    {25, DType::kU2},
    {26, DType::kI2},
};
// The names of the types after BFLOAT16 (16), by number from 17.
constexpr std::string_view kNewerNames[] = {
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",
    "FLOAT4E2M1",   "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
} // namespace

std::optional<DType> dtype_from_onnx(int onnx_type) {
  for (const Pair& p : kPairs) {
    if (p.onnx == onnx_type) return p.weft;
  }
  return std::nullopt;
}

int dtype_to_onnx(DType t) {
  for (const Pair& p : kPairs) {
    if (p.weft == t) return p.onnx;
  }
  return P::UNDEFINED;
}

std::string onnx_dtype_name(int onnx_type) {
  int newer = onnx_type - 17;
  if (newer >= 0 && newer < static_cast<int>(std::size(kNewerNames)))
    return std::string(kNewerNames[newer]);
  if (!onnx::TensorProto_DataType_IsValid(onnx_type)) return "type " + std::to_string(onnx_type);
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
}

} // namespace weft
