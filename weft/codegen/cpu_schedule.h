// CpuSchedule: the knobs of the CPU strategies (cpu_strategy.h), per kernel, and the machine
// facts their defaults come from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::codegen {

inline constexpr int64_t kPerLane = 128;   // elements each lane adds per cascade block
inline constexpr int64_t kChainLanes = 16; // lanes of one SIMD loop: a 512-bit register of floats

// What CpuSchedule::stream_min_bytes defaults to on this machine: 3/4 of the last-level
// cache (the L3 of /sys/devices/system/cpu/cpu0/cache, else sysconf's), glibc's threshold
// for memcpy's non-temporal stores; kNoStreaming when the size is unknown. $WEFT_LLC_BYTES,
// when set, is the cache size instead of the probe's.
inline constexpr int64_t kNoStreaming = int64_t{1} << 62;
int64_t machine_stream_min_bytes();
// 1024, or $WEFT_MAX_ROW_VARIANT (for comparisons).
int64_t default_max_row_variant();
// True unless $WEFT_HALF_BLOCKS is 0 (for comparisons).
bool default_half_blocks();
// The row extents with micro-kernels under "max_row_variant": 64, 128, ..., at most it.
std::vector<int64_t> row_variants(int64_t max_row_variant);

// The knobs of the skeletons, per kernel. The defaults are the cost model's choice (docs/
// cpu-strategies.md); `weft tune` measures others and records the winner (weft/driver/tune.h).
struct CpuSchedule {
  // Independent accumulators of a ROW reduction: 8 to 128, a power of 2, in chains of
  // kChainLanes (one vector register of floats, one dependence chain each).
  int64_t lanes = 64;
  int64_t column_width = 2048;    // K columns of one chunk (partials on the stack)
  int64_t column_rows = 128;      // rows of a column cascade block
  int64_t min_per_thread = 16384; // fewer elements per thread: fewer threads
  // A top-level loop nest that statically runs fewer statement instances than this, or any
  // loop of a kernel whose largest statement has fewer elements, runs on one thread: no
  // parallel region to open (about 1.3 us with 2 threads, docs/cpu-strategies.md).
  int64_t min_parallel_work = 4096;
  // A float output of at least this many bytes, written contiguously by a SIMD loop and read
  // by no statement of the kernel, is written with streaming stores (Emitter::streams_write).
  int64_t stream_min_bytes = machine_stream_min_bytes();
  // Dynamic shapes: a reduction kernel whose rows have a symbolic extent holds micro-kernels
  // for rows of 64, 128, ... up to this many elements (powers of 2), each the same code with
  // the extent a constant, and each run takes the one for its extent, or the generic one
  // (Emitter::function). 0: none. $WEFT_MAX_ROW_VARIANT sets the default.
  int64_t max_row_variant = default_max_row_variant();
  // SIMD loops over f16 values convert them 16 at a time (Emitter::emit_half_blocks).
  bool half_blocks = default_half_blocks();

  // Shorter rows keep one scalar accumulator (vectorized by the compiler): there, measured,
  // the lanes' tree and tail cost more than the independent accumulators gain. Rows shorter
  // than the lanes run on the first chain only.
  int64_t min_lane_extent() const { return 8 * std::min(lanes, kChainLanes); }
  // Elements of a cascade block: each lane adds kPerLane of them, whatever the lanes, so the
  // rounding error of a sum does not grow with fewer lanes.
  int64_t block() const { return kPerLane * lanes; }
  // "lanes=32 column_width=2048 ..."; parse() reads it back (unknown keys are errors).
  std::string to_string() const;
  static std::optional<CpuSchedule> parse(const std::string& text);
  bool operator==(const CpuSchedule& o) const { return to_string() == o.to_string(); }
};

} // namespace weft::codegen
