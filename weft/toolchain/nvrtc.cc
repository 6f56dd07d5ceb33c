#include "weft/toolchain/nvrtc.h"

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "weft/support/dynamic_library.h"

namespace weft::toolchain {

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
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
};

namespace {

Result<std::unique_ptr<Nvrtc::Api>> load_api() {
  auto api = std::make_unique<Nvrtc::Api>();
  api->handle = open_first({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"});
  if (!api->handle) {
    return Status::error(
        "NVRTC is not available: libnvrtc.so was not found (install the CUDA "
        "toolkit, or add its lib64 directory to LD_LIBRARY_PATH; pip's nvidia-* wheels, "
        "as PyTorch installs them: their site-packages/nvidia/*/lib)");
  }
  Binder b(api->handle);
  b.bind("nvrtcGetErrorString", &api->GetErrorString);
  b.bind("nvrtcVersion", &api->Version);
  b.bind("nvrtcCreateProgram", &api->CreateProgram);
  b.bind("nvrtcDestroyProgram", &api->DestroyProgram);
  b.bind("nvrtcCompileProgram", &api->CompileProgram);
  b.bind("nvrtcGetPTXSize", &api->GetPTXSize);
  b.bind("nvrtcGetPTX", &api->GetPTX);
  b.bind("nvrtcGetProgramLogSize", &api->GetProgramLogSize);
  b.bind("nvrtcGetProgramLog", &api->GetProgramLog);
  if (!b.missing().empty())
    return Status::error(fmt::format("NVRTC is not usable: libnvrtc.so lacks {}", b.missing()));
  Binder optional(api->handle); // machine code: CUDA 11.1 and later
  optional.bind("nvrtcGetCUBINSize", &api->GetCUBINSize);
  optional.bind("nvrtcGetCUBIN", &api->GetCUBIN);
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
  return compile(source, name, arch, false);
}

Result<std::string> Nvrtc::compile_to_cubin(const std::string& source, const std::string& name,
                                            const std::string& arch) const {
  return compile(source, name, arch, true);
}

Result<std::string> Nvrtc::compile(const std::string& source, const std::string& name,
                                   const std::string& arch, bool cubin) const {
  if (cubin && (!api_->GetCUBINSize || !api_->GetCUBIN))
    return Status::error(fmt::format("NVRTC {} cannot write machine code (CUDA 11.1 or later "
                                     "can)",
                                     version()));
  nvrtcProgram program = nullptr;
  nvrtcResult r = api_->CreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != kNvrtcSuccess)
    return Status::error(fmt::format("{}: NVRTC: {}", name, api_->GetErrorString(r)));
  // PTX for the virtual architecture compute_NN; machine code for the real one, sm_NN.
  std::string arch_flag = "--gpu-architecture=" + std::string(cubin ? "sm_" : "compute_") +
                          arch.substr(arch.find('_') + 1);
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
  (cubin ? api_->GetCUBINSize : api_->GetPTXSize)(program, &size);
  result.resize(size);
  (cubin ? api_->GetCUBIN : api_->GetPTX)(program, result.data());
  api_->DestroyProgram(&program);
  while (!cubin && !result.empty() && result.back() == '\0')
    result.pop_back();
  return result;
}

} // namespace weft::toolchain
