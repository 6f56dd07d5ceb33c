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
    {P::FLOAT, DType::kF32},     {P::DOUBLE, DType::kF64}, {P::FLOAT16, DType::kF16},
    {P::BFLOAT16, DType::kBF16}, {P::INT8, DType::kI8},    {P::INT16, DType::kI16},
    {P::INT32, DType::kI32},     {P::INT64, DType::kI64},  {P::UINT8, DType::kU8},
    {P::UINT16, DType::kU16},    {P::UINT32, DType::kU32}, {P::UINT64, DType::kU64},
    {P::BOOL, DType::kBool},
};
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
  if (!onnx::TensorProto_DataType_IsValid(onnx_type)) return "type " + std::to_string(onnx_type);
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
}

} // namespace weft
