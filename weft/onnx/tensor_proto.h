// Conversion between onnx::TensorProto and Tensor.
//
// Reads both encodings ONNX allows for numeric data: raw_data (little-endian bytes) and the
// typed repeated fields (float_data, int32_data holding f16/bf16/bool/int8/16 and uint8/16,
// int64_data, double_data, uint64_data holding uint32/64), and external data files.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

// "base_dir" is where external data locations are resolved (the model's directory).
// Locations must be relative and stay inside "base_dir".
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);

// A TensorProto with raw_data.
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

} // namespace weft
