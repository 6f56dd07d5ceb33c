// The tuning cache: what `weft tune` measured best, one record per kernel and machine, in
// "$WEFT_CACHE_DIR/tuning". Compiles read it; without a record, the cost model's choice
// applies: codegen::CpuSchedule's defaults on the CPU, codegen::CudaOptions's on a CUDA device.
//
// A record's key hashes the kernel IR's text (kernel::print_kernel: ops, buffers, shapes;
// not the kernel's name) with the machine: on the CPU, its model name, the thread count, and
// the compiler and its flags; on CUDA, the device (its name, architecture and SMs) and whether
// the build is deterministic. A record is a small JSON file, written under a private name and
// renamed into place, so that concurrent compiles and tunes never read half of one.
#pragma once

#include <optional>
#include <string>

#include "weft/codegen/cpu_strategy.h"
#include "weft/codegen/cuda_strategy.h"
#include "weft/support/status.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft {

struct TuningRecord {
  codegen::CpuSchedule schedule; // the CPU's winner...
  codegen::CudaOptions cuda;     // ...or a CUDA device's
  double best_ms = 0;            // the winner's median
  double default_ms = 0;         // the cost model's choice's median
  int candidates = 0;            // distinct candidates measured
  std::string kernel;            // for people reading the file: kernel name and op
};

class TuningCache {
public:
  // The cache under "compiler.cache_dir", for this machine with "threads" OpenMP threads.
  TuningCache(const toolchain::CpuCompiler& compiler, int threads);
  // The cache of CUDA options for the device "device" (Device::describe()), under
  // $WEFT_CACHE_DIR; "deterministic": for --deterministic builds.
  static TuningCache for_cuda(const std::string& device, bool deterministic);

  // The record of the kernel whose IR text is "kernel_ir", if one was stored and reads back.
  std::optional<TuningRecord> lookup(const std::string& kernel_ir) const;
  Status store(const std::string& kernel_ir, const TuningRecord& record) const;
  std::string directory() const { return dir_; }

private:
  TuningCache(std::string dir, std::string machine, bool cuda)
      : dir_(std::move(dir)), machine_(std::move(machine)), cuda_(cuda) {}
  std::string path_of(const std::string& kernel_ir) const;
  std::string dir_;
  std::string machine_;
  bool cuda_ = false; // records hold CUDA options, not CPU schedules
};

// The OpenMP threads kernels will run with (OMP_NUM_THREADS, or all cores).
int kernel_threads();

} // namespace weft
