// A generated kernel on a CUDA device: its parts (emit_c.h), launched in order on the device's
// stream. It is a LibraryKernel, so that an executable runs it as it runs a library call, on
// buffers that live on the device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/runtime/cuda/device.h"
#include "weft/runtime/library_kernel.h"

namespace weft::runtime::cuda {

class CudaKernel : public LibraryKernel {
public:
  // "buffers": how many the kernel binds (its first parameters, in order); "symbols": how
  // many extents follow them (codegen::kernel_symbols, in order), which a run passes.
  CudaKernel(std::shared_ptr<Device> device, std::shared_ptr<const Module> module,
             std::vector<LaunchShape> parts, size_t buffers, size_t symbols = 0)
      : device_(std::move(device)), module_(std::move(module)), parts_(std::move(parts)),
        buffers_(buffers), symbols_(symbols) {}

  Status run(void* const* buffers, const int64_t* extents) const override;
  std::string describe() const override;

private:
  std::shared_ptr<Device> device_;
  std::shared_ptr<const Module> module_;
  std::vector<LaunchShape> parts_;
  size_t buffers_;
  size_t symbols_;
};

} // namespace weft::runtime::cuda
