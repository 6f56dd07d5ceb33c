#include "weft/driver/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "weft/codegen/emit_c.h"
#include "weft/codegen/generate.h"
#include "weft/driver/tuning_cache.h"
#include "weft/kernel/kernel.h"
#include "weft/kernel/lower_node.h"
#include "weft/library/dnnl.h"
#include "weft/library/peak.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/runtime/cuda/cuda_kernel.h"
#include "weft/support/float16.h"
#include "weft/support/log.h"
#include "weft/support/parallel.h"
#include "weft/support/timing.h"
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
        for (int64_t serial_below : {base.min_parallel_work, int64_t{0}, int64_t{1} << 40}) {
          CpuSchedule s{lanes, width, rows, per_thread, serial_below};
          if (!(s == base)) grid.push_back(s);
        }
      }
    }
  }
  return grid;
}

std::vector<codegen::CudaOptions> candidate_cuda_options(const codegen::CudaOptions& base) {
  using codegen::CudaOptions;
  std::vector<CudaOptions> grid{base};
  auto vary = [&](int64_t CudaOptions::*knob, std::initializer_list<int64_t> values) {
    for (int64_t v : values) {
      CudaOptions o = base;
      o.*knob = v;
      if (!(o == base)) grid.push_back(o);
    }
  };
  vary(&CudaOptions::unroll, {1, 2, 8});
  vary(&CudaOptions::vector, {1, 4});
  vary(&CudaOptions::lane_elements, {4, 8, 16, 32});
  vary(&CudaOptions::held_elements, {8, 16});
  vary(&CudaOptions::max_group, {256, 512, 1024});
  vary(&CudaOptions::resident_threads, {0, 1024, 2048});
  vary(&CudaOptions::column_vector, {1, 4});
  vary(&CudaOptions::row_scalars, {0, 1});
  // Accumulators matter in the loops without vector loads: each count with scalar loads too.
  for (int64_t unroll : {1, 2, 4, 8}) {
    CudaOptions o = base;
    o.vector = 1;
    o.unroll = unroll;
    if (std::find(grid.begin(), grid.end(), o) == grid.end()) grid.push_back(o);
  }
  return grid;
}

std::optional<codegen::CudaOptions>
combine_winners(const std::vector<codegen::CudaOptions>& candidates,
                const std::vector<double>& medians) {
  if (candidates.empty() || medians.size() != candidates.size() || medians[0] <= 0)
    return std::nullopt;
  auto words = [](const codegen::CudaOptions& o) {
    std::vector<std::string> out;
    std::istringstream in(o.to_string());
    for (std::string w; in >> w;)
      out.push_back(w);
    return out;
  };
  std::vector<std::string> base = words(candidates[0]), mixed = base;
  std::vector<double> best(base.size(), 0.97 * medians[0]);
  int knobs = 0;
  for (size_t c = 1; c < candidates.size(); ++c) {
    std::vector<std::string> w = words(candidates[c]);
    std::vector<size_t> changed;
    for (size_t i = 0; i < w.size() && i < base.size(); ++i) {
      if (w[i] != base[i]) changed.push_back(i);
    }
    if (changed.size() != 1 || medians[c] <= 0 || medians[c] >= best[changed[0]]) continue;
    knobs += mixed[changed[0]] == base[changed[0]] ? 1 : 0;
    mixed[changed[0]] = w[changed[0]];
    best[changed[0]] = medians[c];
  }
  if (knobs < 2) return std::nullopt;
  std::optional<codegen::CudaOptions> out =
      codegen::CudaOptions::parse(fmt::format("{}", fmt::join(mixed, " ")));
  if (out) out->deterministic = candidates[0].deterministic;
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;
using RunFn = std::function<Status(void* const* args)>;

// One task: a kernel and its distinct candidates.
struct Task {
  size_t summary = 0;                     // index into CompiledModel::kernels (= launch index)
  std::vector<codegen::Variant> variants; // distinct candidates; [0] is the cost model's
  std::vector<std::string> labels;        // each one as a record writes it
  std::vector<codegen::EmittedFunction> functions;
  std::shared_ptr<runtime::KernelLibrary> library; // CPU: the candidates, built
  std::vector<RunFn> run;                          // each candidate on a launch's buffers
  std::shared_ptr<runtime::cuda::Device> device;   // CUDA: where the candidates run
  std::vector<size_t> sizes;   // bytes of each buffer
  std::vector<bool> written;   // buffers a run writes (all but inputs)
  std::vector<double> medians; // per candidate; negative: rejected
  bool measured = false;
};

// The code of "source" with the variant's name taken out, to find candidates that generate
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

Result<Task> prepare(const KernelSummary& summary, size_t index, codegen::Dialect dialect) {
  const kernel::Kernel& k = *summary.kernel;
  Task task;
  task.summary = index;
  bool aliased = false;
  for (const kernel::Buffer& b : k.buffers) {
    std::optional<int64_t> n = shape_num_elements(b.shape);
    if (!n) return Status::error(fmt::format("kernel {} has a dynamic shape", k.name));
    task.sizes.push_back(static_cast<size_t>(*n) * static_cast<size_t>(dtype_size(b.dtype)));
    task.written.push_back(b.role != kernel::BufferRole::kInput);
    aliased = aliased || b.aliased();
  }
  if (aliased) task.written.assign(task.written.size(), true);
  bool cuda = dialect == codegen::Dialect::kCuda;
  std::vector<codegen::Variant> grid;
  if (cuda) {
    for (const codegen::CudaOptions& o : candidate_cuda_options(summary.cuda))
      grid.push_back({fmt::format("{}_v{}", k.name, grid.size()), {}, o});
  } else {
    for (const CpuSchedule& s : candidate_schedules())
      grid.push_back({fmt::format("{}_v{}", k.name, grid.size()), s, {}});
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<codegen::EmittedFunction> variants,
                        codegen::generate_variants(k, dialect, grid));
  std::set<std::string> seen;
  for (size_t i = 0; i < grid.size(); ++i) {
    if (!seen.insert(anonymous(variants[i].source, grid[i].name)).second) continue;
    task.labels.push_back(cuda ? grid[i].cuda.to_string() : grid[i].schedule.to_string());
    task.variants.push_back(std::move(grid[i]));
    task.functions.push_back(std::move(variants[i]));
  }
  return task;
}

Status build_cpu(Task& task, const toolchain::CpuCompiler& compiler) {
  std::vector<std::string> functions;
  for (const codegen::EmittedFunction& f : task.functions)
    functions.push_back(f.source);
  // One unit: tasks build on all cores already.
  WEFT_ASSIGN_OR_RETURN(toolchain::CompiledLibrary built,
                        toolchain::compile_cpu(codegen::emit_prelude(codegen::Dialect::kCpu),
                                               functions, compiler, 1));
  WEFT_ASSIGN_OR_RETURN(task.library, runtime::KernelLibrary::load(built.path));
  for (const codegen::Variant& v : task.variants) {
    WEFT_ASSIGN_OR_RETURN(runtime::KernelFn fn, task.library->function(v.name));
    task.run.push_back([fn](void* const* args) {
      fn(args, nullptr);
      return Status();
    });
  }
  return Status();
}

// Every task's candidates in one module on "device".
Status build_cuda(std::vector<Task>& tasks, const std::shared_ptr<runtime::cuda::Device>& device) {
  std::string source = codegen::emit_prelude(codegen::Dialect::kCuda);
  for (const Task& task : tasks) {
    for (const codegen::EmittedFunction& f : task.functions)
      source += "\n" + f.source;
  }
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::cuda::Module> module,
                        device->load(source, "tuning candidates"));
  for (Task& task : tasks) {
    task.device = device;
    for (const codegen::EmittedFunction& f : task.functions) {
      auto kernel = std::make_shared<runtime::cuda::CudaKernel>(device, module, f.launches,
                                                                task.sizes.size());
      task.run.push_back([kernel](void* const* args) { return kernel->run(args, nullptr); });
    }
  }
  return Status();
}

// "options" as one more candidate of "task" (for kernel "k", on task.device), built as a
// module of its own; false when its code is that of a candidate already there.
Result<bool> add_cuda_candidate(Task& task, const kernel::Kernel& k,
                                const codegen::CudaOptions& options) {
  codegen::Variant v{fmt::format("{}_v{}", k.name, 100 + task.variants.size()), {}, options};
  WEFT_ASSIGN_OR_RETURN(std::vector<codegen::EmittedFunction> f,
                        codegen::generate_variants(k, codegen::Dialect::kCuda, {v}));
  std::string code = anonymous(f[0].source, v.name);
  for (size_t c = 0; c < task.variants.size(); ++c) {
    if (anonymous(task.functions[c].source, task.variants[c].name) == code) return false;
  }
  WEFT_ASSIGN_OR_RETURN(
      std::shared_ptr<const runtime::cuda::Module> module,
      task.device->load(codegen::emit_prelude(codegen::Dialect::kCuda) + "\n" + f[0].source,
                        "tuning candidate"));
  auto kernel = std::make_shared<runtime::cuda::CudaKernel>(task.device, module, f[0].launches,
                                                            task.sizes.size());
  task.run.push_back([kernel](void* const* args) { return kernel->run(args, nullptr); });
  task.labels.push_back(options.to_string());
  task.variants.push_back(std::move(v));
  task.functions.push_back(std::move(f[0]));
  return true;
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

// The buffers a launch writes, saved so that every candidate starts from the state the model
// left: in host memory, or on "device" (copies there) when the buffers live on one.
class Snapshot {
public:
  Snapshot(const Task& task, void* const* args, runtime::DeviceMemory* device)
      : task_(task), args_(args), device_(device), saved_(task.sizes.size()) {}
  ~Snapshot() {
    if (device_) {
      (void)device_->synchronize();
      for (void* p : on_device_)
        if (p) device_->release(p);
    }
  }
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  Status save() {
    on_device_.assign(saved_.size(), nullptr);
    for (size_t b = 0; b < saved_.size(); ++b) {
      if (!task_.written[b]) continue;
      if (!device_) {
        WEFT_ASSIGN_OR_RETURN(saved_[b], read(b));
        continue;
      }
      WEFT_ASSIGN_OR_RETURN(on_device_[b], device_->allocate(task_.sizes[b]));
      WEFT_RETURN_IF_ERROR(device_->on_device(on_device_[b], args_[b], task_.sizes[b]));
    }
    return device_ ? device_->synchronize() : Status();
  }
  // Queued on the device's stream, before whatever runs next there.
  Status restore() {
    for (size_t b = 0; b < saved_.size(); ++b) {
      if (!task_.written[b]) continue;
      if (device_)
        WEFT_RETURN_IF_ERROR(device_->on_device(args_[b], on_device_[b], task_.sizes[b]));
      else
        std::memcpy(args_[b], saved_[b].data(), task_.sizes[b]);
    }
    return Status();
  }
  // Buffer "b" as the last run left it.
  Result<std::vector<std::byte>> read(size_t b) const {
    std::vector<std::byte> bytes(task_.sizes[b]);
    if (!device_) {
      std::memcpy(bytes.data(), args_[b], bytes.size());
      return bytes;
    }
    WEFT_RETURN_IF_ERROR(device_->to_host(bytes.data(), args_[b], bytes.size()));
    WEFT_RETURN_IF_ERROR(device_->synchronize());
    return bytes;
  }

private:
  const Task& task_;
  void* const* args_;
  runtime::DeviceMemory* device_;
  std::vector<std::vector<std::byte>> saved_;
  std::vector<void*> on_device_;
};

// Runs and times every candidate of "task" on the buffers "args" (on "device" when that is
// set), leaving them as found.
Status measure(Task& task, const kernel::Kernel& k, void* const* args,
               runtime::DeviceMemory* device, const TuneOptions& options, TuneResult& result,
               TuneProgress progress) {
  size_t n = task.sizes.size();
  Snapshot snapshot(task, args, device);
  WEFT_RETURN_IF_ERROR(snapshot.save());
  std::vector<std::vector<std::byte>> reference(n);
  task.medians.assign(task.run.size(), -1);
  std::vector<bool> idempotent(task.run.size(), false);
  // One run of candidate "c", in milliseconds: the device's time between events, or the host's.
  auto time_once = [&](size_t c) -> Result<double> {
    if (device) return device->time([&] { return task.run[c](args); });
    auto t0 = Clock::now();
    WEFT_RETURN_IF_ERROR(task.run[c](args));
    return std::chrono::duration<double>(Clock::now() - t0).count() * 1e3;
  };
  // The median time of candidate "c" over at least 3 runs and about "seconds".
  auto median_ms = [&](size_t c, double seconds) -> Result<double> {
    std::vector<double> times;
    double spent = 0;
    while (static_cast<int>(times.size()) < options.max_runs &&
           (times.size() < 3 || spent < seconds)) {
      if (!idempotent[c]) WEFT_RETURN_IF_ERROR(snapshot.restore());
      WEFT_ASSIGN_OR_RETURN(double ms, time_once(c));
      times.push_back(ms);
      spent += ms / 1e3;
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  // Do the written buffers hold the reference's values (within close_enough)?
  double worst = 0;
  auto matches = [&]() -> Result<bool> {
    for (size_t b = 0; b < n; ++b) {
      if (!task.written[b]) continue;
      WEFT_ASSIGN_OR_RETURN(std::vector<std::byte> now, snapshot.read(b));
      if (!close_enough(k.buffers[b].dtype, now.data(), reference[b].data(), task.sizes[b], &worst))
        return false;
    }
    return true;
  };
  size_t best = 0;
  // Runs candidate "c", checks its values against the first's, and times it.
  auto measure_one = [&](size_t c) -> Status {
    WEFT_RETURN_IF_ERROR(snapshot.restore());
    WEFT_RETURN_IF_ERROR(task.run[c](args));
    worst = 0;
    if (c == 0) {
      for (size_t b = 0; b < n; ++b) {
        if (!task.written[b]) continue;
        WEFT_ASSIGN_OR_RETURN(reference[b], snapshot.read(b));
      }
    }
    bool same = true;
    if (c != 0) {
      WEFT_ASSIGN_OR_RETURN(same, matches());
    }
    // A kernel that computes the same again from its own results (it does not read what it
    // writes before writing it) is timed back to back, as it runs in the model; otherwise
    // each timed run starts from the saved state.
    bool again = false;
    if (same) {
      WEFT_RETURN_IF_ERROR(task.run[c](args));
      WEFT_ASSIGN_OR_RETURN(again, matches());
    }
    if (!same) {
      ++result.rejected;
      log_info("tune: {} candidate '{}' computes other values (largest difference {:g}); "
               "dropped",
               k.name, task.labels[c], worst);
    } else {
      idempotent[c] = again;
      WEFT_ASSIGN_OR_RETURN(task.medians[c], median_ms(c, options.seconds_per_candidate));
      if (c == 0) result.default_ms = task.medians[c];
      if (c == 0 || task.medians[c] < result.best_ms) {
        result.best_ms = task.medians[c];
        best = c;
      }
    }
    progress.measured = static_cast<int>(c + 1);
    progress.candidates = static_cast<int>(task.run.size());
    progress.result = &result;
    if (options.progress) options.progress(progress);
    return Status();
  };
  for (size_t c = 0; c < task.run.size(); ++c)
    WEFT_RETURN_IF_ERROR(measure_one(c));
  // On a CUDA device, the knobs that won alone are combined, and the combination measured.
  std::vector<codegen::CudaOptions> tried;
  for (const codegen::Variant& v : task.variants)
    tried.push_back(v.cuda);
  std::optional<codegen::CudaOptions> mixed =
      task.device ? combine_winners(tried, task.medians) : std::nullopt;
  if (mixed) {
    WEFT_ASSIGN_OR_RETURN(bool added, add_cuda_candidate(task, k, *mixed));
    if (added) {
      task.medians.push_back(-1);
      idempotent.push_back(false);
      ++result.candidates;
      WEFT_RETURN_IF_ERROR(measure_one(task.run.size() - 1));
    }
  }
  // A winner other than the cost model's choice is timed again, alternating with it, so
  // that a burst of load on a shared machine does not decide: it must still be 3% faster.
  if (best != 0) {
    std::vector<double> mine, theirs;
    for (int round = 0; round < 5; ++round) {
      WEFT_ASSIGN_OR_RETURN(double t, median_ms(0, options.seconds_per_candidate / 4));
      WEFT_ASSIGN_OR_RETURN(double m, median_ms(best, options.seconds_per_candidate / 4));
      theirs.push_back(t);
      mine.push_back(m);
    }
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    result.default_ms = theirs[2];
    if (mine[2] > 0.97 * theirs[2]) {
      log_info("tune: {}: '{}' did not stay faster on a second look ({:.3f} vs {:.3f} ms); the "
               "cost model's choice stays",
               k.name, task.labels[best], mine[2], theirs[2]);
      best = 0;
      result.best_ms = theirs[2];
    } else {
      result.best_ms = mine[2];
    }
  }
  result.best = task.variants[best].schedule;
  result.best_cuda = task.variants[best].cuda;
  result.choice = task.labels[best];
  WEFT_RETURN_IF_ERROR(snapshot.restore());
  task.measured = true;
  return Status();
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

// Below this many FLOPs per byte a convolution is memory-bound on these machines (a 2-core
// EPYC: ~165-225 GFLOP/s against ~30 GB/s), Weft's kind of kernel: a depthwise 3x3 does ~2.
constexpr double kMemoryBoundFlopsPerByte = 8;
// A call reaching less than this share of the measured peak is far off its estimate.
constexpr double kFarOffPeak = 0.25;

// "node" lowered alone into generated code (the cost model's schedule) and built: a function
// timing a round of about "seconds" on its constants and pseudo-random f32 activations.
Result<std::function<double(double)>> generated_timer(const Node& node,
                                                      const toolchain::CpuCompiler& compiler) {
  WEFT_ASSIGN_OR_RETURN(kernel::LoweredNode lowered, kernel::lower_node(node, "weft_alone"));
  if (lowered.kernels.size() != 1)
    return Status::error(
        fmt::format("node '{}' lowers to {} kernels", node.name, lowered.kernels.size()));
  const kernel::BoundKernel& k = lowered.kernels[0];
  codegen::Variant v{"weft_alone", CpuSchedule{}, {}};
  WEFT_ASSIGN_OR_RETURN(std::vector<codegen::EmittedFunction> f,
                        codegen::generate_variants(k.kernel, codegen::Dialect::kCpu, {v}));
  WEFT_ASSIGN_OR_RETURN(toolchain::CompiledLibrary built,
                        toolchain::compile_cpu(codegen::emit_prelude(codegen::Dialect::kCpu),
                                               {f[0].source}, compiler));
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<runtime::KernelLibrary> library,
                        runtime::KernelLibrary::load(built.path));
  WEFT_ASSIGN_OR_RETURN(runtime::KernelFn fn, library->function(v.name));
  auto buffers = std::make_shared<std::vector<std::vector<float>>>();
  uint32_t state = 12345;
  for (size_t b = 0; b < k.kernel.buffers.size(); ++b) {
    const kernel::Buffer& buffer = k.kernel.buffers[b];
    std::optional<int64_t> n = shape_num_elements(buffer.shape);
    if (!n || buffer.dtype != DType::kF32)
      return Status::error(fmt::format("node '{}': not static f32 buffers", node.name));
    std::vector<float>& data = buffers->emplace_back(static_cast<size_t>(*n));
    const Value* value = k.values[b];
    if (value && value->is_constant()) {
      std::memcpy(data.data(), value->constant->data(), data.size() * sizeof(float));
    } else if (buffer.role == kernel::BufferRole::kInput) {
      for (float& x : data) { // values in [-1, 1)
        state = state * 1664525u + 1013904223u;
        x = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
      }
    }
  }
  auto args = std::make_shared<std::vector<void*>>();
  for (std::vector<float>& data : *buffers)
    args->push_back(data.data());
  return std::function<double(double)>([library, fn, buffers, args](double seconds) {
    return median_run_ms(
        [&] {
          fn(args->data(), nullptr);
          return true;
        },
        seconds);
  });
}

// A oneDNN convolution that generated code can run alone, timed both ways in alternating
// rounds: the memory-bound ones and those far off their estimate (under kFarOffPeak of the
// peak). The faster is recorded (library::record_conv_placement) for later compiles.
// "placed": the shapes timed so far.
Status tune_placement(const Node& node, const KernelSummary& call, double peak_gflops,
                      const toolchain::CpuCompiler& compiler, const TuneOptions& options,
                      std::set<std::string>& placed, std::vector<TuneResult>& results) {
  bool conv = (node.op_type == Op::kConv || node.op_type == Op::kConvChannelsLast) &&
              node.inputs[0]->type.has_static_shape() && node.outputs[0]->type.has_static_shape();
  if (!conv || !kernel::can_lower(node) || placed.contains(library::placement_geometry(node)))
    return Status();
  std::function<double(double)> library_ms = library::conv_call_timer(node);
  if (!library_ms) return Status();
  double flops = call.info.flops.is_static() ? static_cast<double>(call.info.flops.value()) : 0;
  double bytes = static_cast<double>(call.info.bytes());
  double first = library_ms(options.seconds_per_candidate);
  bool memory_bound = bytes > 0 && flops / bytes < kMemoryBoundFlopsPerByte;
  bool far_off = peak_gflops > 0 && first > 0 && flops / (first * 1e6) < kFarOffPeak * peak_gflops;
  if (first < 0 || (!memory_bound && !far_off)) return Status();
  placed.insert(library::placement_geometry(node));
  Result<std::function<double(double)>> generated_ms = generated_timer(node, compiler);
  if (!generated_ms.ok()) {
    log_info("tune: {}: no generated alternative: {}", node.name, generated_ms.status().message());
    return Status();
  }
  std::vector<double> a, b;
  for (int round = 0; round < 5; ++round) {
    a.push_back(library_ms(options.seconds_per_candidate));
    b.push_back((*generated_ms)(options.seconds_per_candidate));
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a[0] < 0) return Status();
  WEFT_RETURN_IF_ERROR(library::record_conv_placement(node, a[2], b[2]));
  TuneResult r;
  r.kernel = fmt::format("{} (oneDNN or generated)", call.name);
  r.node = node.name;
  r.op_type = call.info.op_type;
  r.strategy = call.info.strategy;
  r.bytes = call.info.bytes();
  r.candidates = 2;
  r.default_ms = a[2];
  r.best_ms = std::min(a[2], b[2]);
  r.algorithm = b[2] < library::kGeneratedMargin * a[2] ? "generated" : "library";
  if (r.algorithm == "library") r.best_ms = a[2];
  log_info("tune: {}: oneDNN {:.3f} ms, generated {:.3f} ms ({})", node.name, a[2], b[2],
           memory_bound ? "memory-bound" : "far off its estimate");
  results.push_back(std::move(r));
  return Status();
}

// The oneDNN convolutions: those that can run either algorithm, each geometry timed both ways
// and its faster recorded (library::record_conv_algorithm); then those generated code may run
// instead (tune_placement).
Status tune_library_calls(const CompiledModel& model, const TuneOptions& options,
                          const toolchain::CpuCompiler& compiler,
                          std::vector<TuneResult>& results) {
  std::map<std::string, const KernelSummary*> call_of; // by the nodes of convolution calls
  for (const KernelSummary& s : model.kernels) {
    if (!s.library || !(s.info.strategy.starts_with("oneDNN convolution") ||
                        s.info.strategy.starts_with("Weft Winograd") ||
                        s.info.strategy.starts_with("Weft convolution of few outputs")))
      continue;
    for (const std::string& node : split_names(s.info.node))
      call_of[node] = &s;
  }
  double peak = call_of.empty() ? 0 : library::measure_peak_gflops();
  std::set<std::string> timed, placed; // geometries
  for (const auto& node : model.graph.nodes()) {
    auto call = call_of.find(node->name);
    if (call == call_of.end()) continue;
    WEFT_RETURN_IF_ERROR(
        tune_placement(*node, *call->second, peak, compiler, options, placed, results));
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
    r.default_ms = t->alternative_by_default ? t->alternative_ms : t->direct_ms;
    r.best_ms = std::min(t->alternative_ms, t->direct_ms);
    r.algorithm = t->alternative_ms < t->direct_ms ? t->alternative : "direct";
    log_info("tune: {} ({}): direct {:.3f} ms, {} {:.3f} ms", node->name, t->geometry, t->direct_ms,
             t->alternative, t->alternative_ms);
    results.push_back(std::move(r));
  }
  return Status();
}

} // namespace

Result<std::vector<TuneResult>> tune_model(const CompiledModel& model,
                                           const std::vector<Tensor>& inputs,
                                           const TuneOptions& options) {
  if (!model.executable)
    return Status::error(fmt::format("{}: tuning needs a compiled executable", model.graph.source));
  if (model.staged()) {
    return Status::error(
        fmt::format("{}: tuning models with data-dependent shapes ({}) is not supported yet",
                    model.graph.source, fmt::join(model.host_ops, ", ")));
  }
  std::shared_ptr<runtime::cuda::Device> device =
      std::dynamic_pointer_cast<runtime::cuda::Device>(model.executable->device());
  if (model.executable->device() && !device)
    return Status::error(
        fmt::format("{}: tuning runs on the CPU or a CUDA device", model.graph.source));
  codegen::Dialect dialect = device ? codegen::Dialect::kCuda : codegen::Dialect::kCpu;
  std::vector<TuneResult> results;
  std::vector<Task> tasks;
  std::map<size_t, size_t> task_of_launch;
  // A kernel the same as an earlier one but for its name (a transformer's layers) shares its
  // tuning record (TuningCache::path_of): it is measured once, and its result is the earlier
  // one's.
  std::map<std::string, size_t> result_of_body;
  std::map<size_t, size_t> same_result; // result -> the earlier kernel's
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelSummary& s = model.kernels[i];
    if (!s.kernel) continue;
    TuneResult r;
    r.kernel = s.name;
    r.node = s.info.node;
    r.op_type = s.info.op_type;
    r.strategy = s.info.strategy;
    r.bytes = s.info.bytes();
    auto [earlier, first] =
        result_of_body.emplace(std::string(kernel::kernel_body(s.ir)), results.size());
    if (!first) {
      same_result[results.size()] = earlier->second;
      results.push_back(std::move(r));
      continue;
    }
    Result<Task> task = prepare(s, i, dialect);
    if (!task.ok()) {
      log_info("tune: {} is not tuned: {}", s.name, task.status().message());
      results.push_back(std::move(r));
      continue;
    }
    r.candidates = static_cast<int>(task->variants.size());
    results.push_back(std::move(r));
    if (task->variants.size() > 1) {
      task_of_launch[i] = tasks.size();
      tasks.push_back(std::move(*task));
    }
  }
  // Candidates build on all cores, one library per task, or as one module on the device.
  toolchain::CpuCompiler compiler = toolchain::CpuCompiler::from_environment();
  if (device) {
    if (!tasks.empty()) WEFT_RETURN_IF_ERROR(build_cuda(tasks, device));
  } else {
    std::vector<Status> failures(tasks.size());
    parallel_for(tasks.size(), [&](size_t t) { failures[t] = build_cpu(tasks[t], compiler); });
    for (const Status& s : failures)
      WEFT_RETURN_IF_ERROR(s);
  }

  std::map<size_t, size_t> result_of_launch;
  for (size_t i = 0, r = 0; i < model.kernels.size(); ++i) {
    if (model.kernels[i].kernel) result_of_launch[i] = r++;
  }
  int done = 0;
  Status failed;
  runtime::RunOptions run;
  run.before_launch = [&](size_t launch, void* const* args) {
    auto t = task_of_launch.find(launch);
    if (!failed.ok() || t == task_of_launch.end() || tasks[t->second].measured) return;
    Task& task = tasks[t->second];
    TuneProgress progress{++done, static_cast<int>(tasks.size()), 0,
                          static_cast<int>(task.run.size()), nullptr};
    failed = measure(task, *model.kernels[launch].kernel, args, device.get(), options,
                     results[result_of_launch[launch]], progress);
  };
  Result<std::vector<Tensor>> ran = model.run(inputs, run);
  WEFT_RETURN_IF_ERROR(failed);
  WEFT_RETURN_IF_ERROR(ran.status());
  for (const auto& [r, earlier] : same_result) {
    TuneResult& same = results[r];
    const TuneResult& e = results[earlier];
    same.candidates = e.candidates;
    same.rejected = e.rejected;
    same.default_ms = e.default_ms;
    same.best_ms = e.best_ms;
    same.best = e.best;
    same.best_cuda = e.best_cuda;
    same.choice = e.choice;
  }

  for (const Task& task : tasks) {
    const KernelSummary& s = model.kernels[task.summary];
    const TuneResult& r = results[result_of_launch[task.summary]];
    if (!task.measured || r.best_ms <= 0) continue;
    TuningRecord record{
        r.best,       r.best_cuda,
        r.best_ms,    r.default_ms,
        r.candidates, fmt::format("{} ({}, node '{}')", s.name, s.info.op_type, s.info.node)};
    TuningCache cache = device ? TuningCache::for_cuda(device->describe(), s.cuda.deterministic)
                               : TuningCache(compiler, kernel_threads());
    WEFT_RETURN_IF_ERROR(cache.store(s.ir, record));
  }
  if (!device) WEFT_RETURN_IF_ERROR(tune_library_calls(model, options, compiler, results));
  return results;
}

} // namespace weft
