// cuDNN through dlopen: the entry points Weft calls (driver.cc plans and runs the
// convolutions).
#pragma once

#include <cstddef>
#include <memory>

#include "weft/runtime/cuda/driver_types.h"
#include "weft/support/status.h"

namespace weft::runtime::cuda {

// cuDNN (cudnn.h's legacy convolution API, which cuDNN 9's libcudnn.so still exports), loaded
// on the first convolution.
using cudnnHandle_t = struct cudnnContext*;
using cudnnStatus_t = int;
using cudnnTensorDescriptor_t = struct cudnnTensorStruct*;
using cudnnFilterDescriptor_t = struct cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = struct cudnnConvolutionStruct*;
constexpr int kCudnnNchw = 0, kCudnnFloat = 0, kCudnnCrossCorrelation = 1;
// cudnnMathType_t: DEFAULT allows TF32 tensor cores for f32 on sm_80 and later, TENSOR_OP and
// ALLOW_CONVERSION use tensor cores, FMA does not.
constexpr int kCudnnDefaultMath = 0, kCudnnTensorOpMath = 1, kCudnnAllowConversionMath = 2,
              kCudnnFmaMath = 3;

struct CudnnAlgoPerf { // cudnnConvolutionFwdAlgoPerf_t
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct CudnnApi {
  void* handle = nullptr;
  cudnnStatus_t (*Create)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*SetStream)(cudnnHandle_t, CUstream) = nullptr;
  cudnnStatus_t (*CreateTensorDescriptor)(cudnnTensorDescriptor_t*) = nullptr;
  cudnnStatus_t (*DestroyTensorDescriptor)(cudnnTensorDescriptor_t) = nullptr;
  cudnnStatus_t (*SetTensor4dDescriptor)(cudnnTensorDescriptor_t, int, int, int, int, int,
                                         int) = nullptr;
  cudnnStatus_t (*CreateFilterDescriptor)(cudnnFilterDescriptor_t*) = nullptr;
  cudnnStatus_t (*DestroyFilterDescriptor)(cudnnFilterDescriptor_t) = nullptr;
  cudnnStatus_t (*SetFilter4dDescriptor)(cudnnFilterDescriptor_t, int, int, int, int, int,
                                         int) = nullptr;
  cudnnStatus_t (*CreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t*) = nullptr;
  cudnnStatus_t (*DestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t) = nullptr;
  cudnnStatus_t (*SetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t, int, int, int, int, int,
                                              int, int, int) = nullptr;
  cudnnStatus_t (*SetConvolutionGroupCount)(cudnnConvolutionDescriptor_t, int) = nullptr;
  cudnnStatus_t (*SetConvolutionMathType)(cudnnConvolutionDescriptor_t, int) = nullptr;
  cudnnStatus_t (*GetConvolutionForwardAlgorithm)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                  cudnnFilterDescriptor_t,
                                                  cudnnConvolutionDescriptor_t,
                                                  cudnnTensorDescriptor_t, int, int*,
                                                  CudnnAlgoPerf*) = nullptr;
  cudnnStatus_t (*GetConvolutionForwardWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                      cudnnFilterDescriptor_t,
                                                      cudnnConvolutionDescriptor_t,
                                                      cudnnTensorDescriptor_t, int,
                                                      size_t*) = nullptr;
  cudnnStatus_t (*ConvolutionForward)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t,
                                      const void*, cudnnFilterDescriptor_t, const void*,
                                      cudnnConvolutionDescriptor_t, int, void*, size_t, const void*,
                                      cudnnTensorDescriptor_t, void*) = nullptr;
  cudnnStatus_t (*AddTensor)(cudnnHandle_t, const void*, cudnnTensorDescriptor_t, const void*,
                             const void*, cudnnTensorDescriptor_t, void*) = nullptr;
  const char* (*GetErrorString)(cudnnStatus_t) = nullptr;
};

// libcudnn.so (or a versioned name) with every entry point bound, or why not.
Result<std::unique_ptr<CudnnApi>> load_cudnn();

} // namespace weft::runtime::cuda
