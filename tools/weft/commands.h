// The subcommands of the weft CLI (the contract is in docs/cli.md).
#pragma once

#include <string>
#include <vector>

#include "weft/support/device_kind.h"

namespace weft::cli {

struct InspectOptions {
  std::string model;
  std::string after;    // one pipeline step, or empty for all
  std::string dump_dir; // write each step's graph here
  DeviceKind device = DeviceKind::kCpu;
  bool json = false;
  bool fusion = true;
  bool fusion_report = false; // print the kernel plan and fusion decisions
  std::string registers;      // --device cuda: compile for this arch and show each function's
                              // registers and blocks a SM (toolchain/cubin.h)
};

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs; // NAME=FILE
  std::string fill;                // random, zeros, ones, or empty
  std::vector<std::string> shapes; // NAME=1x3x48x320: the dims of a filled input
  std::string output_dir = ".";
  DeviceKind device = DeviceKind::kCpu;
  bool deterministic = false; // --device cuda: no atomics
  bool allow_tf32 = false;    // --device cuda: TF32 in cuBLAS and cuDNN
  bool allow_bf16 = false;    // CPU: bf16 products where the CPU multiplies bf16 natively
  bool fusion = true;
};

struct TestOnnxOptions {
  std::vector<std::string> cases;
  double rtol = 1e-3;
  double atol = 1e-7;
  DeviceKind device = DeviceKind::kCpu;
  bool deterministic = false; // --device cuda: no atomics
  bool allow_tf32 = false;    // --device cuda: TF32 in cuBLAS and cuDNN
  bool allow_bf16 = false;    // CPU: bf16 products where the CPU multiplies bf16 natively
  bool fusion = true;
  bool compile_only = false;      // build the kernels, do not run them
  std::vector<std::string> archs; // --device cuda --compile-only: NVRTC targets
  bool dynamic_shapes = false;    // one compile for every extent of the symbolic dims
};

struct BenchOptions {
  std::string target;              // a model, or an ONNX test case directory
  std::vector<std::string> inputs; // NAME=FILE
  std::string fill = "random";
  std::vector<std::string> shapes; // NAME=1x3x48x320: the dims of a filled input
  DeviceKind device = DeviceKind::kCpu;
  bool deterministic = false; // --device cuda: no atomics
  bool allow_tf32 = false;    // --device cuda: TF32 in cuBLAS and cuDNN
  bool allow_bf16 = false;    // CPU: bf16 products where the CPU multiplies bf16 natively
  int iters = 20;
  int warmup = 3;
  bool json = false;
  bool fusion = true;
  std::string profile;  // Chrome trace file
  bool kernels = false; // per-kernel table
  bool dynamic_shapes = false;
};

struct TuneOptions {
  std::string model;
  std::vector<std::string> inputs; // NAME=FILE
  std::string fill = "random";
  std::vector<std::string> shapes; // NAME=1x3x48x320: the dims of a filled input
  DeviceKind device = DeviceKind::kCpu;
  bool fusion = true;
  double seconds_per_candidate = 0.2;
};

// Each returns the process exit status.
int inspect(const InspectOptions& options);
int run(const RunOptions& options);
int test_onnx(const TestOnnxOptions& options);
int bench(const BenchOptions& options);
int tune(const TuneOptions& options);

// Applies --threads / WEFT_NUM_THREADS to the generated kernels' OpenMP runtime; must run
// before the first kernel library is loaded. False, with an "error:" line, where
// WEFT_NUM_THREADS (which --threads overrides) is not a thread count.
bool set_threads(int threads);

} // namespace weft::cli
