#include "weft/driver/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/emit_c.h"
#include "weft/codegen/generate.h"
#include "weft/driver/tuning_cache.h"
#include "weft/library/dnnl.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/support/float16.h"
#include "weft/support/log.h"
#include "weft/support/parallel.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft {

using codegen::CpuSchedule;

std::vector<CpuSchedule> candidate_schedules() {
  const CpuSchedule base;
  std::vector<CpuSchedule> grid{base};
  // The cost model's schedule with plain stores for large outputs.
  CpuSchedule cached = base;
  cached.stream_min_bytes = codegen::kNoStreaming;
  if (!(cached == base)) grid.push_back(cached);
  for (int64_t lanes : {16, 32, 64}) {
    for (int64_t per_thread : {int64_t{4096}, int64_t{16384}, int64_t{65536}}) {
      for (auto [width, rows] :
           {std::pair<int64_t, int64_t>{2048, 128}, {1024, 256}, {4096, 64}, {8192, 32}}) {
        for (int64_t serial_below : {int64_t{0}, int64_t{1} << 40}) {
          CpuSchedule s{lanes, width, rows, per_thread, serial_below};
          if (!(s == base)) grid.push_back(s);
        }
      }
    }
  }
  return grid;
}

namespace {

using Clock = std::chrono::steady_clock;

// One task: a kernel and its distinct candidates, built into one library.
struct Task {
  size_t summary = 0;                 // index into CompiledModel::kernels (= launch index)
  std::vector<CpuSchedule> schedules; // distinct candidates; [0] is the cost model's
  std::vector<std::string> sources;
  std::shared_ptr<runtime::KernelLibrary> library;
  std::vector<runtime::KernelFn> fns;
  std::vector<size_t> sizes;   // bytes of each buffer
  std::vector<bool> written;   // buffers a run writes (all but inputs)
  std::vector<double> medians; // per candidate; negative: rejected
  bool measured = false;
};

// The code of "source" with the variant's name taken out, to find schedules that generate
// the same code.
std::string anonymous(const std::string& source, const std::string& name) {
  std::string out;
  size_t from = 0;
  for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, from)) {
    out.append(source, from, at - from);
    out += '@';
    from = at + name.size();
  }
  out.append(source, from, std::string::npos);
  return out;
}

Result<Task> prepare(const KernelSummary& summary, size_t index) {
  const kernel::Kernel& k = *summary.kernel;
  Task task;
  task.summary = index;
  bool aliased = false;
  for (const kernel::Buffer& b : k.buffers) {
    std::optional<int64_t> n = shape_num_elements(b.shape);
    if (!n) return Status::error(fmt::format("kernel {} has a dynamic shape", k.name));
    task.sizes.push_back(static_cast<size_t>(*n) * static_cast<size_t>(dtype_size(b.dtype)));
    task.written.push_back(b.role != kernel::BufferRole::kInput);
    aliased = aliased || b.aliased;
  }
  if (aliased) task.written.assign(task.written.size(), true);
  std::vector<CpuSchedule> grid = candidate_schedules();
  std::vector<std::string> names;
  for (size_t i = 0; i < grid.size(); ++i)
    names.push_back(fmt::format("{}_v{}", k.name, i));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> variants,
                        codegen::generate_variants(k, grid, names));
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (!seen.emplace(anonymous(variants[i], names[i]), i).second) continue;
    task.schedules.push_back(grid[i]);
    task.sources.push_back(std::move(variants[i]));
    task.fns.push_back(nullptr);
  }
  return task;
}

Status build(Task& task, const std::string& kernel_name, const toolchain::CpuCompiler& compiler) {
  std::string source = codegen::emit_prelude(codegen::Dialect::kCpu);
  for (const std::string& f : task.sources)
    source += "\n" + f;
  WEFT_ASSIGN_OR_RETURN(toolchain::CompiledLibrary built, toolchain::compile_cpu(source, compiler));
  WEFT_ASSIGN_OR_RETURN(task.library, runtime::KernelLibrary::load(built.path));
  std::vector<CpuSchedule> grid = candidate_schedules();
  for (size_t c = 0; c < task.schedules.size(); ++c) {
    size_t i =
        static_cast<size_t>(std::find(grid.begin(), grid.end(), task.schedules[c]) - grid.begin());
    WEFT_ASSIGN_OR_RETURN(task.fns[c],
                          task.library->function(fmt::format("{}_v{}", kernel_name, i)));
  }
  return Status();
}

// Float buffers within rtol 1e-4 plus an absolute 1e-5 of the buffer's largest magnitude:
// reassociated sums of many terms differ by a few ulp of the terms, not of a result that
// cancels to near 0. Other types bit for bit. Returns the largest difference seen too.
bool close_enough(DType dtype, const std::byte* a, const std::byte* b, size_t bytes,
                  double* worst) {
  auto at = [&](const std::byte* p, size_t i) -> double {
    if (dtype == DType::kF32) {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    if (dtype == DType::kF64) {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return dtype == DType::kF16 ? half_to_float(h) : bf16_to_float(h);
  };
  bool is_float =
      dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 || dtype == DType::kBF16;
  if (!is_float) return std::memcmp(a, b, bytes) == 0;
  size_t n = bytes / static_cast<size_t>(dtype_size(dtype));
  double scale = 0;
  for (size_t i = 0; i < n; ++i) {
    double y = at(b, i);
    if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
  }
  bool wide = dtype == DType::kF16 || dtype == DType::kBF16;
  double rtol = wide ? 1e-2 : 1e-4, atol = (wide ? 1e-2 : 1e-5) * std::max(scale, 1.0);
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    double x = at(a, i), y = at(b, i);
    if (std::isnan(x) || std::isnan(y)) {
      ok = ok && std::isnan(x) && std::isnan(y);
      continue;
    }
    if (x == y) continue;
    double d = std::fabs(x - y);
    *worst = std::max(*worst, d);
    ok = ok && d <= atol + rtol * std::max(std::fabs(x), std::fabs(y));
  }
  return ok;
}

// Runs and times every candidate of "task" on the buffers "args", leaving them as found.
void measure(Task& task, const kernel::Kernel& k, void* const* args, const TuneOptions& options,
             TuneResult& result, TuneProgress progress) {
  size_t n = task.sizes.size();
  std::vector<std::vector<std::byte>> saved(n), reference(n);
  for (size_t b = 0; b < n; ++b) {
    if (!task.written[b]) continue;
    const std::byte* p = static_cast<const std::byte*>(args[b]);
    saved[b].assign(p, p + task.sizes[b]);
  }
  auto restore = [&] {
    for (size_t b = 0; b < n; ++b) {
      if (task.written[b]) std::memcpy(args[b], saved[b].data(), task.sizes[b]);
    }
  };
  task.medians.assign(task.fns.size(), -1);
  std::vector<bool> idempotent(task.fns.size(), false);
  // The median time of candidate "c" over at least 3 runs and about "seconds".
  auto median_ms = [&](size_t c, double seconds) {
    std::vector<double> times;
    double spent = 0;
    while (static_cast<int>(times.size()) < options.max_runs &&
           (times.size() < 3 || spent < seconds)) {
      if (!idempotent[c]) restore();
      auto t0 = Clock::now();
      task.fns[c](args, nullptr);
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      times.push_back(s * 1e3);
      spent += s;
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  size_t best = 0;
  for (size_t c = 0; c < task.fns.size(); ++c) {
    restore();
    task.fns[c](args, nullptr);
    double worst = 0;
    auto matches = [&] {
      bool same = true;
      for (size_t b = 0; b < n && same; ++b) {
        const std::byte* p = static_cast<const std::byte*>(args[b]);
        if (task.written[b])
          same = close_enough(k.buffers[b].dtype, p, reference[b].data(), task.sizes[b], &worst);
      }
      return same;
    };
    if (c == 0) {
      for (size_t b = 0; b < n; ++b) {
        const std::byte* p = static_cast<const std::byte*>(args[b]);
        if (task.written[b]) reference[b].assign(p, p + task.sizes[b]);
      }
    }
    bool same = c == 0 || matches();
    // A kernel that computes the same again from its own results (it does not read what it
    // writes before writing it) is timed back to back, as it runs in the model; otherwise
    // each timed run starts from the saved state.
    bool again = false;
    if (same) {
      task.fns[c](args, nullptr);
      again = matches();
    }
    if (!same) {
      ++result.rejected;
      log_info("tune: {} candidate '{}' computes other values (largest difference {:g}); "
               "dropped",
               k.name, task.schedules[c].to_string(), worst);
    } else {
      idempotent[c] = again;
      task.medians[c] = median_ms(c, options.seconds_per_candidate);
      if (c == 0) result.default_ms = task.medians[c];
      if (c == 0 || task.medians[c] < result.best_ms) {
        result.best_ms = task.medians[c];
        result.best = task.schedules[c];
        best = c;
      }
    }
    progress.measured = static_cast<int>(c + 1);
    progress.result = &result;
    if (options.progress) options.progress(progress);
  }
  // A winner other than the cost model's schedule is timed again, alternating with it, so
  // that a burst of load on a shared machine does not decide: it must still be 3% faster.
  if (best != 0) {
    std::vector<double> mine, theirs;
    for (int round = 0; round < 5; ++round) {
      theirs.push_back(median_ms(0, options.seconds_per_candidate / 4));
      mine.push_back(median_ms(best, options.seconds_per_candidate / 4));
    }
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine[2] > 0.97 * theirs[2]) {
      log_info("tune: {}: '{}' did not stay faster on a second look ({:.3f} vs {:.3f} ms); the "
               "cost model's schedule stays",
               k.name, task.schedules[best].to_string(), mine[2], theirs[2]);
      result.best = task.schedules[0];
      result.best_ms = theirs[2];
      result.default_ms = theirs[2];
    } else {
      result.best_ms = mine[2];
      result.default_ms = theirs[2];
    }
  }
  restore();
  task.measured = true;
}

// The node names of a launch, from its "a, b, c".
std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  for (size_t from = 0; from <= list.size();) {
    size_t comma = std::min(list.find(", ", from), list.size());
    names.push_back(list.substr(from, comma - from));
    from = comma + 2;
  }
  return names;
}

// The oneDNN convolutions that can run either algorithm, each geometry timed both ways and
// its faster recorded (library::record_conv_algorithm).
Status tune_library_calls(const CompiledModel& model, const TuneOptions& options,
                          std::vector<TuneResult>& results) {
  std::map<std::string, const KernelSummary*> call_of; // by the nodes of convolution calls
  for (const KernelSummary& s : model.kernels) {
    if (!s.library || !s.info.strategy.starts_with("oneDNN convolution")) continue;
    for (const std::string& node : split_names(s.info.node))
      call_of[node] = &s;
  }
  std::set<std::string> timed; // geometries
  for (const auto& node : model.graph.nodes()) {
    auto call = call_of.find(node->name);
    if (call == call_of.end()) continue;
    std::optional<library::ConvAlgorithmTiming> t =
        library::time_conv_algorithms(*node, 2 * options.seconds_per_candidate);
    if (!t || !timed.insert(t->geometry).second) continue;
    WEFT_RETURN_IF_ERROR(library::record_conv_algorithm(*t));
    TuneResult r;
    r.kernel = fmt::format("{} ({})", call->second->name, t->geometry);
    r.node = node->name;
    r.op_type = call->second->info.op_type;
    r.strategy = call->second->info.strategy;
    r.bytes = call->second->info.bytes();
    r.candidates = 2;
    r.default_ms = t->winograd_by_default ? t->winograd_ms : t->direct_ms;
    r.best_ms = std::min(t->winograd_ms, t->direct_ms);
    r.algorithm = t->winograd_ms < t->direct_ms ? "winograd" : "direct";
    log_info("tune: {} ({}): direct {:.3f} ms, Winograd {:.3f} ms", node->name, t->geometry,
             t->direct_ms, t->winograd_ms);
    results.push_back(std::move(r));
  }
  return Status();
}

} // namespace

Result<std::vector<TuneResult>> tune_model(const CompiledModel& model,
                                           const std::vector<Tensor>& inputs,
                                           const TuneOptions& options) {
  if (!model.executable)
    return Status::error(fmt::format("{}: tuning needs a CPU build", model.graph.source));
  if (model.staged()) {
    return Status::error(
        fmt::format("{}: tuning models with data-dependent shapes ({}) is not supported yet",
                    model.graph.source, fmt::join(model.host_ops, ", ")));
  }
  std::vector<TuneResult> results;
  std::vector<Task> tasks;
  std::map<size_t, size_t> task_of_launch;
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelSummary& s = model.kernels[i];
    if (!s.kernel) continue;
    TuneResult r;
    r.kernel = s.name;
    r.node = s.info.node;
    r.op_type = s.info.op_type;
    r.strategy = s.info.strategy;
    r.bytes = s.info.bytes();
    Result<Task> task = prepare(s, i);
    if (!task.ok()) {
      log_info("tune: {} is not tuned: {}", s.name, task.status().message());
      results.push_back(std::move(r));
      continue;
    }
    r.candidates = static_cast<int>(task->schedules.size());
    results.push_back(std::move(r));
    if (task->schedules.size() > 1) {
      task_of_launch[i] = tasks.size();
      tasks.push_back(std::move(*task));
    }
  }
  // Candidates build on all cores, one library per task.
  toolchain::CpuCompiler compiler = toolchain::CpuCompiler::from_environment();
  std::vector<Status> failures(tasks.size());
  parallel_for(tasks.size(), [&](size_t t) {
    failures[t] = build(tasks[t], model.kernels[tasks[t].summary].kernel->name, compiler);
  });
  for (const Status& s : failures)
    WEFT_RETURN_IF_ERROR(s);

  std::map<size_t, size_t> result_of_launch;
  for (size_t i = 0, r = 0; i < model.kernels.size(); ++i) {
    if (model.kernels[i].kernel) result_of_launch[i] = r++;
  }
  int done = 0;
  runtime::RunOptions run;
  run.before_launch = [&](size_t launch, void* const* args) {
    auto t = task_of_launch.find(launch);
    if (t == task_of_launch.end() || tasks[t->second].measured) return;
    Task& task = tasks[t->second];
    TuneProgress progress{++done, static_cast<int>(tasks.size()), 0,
                          static_cast<int>(task.fns.size()), nullptr};
    measure(task, *model.kernels[launch].kernel, args, options, results[result_of_launch[launch]],
            progress);
  };
  WEFT_RETURN_IF_ERROR(model.run(inputs, run).status());

  TuningCache cache(compiler, kernel_threads());
  for (const Task& task : tasks) {
    const KernelSummary& s = model.kernels[task.summary];
    const TuneResult& r = results[result_of_launch[task.summary]];
    if (!task.measured || r.best_ms <= 0) continue;
    TuningRecord record{r.best, r.best_ms, r.default_ms, r.candidates,
                        fmt::format("{} ({}, node '{}')", s.name, s.info.op_type, s.info.node)};
    WEFT_RETURN_IF_ERROR(cache.store(s.ir, record));
  }
  WEFT_RETURN_IF_ERROR(tune_library_calls(model, options, results));
  return results;
}

} // namespace weft
