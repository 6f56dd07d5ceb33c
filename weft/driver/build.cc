#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "weft/driver/stages.h"
#include "weft/runtime/cuda/cuda_kernel.h"
#include "weft/runtime/cuda/device.h"
#include "weft/support/log.h"
#include "weft/toolchain/compile_cpu.h"
#include "weft/toolchain/nvrtc.h"

namespace weft::stages {

namespace {

std::unique_ptr<runtime::Executable>
make_executable(const Graph& graph, Plan plan,
                std::vector<std::shared_ptr<runtime::KernelLibrary>> libraries,
                const Frozen& frozen) {
  std::vector<runtime::TensorInfo> inputs, outputs;
  for (const Value* v : graph.inputs)
    inputs.push_back({v->name, v->type, {}});
  for (const Value* v : graph.outputs)
    outputs.push_back({v->name, v->type, {}});
  auto executable = std::make_unique<runtime::Executable>(
      std::move(inputs), std::move(outputs), std::move(plan.slots), std::move(plan.launches),
      std::move(plan.output_slots), plan.arena, std::move(libraries));
  for (const auto& [i, value] : frozen)
    executable->freeze_input(i, value);
  executable->limit_dims(graph.dim_limits);
  return executable;
}

// Loads the library at "path" and looks up each generated kernel's function: its own, or
// that of the kernel it is the same as (GeneratedSource::same_as).
Result<std::shared_ptr<runtime::KernelLibrary>> load_kernels(const std::string& path, Plan& plan,
                                                             const GeneratedSource& generated) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<runtime::KernelLibrary> library,
                        runtime::KernelLibrary::load(path));
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    runtime::Launch& launch = plan.launches[plan.kernel_launch[k]];
    if (launch.library) continue;
    WEFT_ASSIGN_OR_RETURN(launch.fn, library->function(plan.kernels[generated.same_as[k]].name));
  }
  return library;
}

} // namespace

Status build_ptx(const std::string& model, const std::string& source,
                 const std::vector<std::string>& archs,
                 std::vector<std::pair<std::string, std::string>>* ptx) {
  WEFT_ASSIGN_OR_RETURN(const toolchain::Nvrtc* nvrtc, toolchain::Nvrtc::get());
  for (const std::string& arch : archs) {
    WEFT_ASSIGN_OR_RETURN(std::string code, nvrtc->compile_to_ptx(source, model + ".cu", arch));
    ptx->emplace_back(arch, std::move(code));
  }
  return Status();
}

Result<std::unique_ptr<runtime::Executable>>
build_cuda(const Graph& graph, Plan plan, const GeneratedSource& generated,
           const std::shared_ptr<runtime::cuda::Device>& device, const Frozen& frozen,
           PhaseTimer& timer) {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::cuda::Module> module,
                        device->load(generated.source, graph.source));
  timer.end("build");
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    runtime::Launch& launch = plan.launches[plan.kernel_launch[k]];
    launch.library = std::make_shared<runtime::cuda::CudaKernel>(
        device, module, generated.launches[k],
        plan.kernels[k].buffers.size(), launch.symbols.size());
  }
  std::unique_ptr<runtime::Executable> executable = make_executable(graph, std::move(plan), {}, {});
  executable->place_on(device);
  for (const auto& [i, value] : frozen) // placed first: frozen values go to the device
    executable->freeze_input(i, value);
  timer.end("load");
  return executable;
}

Result<std::unique_ptr<runtime::Executable>> build_cpu(const Graph& graph, Plan plan,
                                                       const GeneratedSource& generated,
                                                       const Frozen& frozen, PhaseTimer& timer,
                                                       bool* cache_hit) {
  // Library calls alone (or nothing but aliases: a stage that hands its inputs over) need no
  // compiler run.
  if (std::all_of(plan.launches.begin(), plan.launches.end(),
                  [](const runtime::Launch& l) { return l.library != nullptr; })) {
    *cache_hit = true;
    timer.end("build");
    return make_executable(graph, std::move(plan), {}, frozen);
  }
  toolchain::CpuCompiler compiler = toolchain::CpuCompiler::from_environment();
  WEFT_ASSIGN_OR_RETURN(toolchain::CompiledLibrary built,
                        toolchain::compile_cpu(generated.prelude, generated.functions, compiler));
  timer.end("build");
  Result<std::shared_ptr<runtime::KernelLibrary>> library =
      load_kernels(built.path, plan, generated);
  if (!library.ok() && built.cache_hit) {
    // A damaged cache entry (a full disk, say) is rebuilt once rather than trusted.
    log_info("kernel cache entry {} is unusable ({}); rebuilding", built.path,
             library.status().message());
    std::error_code ec;
    std::filesystem::remove(built.path, ec);
    WEFT_ASSIGN_OR_RETURN(built,
                          toolchain::compile_cpu(generated.prelude, generated.functions, compiler));
    library = load_kernels(built.path, plan, generated);
  }
  if (!library.ok()) return library.status();
  *cache_hit = built.cache_hit;
  std::unique_ptr<runtime::Executable> executable =
      make_executable(graph, std::move(plan), {*library}, frozen);
  timer.end("load");
  return executable;
}

} // namespace weft::stages
