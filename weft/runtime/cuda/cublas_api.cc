#include "weft/runtime/cuda/cublas_api.h"

#include <fmt/format.h>

#include "weft/support/dynamic_library.h"

namespace weft::runtime::cuda {

Result<std::unique_ptr<CublasApi>> load_cublas() {
  auto api = std::make_unique<CublasApi>();
  api->handle =
      open_first({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"});
  if (!api->handle) {
    return Status::error(
        "cuBLAS is not available: libcublas.so was not found (install the "
        "CUDA toolkit's cuBLAS, or add its lib64 directory to LD_LIBRARY_PATH; pip's "
        "nvidia-* wheels, as PyTorch installs them: site-packages/nvidia/*/lib)");
  }
  Binder b(api->handle);
  b.bind("cublasCreate_v2", &api->Create);
  b.bind("cublasSetStream_v2", &api->SetStream);
  b.bind("cublasSgemmStridedBatched", &api->SgemmStridedBatched);
  b.bind("cublasSetMathMode", &api->SetMathMode);
  b.bind("cublasGetStatusString", &api->GetStatusString);
  if (!b.missing().empty())
    return Status::error(fmt::format("cuBLAS is not usable: libcublas.so lacks {}", b.missing()));
  return api;
}

} // namespace weft::runtime::cuda
