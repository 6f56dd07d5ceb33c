// A compiled kernel library loaded with dlopen, and its kernel functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/support/status.h"

namespace weft::runtime {

// The ABI of every generated CPU kernel (codegen/emit_c.h).
using KernelFn = void (*)(void* const* buffers, const int64_t* extents);

class KernelLibrary {
public:
  static Result<std::shared_ptr<KernelLibrary>> load(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The function "weft_<kernel_name>".
  Result<KernelFn> function(const std::string& kernel_name) const;

private:
  KernelLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

} // namespace weft::runtime
