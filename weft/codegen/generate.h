// generate_function: a kernel's function source, scheduled on isl and emitted, or read from
// the function cache when this build of Weft generated the same kernel before.
//
// The cache lives in "$WEFT_CACHE_DIR/functions", one file per kernel, keyed by a hash of the
// kernel IR's text, the dialect, the CPU schedule or CUDA options, and the fingerprint (path, size,
// mtime) of the binary that holds the scheduler and emitter, so that a rebuilt Weft never reads its
// predecessor's output. A CUDA function's launches are kept beside it (KEY.launch, one line
// per function: name, block, grid). Entries are written under a private name and renamed into
// place, the launches first. Warm compiles then skip isl, which is most of a compile's time.
// Processes that generate the same kernel at once schedule it once: the first holds the
// entry's BuildLock (KEY.lock) while isl runs, and the others then read its entry.
#pragma once

#include <string>

#include "weft/codegen/emit_c.h"
#include "weft/kernel/kernel.h"
#include "weft/support/status.h"

namespace weft::codegen {

struct GeneratedFunction {
  std::string source;
  std::vector<runtime::cuda::LaunchShape> launches; // CUDA: one per __global__ function
  bool cache_hit = false;
};

// "cache_dir" empty: no cache. "schedule" (CPU) and "cuda" (CUDA) are part of the cache key.
Result<GeneratedFunction> generate_function(const kernel::Kernel& kernel, Dialect dialect,
                                            const std::string& cache_dir,
                                            const CpuSchedule& schedule = {},
                                            const CudaOptions& cuda = {});

// A kernel emitted under another name, with a CPU schedule or CUDA options (for `weft tune`).
struct Variant {
  std::string name;
  CpuSchedule schedule;
  CudaOptions cuda;
};

// The function of "kernel" for each variant, scheduled on isl once; no cache.
Result<std::vector<EmittedFunction>> generate_variants(const kernel::Kernel& kernel,
                                                       Dialect dialect,
                                                       const std::vector<Variant>& variants);

} // namespace weft::codegen
