// Tensor files: .npy (NumPy) and .pb (a serialized onnx::TensorProto), chosen by extension.
#pragma once

#include <string>

#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

Result<Tensor> read_tensor_file(const std::string& path);
// "name" is stored in .pb files (TensorProto.name); .npy files have no name.
Status write_tensor_file(const std::string& path, const Tensor& tensor, const std::string& name);

} // namespace weft
