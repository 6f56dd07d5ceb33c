// CUDA strategies for reductions (docs/cuda-strategies.md): how the top-level loop nests of a
// kernel map onto threads, and the CUDA C++ skeletons that run its reductions.
//
// Every part of a kernel (one __global__ function per top-level nest, emit_c.h) runs on a
// persistent grid: blocks stride over the work, so any grid size is correct and the runtime
// sizes it to the device (kCudaMaxGrid blocks at most).
// - Elementwise: the perfectly nested parallel loops at the top of a nest are flattened into
//   one index space, one thread per point, the innermost loop on consecutive threads.
// - ROW (and MIDDLE): a group of G threads per point of those loops (G = 1..32 lanes of one
//   warp, several rows per warp; or a whole block of 64..1024 threads, one row per block).
//   The group splits the point's inner loops: each register reduction is accumulated per
//   lane and combined by warp shuffles (then one hop through shared memory for a block);
//   a COLUMN nest inside gives each lane its own columns; other parallel loops are strided
//   over the lanes; anything else runs on lane 0. The group synchronizes between items, so
//   softmax and layernorm run as one kernel with each row read by one group. When every pass
//   over the row has the same static range, of 2..kCudaRowRegisters elements a lane, the row
//   stays in registers: the passes are unrolled, each lane taking the same elements in each,
//   and the row's float buffers are read from memory once (softmax: one read of x and the
//   final write of y, where the passes read x, then y twice, through the L2 cache; on an H200
//   a hand-written probe of [8192, 4096] went from 98-116 to 80 us). With vector loads and a
//   multiple of 4 elements a lane, the row is held by quads: float4 loads before the row's
//   items and stores after them (Emitter::emit_row_quads).
// - Strided loops (ALL, few long rows, rows not held, COLUMN's row slices) keep
//   CudaOptions::unroll accumulators a thread, or take float4 loads where the reads are
//   contiguous f32 and aligned (CudaReductionWriter::unrolled_loop): loads in flight.
// - ALL: a top-level register reduction is bound to every block of the grid (Panamera). Each
//   block combines its share; the blocks' results combine with atomics into an accumulator of
//   the module (atomicAdd for sums; integer atomicMax/atomicMin for floats' max and min, no CAS
//   loop), and the last block to finish (a counter) applies it to the target, running the
//   target's init statement first: no separate clean kernel. The accumulator and counter
//   reset themselves for the next launch. Deterministic: each block writes its partial and
//   the last block combines them in block order.
// - ROW with few long rows (at most kCudaFewRows static rows of at least kCudaLongRow, a point
//   body of statements around one register reduction): each row is split across blocks,
//   which combine with atomics into a per-row accumulator of the module; the row's last block
//   runs the inits, applies the total and runs the epilogue. Not when deterministic.
// - COLUMN ([R, K], K contiguous): 32 columns per block on consecutive lanes, 8 row slices per
//   block combined through a padded shared tile; when the column tiles alone cannot fill the
//   grid, R is split across blocks too, which combine with atomics into the target (not when
//   deterministic, nor for types without atomics). With CudaOptions::column_vector (the
//   default), a lane takes 4 neighbouring columns by float4 loads, and a block 32 row slices. The
//   loop of the target's inits before it runs inside it (ColumnInit), not as a launch of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "weft/codegen/cpu_strategy.h"
#include "weft/runtime/cuda/launch.h"

namespace weft::codegen {

inline constexpr int64_t kCudaMaxGrid = runtime::cuda::kMaxPersistentGrid;
inline constexpr int64_t kCudaBlock = 256;       // threads of a block, unless a row takes one
inline constexpr int64_t kCudaColumnRows = 8;    // row slices of a COLUMN block
inline constexpr int64_t kCudaMinSplitRows = 64; // rows a COLUMN split keeps per block, at least
inline constexpr int64_t kCudaFewRows = 64;      // ROW: at most this many rows are split...
inline constexpr int64_t kCudaLongRow = 16384;   // ...when they are at least this long
inline constexpr int64_t kCudaRowRegisters = 16; // ROW: row elements a lane holds, at most...
inline constexpr int64_t kCudaRowRegisterSum = 32; // ...and over all the row's buffers

inline constexpr int64_t kCudaUnroll = 4;          // accumulators a thread keeps in strided loops
inline constexpr int64_t kCudaLaneElements = 8;    // row elements a lane takes when G is chosen
inline constexpr int64_t kCudaResidentThreads = 0; // see CudaOptions::resident_threads
inline constexpr int64_t kCudaAllResidentThreads = 2048; // ...and for ALL, at least this
inline constexpr int64_t kCudaVector = 4;          // see CudaOptions::vector
inline constexpr int64_t kCudaHeldElements = 16;   // see CudaOptions::held_elements
inline constexpr int64_t kCudaMaxGroup = 1024;     // see CudaOptions::max_group
inline constexpr int64_t kCudaColumnVector = 4;    // see CudaOptions::column_vector
inline constexpr int64_t kCudaRowScalars = 1;      // see CudaOptions::row_scalars
// Elementwise statements share outer loops only with this many points (a thread each):
// poly::ScheduleOptions::min_shared_points.
inline constexpr int64_t kCudaMinSharedPoints = 16384;
inline constexpr int64_t kCudaSplitInner = 256; // Emitter::invariant_split: inner points, at least

struct CudaOptions {
  // Bitwise-stable results from run to run: no atomics (--deterministic).
  bool deterministic = false;
  // Independent accumulators a thread keeps in the strided loops of ALL, of few long rows and
  // of rows not held in registers, so that as many of its loads are in flight (1: one chain
  // of dependent combines); in COLUMN by quads, the quads a thread loads at once.
  int64_t unroll = kCudaUnroll;
  // Floats a thread loads at once in the strided loops whose reads allow it
  // (ReductionText::vector_reads): 4 takes float4 loads where the addresses are 16-byte
  // aligned (checked when the kernel runs), 1 none.
  int64_t vector = kCudaVector;
  // Row elements a lane takes when a row's group size is chosen (cuda_group_size)...
  int64_t lane_elements = kCudaLaneElements;
  // ...and when the row is held in registers at that size (at most kCudaRowRegisters).
  int64_t held_elements = kCudaHeldElements;
  // Threads of a row's group at most (cuda_group_size; a COLUMN nest in a row takes up to 1024
  // regardless).
  int64_t max_group = kCudaMaxGroup;
  // Threads an SM should hold of each function (its launch bounds ask for blocks enough, so
  // that the compiler keeps registers few enough); 0 asks for nothing beyond the block size.
  int64_t resident_threads = kCudaResidentThreads;
  // COLUMN: 4 takes the columns by quads (CudaReductionWriter::column_quads: float4 loads of
  // 4 neighbouring columns a lane) where the reads allow it; 1 a column a lane. On an H200
  // (2026-11-30), quads took [12544, 2048] from 87% to 90% of the copy bandwidth and
  // [524288, 32] from 78% to 79%.
  int64_t column_vector = kCudaColumnVector;
  // 1: a group's per-point scalars (a row's mean, max, sum) live in a register of each lane
  // (Emitter::contract_row_scalars); 0: in the kernel's temporaries in global memory, written
  // by lane 0 and read by the others after a synchronization, as before 2026-11-30. Written
  // without a GPU: not yet timed.
  int64_t row_scalars = kCudaRowScalars;

  // "base" (the defaults, or a tuning record's) with $WEFT_CUDA_UNROLL,
  // $WEFT_CUDA_LANE_ELEMENTS, $WEFT_CUDA_HELD_ELEMENTS (powers of two from 1 to 64),
  // $WEFT_CUDA_MAX_GROUP (a power of two from 32 to 1024), $WEFT_CUDA_VECTOR and
  // $WEFT_CUDA_COLUMN_VECTOR (1 or 4), $WEFT_CUDA_RESIDENT_THREADS (0 to 2048) and
  // $WEFT_CUDA_ROW_SCALARS (0 or 1) applied,
  // for comparisons on a GPU
  // (docs/knobs.md); a value out of range leaves base's.
  static CudaOptions from_environment(bool deterministic, const CudaOptions& base);
  static CudaOptions from_environment(bool deterministic);
  // "unroll=4 vector=4 lane_elements=8 ...": every knob but "deterministic", as tuning records
  // keep them; parse() reads it back (knobs not named keep their defaults), or nothing where a
  // word is not a knob with a value it takes.
  std::string to_string() const;
  static std::optional<CudaOptions> parse(const std::string& text);
  // What the generated code depends on: part of the function cache's key.
  std::string key() const;
  bool operator==(const CudaOptions& o) const;
};

// Threads per row for rows of "extent" elements (none: unknown): a power of two from 1 to
// "max_group", about "lane_elements" elements per thread (with 8: multi-row-per-warp below
// 256, a warp at 256, a block above).
int64_t cuda_group_size(std::optional<int64_t> extent, int64_t lane_elements = kCudaLaneElements,
                        int64_t max_group = kCudaMaxGroup);

// A loop of the nest as the skeletons print it: "for (iterator = init; cond; iterator +=
// step)", and its bound "hi" (iterator < hi) when it is a step-1 loop with one (else empty).
struct LoopText {
  std::string iterator, init, cond;
  int64_t step = 1;
  std::string hi;
};

// Do atomics combine values of C type "type" with "c"? Sums, max and min of float, double
// and 32- and 64-bit integers.
bool cuda_atomic_applies(kernel::Combine c, const std::string& type);

// The functor of the prelude that applies "c" ("weft_op_add{}", ...).
std::string cuda_combine_op(kernel::Combine c);

// The bits of "c"'s identity in C type "type" (one cuda_atomic_applies takes), as an integer
// literal of its size: an accumulator of the module starts from it, as no constructor runs on
// the device.
std::string identity_bits(kernel::Combine c, const std::string& type);

// A COLUMN part's init folded into it (Emitter::folds_into): "statements" run for a column
// (its iterator bound) just before its total is applied, so that the init needs no launch of
// its own. With R split across blocks, the blocks' partials then combine with atomics into an
// accumulator of the module ("function" names it; "columns", static, sizes it; its identity
// must be all zero bits, which a module's memory starts as), and a tile's last block runs the
// init, applies the total and clears the accumulator for the next launch.
struct ColumnInit {
  std::function<void(int depth, std::string& out)> statements; // prints them at "depth"
  std::string function;
  int64_t columns = 0;
};

// Prints the skeletons of one reduction statement into "out". Loops print as
// "for (it = init + lane * step; cond; it += threads * step)".
class CudaReductionWriter {
public:
  // "unroll": accumulators a thread keeps in strided loops over a bounded range, or the quads
  // it loads at once in COLUMN by quads (CudaOptions::unroll); strided loops take vector
  // loads when "r" has vector_reads.
  CudaReductionWriter(const ReductionText& r, std::string& out, int64_t unroll = 1)
      : r_(r), out_(out), unroll_(unroll), vector_(static_cast<bool>(r.vector_reads)) {}

  // In a group of "group" threads (lane "weft_lane", mask "weft_mask"): lanes accumulate every
  // group-th iteration, the group combines, lane 0 stores.
  void group(const LoopText& loop, int64_t group, int depth);
  // The same over a row in registers: "per_lane" iterations a lane, unrolled; in its k-th
  // ("weft_k"), a lane takes iterator = "element" (a C expression of weft_lane and weft_k).
  void group_unrolled(const std::string& iterator, const std::string& element, int64_t per_lane,
                      int64_t group, int depth);
  // ALL over the whole grid. "function": the name that keys the module's accumulator, counter
  // and partials; "init": a statement the last block runs first (may be empty).
  // "globals" receives the declarations that go before the function.
  void all(const LoopText& loop, const std::string& function, bool atomic, const std::string& first,
           int depth, std::string& globals);
  // ROW with few long rows, inside a loop over units that defines the row "weft_p" (of
  // "rows", static) and its split "weft_s" (of "weft_splits"): the split's blocks combine with
  // atomics into a per-row accumulator of the module, and the row's last block runs "before" (the
  // inits), applies the total to the target, then runs "after" (the epilogue).
  void split_row(const std::string& iterator, const RangeText& r, const std::string& function,
                 int64_t rows, const std::string& before, const std::string& after, int depth,
                 std::string& globals);
  // COLUMN: rows "r_iterator" over "r", columns "k_iterator" over "k", over the grid;
  // "split": R may be split across blocks (atomics into the target).
  // "init": the part's init, folded (or null); "globals" receives the accumulator's
  // declarations.
  void column(const std::string& r_iterator, const RangeText& r, const std::string& k_iterator,
              const RangeText& k, bool split, const ColumnInit* init, int depth,
              std::string& globals);
  // The same by quads ("r" has vector_reads along "k_iterator"): 32 columns a block, a lane
  // taking 4 neighbouring ones with a float4 load of each read where the quad is whole and
  // its addresses 16-byte aligned (else element by element), 32 row slices a block.
  // "steady": a read's address moves by a multiple of 4 floats from row to row, so that the
  // first row's alignment is every row's (checked once; else in every row).
  void column_quads(const std::string& r_iterator, const RangeText& r,
                    const std::string& k_iterator, const RangeText& k, bool split, bool steady,
                    const ColumnInit* init, int depth, std::string& globals);

  // "loop" with lane "lane" of "threads" taking every threads-th iteration, combining into
  // "acc" (declared by the caller): unrolled into unroll_ accumulators (or vector loads) when
  // the loop has a bound.
  void strided_loop(const LoopText& loop, const std::string& lane, const std::string& threads,
                    const std::string& acc, int depth);

private:
  std::string combine(const std::string& a, const std::string& b) const;
  // The start of a COLUMN skeleton ("what" says which, in a comment): its shared tile of
  // "slices" rows, a block's threads as "lane" across a tile row and weft_ty down it, the
  // ranges, tiles and splits, and the loop over (tile, split) units with their rows.
  void column_head(const RangeText& r, const RangeText& k, const std::string& what, int64_t slices,
                   const std::string& lane, bool split, int depth);
  // The end of a COLUMN tile, after its row slices' partials are in weft_tile: the threads
  // for which "valid" holds combine column "lane" of the tile's "slices" rows (column
  // "k_iterator" of the target) and apply it, as column() says; then the tile's last block
  // when "init" takes the splits.
  void column_tail(const std::string& k_iterator, const std::string& valid, const std::string& lane,
                   int64_t slices, bool split, const ColumnInit* init, int depth,
                   std::string& globals);
  // The group's combine of "acc" and lane 0's store, closing group()'s block.
  void group_combine(int64_t group, int depth);
  // Iterations lo + lane, lo + lane + threads, ... below "hi" of "iterator" (step 1),
  // combined into "acc" through unroll_ independent accumulators; with vector_, four
  // accumulators, and float4 loads of four iterations at a time (vector_loads) when the
  // reads' addresses at "lo" are 16-byte aligned (the rest, or all when not, by the scalar
  // loop).
  void unrolled_loop(const std::string& iterator, const std::string& lo, const std::string& lane,
                     const std::string& hi, const std::string& threads, const std::string& acc,
                     int depth);

  // The vector loads of a strided loop: iterations weft_w = from, from + step, ... below
  // "bound", where "defs" (a statement) defines what the reads' addresses at "at" need; each
  // read's float4 then updates weft_a[weft_j] with "iterator" = "element" (of weft_j).
  // "loads" iterations at a time, each guarded, so that as many loads are in flight.
  void vector_loads(const std::string& from, const std::string& bound, const std::string& step,
                    int64_t loads, const std::string& defs, const std::string& at,
                    const std::string& iterator, const std::string& element, int depth);

  const ReductionText& r_;
  std::string& out_;
  int64_t unroll_;
  bool vector_;
};

} // namespace weft::codegen
