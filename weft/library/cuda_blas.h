// GEMMs on a CUDA device: MatMul and Gemm in f32 as Device::gemm calls (cuBLAS on a GPU,
// a reference loop in the emulator; runtime/cuda/device.h), for static shapes.
//
// Taken: MatMul of ranks >= 2 whose batch dims are equal, or one side 2-D (a 2-D B folds A's
// batch into M); Gemm with its transposes, alpha, and a C that broadcasts to the output
// (scaled by beta). Epilogues stay generated kernels, which fusion joins to their neighbours.
// Anything else (1-D operands, broadcasting batch dims, other dtypes) stays generated code.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "weft/library/dnnl.h"
#include "weft/runtime/cuda/device.h"

namespace weft::library {

std::optional<LibraryCall> cuda_gemm_call(const Node& node,
                                          std::shared_ptr<runtime::cuda::Device> device,
                                          std::string* why_not);

} // namespace weft::library
