// NumPy .npy files (format versions 1.0, 2.0 and 3.0), in memory.
//
// Reads little- and big-endian arrays of every numeric dtype in C order. NumPy has no
// bfloat16: a bf16 tensor is written as its 16-bit patterns with descr '<u2', and reads
// back as u16 (docs/tensor_files.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

Result<Tensor> npy_decode(const std::string& bytes);

// An array of strings: NumPy's '<U' (UTF-32, read as UTF-8) or '|S' (bytes), zero padding
// removed.
struct NpyStrings {
  std::vector<int64_t> dims;
  std::vector<std::string> strings; // in C order
};
// The strings of a file of strings; none for a file of another dtype; an error for a broken one.
Result<std::optional<NpyStrings>> npy_decode_strings(const std::string& bytes);
std::string npy_encode(const Tensor& tensor);

} // namespace weft
