#include <optional>

#include <fmt/format.h>

#include "weft/driver/stages.h"
#include "weft/driver/tuning_cache.h"
#include "weft/kernel/kernel.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::stages {

std::vector<KernelChoice> schedule_kernels(const Plan& plan, const CompileSettings& settings,
                                           const std::string& cuda_device,
                                           std::vector<KernelSummary>* summaries,
                                           std::string* kernels_text) {
  bool cuda = settings.device == DeviceKind::kCuda;
  std::optional<TuningCache> tuning;
  if (settings.tuning && !cuda)
    tuning.emplace(toolchain::CpuCompiler::from_environment(), kernel_threads());
  if (settings.tuning && cuda && !cuda_device.empty())
    tuning.emplace(TuningCache::for_cuda(cuda_device, settings.deterministic));
  KernelChoice fallback;
  fallback.cuda = codegen::CudaOptions::from_environment(settings.deterministic);
  std::vector<KernelChoice> choices(plan.kernels.size(), fallback);
  for (size_t l = 0, k = 0; l < plan.launches.size(); ++l) {
    const runtime::LaunchInfo& info = plan.launches[l].info;
    KernelSummary summary;
    summary.name = plan.launches[l].name;
    summary.info = info;
    summary.ir = "(a library call)\n";
    summary.library = plan.launches[l].library != nullptr;
    if (!summary.library) {
      summary.ir = kernel::print_kernel(plan.kernels[k]);
      summary.kernel = std::make_shared<const kernel::Kernel>(plan.kernels[k]);
      if (std::optional<TuningRecord> record = tuning ? tuning->lookup(summary.ir) : std::nullopt) {
        choices[k].schedule = record->schedule;
        // The environment's knobs still apply over a record: sweeps compare settings.
        choices[k].cuda =
            codegen::CudaOptions::from_environment(settings.deterministic, record->cuda);
        summary.tuned = true;
      }
      summary.schedule = choices[k].schedule;
      summary.cuda = choices[k].cuda;
      ++k;
    }
    *kernels_text += fmt::format("# node '{}' ({}): {}{}\n{}\n", info.node, info.op_type,
                                 info.strategy, summary.tuned ? " (tuned)" : "", summary.ir);
    summaries->push_back(std::move(summary));
  }
  return choices;
}

} // namespace weft::stages
