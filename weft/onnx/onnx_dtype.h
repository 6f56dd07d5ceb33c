// The mapping between ONNX's TensorProto.DataType codes and Weft's DType.
#pragma once

#include <optional>
#include <string>

#include "weft/graph/dtype.h"

namespace weft {

// None for ONNX types Weft has no dtype for (string, complex, float8, ...).
std::optional<DType> dtype_from_onnx(int onnx_type);
int dtype_to_onnx(DType t);
// "FLOAT", "STRING", ...: ONNX's own name of a data type code, for messages.
std::string onnx_dtype_name(int onnx_type);

} // namespace weft
