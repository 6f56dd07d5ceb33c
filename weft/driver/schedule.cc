#include <optional>

#include <fmt/format.h>

#include "weft/driver/stages.h"
#include "weft/driver/tuning_cache.h"
#include "weft/kernel/kernel.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::stages {

std::vector<codegen::CpuSchedule> schedule_kernels(const Plan& plan,
                                                   const CompileSettings& settings,
                                                   std::vector<KernelSummary>* summaries,
                                                   std::string* kernels_text) {
  std::optional<TuningCache> tuning;
  if (settings.tuning && settings.device == DeviceKind::kCpu)
    tuning.emplace(toolchain::CpuCompiler::from_environment(), kernel_threads());
  std::vector<codegen::CpuSchedule> schedules(plan.kernels.size());
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
        summary.schedule = schedules[k] = record->schedule;
        summary.tuned = true;
      }
      ++k;
    }
    *kernels_text += fmt::format("# node '{}' ({}): {}{}\n{}\n", info.node, info.op_type,
                                 info.strategy, summary.tuned ? " (tuned)" : "", summary.ir);
    summaries->push_back(std::move(summary));
  }
  return schedules;
}

} // namespace weft::stages
