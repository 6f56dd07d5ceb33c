#include <atomic>
#include <chrono>

#include "weft/codegen/emit_c.h"
#include "weft/codegen/generate.h"
#include "weft/driver/stages.h"
#include "weft/support/log.h"
#include "weft/support/parallel.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::stages {

Result<GeneratedSource> generate_source(const Plan& plan, const std::vector<KernelChoice>& choices,
                                        const CompileSettings& settings) {
  codegen::Dialect dialect =
      settings.device == DeviceKind::kCuda ? codegen::Dialect::kCuda : codegen::Dialect::kCpu;
  std::string cache_dir = toolchain::CpuCompiler::from_environment().cache_dir;
  const std::vector<kernel::Kernel>& kernels = plan.kernels;
  GeneratedSource out;
  out.functions.resize(kernels.size());
  out.launches.resize(kernels.size());
  // Kernels are independent (one isl context each).
  std::vector<Status> failures(kernels.size());
  std::atomic<int> cached = 0;
  parallel_for(kernels.size(), [&](size_t k) {
    auto start = std::chrono::steady_clock::now();
    Result<codegen::GeneratedFunction> f = codegen::generate_function(
        kernels[k], dialect, cache_dir, choices[k].schedule, choices[k].cuda);
    log_debug("kernel {}: {} in {:.1f} ms", kernels[k].name,
              f.ok() && f->cache_hit ? "from the function cache" : "generated",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
    if (!f.ok()) {
      failures[k] = f.status().with_location(plan.sites[k]);
      return;
    }
    out.functions[k] = std::move(f->source);
    out.launches[k] = std::move(f->launches);
    cached += f->cache_hit ? 1 : 0;
  });
  for (const Status& s : failures)
    WEFT_RETURN_IF_ERROR(s);
  out.cache_hits = cached;
  out.prelude = codegen::emit_prelude(dialect);
  out.source = out.prelude;
  for (const std::string& function : out.functions)
    out.source += "\n" + function;
  return out;
}

} // namespace weft::stages
