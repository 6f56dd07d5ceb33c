// weft bench: compile time, first run, then steady-state latency (compile excluded).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/weft/commands.h"
#include "tools/weft/inputs.h"
#include "weft/driver/compile_model.h"

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
                        gather_inputs(model, o.inputs, o.fill, declared));
  return std::make_pair(model, std::move(inputs));
}

} // namespace

int bench(const BenchOptions& o) {
  if (!device_available(o.device)) return 2;
  Result<std::pair<std::string, std::vector<Tensor>>> loaded = load(o);
  if (!loaded.ok()) {
    std::cerr << loaded.status().to_string() << "\n";
    return 1;
  }
  const auto& [model, inputs] = *loaded;
  auto start = std::chrono::steady_clock::now();
  Result<CompiledModel> compiled = compile_model(model, inputs);
  double compile_ms = ms_since(start);
  if (!compiled.ok()) {
    std::cerr << compiled.status().to_string() << "\n";
    return 1;
  }
  const runtime::Executable& exe = *compiled->executable;
  auto timed_run = [&]() -> Result<double> {
    auto t0 = std::chrono::steady_clock::now();
    Result<std::vector<Tensor>> out = exe.run(inputs);
    if (!out.ok()) return out.status();
    return ms_since(t0);
  };
  Result<double> first = timed_run();
  if (!first.ok()) {
    std::cerr << first.status().with_location({model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  for (int i = 0; i < o.warmup; ++i)
    (void)timed_run();
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i)
    times.push_back(timed_run().value());
  std::sort(times.begin(), times.end());
  double median = quantile(times, 0.5), p90 = quantile(times, 0.9);
  if (o.json) {
    nlohmann::json j = {{"model", model},
                        {"compile_ms", compile_ms},
                        {"cache_hit", compiled->cache_hit},
                        {"first_run_ms", *first},
                        {"median_ms", median},
                        {"min_ms", times.front()},
                        {"p90_ms", p90},
                        {"iters", o.iters},
                        {"kernels", exe.launches().size()},
                        {"arena_bytes", exe.arena_bytes()}};
    std::cout << j.dump() << "\n";
  } else {
    std::cout << fmt::format(
        "model: {}\ncompile: {:.1f} ms{}\nfirst run: {:.3f} ms\n"
        "steady state over {} runs: median {:.3f} ms, min {:.3f} ms, p90 {:.3f} ms\n"
        "kernels: {}, working memory: {} bytes\n",
        model, compile_ms, compiled->cache_hit ? " (kernels from the cache)" : "", *first, o.iters,
        median, times.front(), p90, exe.launches().size(), exe.arena_bytes());
  }
  return 0;
}

} // namespace weft::cli
