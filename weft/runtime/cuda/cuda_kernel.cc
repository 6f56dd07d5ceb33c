#include "weft/runtime/cuda/cuda_kernel.h"

#include <fmt/format.h>

namespace weft::runtime::cuda {

Status CudaKernel::run(void* const* buffers, const int64_t* extents) const {
  std::vector<uint64_t> args;
  for (size_t i = 0; i < buffers_; ++i)
    args.push_back(reinterpret_cast<uint64_t>(buffers[i]));
  for (size_t i = 0; i < symbols_; ++i)
    args.push_back(static_cast<uint64_t>(extents[i]));
  for (const LaunchShape& part : parts_) {
    int64_t grid = part.one_block ? 1
                                  : device_->persistent_grid(
                                        part.block, module_->resident_blocks(part.function, part.block));
    WEFT_RETURN_IF_ERROR(module_->launch(part.function, grid, part.block, args));
  }
  return Status();
}

std::string CudaKernel::describe() const {
  std::vector<std::string> parts;
  for (const LaunchShape& p : parts_)
    parts.push_back(fmt::format("{} x{}", p.function, p.block));
  return fmt::format("CUDA {} ({})", fmt::join(parts, ", "), device_->describe());
}

} // namespace weft::runtime::cuda
