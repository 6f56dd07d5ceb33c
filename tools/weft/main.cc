// weft: the command-line driver. The contract (subcommands, flags, exit status) is in
// docs/cli.md: exit 0 on success, 1 on bad input (one "error:" line), 2 on usage errors.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include "tools/weft/commands.h"
#include "weft/driver/pipeline.h"
#include "weft/graph/op_table.h"
#include "weft/onnx/contrib_ops.h"
#include "weft/onnx/sequence_ops.h"
#include "weft/runtime/cpu/host_threads.h"
#include "weft/runtime/executable.h"

namespace {

constexpr int kUsageError = 2;

} // namespace

namespace weft::cli {

// --threads, else WEFT_NUM_THREADS, for the kernels and library calls of this process (OpenMP
// read OMP_NUM_THREADS when it loaded, before main: setting it now changed nothing).
bool set_threads(int threads) {
  Result<int> env = runtime::thread_count_from_environment();
  if (threads == 0 && !env.ok()) {
    std::cerr << "error: " << env.status().message() << "\n";
    return false;
  }
  runtime::set_default_host_threads(threads > 0 ? threads : *env);
  return true;
}

} // namespace weft::cli

namespace {

// --device cpu|cuda, parsed into "device".
void add_device_option(CLI::App* cmd, weft::DeviceKind* device) {
  cmd->add_option_function<std::string>(
         "--device",
         [device](const std::string& name) { *device = *weft::parse_device_kind(name); },
         "Target device")
      ->check(CLI::IsMember({"cpu", "cuda"}));
}

int run_cli(int argc, char** argv) {
  CLI::App app{"Weft: an ONNX tensor compiler for memory-bound work"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "weft 0.1.0");

  weft::cli::InspectOptions inspect;
  CLI::App* cmd = app.add_subcommand("inspect", "Show the graph after each pass");
  cmd->add_option("model", inspect.model, "The .onnx model")->required();
  std::vector<std::string> steps(weft::pipeline_steps().begin(), weft::pipeline_steps().end());
  cmd->add_option("--after", inspect.after, "Show only the graph after this step")
      ->check(CLI::IsMember(steps));
  cmd->add_option("--dump-dir", inspect.dump_dir, "Write the graph after each step here");
  add_device_option(cmd, &inspect.device);
  cmd->add_flag("--json", inspect.json, "Print one JSON object");
  cmd->add_option("--registers", inspect.registers,
                  "With --device cuda: build the kernels for this GPU architecture (sm_80, "
                  "sm_86, sm_89, sm_90) with NVRTC and show each function's registers, stack "
                  "and blocks a SM; no GPU needed");

  CLI::App* ops_cmd = app.add_subcommand("ops", "List the supported ONNX ops and their opsets");
  ops_cmd->callback([] {
    for (const weft::OpDef& def : weft::all_ops()) {
      // Weft's own ops (op_table.h) are what passes make, not what a model may hold.
      std::string name = fmt::format("{}", def.op);
      if (name.starts_with(fmt::format("{}.", weft::kWeftDomain))) continue;
      std::cout << name << " " << def.min_opset << "-" << def.max_opset << "\n";
    }
    // Sequence ops, resolved at import (sequence_ops.h).
    for (std::string_view name : weft::kSequenceOps)
      std::cout << name << " " << weft::kSequenceOpset << "-" << weft::kMaxOpset << "\n";
    // ONNX Runtime's ops, expanded at import (contrib_ops.h); its domain has version 1.
    for (const std::string& name : weft::contrib_op_names())
      std::cout << weft::kMicrosoftDomain << "." << name << " 1-1\n";
  });

  int threads = 0;
  weft::cli::RunOptions run;
  CLI::App* run_cmd =
      app.add_subcommand("run", "Run a model on inputs; outputs are written as NAME.npy");
  run_cmd->add_option("model", run.model, "The .onnx model")->required();
  run_cmd->add_option("--input", run.inputs, "NAME=FILE (.npy or .pb), once per input");
  run_cmd->add_option("--fill", run.fill, "Fill inputs not given")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  run_cmd->add_option("--shapes", run.shapes,
                      "NAME=1x3x48x320: the dims of a filled input; SYMBOL=N: a free dim's extent "
                      "(free dims are 1 without)");
  run_cmd->add_option("--output-dir", run.output_dir, "Where outputs are written");
  add_device_option(run_cmd, &run.device);
  run_cmd->add_flag("--deterministic", run.deterministic,
                    "With --device cuda: results bitwise the same from run to run (no atomics)");
  run_cmd->add_flag("--allow-tf32", run.allow_tf32,
                    "With --device cuda: let cuBLAS and cuDNN use TF32 tensor cores for f32");
  run_cmd->add_flag("--allow-bf16", run.allow_bf16,
                    "CPU: f32 convolutions and matrix products multiply operands rounded to bf16 "
                    "where the CPU does natively (AVX512-BF16, AMX)");
  run_cmd
      ->add_option("--threads", threads,
                   "Threads for kernels (default: WEFT_NUM_THREADS, or all cores)")
      ->check(CLI::Range(1, weft::runtime::kMaxHostThreads));

  weft::cli::TestOnnxOptions test;
  CLI::App* test_cmd =
      app.add_subcommand("test-onnx", "Run ONNX backend test cases; PASS or FAIL per case");
  test_cmd->add_option("cases", test.cases, "Case directories (model.onnx + test_data_set_N/)")
      ->required();
  test_cmd->add_option("--rtol", test.rtol, "Relative tolerance");
  test_cmd->add_option("--atol", test.atol, "Absolute tolerance");
  add_device_option(test_cmd, &test.device);
  test_cmd->add_flag("--deterministic", test.deterministic,
                     "With --device cuda: results bitwise the same from run to run (no atomics)");
  test_cmd->add_flag("--allow-tf32", test.allow_tf32,
                     "With --device cuda: let cuBLAS and cuDNN use TF32 tensor cores for f32");
  test_cmd->add_flag("--allow-bf16", test.allow_bf16,
                     "CPU: f32 convolutions and matrix products multiply operands rounded to bf16 "
                     "where the CPU does natively (AVX512-BF16, AMX)");
  test_cmd->add_option("--threads", threads, "Threads for kernels")
      ->check(CLI::Range(1, weft::runtime::kMaxHostThreads));
  test_cmd->add_flag("--compile-only", test.compile_only,
                     "Generate and build the kernels without running them (PASS: they build)");
  std::string archs = "sm_80,sm_90";
  test_cmd->add_option("--arch", archs,
                       "With --device cuda --compile-only: NVRTC targets, comma-separated");

  weft::cli::BenchOptions bench;
  CLI::App* bench_cmd =
      app.add_subcommand("bench", "Compile time, then steady-state latency (median, min, p90)");
  bench_cmd->add_option("target", bench.target, "A model, or an ONNX test case directory")
      ->required();
  bench_cmd->add_option("--input", bench.inputs, "NAME=FILE (.npy or .pb), once per input");
  bench_cmd->add_option("--fill", bench.fill, "Fill inputs not given")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  bench_cmd->add_option(
      "--shapes", bench.shapes,
      "NAME=1x3x48x320: the dims of a filled input; SYMBOL=N: a free dim's extent "
      "(free dims are 1 without)");
  bench_cmd->add_option("--iters", bench.iters, "Timed runs")->check(CLI::PositiveNumber);
  bench_cmd->add_option("--warmup", bench.warmup, "Untimed runs after the first")
      ->check(CLI::NonNegativeNumber);
  add_device_option(bench_cmd, &bench.device);
  bench_cmd->add_flag("--deterministic", bench.deterministic,
                      "With --device cuda: results bitwise the same from run to run (no atomics)");
  bench_cmd->add_flag("--allow-tf32", bench.allow_tf32,
                      "With --device cuda: let cuBLAS and cuDNN use TF32 tensor cores for f32");
  bench_cmd->add_flag("--allow-bf16", bench.allow_bf16,
                      "CPU: f32 convolutions and matrix products multiply operands rounded to bf16 "
                      "where the CPU does natively (AVX512-BF16, AMX)");
  bench_cmd->add_option("--threads", threads, "Threads for kernels")
      ->check(CLI::Range(1, weft::runtime::kMaxHostThreads));
  bench_cmd->add_flag("--json", bench.json, "Print one JSON object");
  bench_cmd->add_option(
      "--profile", bench.profile,
      "Write a Chrome trace of one run (chrome://tracing, Perfetto) to this file, "
      "and print the per-kernel table");
  bench_cmd->add_flag("--kernels", bench.kernels,
                      "Print the per-kernel table: time, % of total, bytes moved, GB/s");

  weft::cli::TuneOptions tune;
  CLI::App* tune_cmd =
      app.add_subcommand("tune", "Measure each kernel's schedules (CPU) or options (CUDA); store "
                                 "the fastest in the tuning cache");
  tune_cmd->add_option("model", tune.model, "The .onnx model")->required();
  tune_cmd->add_option("--input", tune.inputs, "NAME=FILE (.npy or .pb), once per input");
  tune_cmd->add_option("--fill", tune.fill, "Fill inputs not given")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  tune_cmd->add_option("--shapes", tune.shapes,
                       "NAME=1x3x48x320: the dims of a filled input; SYMBOL=N: a free dim's extent "
                       "(free dims are 1 without)");
  add_device_option(tune_cmd, &tune.device);
  tune_cmd->add_option("--threads", threads, "Threads for kernels")
      ->check(CLI::Range(1, weft::runtime::kMaxHostThreads));
  tune_cmd
      ->add_option("--seconds-per-candidate", tune.seconds_per_candidate,
                   "Timing budget of one candidate (at least 3 runs)")
      ->check(CLI::PositiveNumber);

  cmd->add_flag("--fusion", inspect.fusion_report,
                "Print the kernels (with bytes moved) and every fusion decision with its reason");
  // --no-fusion: one kernel per node's lowering, for comparisons (docs/fusion.md).
  for (auto [cmd_ptr, flag] :
       {std::pair{cmd, &inspect.fusion}, std::pair{run_cmd, &run.fusion},
        std::pair{test_cmd, &test.fusion}, std::pair{bench_cmd, &bench.fusion}})
    cmd_ptr->add_flag("!--no-fusion", *flag, "Do not fuse kernels");
  // --dynamic-shapes: what the API's dynamic_shapes does, but an error where it would fall back.
  for (auto [cmd_ptr, flag] :
       {std::pair{test_cmd, &test.dynamic_shapes}, std::pair{bench_cmd, &bench.dynamic_shapes}})
    cmd_ptr->add_flag("--dynamic-shapes", *flag,
                      "Compile once for every extent of the inputs' symbolic dims (an error where "
                      "that cannot be done, instead of compiling per shape)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kUsageError;
  }
  if (!weft::cli::set_threads(threads)) return kUsageError;
  if (cmd->parsed()) return weft::cli::inspect(inspect);
  if (run_cmd->parsed()) return weft::cli::run(run);
  if (test_cmd->parsed()) {
    for (size_t begin = 0; begin <= archs.size();) {
      size_t end = std::min(archs.find(',', begin), archs.size());
      if (end > begin) test.archs.push_back(archs.substr(begin, end - begin));
      begin = end + 1;
    }
    return weft::cli::test_onnx(test);
  }
  if (bench_cmd->parsed()) return weft::cli::bench(bench);
  if (tune_cmd->parsed()) return weft::cli::tune(tune);
  return ops_cmd->parsed() ? 0 : kUsageError;
}

// libgomp's waiting threads spin 300,000 pauses (5.6 ms on an AMD EPYC) before they sleep, which
// takes the cores from the threads with work where other processes use them too. It reads
// GOMP_SPINCOUNT once, when it loads, before main: where the user set neither it nor
// OMP_WAIT_POLICY, weft sets 10,000 and starts itself again (docs/api.md, "OpenMP threads"), as
// the Python module sets it before it loads.
void restart_with_shorter_spinning(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  // Started by the dynamic loader by name (ld-linux-x86-64.so.2 weft ...), /proc/self/exe is
  // the loader, which would take the first argument for the program: no restart then.
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return;
  std::string_view name(exe, static_cast<size_t>(n));
  name.remove_prefix(name.find_last_of('/') + 1);
  if (name.substr(0, 3) == "ld-" || name.substr(0, 5) == "ld.so") return;
  if (setenv("GOMP_SPINCOUNT", "10000", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT"); // not restarted (no /proc): the default, as loaded
}

} // namespace

int main(int argc, char** argv) {
  restart_with_shorter_spinning(argv);
  // Bad input never crashes weft; these are the last line of defence, not the error path.
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
  }
  return 1;
}
