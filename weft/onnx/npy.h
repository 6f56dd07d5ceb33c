// NumPy .npy files (format versions 1.0, 2.0 and 3.0), in memory.
//
// Reads little- and big-endian arrays of every numeric dtype in C order. NumPy has no
// bfloat16: a bf16 tensor is written as its 16-bit patterns with descr '<u2', and reads
// back as u16 (docs/tensor_files.md).
#pragma once

#include <string>

#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

Result<Tensor> npy_decode(const std::string& bytes);
std::string npy_encode(const Tensor& tensor);

} // namespace weft
