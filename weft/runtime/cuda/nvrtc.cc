#include "weft/runtime/cuda/nvrtc.h"

#include <memory>
#include <vector>

#include <dlfcn.h>
#include <fmt/format.h>

namespace weft::runtime::cuda {

namespace {

// nvrtc.h's types, as opaque as Weft needs them.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

constexpr nvrtcResult kNvrtcSuccess = 0;

} // namespace

struct Nvrtc::Api {
  void* handle = nullptr;
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
};

namespace {

template <typename F> bool bind(void* handle, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(handle, name));
  return *fn != nullptr;
}

Result<std::unique_ptr<Nvrtc::Api>> load_api() {
  static const char* const kNames[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                       "libnvrtc.so.11.2"};
  auto api = std::make_unique<Nvrtc::Api>();
  for (const char* name : kNames) {
    api->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (api->handle) break;
  }
  if (!api->handle) {
    return Status::error("NVRTC is not available: libnvrtc.so was not found (install the CUDA "
                         "toolkit, or add its lib64 directory to LD_LIBRARY_PATH)");
  }
  void* h = api->handle;
  bool ok = bind(h, "nvrtcGetErrorString", &api->GetErrorString) &&
            bind(h, "nvrtcVersion", &api->Version) &&
            bind(h, "nvrtcCreateProgram", &api->CreateProgram) &&
            bind(h, "nvrtcDestroyProgram", &api->DestroyProgram) &&
            bind(h, "nvrtcCompileProgram", &api->CompileProgram) &&
            bind(h, "nvrtcGetPTXSize", &api->GetPTXSize) && bind(h, "nvrtcGetPTX", &api->GetPTX) &&
            bind(h, "nvrtcGetProgramLogSize", &api->GetProgramLogSize) &&
            bind(h, "nvrtcGetProgramLog", &api->GetProgramLog);
  if (!ok) return Status::error("NVRTC is not usable: libnvrtc.so lacks an entry point Weft needs");
  return api;
}

} // namespace

Result<const Nvrtc*> Nvrtc::get() {
  // Loaded once; the library stays for the life of the process.
  static const Result<std::unique_ptr<Api>> api = load_api();
  if (!api.ok()) return api.status();
  static const Nvrtc nvrtc(api->get());
  return &nvrtc;
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->Version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

Result<std::string> Nvrtc::compile_to_ptx(const std::string& source, const std::string& name,
                                          const std::string& arch) const {
  nvrtcProgram program = nullptr;
  nvrtcResult r = api_->CreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != kNvrtcSuccess)
    return Status::error(fmt::format("{}: NVRTC: {}", name, api_->GetErrorString(r)));
  std::string arch_flag = "--gpu-architecture=compute_" + arch.substr(arch.find('_') + 1);
  std::vector<const char*> options = {arch_flag.c_str(), "--std=c++17", "-default-device"};
  r = api_->CompileProgram(program, static_cast<int>(options.size()), options.data());
  std::string result;
  if (r != kNvrtcSuccess) {
    size_t size = 0;
    api_->GetProgramLogSize(program, &size);
    std::string log(size, '\0');
    api_->GetProgramLog(program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    api_->DestroyProgram(&program);
    // The log spans lines; Status escapes them, keeping the message on one line.
    return Status::error(fmt::format("{}: NVRTC failed for {}: {}", name, arch, log));
  }
  size_t size = 0;
  api_->GetPTXSize(program, &size);
  result.resize(size);
  api_->GetPTX(program, result.data());
  api_->DestroyProgram(&program);
  while (!result.empty() && result.back() == '\0')
    result.pop_back();
  return result;
}

} // namespace weft::runtime::cuda
