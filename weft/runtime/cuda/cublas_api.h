// cuBLAS through dlopen: the entry points Weft calls (driver.cc runs the GEMMs).
#pragma once

#include <memory>

#include "weft/runtime/cuda/driver_types.h"
#include "weft/support/status.h"

namespace weft::runtime::cuda {

// cuBLAS (cublas_api.h's v2 entry points), loaded on the first GEMM.
using cublasHandle_t = struct cublasContext*;
using cublasStatus_t = int;
constexpr int kCublasOpN = 0, kCublasOpT = 1;

struct CublasApi {
  void* handle = nullptr;
  cublasStatus_t (*Create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*SetStream)(cublasHandle_t, CUstream) = nullptr;
  cublasStatus_t (*SgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const float*,
                                        const float*, int, long long, const float*, int, long long,
                                        const float*, float*, int, long long, int) = nullptr;
  cublasStatus_t (*SetMathMode)(cublasHandle_t, int) = nullptr;
  const char* (*GetStatusString)(cublasStatus_t) = nullptr;
};

// libcublas.so (or a versioned name) with every entry point bound, or why not.
Result<std::unique_ptr<CublasApi>> load_cublas();

} // namespace weft::runtime::cuda
