// The C-family emitter behind emit_c.h: emit_c.cc (statements, and the CPU dialect's loops),
// emit_c_reduce.cc (the CPU dialect's reduction nests and strategies), emit_c_contract.cc
// (temporaries contracted to local arrays), emit_c_memory.cc (the CPU dialect's SIMD loops over
// one statement: next-row prefetching, loop coalescing, streaming stores, the taps' targets in
// registers), emit_cuda.cc and emit_cuda_group.cc (the CUDA dialect's functions and
// strategies, cuda_strategy.h). Internal to codegen/.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/codegen/cpu_strategy.h"
#include "weft/codegen/cuda_strategy.h"
#include "weft/codegen/dialect.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/loop_ast.h"

namespace weft::codegen {

using kernel::AffineExpr;
using kernel::Kernel;
using kernel::Statement;
using poly::AstExpr;
using poly::AstNode;

// The identity of "c" in the compute type of "t", as a C literal: for integers, the type's
// extremes stand for -inf and +inf.
std::string identity_literal(kernel::Combine c, DType t);

// One kernel's emission in a dialect.
class Emitter {
public:
  Emitter(const Kernel& k, const DialectTable& d, const CpuSchedule& schedule);

  std::string function(const AstNode& loops);

  // Array contraction (CPU, before function()): the temporaries that become local arrays of
  // the block around all their accesses (emit_c_contract.cc).
  void find_contractions(const AstNode& root);
  // Whether each access of a contracted temporary in "text" (function()'s) lies in the scope
  // of its local array: false where a strategy emitted one elsewhere (then emit again
  // without contraction).
  bool contractions_scoped(const std::string& text) const;

  // One __global__ function per top-level nest, launched in order on one stream (the order
  // is the barrier between nests): "weft_NAME_pI", each after a line "// launch FUNCTION
  // block=B grid=G" (G: 1, or "device", a persistent grid). The strategies are those of
  // cuda_strategy.h; a nest they do not cover runs on one thread.
  std::string cuda_function(const AstNode& loops, const CudaOptions& options);
  // The launches of the functions cuda_function emitted, in order.
  const std::vector<runtime::cuda::LaunchShape>& launches() const { return launches_; }

private:
  // The signature, and the buffer and extent locals; the extent "fixed" (a C name, or empty)
  // is the template parameter kExtent when that is not 0 (a micro-kernel of function()).
  std::string header(const std::string& signature, const std::string& fixed = "") const;

  std::string ast_expr(const AstExpr& e) const;
  // The iterator texts of a call: its arguments, each as ast_expr writes it.
  std::vector<std::string> call_iters(const AstNode& call) const;

  std::string dim_text(const Dim& d) const;
  // The value of an ExprOp::kExtent node, in its compute type.
  std::string extent_value(const kernel::ExprNode& e) const;

  // Row-major offset of an access, with iterators replaced by "iters"; an indirect index is
  // the statement's value "t<node>", brought into the buffer by the prelude's helpers.
  std::string offset(const kernel::Access& a, const std::vector<std::string>& iters) const;

  std::string load(const kernel::Access& a, const std::vector<std::string>& iters) const;

  std::string store_value(DType t, const std::string& v) const;

  // With "accumulator" set, a combining statement combines into that local variable
  // instead of its write location.
  void emit_statement(const AstNode& call, int depth, std::string& out,
                      const std::string& accumulator = "") const;

  static bool has_loop(const AstNode& n);

  // Does parallel loop "n" run as one with the parallel loop it holds (OpenMP collapse)?
  // That loop is all of n's body, its range does not depend on n, and it holds loops (an
  // innermost loop is a SIMD loop instead).
  static bool collapses(const AstNode& n);

  // The items of "n"'s body when its loops are tiny: innermost parallel loops around one
  // statement, of a constant trip count of 2 to kTinyInner, beside statements, under a
  // parallel loop (an image's 3 channels in its NCHW -> NHWC Transpose; a channel shuffle's
  // groups of 2 after its Concat); empty otherwise. "n" then runs in SIMD lanes with the tiny
  // loops unrolled in its body, rather than SIMD loops of a few lanes under a scalar one: the
  // Transpose of a 224x224 image took 0.020 ms, and 0.003 ms so (alternating runs of both).
  static std::vector<const AstNode*> tiny_inner_items(const AstNode& n);

  // The children of a block, or "n" itself: the items a loop body runs in order.
  static std::vector<const AstNode*> items_of(const AstNode& n);

  // { acc = y[i]; for (...) acc = combine(acc, ...); y[i] = acc; } A sum may be
  // vectorized (reassociated); max and min stay in order, so that NaN propagates.
  void emit_register_reduction(const AstNode& n, const AstNode& call, int depth,
                               std::string& out) const;

  // The combining statement "call" as cpu_strategy.h's skeletons print it.
  ReductionText reduction_text(const AstNode& call) const;

  // The range of "loop", which runs statement "call".
  RangeText range_text(const AstNode& loop, const AstNode& call) const;

  // The reduction nest "n" (a register reduction, or a COLUMN nest), with or without
  // threads.
  void emit_reduction_nest(const AstNode& n, Threads threads, int depth, std::string& out) const;

  // The number of elements reduction nest "n" combines, as C text and, when known, an
  // upper bound; none when "n" is no reduction nest with lanes or its ranges mention the
  // iterator "outer" (empty: no outer loop).
  std::optional<std::pair<std::string, std::optional<int64_t>>>
  reduction_work(const AstNode& n, const std::string& outer) const;

  // A parallel loop "n" around a reduction nest (or, after loop fusion, around a block of
  // reduction nests and other statements, such as their inits): with fewer iterations than
  // threads, it runs serially and splits each inner reduction across the threads instead.
  // False when that can never happen (then the ordinary emission applies).
  bool emit_few_rows(const AstNode& n, int depth, std::string& out) const;

  // Emits "n" with a CPU reduction strategy (cpu_strategy.h) when one applies.
  bool emit_cpu_strategy(const AstNode& n, int depth, bool in_loop, std::string& out) const;

  // A tap nest "n" (cpu_strategy.h: tap_nest) of an f32 target, its lanes in blocks of 64,
  // 32 and 16 whose targets stay in registers across all the taps, then the rest in place;
  // false when "n" is none (then the ordinary emission applies).
  bool emit_tap_lanes(const AstNode& n, int depth, std::string& out) const;

  // "e" with the identifier "id" replaced by "by".
  static AstExpr substitute(AstExpr e, const std::string& id, const AstExpr& by);

  // A SIMD loop "n" around one statement whose loads include some that do not move with it
  // (a row's max or sum in softmax, a per-channel scale): those are loaded once before the
  // loop, when it runs at all, and so are the ops on them alone (a normalization's
  // sqrt(var + eps)). Inside an OpenMP region GCC cannot prove them invariant and leaves
  // such a loop scalar, or computes the ops per vector. False when there is nothing to hoist.
  bool emit_hoisted_loop(const AstNode& n, int depth, std::string& out) const;
  // Which expression nodes of "call"'s statement keep their value while the iterators
  // "moving" change: constants, extents, loads whose index does not mention them (direct,
  // of no buffer in "written"), and ops on those alone.
  std::vector<bool> invariant_nodes(const AstNode& call, const std::vector<std::string>& moving,
                                    const std::set<int>& written) const;
  // The C expression of such a node, from "values" (its operands').
  std::string invariant_value(const AstNode& call, size_t node,
                              const std::vector<std::string>& values) const;

  // Which of the statement's f32 selects (Select, and a Max or Min of a constant: Relu, Clip)
  // feed the prelude's exp (Exp, softmax's shifted exp, Sigmoid), log or erf, through any
  // operations (CPU): those print as bit blends (weft_blend), and such an Exp or Log as
  // weft_exp_blended / weft_log_blended (its own final select a blend). A compare-and-select
  // before those functions' own range checks left GCC's if-conversion two paths, and the
  // loop scalar (Relu then Exp 16x slower, Clip then Log 12x, Exp then Exp 14x).
  std::vector<bool> blended_selects(const Statement& s) const;
  // For node "n" of "s", an f32 Mul of a Sigmoid that only it reads (SiLU, x * Sigmoid(x)):
  // the Sigmoid's node, whose exp the product divides by, a / (1 + exp(-b)), instead of
  // multiplying by 1 / (1 + exp(-b)): one division and no product (a SiLU kernel 6% faster,
  // AMD EPYC with AVX-512), one rounding fewer. -1 otherwise.
  int sigmoid_factor(const Statement& s, size_t n, int statement) const;
  // Prefetching the next row (CPU): inside a row loop that fused several passes over a row
  // (softmax, LayerNorm: a parallel loop around a block), the first pass reads the row from
  // memory and the later ones find it in cache, computing (exp) while memory idles. The
  // first later pass over a buffer an earlier pass read ("call", in "loop") so prefetches,
  // block by block, what a later row iteration will read of that buffer: the first at least
  // kPrefetchAheadBytes ahead (row_step_bytes; the next one when that is unknown); the
  // row's first pass that stores into a buffer prefetches that for writing. "at" is the C
  // expression where a block of "block" elements starts; each cache line of the block is
  // prefetched. Empty when neither applies (reads: after the row's first such pass).
  std::string next_row_prefetch(const AstNode& call, const AstNode& loop, const std::string& at,
                                int64_t block = kChainLanes) const;
  // How many bytes "a" of "call" moves by from one row iteration to the next; none unless the
  // row iterator enters the index plainly and the buffer's shape is static.
  std::optional<int64_t> row_step_bytes(const kernel::Access& a, const AstNode& call) const;
  // The same as C text over the kernel's symbols, for a buffer whose strides hold symbols
  // (rows of T floats: "4 * s1"); none unless the row iterator enters one dim plainly.
  std::optional<std::string> row_step_text(const kernel::Access& a, const AstNode& call) const;
  // How many elements "a" of "call" moves by in its buffer when "iterator" grows by one; none
  // unless the iterator enters the index only as plain call arguments, in dims whose
  // strides are static.
  std::optional<int64_t> flat_coefficient(const kernel::Access& a, const AstNode& call,
                                          const std::string& iterator) const;
  // The C offset of "a" of "call" with "iterator" replaced by the C expression "at".
  std::string offset_at(const kernel::Access& a, const AstNode& call, const std::string& iterator,
                        const std::string& at) const;
  // Loop coalescing of an elementwise nest (CPU): "n" is two perfectly nested parallel loops
  // around one statement, static and from 0, and every access moves W times as far with the
  // outer iterator as with the inner one (W: the inner extent). Then one loop over both: the
  // inner iterator runs over the H x W points, the outer one is 0. GroupNorm's write, rows of
  // 56 in planes of 3136, so gets blocks of 16 that start on cache lines. None otherwise.
  std::optional<AstNode> coalesced(const AstNode& n) const;
  // Transposing tiles (CPU): "n" (or, at the top of a nest, the loop under it) and its loop are
  // two perfectly nested parallel loops around one elementwise statement, static and at least
  // kTransposeTile long each, that writes contiguously along the inner loop and reads an array
  // contiguous along the outer one and far apart along the inner one (a Transpose, with the
  // ops fused into it), so far apart that the lines the inner loop reads do not stay in the
  // L1's sets they fall in. Then the nest runs in tiles of kTransposeTile x kTransposeTile:
  // each computed along the outer loop into a local tile (contiguous reads), then stored along
  // the inner one. The plain nest gathered each vector from 16 lines 4 KB apart, which alias
  // in the L1: SiLU into a Transpose of [256, 1024], 0.89 -> 0.21 ms. Inner loops that
  // coalesce (coalesced) count as one: an NHWC -> NCHW Transpose is such a nest. A full tile
  // of floats is stored through registers (weft_store_transposed16). "in_loop":
  // inside another loop, whose threads run the tiles. Returns whether it emitted the nest.
  bool emit_transposing_tiles(const AstNode& n, int depth, bool in_loop, std::string& out) const;
  // Streaming stores (CPU): does SIMD loop "loop" write "call"'s output with them? The output
  // is float, at least the schedule's stream_min_bytes (3/4 of the last-level cache), written
  // contiguously along the loop, by this statement alone, and read by none of the kernel.
  // Such an output does not fit beside its input in the cache anyway: streamed, it is not
  // read from memory before it is written (no read for ownership), and does not evict the
  // input. GroupNorm's kernel, with a 25.7 MB output: 1.65-1.9 -> 1.0-1.27 ms.
  bool streams_write(const AstNode& call, const AstNode& loop) const;
  // The buffers the statements under "n" read and write, into row_.reads and row_.writes.
  void note_row_accesses(const AstNode& n) const;
  // The SIMD loop "n" around one statement, "call": when next_row_prefetch or streaming
  // stores apply, blocks of 16 iterations, each after its prefetch, and a tail unless the
  // extent is a static multiple of 16; the plain loop otherwise. With streaming stores, the
  // iterations before the first 64-byte aligned output store plainly, each block computes
  // into a local line that weft_stream16 writes, and a fence follows (StreamFence).
  void emit_simd_loop(const AstNode& n, const AstNode& call, int depth, std::string& out) const;
  // f16 conversions by the hardware (CPU): the SIMD loop "n" around the statements "calls" (its
  // body, in order), when some read f16 values, or round loaded f32 ones to f16 (a Cast),
  // contiguously along it, or store f16 so: blocks of 16 iterations, each statement in turn
  // over the block's lanes, with those values converted 16 at a time before it
  // (weft_h2f16, weft_round_f16x16) and its f16 output after it (weft_f2h16); then a tail
  // of plain iterations. GCC 12 vectorizes no f16 conversion (not even _Float16's with
  // AVX512-FP16): the branch-free weft_h2f, weft_f2h and weft_round_f16 made an f16
  // model's elementwise kernels 2.5-3.3x slower than the same kernels without conversions.
  // False when nothing converts so, or "n" is no such loop. "prefetch": next_row_prefetch's
  // line for a block starting at weft_p, or empty.
  bool emit_half_blocks(const AstNode& n, const std::vector<const AstNode*>& calls,
                        const std::string& prefetch, int depth, std::string& out) const;
  // The conversions of "call"'s f16 reads (and roundings of its f32 loads to f16), 16 at a
  // time, for 16 lanes where "iterator" runs from the C expression "at": the lines that
  // declare and fill weft_v<node>, and, into "staged", each such node's lane
  // "weft_v<node>[iterator - at]". Reads that are not contiguous along the iterator stay per
  // element; "left" becomes true when a 16-bit one does.
  std::vector<std::string> half_reads(const AstNode& call, const std::string& iterator,
                                      const std::string& at,
                                      std::map<std::pair<int, int>, std::string>& staged,
                                      bool& left) const;
  // Is "a" of "call" a direct access to a buffer of "t", no local array, contiguous along
  // "iterator"? Does "buffer" hold 16-bit elements?
  bool converts(const kernel::Access& a, const AstNode& call, const std::string& iterator,
                DType t) const;
  bool narrow(int buffer) const;
  // Tiny rows (DESIGN.md: "tiny rows are packed"): is "n" a parallel loop whose body is
  // statements and register reductions of at most kTinyRow iterations? The compiler then
  // vectorizes across its rows (the short loops unrolled) rather than within each row.
  bool packs_tiny_rows(const AstNode& n) const;

  // "in_loop": inside another loop. Only a loop at the top of its nest opens a parallel
  // region: one nested under a serial loop (the K loop of a column reduction) would open a
  // region per outer iteration.
  void emit_node(const AstNode& n, int depth, bool in_loop, std::string& out) const;

  // ---- CUDA (emit_cuda.cc) ----

  // Is "init" a statement that the ALL nest "next" may run in its last block, before
  // combining into the same location, or the loop of inits of the COLUMN nest "next"
  // (column_init)? Then the two are one launch.
  bool folds_into(const AstNode& init, const AstNode& next) const;
  // The init statement of the loop "init" when it writes, over the range of the COLUMN nest's
  // column loop "inner", each location that the nest's reduction combines into, which reads
  // no such location, and the nest's atomic splits (if it has them) start from zero bits: the
  // COLUMN part then runs it for each column (ColumnInit). Null otherwise.
  const AstNode* column_init(const AstNode& init, const AstNode& inner) const;

  static bool contains_reduction(const AstNode& n);

  // "loop" as the CUDA skeletons print it, with its bound when loop_range finds one.
  LoopText loop_text(const AstNode& loop) const;

  // CUDA, before a loop of the lanes over the statements of "body" whose iterators are
  // "moving" (with those of loops inside "body"): the reciprocal of each f32 divisor that does
  // not move, computed once (a normalization's sqrt(var + eps), softmax's sum), which the
  // division inside then multiplies by (reciprocals_; a division each element was most of
  // GroupNorm's time). A divisor whose reciprocal is not a normal float (0, inf, NaN, tiny
  // or huge) keeps the division. Returns the declarations to print before the loop.
  std::string hoist_reciprocals(const AstNode& body, std::vector<std::string> moving,
                                int depth) const;

  // "call"'s reduction text for a strided loop over "iterator": with vector_reads and
  // vector_update set when "vector" (by default: CudaOptions::vector is 4) and every read that
  // moves with the iterator is stored and computed as f32, affine and contiguous along it (and
  // one read does).
  ReductionText strided_reduction(const AstNode& call, const std::string& iterator) const {
    return strided_reduction(call, iterator, cuda_.vector == 4);
  }
  ReductionText strided_reduction(const AstNode& call, const std::string& iterator,
                                  bool vector) const;
  // Does every read of "call" that moves along "along" (those a vector loop loads by quads)
  // move by a multiple of 4 elements along "outer", so that its alignment is the same at
  // every "outer" iteration?
  bool steady_quads(const AstNode& call, const std::string& along, const std::string& outer) const;

  // The perfectly nested parallel loops at the top of "n", with their ranges, as long as
  // those are free of the loops' own iterators.
  std::vector<std::pair<const AstNode*, LoopRange>> parallel_chain(const AstNode& n) const;

  // Threads per point of a group body: the largest of its items' wants (cuda_group_size, with
  // "lane_elements" a lane, of a reduction's or parallel loop's extent, 32 where that is not
  // static; a COLUMN nest wants a lane per column). 1 when no item gives its lanes work:
  // loops that lane 0 would run alone (a padded pooling window's, whose bounds move with
  // the point) take a thread per point instead of a warp.
  int64_t group_size(const AstNode& body, int64_t lane_elements) const;

  // The items of a point's body, for a group of "group" threads: see cuda_strategy.h (ROW).
  void emit_group_body(const AstNode& body, int64_t group, int depth, std::string& out) const;

  // A row in registers (cuda_strategy.h, ROW): the loops of a group body over the row, when
  // each is a register reduction or a parallel loop around statements, all with the same
  // iterator and static range, of "per_lane" * group iterations (2 <= per_lane <=
  // kCudaRowRegisters), and no other item of the body holds a loop. "buffers": the float
  // buffers two or more of those loops access, all at one offset, contiguous along the row,
  // that no other item accesses and that share memory with no other buffer, as "b{i}[offset]" ->
  // the register "weft_r{i}[weft_k]" (kCudaRowRegisterSum registers a lane at most), and the
  // statement that writes each last ("last_store"; only that one stores to memory: no one else
  // reads the earlier values). None when any of that fails or no buffer qualifies. With
  // cuda_.vector 4 and per_lane a multiple of 4 ("quads"), a lane takes 4 neighbouring elements at
  // a time ("element": lo + (k / 4) * 4 * group + lane * 4 + k % 4, else lo + lane
  // + k * group), buffers of one pass are held too, and the held buffers are loaded ("fill":
  // those a read reaches first) and stored ("last_store") as float4 where aligned, before
  // and after the row's items. By quads, a float buffer that one statements loop only reads
  // (a LayerNorm's gamma and beta) and that no register is left to hold is read a quad at a
  // time as that loop runs ("quad_reads": location -> "weft_q{i}", 4 registers).
  struct RowRegisters {
    std::string iterator, lo, element;
    int64_t per_lane = 0;
    bool quads = false;
    std::map<std::string, std::string> buffers;
    std::map<std::string, int> last_store;
    std::set<std::string> fill;
    std::map<std::string, std::string> quad_reads;
  };
  std::optional<RowRegisters> row_registers(const AstNode& body, int64_t group) const;
  // The quad_reads of "row" that the statements loop "pass" reads, declared, and mapped in
  // registers_ (as "weft_q{i}[weft_k % 4]") until row_quad_reads_done; "load" is what the
  // loop body runs first, at each quad's first element: the quads' loads.
  std::vector<std::string> row_quad_reads(const RowRegisters& row, const AstNode& pass, int depth,
                                          std::string& declare, std::string& load) const;
  // Does the row loop "pass" write only what its lane holds in registers, and read only
  // registers and buffers that nothing in the kernel writes: then no lane waits for it (no
  // barrier after it).
  bool lane_private(const RowRegisters& row, const AstNode& pass) const;
  // The quads of a row in registers: loads (or with "store", stores) of its held buffers
  // "locations", each as float4 where the lane's first address is 16-byte aligned, else
  // element by element.
  void emit_row_quads(const RowRegisters& row, int64_t group,
                      const std::set<std::string>& locations, bool store, int depth,
                      std::string& out) const;

  // A loop over the points of "chain", flattened, from "weft_first" by "weft_groups"; the
  // innermost loop varies fastest. 32-bit index arithmetic when the count is static and fits.
  // "loop" replaces the loop's opening: given the point count, it defines the point variable
  // ("point", weft_p unless named; "quotient" holds what is left of it while the iterators are
  // taken off).
  void emit_points(const std::vector<std::pair<const AstNode*, LoopRange>>& chain, int depth,
                   std::string& out,
                   const std::function<std::string(const std::string&)>& loop = nullptr,
                   const std::string& point = "weft_p",
                   const std::string& quotient = "weft_q") const;

  // Few long rows: the register reduction of a point body that is otherwise statements
  // (inits before it, an epilogue after), when the points are few and static and the rows
  // long, with atomics for its combine. Null otherwise.
  const AstNode* few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                               const CudaOptions& options) const;

  // ROW with few long rows (cuda_strategy.h): each row split across blocks.
  void emit_few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                          const AstNode& loop, const std::string& function, std::string& out,
                          std::string& globals) const;

  // The buffers that part "n" (with "first", an init folded into it) both writes and reads.
  // Across a barrier, or from block to block, a thread may read what another thread wrote,
  // so none of them may be __restrict__: NVCC takes restrict as a promise that no other
  // thread writes the buffer during the launch, and moves loads above the barrier.
  // A part that reads a view of a buffer it writes (another member of its view group) gets
  // all its buffers: with any of them restrict, NVCC loaded the view through the read-only
  // cache (ld.global.nc) after the thread's own store, and read the old value on an H200
  // (a Loop's scan output stacked from its iterations' values, onnx test_loop11).
  std::set<int> written_and_read(const AstNode& n, const AstNode* first) const;

  // "// launch ...", the signature (buffers and extents by value), and the body's opening;
  // notes the launch in launches_. Buffers in "shared" (or aliased) lose __restrict__. The
  // launch bounds ask for "resident_threads" a SM (0: nothing beyond the block).
  std::string cuda_header(const std::string& function, int64_t block, bool one_block,
                          int64_t resident_threads, const std::set<int>& shared);

  // One top-level nest "n" as a __global__ function; "first": an init folded into it.
  std::string cuda_part(const AstNode& n, const std::string& function, const AstNode* first,
                        const CudaOptions& options);

  // Whether dim "dim" of "buffer" is dropped: a contracted temporary's outer dim.
  bool dropped(int buffer, size_t dim) const;
  // The local arrays of the temporaries contracted to "block", declared at its start.
  std::string local_arrays(const AstNode& block, int depth) const;

  const Kernel& k_;
  const DialectTable& d_;
  const CpuSchedule& schedule_;
  // Statically less work than the schedule's min_parallel_work: no parallel regions (nor,
  // for a top-level nest of less work than that, its own region: emit_node).
  bool small_ = false;
  std::map<std::string, std::string> symbol_names_; // symbol -> C name
  // CPU, dynamic shapes: the C name of the symbolic row extent that picks a micro-kernel.
  std::string row_symbol_;
  std::vector<runtime::cuda::LaunchShape> launches_; // CUDA: one per __global__ function
  mutable std::map<int, std::string> hoisted_;      // expression node -> hoisted load
  // (statement, expression node) -> its lane of the values emit_half_blocks converted.
  mutable std::map<std::pair<int, int>, std::string> staged_;
  mutable bool packing_ = false;                    // emitting the body of a loop of tiny rows
  // The innermost loop around a block of row passes (next_row_prefetch), the buffers its
  // passes read and wrote so far in the body, and whether one prefetched reads already.
  struct RowLoop {
    std::string iterator; // empty: not in a row loop
    std::set<int> reads, writes;
    bool prefetched = false;
  };
  mutable RowLoop row_;
  // Streaming stores are fenced before the region's end, where other threads may read what
  // they wrote. In the body of a top-level loop ("pending"), the body ends with the fence
  // when one of its loops streamed; elsewhere each streaming loop ends with one. A fence per
  // loop would cost: GroupNorm's fence per plane of 3136 instead of per group, 0.9 -> 1.2 ms.
  struct StreamFence {
    bool pending = false, streamed = false;
  };
  mutable StreamFence fence_;
  mutable bool collapsing_ = false; // the next loop is the inner one of a collapse(2)
  // CUDA, a row in registers (row_registers): location -> register, while its body is
  // emitted; and the locations whose register holds the value (read or written once).
  mutable std::map<std::string, std::string> registers_;
  mutable std::set<std::string> filled_;
  mutable std::map<std::string, int> last_store_; // location -> the statement that stores it
  // (statement, expression node) -> the reciprocal its division multiplies by instead
  // (hoist_reciprocals).
  mutable std::map<std::pair<int, int>, std::string> reciprocals_;
  // CUDA: the nest a group's lanes take flattened (emit_group_body), while its statements are
  // emitted, when each of its loops starts at 0 with a static extent: its iterators
  // (outermost first), their extents, and the flat index over them. offset() prints an
  // access whose last dims are exactly those iterators over those extents as the flat index,
  // which spares the division of the index into iterators where nothing else needs them.
  struct Flattened {
    std::vector<std::string> iterators;
    std::vector<int64_t> extents;
    std::string index;
  };
  mutable std::optional<Flattened> flattened_;
  // Where to split "chain" (the parallel nest of an elementwise part) into points, which it
  // keeps, and inner loops for a group's lanes: the first split whose inner loops (of
  // kCudaSplitInner points or more) leave invariant an op of the statement on loaded values
  // other than an add, sub, mul, max, min, neg, abs or cast (a per-channel sqrt that would
  // otherwise run for every element), or the divisor of an f32 division; 0 when there is none.
  size_t invariant_split(const std::vector<std::pair<const AstNode*, LoopRange>>& chain) const;

  // "chain" (emit_points) as flattened_ takes it, over the flat index "index"; nothing when a
  // loop does not start at 0 or has no static extent.
  std::optional<Flattened> flattened(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                                     const std::string& index) const;
  CudaOptions cuda_; // the options of the CUDA function being emitted (cuda_function)
  const AstNode* root_ = nullptr; // the loops of the kernel being emitted (cuda_function)
  // CUDA row scalars (CudaOptions::row_scalars): contracts the f32 temporaries that are one
  // value per point of a group's "point" body (LayerNorm's mean and inverse deviation,
  // softmax's max and sum), written only by its statements and register reductions, into a
  // register of every lane (a local array of one element): each lane runs the statements
  // that write one and stores its reductions' totals, which every lane holds after the
  // combine, so they cost no memory and no synchronization. Returns their declarations.
  std::string contract_row_scalars(const AstNode& point, int depth);
  // Does the top-level item "n" of a group body write only a row scalar?
  bool writes_row_scalar(const AstNode& n) const;
  // A contracted temporary: its dims dropped, the block whose local array it becomes, and
  // that array's elements (the kept dims').
  struct Contraction {
    std::vector<bool> dropped;
    const AstNode* block = nullptr;
    int64_t elements = 0;
  };
  std::map<int, Contraction> contracted_; // by buffer
};

} // namespace weft::codegen
