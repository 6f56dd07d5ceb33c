#include <chrono>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/codegen/emit_c.h"
#include "weft/codegen/generate.h"
#include "weft/driver/stages.h"
#include "weft/kernel/kernel.h"
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
  // Kernels the same but for their names (a transformer's layers, an unrolled recurrence's
  // steps), with the same schedule or options, are scheduled and emitted once, and each other
  // one runs the first's function: on the CPU its launch calls the first's symbol (build.cc),
  // on CUDA it launches the first's functions (Sequencer2D-S: 3,000 kernels, 68 different;
  // its cold compile took 29 s).
  std::vector<size_t>& first = out.same_as;
  first.resize(kernels.size());
  std::unordered_map<std::string, size_t> seen;
  bool cpu = dialect == codegen::Dialect::kCpu;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::string options = cpu ? choices[k].schedule.to_string() : choices[k].cuda.key();
    std::string body(kernel::kernel_body(kernel::print_kernel(kernels[k])));
    first[k] = seen.emplace(options + body, k).first->second;
  }
  // Kernels are independent (one isl context each).
  std::vector<Status> failures(kernels.size());
  std::vector<char> hit(kernels.size(), 0);
  parallel_for(kernels.size(), [&](size_t k) {
    if (first[k] != k) return;
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
    hit[k] = f->cache_hit;
  });
  for (const Status& s : failures)
    WEFT_RETURN_IF_ERROR(s);
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (first[k] == k) continue;
    out.functions[k] =
        fmt::format("// kernel {}: the same as {}\n", kernels[k].name, kernels[first[k]].name);
    out.launches[k] = out.launches[first[k]];
    ++out.same_as_another;
  }
  for (size_t k = 0; k < kernels.size(); ++k)
    out.cache_hits += hit[first[k]];
  out.prelude = codegen::emit_prelude(dialect);
  out.source = out.prelude;
  for (const std::string& function : out.functions)
    out.source += "\n" + function;
  return out;
}

} // namespace weft::stages
