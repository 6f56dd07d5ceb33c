// Library calls on a CUDA device (runtime/cuda/device.h), for static shapes or, over symbolic
// dims, per set of extents (dynamic_call.h): MatMul and Gemm
// in f32 as Device::gemm (cuBLAS on a GPU), Conv as Device::conv (cuDNN); the emulator runs
// reference loops instead.
//
// Taken: MatMul of ranks >= 2 whose batch dims are equal, or one side 2-D (a 2-D B folds A's
// batch into M); Gemm with its transposes, alpha, and a C that broadcasts to the output
// (scaled by beta). Epilogues stay generated kernels, which fusion joins to their neighbours.
// Conv in f32 with 1 or 2 spatial dims, symmetric pads, groups and a bias. Anything else
// (1-D MatMul operands, broadcasting batch dims, 3-D convolutions, other dtypes) stays
// generated code.
//
// Precision: fp32 FMA, as the CPU computes, unless "allow_tf32" (CompileSettings): then the
// libraries may round operands to TF32 on tensor cores (10 mantissa bits; ~1e-3 relative).
// Operands that TF32 holds exactly (an f16 or bf16 model's, which graph/passes/narrow_in_f32
// gives these calls as Casts to f32 and folded f32 weights) take TF32 either way: exact
// products, fp32 sums.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "weft/library/dnnl.h"
#include "weft/runtime/cuda/device.h"

namespace weft::library {

std::optional<LibraryCall> cuda_library_call(const Node& node,
                                             std::shared_ptr<runtime::cuda::Device> device,
                                             bool allow_tf32, std::string* why_not);

} // namespace weft::library
