// Tensor files: .npy (NumPy) and .pb (a serialized onnx::TensorProto), chosen by extension.
#pragma once

#include <string>

#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

Result<Tensor> read_tensor_file(const std::string& path);
// The same, for an input that takes indices into "vocabulary" (Graph::string_inputs): a file of
// strings (.pb, or .npy of '<U' or '|S') gives each one's index there (int64, -1 for a string
// not in it).
Result<Tensor> read_tensor_file(const std::string& path,
                                const std::vector<std::string>& vocabulary);
// "name" is stored in .pb files (TensorProto.name); .npy files have no name.
Status write_tensor_file(const std::string& path, const Tensor& tensor, const std::string& name);

// "t" read for a value of dtype "wanted": .npy files (and ONNX 1.12's test data) keep bf16
// as u16 bit patterns, and .npy files the narrow types (float8, float4, int4, int2) as u8
// bytes, which become that type here. Other tensors are returned unchanged.
Tensor as_bf16_if_wanted(Tensor t, DType wanted);

} // namespace weft
