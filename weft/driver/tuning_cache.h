// The tuning cache: schedules that `weft tune` measured best, one record per kernel and
// machine, in "$WEFT_CACHE_DIR/tuning". Compiles read it; without a record, the cost model's
// schedule (codegen::CpuSchedule's defaults) applies.
//
// A record's key hashes the kernel IR's text (kernel::print_kernel: ops, buffers, shapes;
// not the kernel's name) with the machine: the CPU's model name, the thread count, and the compiler
// and its flags. A record is a small JSON file, written under a private name and renamed into
// place, so that concurrent compiles and tunes never read half of one.
#pragma once

#include <optional>
#include <string>

#include "weft/codegen/cpu_strategy.h"
#include "weft/support/status.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft {

struct TuningRecord {
  codegen::CpuSchedule schedule;
  double best_ms = 0;    // the winner's median
  double default_ms = 0; // the cost model's schedule's median
  int candidates = 0;    // distinct candidates measured
  std::string kernel;    // for people reading the file: kernel name and op
};

class TuningCache {
public:
  // The cache under "compiler.cache_dir", for this machine with "threads" OpenMP threads.
  TuningCache(const toolchain::CpuCompiler& compiler, int threads);

  // The record of the kernel whose IR text is "kernel_ir", if one was stored and reads back.
  std::optional<TuningRecord> lookup(const std::string& kernel_ir) const;
  Status store(const std::string& kernel_ir, const TuningRecord& record) const;
  std::string directory() const { return dir_; }

private:
  std::string path_of(const std::string& kernel_ir) const;
  std::string dir_;
  std::string machine_;
};

// The OpenMP threads kernels will run with (OMP_NUM_THREADS, or all cores).
int kernel_threads();

} // namespace weft
