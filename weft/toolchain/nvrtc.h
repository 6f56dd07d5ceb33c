// NVRTC, loaded at run time with dlopen: building Weft needs no CUDA, and Weft runs without it.
//
// Only the few entry points Weft uses are declared here, with the C ABI of nvrtc.h (stable
// across CUDA 11-13). The library is looked up as libnvrtc.so, then by its versioned names.
#pragma once

#include <string>

#include "weft/support/status.h"

namespace weft::toolchain {

class Nvrtc {
public:
  // The process's NVRTC, loaded on first use; an error says why it is unavailable.
  static Result<const Nvrtc*> get();

  // Compiles CUDA C++ "source" for "arch" (e.g. "sm_80") to PTX. On failure the message
  // holds NVRTC's log, prefixed by "name".
  Result<std::string> compile_to_ptx(const std::string& source, const std::string& name,
                                     const std::string& arch) const;
  // The same to the machine code of "arch" (a CUDA ELF object; see cubin.h).
  Result<std::string> compile_to_cubin(const std::string& source, const std::string& name,
                                       const std::string& arch) const;

  // NVRTC's version, e.g. "13.0".
  std::string version() const;

  struct Api; // the entry points, defined in nvrtc.cc

private:
  explicit Nvrtc(const Api* api) : api_(api) {}
  // Compiles with "--gpu-architecture=<target>" and returns the PTX or, with "cubin", the
  // machine code.
  Result<std::string> compile(const std::string& source, const std::string& name,
                              const std::string& arch, bool cubin) const;
  const Api* api_;
};

} // namespace weft::toolchain
