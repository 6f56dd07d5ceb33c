// weft bench: compile time, first run, then steady-state latency (compile excluded).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/weft/commands.h"
#include "tools/weft/inputs.h"
#include "weft/driver/compile_model.h"
#include "weft/driver/tuning_cache.h"
#include "weft/library/peak.h"
#include "weft/runtime/cuda/device.h"

namespace weft::cli {

namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The sorted sample's value at quantile "q" (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

// The model and its inputs: a case directory brings its first data set.
Result<std::pair<std::string, std::vector<Tensor>>> load(const BenchOptions& o) {
  bool is_case = fs::is_directory(o.target);
  std::string model = is_case ? (fs::path(o.target) / "model.onnx").string() : o.target;
  WEFT_ASSIGN_OR_RETURN(std::vector<runtime::TensorInfo> declared, model_inputs(model));
  if (is_case) {
    WEFT_ASSIGN_OR_RETURN(
        std::vector<Tensor> inputs,
        read_data_set_inputs((fs::path(o.target) / "test_data_set_0").string(), declared));
    return std::make_pair(model, std::move(inputs));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> inputs,
                        gather_inputs(model, o.inputs, o.fill, o.shapes, declared));
  return std::make_pair(model, std::move(inputs));
}

// Per-kernel times over the timed runs: launch l's median, and the last run's timings.
struct KernelProfile {
  std::vector<double> median_ms;
  std::vector<runtime::LaunchTiming> last;
  runtime::Bindings bound; // the runs' extents of symbolic dims
};

KernelProfile summarize(const std::vector<std::vector<runtime::LaunchTiming>>& runs) {
  KernelProfile p;
  if (runs.empty()) return p;
  p.last = runs.back();
  for (size_t l = 0; l < p.last.size(); ++l) {
    std::vector<double> ms;
    for (const auto& run : runs)
      ms.push_back(static_cast<double>(run[l].end_ns - run[l].start_ns) / 1e6);
    std::sort(ms.begin(), ms.end());
    p.median_ms.push_back(quantile(ms, 0.5));
  }
  return p;
}

double gb_per_s(size_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0.0;
}

// A library call's achieved GFLOP/s, as text; empty for kernels without a FLOP count.
std::string gflops_text(const runtime::LaunchInfo& info, const runtime::Bindings& bound, double ms,
                        double peak) {
  double flops = info.flop_count(bound);
  if (flops <= 0 || ms <= 0) return "";
  double gflops = flops / (ms * 1e6);
  return peak > 0 ? fmt::format("{:.1f} ({:.0f}%)", gflops, 100 * gflops / peak)
                  : fmt::format("{:.1f}", gflops);
}

// The measured arithmetic peak when some launch counts FLOPs on the CPU (the profile holds
// them against it), else 0.
double peak_for(const runtime::Executable& exe, const runtime::Bindings& bound, bool cpu) {
  bool counted =
      std::any_of(exe.launches().begin(), exe.launches().end(),
                  [&](const runtime::Launch& l) { return l.info.flop_count(bound) > 0; });
  return cpu && counted ? library::measure_peak_gflops() : 0.0;
}

// A Chrome trace (the JSON object format) of the last timed run: one complete ("X") event
// per kernel, in microseconds from the run's start.
nlohmann::json chrome_trace(const std::string& model, const runtime::Executable& exe,
                            const KernelProfile& p) {
  nlohmann::json events = nlohmann::json::array();
  int64_t t0 = p.last.empty() ? 0 : p.last.front().start_ns;
  for (size_t l = 0; l < p.last.size(); ++l) {
    const runtime::Launch& launch = exe.launches()[l];
    double dur_ms = static_cast<double>(p.last[l].end_ns - p.last[l].start_ns) / 1e6;
    events.push_back({{"name", launch.name},
                      {"cat", "kernel"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", static_cast<double>(p.last[l].start_ns - t0) / 1e3},
                      {"dur", dur_ms * 1e3},
                      {"args",
                       {{"node", launch.info.node},
                        {"op_type", launch.info.op_type},
                        {"strategy", launch.info.strategy},
                        {"shapes", launch.info.shapes},
                        {"bytes", launch.info.bytes(p.bound)},
                        {"GB/s", gb_per_s(launch.info.bytes(p.bound), dur_ms)},
                        {"flops", launch.info.flop_count(p.bound)}}}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"model", model}, {"tool", "weft bench"}}}};
}

std::string byte_size(size_t bytes) {
  double b = static_cast<double>(bytes);
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} B", bytes);
}

// A kernel's GB/s, with its share of the measured read bandwidth "bandwidth" when known (data
// in the caches can move faster than memory: above 100%).
std::string gbs_text(size_t bytes, double ms, double bandwidth) {
  double gbs = gb_per_s(bytes, ms);
  return bandwidth > 0 ? fmt::format("{:.2f} ({:.0f}%)", gbs, 100 * gbs / bandwidth)
                       : fmt::format("{:.2f}", gbs);
}

// The per-kernel table, slowest first, with median times over the timed runs.
std::string kernel_table(const runtime::Executable& exe, const KernelProfile& p, double peak,
                         double bandwidth) {
  double total = 0;
  for (double ms : p.median_ms)
    total += ms;
  std::vector<size_t> order(p.median_ms.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.median_ms[a] > p.median_ms[b]; });
  std::string out =
      peak > 0
          ? fmt::format("peak: {:.0f} GFLOP/s (oneDNN's f32 matrix product, measured now)\n", peak)
          : "";
  if (bandwidth > 0)
    out += fmt::format("read bandwidth: {:.1f} GB/s (a parallel read of 256 MB, measured now)\n",
                       bandwidth);
  out += fmt::format("{:<24} {:<28} {:>10} {:>7} {:>10} {:>14} {:>14}  {}\n", "kernel", "strategy",
                     "median ms", "%", "bytes", "GB/s", "GFLOP/s", "op (nodes)");
  for (size_t l : order) {
    const runtime::Launch& launch = exe.launches()[l];
    out += fmt::format("{:<24} {:<28} {:>10.4f} {:>6.1f}% {:>10} {:>14} {:>14}  {} ({})\n",
                       launch.name, launch.info.strategy, p.median_ms[l],
                       total > 0 ? 100 * p.median_ms[l] / total : 0.0,
                       byte_size(launch.info.bytes(p.bound)),
                       gbs_text(launch.info.bytes(p.bound), p.median_ms[l], bandwidth),
                       gflops_text(launch.info, p.bound, p.median_ms[l], peak), launch.info.op_type,
                       launch.info.node);
  }
  out += fmt::format("{:<53} {:>10.4f} (sum of kernel medians)\n", "total", total);
  // Calls far off their estimate: the larger of their FLOPs at the peak and their bytes at the
  // read bandwidth, the roofline `weft tune` holds them against (under a quarter of it).
  for (size_t l : order) {
    const runtime::Launch& launch = exe.launches()[l];
    double flops = launch.info.flop_count(p.bound), ms = p.median_ms[l];
    if (flops <= 0 || peak <= 0 || bandwidth <= 0 || ms < 0.01 * total) continue;
    double estimate = std::max(flops / (peak * 1e6),
                               static_cast<double>(launch.info.bytes(p.bound)) / (bandwidth * 1e6));
    if (ms > 4 * estimate)
      out += fmt::format("{}: {:.3f} ms, {:.1f}x its estimate at the peak and the read bandwidth "
                         "({:.3f} ms): `weft tune` times it against the alternatives\n",
                         launch.name, ms, ms / estimate, estimate);
  }
  return out;
}

// The outputs in device memory, copied to the host.
Result<std::vector<std::vector<char>>> outputs_on_host(runtime::cuda::Device& device,
                                                       const std::vector<runtime::TensorView>& out) {
  std::vector<std::vector<char>> host;
  for (const runtime::TensorView& v : out) {
    host.emplace_back(v.num_bytes());
    WEFT_RETURN_IF_ERROR(device.to_host(host.back().data(), v.data, v.num_bytes()));
  }
  WEFT_RETURN_IF_ERROR(device.synchronize());
  return host;
}

// Does the last of a model's runs on the same inputs give the first one's outputs? f32 and
// f64 within a tolerance (atomics combine in any order: rtol 1e-3, atol 1e-5 of the largest
// magnitude), f16 and bf16 not compared, others bit for bit. A replayed CUDA graph that
// missed a kernel, or read a stale address, fails this.
Status same_outputs(const std::vector<runtime::TensorView>& out,
                    const std::vector<std::vector<char>>& first,
                    const std::vector<std::vector<char>>& last,
                    const std::vector<runtime::TensorInfo>& info) {
  auto close = [](const auto* a, const auto* b, size_t n) -> std::optional<size_t> {
    double largest = 0; // of the finite values
    for (size_t i = 0; i < n; ++i) {
      double x = std::abs(static_cast<double>(a[i]));
      if (std::isfinite(x)) largest = std::max(largest, x);
    }
    for (size_t i = 0; i < n; ++i) {
      double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
      if (x == y || (x != x && y != y)) continue; // equal, infinities too, or both NaN
      if (!(std::abs(x - y) <= 1e-5 * largest + 1e-3 * std::abs(x))) return i;
    }
    return std::nullopt;
  };
  for (size_t o = 0; o < out.size(); ++o) {
    std::optional<size_t> bad;
    size_t n = out[o].num_bytes();
    if (out[o].dtype == DType::kF32) {
      bad = close(reinterpret_cast<const float*>(first[o].data()),
                  reinterpret_cast<const float*>(last[o].data()), n / 4);
    } else if (out[o].dtype == DType::kF64) {
      bad = close(reinterpret_cast<const double*>(first[o].data()),
                  reinterpret_cast<const double*>(last[o].data()), n / 8);
    } else if (out[o].dtype != DType::kF16 && out[o].dtype != DType::kBF16 &&
               std::memcmp(first[o].data(), last[o].data(), n) != 0) {
      bad = 0;
    }
    if (bad) {
      return Status::error(fmt::format(
          "output '{}': the last device-resident run differs from the first one (element {}; "
          "WEFT_CUDA_GRAPHS={})",
          info[o].name, *bad, std::getenv("WEFT_CUDA_GRAPHS") ? std::getenv("WEFT_CUDA_GRAPHS") : ""));
    }
  }
  return Status();
}

} // namespace

// On a CUDA device: the median of "iters" runs whose inputs and outputs stay in device
// memory (uploaded once), without the host copies of an ordinary run. The last run's outputs
// must be the first one's (same_outputs): a check of the runs a CUDA graph replays. Nothing
// elsewhere, nor for models whose input values determine shapes (those inputs are read on the
// host).
Result<std::optional<double>> device_resident_ms(const CompiledModel& compiled,
                                                 const std::vector<Tensor>& inputs, int iters,
                                                 DeviceKind device_kind) {
  if (device_kind != DeviceKind::kCuda || compiled.staged() ||
      compiled.executable->has_frozen_inputs())
    return std::optional<double>();
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<runtime::cuda::Device> device,
                        runtime::cuda::open_device());
  const runtime::Executable& exe = *compiled.executable;
  std::vector<void*> owned;
  auto release = [&] {
    for (void* p : owned)
      device->release(p);
  };
  auto place = [&](DType dtype, std::vector<int64_t> dims,
                   const void* host) -> Result<runtime::TensorView> {
    runtime::TensorView v{dtype, std::move(dims), nullptr};
    WEFT_ASSIGN_OR_RETURN(v.data, device->allocate(v.num_bytes()));
    owned.push_back(v.data);
    if (host) WEFT_RETURN_IF_ERROR(device->to_device(v.data, host, v.num_bytes()));
    return v;
  };
  std::vector<runtime::TensorView> in, out;
  Status status;
  for (const Tensor& t : inputs) {
    Result<runtime::TensorView> v = place(t.dtype(), t.dims(), t.data());
    if (!v.ok()) status = v.status();
    if (v.ok()) in.push_back(*v);
  }
  // The outputs' shapes for these inputs (a dynamic_shapes compile's are symbolic).
  Result<std::vector<std::vector<int64_t>>> shapes = exe.output_shapes(in);
  if (status.ok() && !shapes.ok()) status = shapes.status();
  for (size_t o = 0; status.ok() && o < exe.outputs().size(); ++o) {
    Result<runtime::TensorView> v = place(exe.outputs()[o].type.dtype, (*shapes)[o], nullptr);
    if (!v.ok()) status = v.status();
    if (v.ok()) out.push_back(*v);
  }
  runtime::RunOptions options;
  options.io_on_device = true;
  std::vector<double> times;
  std::vector<std::vector<char>> first;
  for (int i = 0; status.ok() && i <= iters; ++i) { // the first is a warm-up
    auto t0 = std::chrono::steady_clock::now();
    status = exe.run(in, out, options);
    if (i > 0) times.push_back(ms_since(t0));
    if (i == 0 && status.ok()) {
      Result<std::vector<std::vector<char>>> host = outputs_on_host(*device, out);
      status = host.status();
      if (host.ok()) first = std::move(*host);
    }
  }
  if (status.ok()) {
    Result<std::vector<std::vector<char>>> last = outputs_on_host(*device, out);
    status = last.ok() ? same_outputs(out, first, *last, exe.outputs()) : last.status();
  }
  release();
  if (!status.ok()) return status;
  std::sort(times.begin(), times.end());
  return std::optional<double>(quantile(times, 0.5));
}

int bench(const BenchOptions& o) {
  if (!device_available(o.device)) return 2;
  Result<std::pair<std::string, std::vector<Tensor>>> loaded = load(o);
  if (!loaded.ok()) {
    std::cerr << loaded.status().to_string() << "\n";
    return 1;
  }
  const auto& [model, inputs] = *loaded;
  auto start = std::chrono::steady_clock::now();
  CompileSettings settings;
  settings.fusion = o.fusion;
  settings.device = o.device;
  settings.deterministic = o.deterministic;
  settings.allow_tf32 = o.allow_tf32;
  settings.allow_bf16 = o.allow_bf16;
  settings.dynamic_shapes = o.dynamic_shapes;
  Result<CompiledModel> compiled = compile_model(model, inputs, settings);
  double compile_ms = ms_since(start);
  if (!compiled.ok()) {
    std::cerr << compiled.status().to_string() << "\n";
    return 1;
  }
  const runtime::Executable& exe = *compiled->executable;
  bool profiling = !o.profile.empty() || o.kernels;
  if (profiling && compiled->staged()) {
    const std::vector<std::string>& ops = compiled->host_ops; // SSDLite's: 180 NonZeros
    constexpr size_t kShown = 3;
    std::vector<std::string> shown(ops.begin(), ops.begin() + std::min(ops.size(), kShown));
    std::cerr << fmt::format("error: {}: per-kernel profiles of models with data-dependent "
                             "shapes ({}{}) are not supported yet; time them without --profile "
                             "and --kernels\n",
                             model, fmt::join(shown, ", "),
                             ops.size() > kShown ? fmt::format(" and {} more", ops.size() - kShown)
                                                 : "");
    return 1;
  }
  std::vector<std::vector<runtime::LaunchTiming>> runs;
  auto timed_run = [&](bool record) -> Result<double> {
    std::vector<runtime::LaunchTiming> timings;
    runtime::RunOptions options;
    if (record) options.timings = &timings;
    auto t0 = std::chrono::steady_clock::now();
    Result<std::vector<Tensor>> out = compiled->run(inputs, options);
    if (!out.ok()) return out.status();
    double ms = ms_since(t0);
    if (record) runs.push_back(std::move(timings));
    return ms;
  };
  Result<double> first = timed_run(false);
  if (!first.ok()) {
    std::cerr << first.status().with_location({model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  for (int i = 0; i < o.warmup; ++i)
    (void)timed_run(false);
  std::vector<double> times;
  // The latency comes from runs without per-kernel timings, which on a GPU wait for each
  // launch; the profile from as many runs after them.
  for (int i = 0; i < o.iters; ++i)
    times.push_back(timed_run(false).value());
  for (int i = 0; profiling && i < o.iters; ++i)
    (void)timed_run(true);
  std::sort(times.begin(), times.end());
  double median = quantile(times, 0.5), p90 = quantile(times, 0.9);
  KernelProfile profile = summarize(runs);
  std::vector<runtime::TensorView> views;
  for (const Tensor& t : inputs)
    views.push_back(runtime::TensorView::of(t));
  if (Result<runtime::Bindings> bound = exe.bind(views); bound.ok()) profile.bound = *bound;
  Result<std::optional<double>> resident = device_resident_ms(*compiled, inputs, o.iters, o.device);
  if (!resident.ok()) {
    std::cerr << resident.status().with_location({model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  if (!o.profile.empty()) {
    std::ofstream trace(o.profile);
    trace << chrome_trace(model, exe, profile).dump(1) << "\n";
    if (!trace) {
      std::cerr << fmt::format("error: {}: cannot write the trace\n", o.profile);
      return 1;
    }
  }
  size_t tuned = 0;
  for (const KernelSummary& k : compiled->kernels)
    tuned += k.tuned ? 1 : 0;
  nlohmann::json phases = nlohmann::json::object();
  std::string phase_text;
  for (const PhaseTime& p : compiled->phases) {
    phases[p.phase] = p.ms;
    phase_text += fmt::format("{}{} {:.1f}", phase_text.empty() ? "" : ", ", p.phase, p.ms);
  }
  if (o.json) {
    nlohmann::json j = {{"model", model},
                        {"compile_ms", compile_ms},
                        {"compile_phases_ms", phases},
                        {"cache_hit", compiled->cache_hit},
                        {"first_run_ms", *first},
                        {"median_ms", median},
                        {"min_ms", times.front()},
                        {"p90_ms", p90},
                        {"iters", o.iters},
                        {"kernels", exe.launches().size()},
                        {"tuned_kernels", tuned},
                        {"arena_bytes", exe.arena_bytes()},
                        {"threads", kernel_threads()}};
    if (*resident) {
      j["device_resident_median_ms"] = **resident;
      j["transfer_ms"] = median - **resident;
    }
    if (profiling) {
      nlohmann::json kernels = nlohmann::json::array();
      for (size_t l = 0; l < profile.median_ms.size(); ++l) {
        const runtime::Launch& launch = exe.launches()[l];
        kernels.push_back(
            {{"kernel", launch.name},
             {"node", launch.info.node},
             {"op_type", launch.info.op_type},
             {"strategy", launch.info.strategy},
             {"shapes", launch.info.shapes},
             {"bytes", launch.info.bytes(profile.bound)},
             {"flops", launch.info.flop_count(profile.bound)},
             {"median_ms", profile.median_ms[l]},
             {"GB/s", gb_per_s(launch.info.bytes(profile.bound), profile.median_ms[l])}});
      }
      j["kernel_profile"] = kernels;
      j["peak_gflops"] = peak_for(exe, profile.bound, o.device == DeviceKind::kCpu);
      j["read_gbs"] = o.device == DeviceKind::kCpu ? library::measure_read_bandwidth() : 0.0;
    }
    std::cout << j.dump() << "\n";
  } else {
    std::cout << fmt::format(
        "model: {}\ncompile: {:.1f} ms{} ({})\nfirst run: {:.3f} ms\n"
        "steady state over {} runs: median {:.3f} ms, min {:.3f} ms, p90 {:.3f} ms\n"
        "kernels: {}{}, working memory: {} bytes\n",
        model, compile_ms, compiled->cache_hit ? ", kernels from the cache" : "", phase_text,
        *first, o.iters, median, times.front(), p90, exe.launches().size(),
        tuned ? fmt::format(" ({} with tuned schedules)", tuned) : "", exe.arena_bytes());
    if (*resident) {
      std::cout << fmt::format("device-resident (inputs and outputs in device memory): median "
                               "{:.3f} ms; host copies add {:.3f} ms\n",
                               **resident, median - **resident);
    }
    if (profiling) {
      std::cout << "\n"
                << kernel_table(
                       exe, profile, peak_for(exe, profile.bound, o.device == DeviceKind::kCpu),
                       o.device == DeviceKind::kCpu ? library::measure_read_bandwidth() : 0.0);
    }
    if (!o.profile.empty()) std::cout << fmt::format("trace: {}\n", o.profile);
  }
  return 0;
}

} // namespace weft::cli
