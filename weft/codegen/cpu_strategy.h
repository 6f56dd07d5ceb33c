// CPU strategies for reductions (docs/cpu-strategies.md): which loop nests get vector
// lanes, cascaded sums and thread splits, and the C++ skeletons that run them.
//
// The emitter (emit_c.cc) recognizes the nests below with these predicates and prints
// statements; the writer owns the shape of the generated code:
// - ROW: a register reduction (its target does not move with the loop) runs in blocks of
//   128 elements per lane, over the schedule's lanes, which a pairwise tree combines; the
//   block's partial then joins the running total (cascade summation).
// - ALL: a register reduction at the top of its nest splits its range over the threads,
//   each running ROW on a contiguous chunk; partials combine in thread order.
// - COLUMN ([R, K]): R split over the threads, each reading whole rows into a partial row,
//   partials combined in thread order; K split instead when it gives every thread a chunk
//   of column_width columns. The K loop is the vector loop; column blocks of column_rows
//   rows join the totals (cascade), unless R is statically at most one block.
// - Few rows: a parallel loop around a ROW or COLUMN nest (ROW, MIDDLE) that has fewer
//   iterations than threads runs serially, each inner reduction split as ALL or COLUMN.
// For a fixed thread count and schedule every skeleton is deterministic: nothing depends on
// timing. The knobs are a CpuSchedule, chosen per kernel by the cost model or `weft tune`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "weft/codegen/cpu_schedule.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/loop_ast.h"

namespace weft::codegen {

// COLUMNs at most this wide (statically) accumulate each cascade block in register blocks:
// [2048, 256] 0.028 -> 0.018 ms; [12544, 2048] slowed (4.9 -> 5.4 ms), each 1 MB block of 128
// rows then being read 64 columns at a time (alternating runs, 2026-11-22). A register block
// is as wide as the static columns allow, up to this (16 vector registers of floats), so
// that it reads whole rows: MIDDLE [256, 256, 256] (64 MB) read 64 columns of each 1 KB row
// at a time took 3.5 ms, whole rows 1.4-2.5 ms (a kernel harness, 2026-11-22). Columns of
// unknown width take blocks of kColumnRegisterLanes.
inline constexpr int64_t kRegisterColumnsMax = 256;
inline constexpr int64_t kColumnRegisterLanes = 64;
inline constexpr int64_t kMaxThreads = 256; // most chunks of a split (ALL, COLUMN's R split)
inline constexpr int64_t kTinyRow = 8;      // rows this short are vectorized across (packed)
inline constexpr int64_t kTinyInner = 4;    // elementwise loops this short are unrolled
// A COLUMN read from memory (a static domain of at least the streaming size) whose K is
// wider than the cost model's chunk but at most kWholeRowColumns reads whole rows, in cascade
// blocks of kWholeRowBlock rows: a chunk of part of each row reads 8 KB of every row, which
// the prefetchers follow poorly. Sum over [8192, 8192] 7.6 -> 6.4 ms, max over [8192, 4096]
// 4.4 -> 3.7 ms, MIDDLE [64, 512, 4096] 16.6 -> 13.5 ms (2 threads, AMD EPYC, alternating
// runs, 2026-11-27); cache-resident ones ([1024, 4096]) keep their chunks.
inline constexpr int64_t kWholeRowColumns = 8192;
inline constexpr int64_t kWholeRowBlock = 32;
// The side of a transposing tile (Emitter::emit_transposing_tiles): a line of floats.
inline constexpr int64_t kTransposeTile = 16;
// The L1 data cache as x86 cores have it (32-48 KB: 64 sets of 64-byte lines), and the ways of
// a set that a strided read may count on keeping (of 8-12).
inline constexpr int64_t kL1Sets = 64, kL1Line = 64, kL1KeptWays = 8;

// [lo, hi) of a loop: its init, and the bound of a condition "it <= E" or "it < E".
struct LoopRange {
  poly::AstExpr lo, hi;
  // hi - lo when both are numbers.
  std::optional<int64_t> static_extent() const;
};

// The range of a loop with step 1 whose condition bounds its iterator from above by an
// expression free of it; none for any other loop.
std::optional<LoopRange> loop_range(const poly::AstNode& loop);
// Statement instances that nest "n" runs (each loop's trip count times its body's), when
// every loop in it has a static range; saturates at 2^40.
std::optional<int64_t> nest_work(const poly::AstNode& n);
// Does "e" mention identifier "id"?
bool mentions(const poly::AstExpr& e, const std::string& id);
bool range_mentions(const LoopRange& r, const std::string& id);

// The combining statement a reduction loop "loop" runs, when its target does not move with
// the loop: then it can accumulate in a register. Null otherwise.
const poly::AstNode* register_reduction(const kernel::Kernel& k, const poly::AstNode& loop);

// Can the CPU strategies keep partials of "call"'s target apart from memory? Its write is
// affine, to a buffer that is not aliased, not read by the statement, and not bool.
bool has_private_target(const kernel::Kernel& k, const poly::AstNode& call);

// An upper bound of the number of iterations of "loop", which runs statement "call", when
// one is known: its static extent, or that of the statement dim it runs.
std::optional<int64_t> trip_bound(const kernel::Kernel& k, const poly::AstNode& loop,
                                  const poly::AstNode& call);

// Does register reduction "loop" get lanes? It has a range and is not statically shorter
// than the schedule's min_lane_extent().
bool lanes_apply(const kernel::Kernel& k, const poly::AstNode& loop, const poly::AstNode& call,
                 const CpuSchedule& schedule);

// The K loop of a COLUMN nest "loop": a reduction loop whose body is a parallel loop
// running one combining statement with a private target, both with ranges, the inner one
// free of the outer iterator. Null when "loop" is not one.
const poly::AstNode* column_nest(const kernel::Kernel& k, const poly::AstNode& loop);

// The lane loop of a tap nest "loop": reduction loops, each the only child of the one
// around it, around a parallel loop running one combining statement (a sum, max or min) with
// a private target, which that loop moves, none of the reduction loops moves, and whose range
// none of them mentions (a pooling's or a depthwise convolution's taps around a run of
// channels). Null when "loop" is not one.
const poly::AstNode* tap_nest(const kernel::Kernel& k, const poly::AstNode& loop);

// Could work over a range of at most "extent" elements (none: unknown) use more than one
// thread?
bool may_split(std::optional<int64_t> extent, const CpuSchedule& schedule);

// A loop range as C text, and an upper bound of hi - lo when one is known.
struct RangeText {
  std::string lo, hi;
  std::optional<int64_t> extent;
};

// One combining statement as the skeletons print it. Texts may use the iterators of the
// loops around the place they are printed.
struct ReductionText {
  kernel::Combine combine = kernel::Combine::kSum;
  std::string type; // the C type of lanes and of column blocks
  // The C type of running totals and per-thread partials: double for float sums, whose
  // blocks then join the total without rounding; "type" otherwise.
  std::string total_type;
  std::string identity; // the combine's identity, in that type
  std::string target;   // the value at the write location
  std::string address;  // the write location's address, "&b1[c0]" (CUDA atomics)
  std::string storage;  // the C type the target is stored as
  int64_t points = -1;  // elements of the statement's domain, when static (-1: symbolic)
  // The statement reads a buffer of 1-byte elements (a bool mask): GCC sizes its vectors by
  // the narrowest element, so ROW's SIMD loops then take 64 lanes, not 16 (16 vectorized a
  // Where-then-max 2 floats at a time, 0.72 against 0.07 ns an element).
  bool reads_bytes = false;
  // CUDA groups: every lane holds the target (a row scalar, Emitter::contract_row_scalars),
  // so every lane stores the combined total, not lane 0 alone.
  bool lanes_hold_target = false;
  std::function<std::string(const std::string& value)> store; // "b1[c0] = value;"
  // Prints the statement at "depth", combining into the lvalue "accumulator".
  std::function<void(const std::string& accumulator, int depth, std::string& out)> update;
  // Lines that prefetch what the next row will read, for the lanes' block that starts at
  // the C expression "at" (ROW inside a fused row loop, see Emitter::next_row_prefetch);
  // empty, or unset, for none.
  std::function<std::string(const std::string& at)> prefetch;
  // CPU: f16 reads converted 16 at a time (Emitter::half_reads): the lines to print before a
  // SIMD loop of 16 lanes where "iterator" runs from the C expression "at", whose update then
  // reads the converted values; "at" empty ends that (no lines). Unset: none.
  std::function<std::vector<std::string>(const std::string& iterator, const std::string& at)> stage;
  // CUDA vector loads (Emitter::vectorize): when every read that moves with the loop is f32
  // and contiguous along it, "vector_reads" gives their addresses with the iterator at the C
  // expression "at", and "vector_update" prints the statement as "update" does, with those
  // reads taken from the registers "weft_x{n}[weft_j]" (n: the read's place in the list).
  // Unset otherwise.
  std::function<std::vector<std::string>(const std::string& at)> vector_reads;
  std::function<void(const std::string& accumulator, int depth, std::string& out)> vector_update;
};

enum class Threads : uint8_t { kOne, kSplit };

// Prints the skeletons of one reduction statement into "out".
class CpuReductionWriter {
public:
  CpuReductionWriter(const ReductionText& r, const CpuSchedule& schedule, std::string& out)
      : r_(r), s_(schedule), out_(out) {}

  // ROW: "iterator" over "range" in lanes and cascade blocks; one thread.
  void row(const std::string& iterator, const RangeText& range, int depth);
  // ALL: "range" split over the threads, each chunk reduced as ROW.
  void split(const std::string& iterator, const RangeText& range, int depth);
  // COLUMN: rows "r_iterator" over "r", columns "k_iterator" over "k"; with kSplit, K or R
  // is split over the threads at run time.
  void column(const std::string& r_iterator, const RangeText& r, const std::string& k_iterator,
              const RangeText& k, Threads threads, int depth);

private:
  std::string combine(const std::string& a, const std::string& b) const;
  void lanes(const std::string& iterator, const std::string& lo, const std::string& hi,
             const std::string& acc, int depth);
  // One SIMD loop over the lanes [from, from + lanes): "iterator" is "base" + weft_l, the
  // update combines into "accumulator"; a loop of 16 lanes has the update's f16 reads
  // converted before it, in a scope of its own, where ReductionText::stage has any.
  void chain(const std::string& iterator, const std::string& base, int64_t from, int64_t lanes,
             const std::string& accumulator, int depth);
  void tree(const std::string& acc, int depth);
  void column_block(const std::string& r_iterator, const std::string& from, const std::string& to,
                    const std::string& k_iterator, const std::string& dest, int depth);
  void column_chunks(const std::string& r_iterator, const std::string& from, const std::string& to,
                     const std::string& k_iterator, const RangeText& k, const std::string& dest,
                     int depth);
  void column_registers(const std::string& r_iterator, const std::string& from,
                        const std::string& to, const std::string& k_iterator,
                        const std::function<std::string(std::string)>& join, int depth);

  const ReductionText& r_;
  CpuSchedule s_; // column() may widen its chunk to whole rows
  std::string& out_;
  // COLUMN: R is statically at most one cascade block, whose sums are then the totals.
  bool short_rows_ = false;
  // COLUMN: the columns go in register blocks of this many (short rows, or statically
  // narrow columns); 0: none.
  int64_t register_width_ = 0;
};

// hi - lo, or hi when lo is 0.
std::string extent_text(const RangeText& r);

// The condition under which a parallel loop over "outer" runs serially with its inner
// reduction (of "inner_work" elements) split over the threads instead.
std::string few_rows_condition(const RangeText& outer, const std::string& inner_work,
                               const CpuSchedule& schedule);

} // namespace weft::codegen
