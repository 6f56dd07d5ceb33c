// Loading a vendor library at run time (NVRTC, the driver, cuBLAS, cuDNN): the first of its
// names that dlopen finds, and its entry points by dlsym.
#pragma once

#include <initializer_list>
#include <string>

#include <dlfcn.h>

namespace weft {

// The handle of the first of "names" that loads, or null.
inline void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

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
