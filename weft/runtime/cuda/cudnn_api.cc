#include "weft/runtime/cuda/cudnn_api.h"

#include <fmt/format.h>

#include "weft/support/dynamic_library.h"

namespace weft::runtime::cuda {

Result<std::unique_ptr<CudnnApi>> load_cudnn() {
  auto api = std::make_unique<CudnnApi>();
  api->handle = open_first({"libcudnn.so", "libcudnn.so.9", "libcudnn.so.8"});
  if (!api->handle) {
    return Status::error(
        "cuDNN is not available: libcudnn.so was not found (install cuDNN, or "
        "add its directory to LD_LIBRARY_PATH; pip's nvidia-cudnn wheel, as PyTorch "
        "installs it: site-packages/nvidia/cudnn/lib)");
  }
  Binder b(api->handle);
  b.bind("cudnnCreate", &api->Create);
  b.bind("cudnnSetStream", &api->SetStream);
  b.bind("cudnnCreateTensorDescriptor", &api->CreateTensorDescriptor);
  b.bind("cudnnDestroyTensorDescriptor", &api->DestroyTensorDescriptor);
  b.bind("cudnnSetTensor4dDescriptor", &api->SetTensor4dDescriptor);
  b.bind("cudnnCreateFilterDescriptor", &api->CreateFilterDescriptor);
  b.bind("cudnnDestroyFilterDescriptor", &api->DestroyFilterDescriptor);
  b.bind("cudnnSetFilter4dDescriptor", &api->SetFilter4dDescriptor);
  b.bind("cudnnCreateConvolutionDescriptor", &api->CreateConvolutionDescriptor);
  b.bind("cudnnDestroyConvolutionDescriptor", &api->DestroyConvolutionDescriptor);
  b.bind("cudnnSetConvolution2dDescriptor", &api->SetConvolution2dDescriptor);
  b.bind("cudnnSetConvolutionGroupCount", &api->SetConvolutionGroupCount);
  b.bind("cudnnSetConvolutionMathType", &api->SetConvolutionMathType);
  b.bind("cudnnGetConvolutionForwardAlgorithm_v7", &api->GetConvolutionForwardAlgorithm);
  b.bind("cudnnGetConvolutionForwardWorkspaceSize", &api->GetConvolutionForwardWorkspaceSize);
  b.bind("cudnnConvolutionForward", &api->ConvolutionForward);
  b.bind("cudnnAddTensor", &api->AddTensor);
  b.bind("cudnnGetErrorString", &api->GetErrorString);
  if (!b.missing().empty())
    return Status::error(fmt::format("cuDNN is not usable: libcudnn.so lacks {}", b.missing()));
  return api;
}

} // namespace weft::runtime::cuda
