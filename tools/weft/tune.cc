// weft tune: measure the candidates of each kernel (CPU schedules, or CUDA options with
// --device cuda) and store the winners in the tuning cache, which later compiles of any model
// with the same kernels read.
#include "weft/driver/tune.h"

#include <iostream>

#include <fmt/format.h>
#include <unistd.h>

#include "tools/weft/commands.h"
#include "tools/weft/inputs.h"
#include "weft/driver/compile_model.h"
#include "weft/driver/tuning_cache.h"

namespace weft::cli {

namespace {

double gb_per_s(size_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0;
}

// "[task 3/12] best 0.82 ms (37.1 GB/s) | 24/40 candidates"
std::string progress_line(const TuneProgress& p) {
  const TuneResult& r = *p.result;
  return fmt::format("[task {}/{}] best {:.3f} ms ({:.1f} GB/s) | {}/{} candidates  {} ({})",
                     p.task, p.tasks, r.best_ms, gb_per_s(r.bytes, r.best_ms), p.measured,
                     p.candidates, r.kernel, r.strategy);
}

} // namespace

int tune(const TuneOptions& o) {
  if (!device_available(o.device)) return 2;
  Result<std::vector<Tensor>> inputs = gather_model_inputs(o.model, o.inputs, o.fill, o.shapes);
  if (!inputs.ok()) {
    std::cerr << inputs.status().to_string() << "\n";
    return 1;
  }
  CompileSettings settings;
  settings.device = o.device;
  settings.fusion = o.fusion;
  settings.tuning = false; // candidates are measured against the cost model's schedules
  Result<CompiledModel> compiled = compile_model(o.model, *inputs, settings);
  if (!compiled.ok()) {
    std::cerr << compiled.status().to_string() << "\n";
    return 1;
  }
  bool tty = ::isatty(STDOUT_FILENO) != 0;
  weft::TuneOptions options;
  options.seconds_per_candidate = o.seconds_per_candidate;
  options.progress = [&](const TuneProgress& p) {
    bool last = p.measured == p.candidates;
    if (tty)
      std::cout << "\r\033[K" << progress_line(p) << (last ? "\n" : "") << std::flush;
    else if (last)
      std::cout << progress_line(p) << "\n" << std::flush;
  };
  std::cout << fmt::format("tuning {}: building the candidates\n", o.model) << std::flush;
  Result<std::vector<TuneResult>> results = tune_model(*compiled, *inputs, options);
  if (!results.ok()) {
    std::cerr << results.status().with_location({o.model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  double before = 0, after = 0;
  int tuned = 0, fixed = 0, calls = 0, changed = 0, placed = 0, generated = 0;
  for (const TuneResult& r : *results) {
    if (!r.algorithm.empty()) { // a library call's algorithms, or the call against generated code
      bool placement = r.algorithm == "generated" || r.algorithm == "library";
      bool other = r.best_ms < r.default_ms;
      (placement ? placed : calls) += 1;
      (placement ? generated : changed) += other ? 1 : 0;
      std::cout << fmt::format("{}: {} ({:.3f} ms{})\n", r.kernel, r.algorithm, r.best_ms,
                               other ? fmt::format(", {:.3f} ms by default", r.default_ms) : "");
      continue;
    }
    if (r.candidates < 2) {
      ++fixed;
      continue;
    }
    ++tuned;
    before += r.default_ms;
    after += r.best_ms;
    if (r.best_ms < r.default_ms)
      std::cout << fmt::format(
          "{}: {:.3f} -> {:.3f} ms with {}{}\n", r.kernel, r.default_ms, r.best_ms, r.choice,
          r.rejected ? fmt::format(" ({} candidates dropped: other values)", r.rejected) : "");
  }
  std::cout << fmt::format(
      "{} kernels tuned ({} have one candidate: their code does not depend "
      "on the {}); sum of their medians {:.3f} -> {:.3f} ms\n",
      tuned, fixed, o.device == DeviceKind::kCuda ? "CUDA options" : "schedule", before, after);
  if (calls > 0)
    std::cout << fmt::format("{} convolution shapes timed with oneDNN's direct kernels and "
                             "the Winograd or few-outputs ones; {} take the other than by "
                             "default\n",
                             calls, changed);
  if (placed > 0)
    std::cout << fmt::format("{} convolutions timed as oneDNN calls and as generated code; {} "
                             "run as generated code\n",
                             placed, generated);
  std::cout << fmt::format(
      "records: {}\n",
      TuningCache(toolchain::CpuCompiler::from_environment(), kernel_threads()).directory());
  return 0;
}

} // namespace weft::cli
