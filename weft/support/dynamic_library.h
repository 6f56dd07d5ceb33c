// Loading a vendor library at run time (NVRTC, the driver, cuBLAS, cuDNN): the first of its
// names that dlopen finds, and its entry points by dlsym.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace weft {

// The lib directories of pip's nvidia-* wheels in the Python prefix that holds "program" (pip
// installs the CLI as PREFIX/bin/weft, the wheels' libraries in
// PREFIX/lib/python3.*/site-packages/nvidia/*/lib, where PyTorch's CUDA wheels put NVRTC,
// cuBLAS and cuDNN); none elsewhere.
std::vector<std::string> wheel_library_dirs(const std::string& program);

// The handle of the first of "names" that loads, or null: by name (the loader's path), then
// from the wheels' directories beside this program (wheel_library_dirs of /proc/self/exe).
void* open_first(std::initializer_list<const char*> names);

// Binds entry points, remembering the first one missing so that the error can name it.
class Binder {
public:
  explicit Binder(void* handle) : handle_(handle) {}

  template <typename F> void bind(const char* name, F* fn) {
    *fn = reinterpret_cast<F>(dlsym(handle_, name));
    if (!*fn && missing_.empty()) missing_ = name;
  }
  const std::string& missing() const { return missing_; }

private:
  void* handle_;
  std::string missing_;
};

} // namespace weft
