#include "weft/runtime/cpu/kernel_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace weft::runtime {

Result<std::shared_ptr<KernelLibrary>> KernelLibrary::load(const std::string& path) {
  // RTLD_NODELETE: kernels pull in the OpenMP runtime, whose worker threads outlive any one
  // library; unmapping it (or the kernel code) under them would crash the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle)
    return Status::error(fmt::format("cannot load kernel library {}: {}", path, dlerror()));
  return std::shared_ptr<KernelLibrary>(new KernelLibrary(handle, path));
}

KernelLibrary::~KernelLibrary() { dlclose(handle_); }

Result<KernelFn> KernelLibrary::function(const std::string& kernel_name) const {
  void* fn = dlsym(handle_, ("weft_" + kernel_name).c_str());
  if (!fn) return Status::error(fmt::format("{} has no kernel weft_{}", path_, kernel_name));
  return reinterpret_cast<KernelFn>(fn);
}

} // namespace weft::runtime
