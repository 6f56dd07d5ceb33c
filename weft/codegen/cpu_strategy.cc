#include "weft/codegen/cpu_strategy.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "weft/codegen/dialect.h"

namespace weft::codegen {

using poly::AstExpr;
using poly::AstNode;

std::optional<int64_t> LoopRange::static_extent() const {
  if (lo.kind != AstExpr::Kind::kInt || hi.kind != AstExpr::Kind::kInt) return std::nullopt;
  return std::max<int64_t>(hi.value - lo.value, 0);
}

bool mentions(const AstExpr& e, const std::string& id) {
  if (e.kind == AstExpr::Kind::kId) return e.id == id;
  return std::any_of(e.args.begin(), e.args.end(),
                     [&](const AstExpr& a) { return mentions(a, id); });
}

bool range_mentions(const LoopRange& r, const std::string& id) {
  return mentions(r.lo, id) || mentions(r.hi, id);
}

std::optional<LoopRange> loop_range(const AstNode& loop) {
  if (loop.kind != AstNode::Kind::kFor || loop.step != 1) return std::nullopt;
  const AstExpr& c = loop.cond;
  if (c.kind != AstExpr::Kind::kOp || (c.op != AstExpr::Op::kLe && c.op != AstExpr::Op::kLt))
    return std::nullopt;
  const AstExpr& bound = c.args[1];
  if (c.args[0].kind != AstExpr::Kind::kId || c.args[0].id != loop.iterator ||
      mentions(bound, loop.iterator) || mentions(loop.init, loop.iterator)) {
    return std::nullopt;
  }
  LoopRange r{loop.init, bound};
  if (c.op == AstExpr::Op::kLe) { // "it <= E": hi = E + 1
    if (bound.kind == AstExpr::Kind::kInt) {
      r.hi.value += 1;
    } else {
      AstExpr one;
      one.value = 1;
      r.hi = AstExpr{AstExpr::Kind::kOp, 0, "", AstExpr::Op::kAdd, {bound, one}};
    }
  }
  return r;
}

namespace {

// Does the write of "call" stay put while loop iterator "iterator" moves? A loop marked as
// a reduction runs a reduced dim of the statement, but isl may express the statement's
// iterators through several loops (a dim fixed by a guard), so the AST must say.
bool write_stays(const kernel::Kernel& k, const AstNode& call, const std::string& iterator) {
  const kernel::Statement& s = k.statements[static_cast<size_t>(call.statement)];
  if (!s.write.indirect.empty()) return false;
  for (const kernel::AffineExpr& e : s.write.index) {
    for (auto [iter, coeff] : e.terms) {
      if (mentions(call.args[static_cast<size_t>(iter)], iterator)) return false;
    }
  }
  return true;
}

} // namespace

const AstNode* register_reduction(const kernel::Kernel& k, const AstNode& loop) {
  if (loop.mark != AstNode::Mark::kReduction || loop.children[0].kind != AstNode::Kind::kCall)
    return nullptr;
  const AstNode& call = loop.children[0];
  const kernel::Statement& s = k.statements[static_cast<size_t>(call.statement)];
  if (s.combine == kernel::Combine::kNone || !write_stays(k, call, loop.iterator)) return nullptr;
  return &call;
}

bool has_private_target(const kernel::Kernel& k, const AstNode& call) {
  const kernel::Statement& s = k.statements[static_cast<size_t>(call.statement)];
  const kernel::Buffer& target = k.buffers[static_cast<size_t>(s.write.buffer)];
  if (!s.write.indirect.empty() || target.aliased() || target.dtype == DType::kBool) return false;
  return std::none_of(s.reads.begin(), s.reads.end(),
                      [&](const kernel::Access& a) { return a.buffer == s.write.buffer; });
}

std::optional<int64_t> trip_bound(const kernel::Kernel& k, const AstNode& loop,
                                  const AstNode& call) {
  if (std::optional<LoopRange> r = loop_range(loop)) {
    if (std::optional<int64_t> extent = r->static_extent()) return extent;
  }
  // A loop that runs a statement dim as is stays inside that dim's extent, whatever bounds
  // the guards give it (the kernel window of a padded Conv: "c7 <= min(2, 56 - c4)").
  const kernel::Statement& s = k.statements[static_cast<size_t>(call.statement)];
  for (size_t d = 0; d < call.args.size(); ++d) {
    const AstExpr& a = call.args[d];
    if (a.kind == AstExpr::Kind::kId && a.id == loop.iterator && s.domain[d].is_static())
      return s.domain[d].value();
  }
  return std::nullopt;
}

bool lanes_apply(const kernel::Kernel& k, const AstNode& loop, const AstNode& call,
                 const CpuSchedule& schedule) {
  if (!loop_range(loop) || !has_private_target(k, call)) return false;
  std::optional<int64_t> bound = trip_bound(k, loop, call);
  return !bound || *bound >= schedule.min_lane_extent();
}

const AstNode* column_nest(const kernel::Kernel& k, const AstNode& loop) {
  if (loop.kind != AstNode::Kind::kFor || loop.mark != AstNode::Mark::kReduction) return nullptr;
  const AstNode& inner = loop.children[0];
  if (inner.kind != AstNode::Kind::kFor || inner.mark != AstNode::Mark::kParallel ||
      inner.children[0].kind != AstNode::Kind::kCall) {
    return nullptr;
  }
  const AstNode& call = inner.children[0];
  const kernel::Statement& s = k.statements[static_cast<size_t>(call.statement)];
  std::optional<LoopRange> r = loop_range(loop), kr = loop_range(inner);
  // The K loop is parallel: distinct K iterations combine into distinct elements, which the
  // R loop does not move. Blocking over K is then legal.
  if (s.combine == kernel::Combine::kNone || !write_stays(k, call, loop.iterator) ||
      !has_private_target(k, call) || !r || !kr || range_mentions(*kr, loop.iterator)) {
    return nullptr;
  }
  return &inner;
}

const AstNode* tap_nest(const kernel::Kernel& k, const AstNode& loop) {
  std::vector<std::string> taps;
  const AstNode* n = &loop;
  while (n->kind == AstNode::Kind::kFor && n->mark == AstNode::Mark::kReduction) {
    taps.push_back(n->iterator);
    n = &n->children[0];
  }
  if (taps.empty() || n->kind != AstNode::Kind::kFor || n->mark != AstNode::Mark::kParallel ||
      n->children[0].kind != AstNode::Kind::kCall) {
    return nullptr;
  }
  const AstNode& call = n->children[0];
  using kernel::Combine;
  Combine c = k.statements[static_cast<size_t>(call.statement)].combine;
  std::optional<LoopRange> r = loop_range(*n);
  if ((c != Combine::kSum && c != Combine::kMax && c != Combine::kMin) || !r ||
      !has_private_target(k, call) || write_stays(k, call, n->iterator)) {
    return nullptr;
  }
  for (const std::string& tap : taps) {
    if (!write_stays(k, call, tap) || range_mentions(*r, tap)) return nullptr;
  }
  return n;
}

std::optional<int64_t> nest_work(const AstNode& n) {
  constexpr int64_t kMany = int64_t{1} << 40;
  if (n.kind == AstNode::Kind::kCall) return 1;
  if (n.kind == AstNode::Kind::kFor) {
    std::optional<LoopRange> r = loop_range(n);
    std::optional<int64_t> trips = r ? r->static_extent() : std::nullopt;
    std::optional<int64_t> body = nest_work(n.children[0]);
    if (!trips || !body) return std::nullopt;
    int64_t t = std::max<int64_t>(*trips, 0), b = *body;
    return t > 0 && b > kMany / t ? kMany : t * b;
  }
  int64_t work = 0;
  for (const AstNode& c : n.children) {
    std::optional<int64_t> w = nest_work(c);
    if (!w) return std::nullopt;
    work = std::min(kMany, work + *w);
  }
  return work;
}

bool may_split(std::optional<int64_t> extent, const CpuSchedule& schedule) {
  return !extent || *extent >= 2 * schedule.min_per_thread;
}

std::string extent_text(const RangeText& r) {
  return r.lo == "0" ? r.hi : fmt::format("({} - {})", r.hi, r.lo);
}

std::string few_rows_condition(const RangeText& outer, const std::string& inner_work,
                               const CpuSchedule& schedule) {
  return fmt::format("{} < omp_get_max_threads() && {} >= {}", extent_text(outer), inner_work,
                     2 * schedule.min_per_thread);
}

namespace {

// Appends lines at one depth, two spaces per level.
class Lines {
public:
  Lines(std::string& out, int depth) : out_(out), pad_(static_cast<size_t>(2 * depth), ' ') {}
  template <typename... Args> void operator()(fmt::format_string<Args...> f, Args&&... args) {
    out_ += pad_;
    out_ += fmt::format(f, std::forward<Args>(args)...);
    out_ += '\n';
  }

private:
  std::string& out_;
  std::string pad_;
};

} // namespace

std::string CpuReductionWriter::combine(const std::string& a, const std::string& b) const {
  return combine_expr(r_.combine, a, b);
}

void CpuReductionWriter::chain(const std::string& iterator, const std::string& base, int64_t from,
                               int64_t lanes, const std::string& accumulator, int depth) {
  std::string at = from == 0 ? base : fmt::format("{} + {}", base, from);
  std::vector<std::string> staging;
  if (r_.stage && lanes == 16) staging = r_.stage(iterator, at); // the conversions take 16
  int d = staging.empty() ? depth : depth + 1;
  Lines l(out_, depth), c(out_, d), c1(out_, d + 1);
  if (!staging.empty()) l("{{");
  for (const std::string& line : staging)
    c("{}", line);
  c("#pragma omp simd");
  c("for (int64_t weft_l = {}; weft_l < {}; weft_l += 1) {{", from, from + lanes);
  c1("const int64_t {} = {} + weft_l;", iterator, base);
  r_.update(accumulator, d + 1, out_);
  c("}}");
  if (staging.empty()) return;
  r_.stage(iterator, "");
  l("}}");
}

// Lanes accumulate a block each; the block's lanes combine by a pairwise tree into "acc".
// Lane l takes elements l, l + s_.lanes, ...: each chain of kChainLanes lanes is its own SIMD
// loop, so that its vector accumulator is its own dependence chain (one SIMD loop over all
// the lanes leaves GCC one chain, or the stack). While fewer than s_.lanes elements remain,
// the first chain alone goes on; the tail fills the first lanes.
void CpuReductionWriter::lanes(const std::string& iterator, const std::string& lo,
                               const std::string& hi, const std::string& acc, int depth) {
  Lines l(out_, depth), l1(out_, depth + 1), l2(out_, depth + 2);
  const int64_t chain = std::min(s_.lanes, r_.reads_bytes ? 4 * kChainLanes : kChainLanes);
  std::string prefetch = r_.prefetch ? r_.prefetch("weft_p") : "";
  // The lanes [from, from + chain) take the elements weft_i + weft_l.
  auto chain_loop = [&](int64_t from, int d) {
    this->chain(iterator, "weft_i", from, chain, "weft_lane[weft_l]", d);
  };
  // Each block of "n" elements at weft_i prefetches the next row's, a line per 16 of them.
  auto prefetch_block = [&](int64_t n) {
    if (prefetch.empty()) return;
    if (n == kChainLanes) {
      l2("{{ const int64_t weft_p = weft_i; {} }}", prefetch);
    } else {
      l2("for (int64_t weft_p = weft_i; weft_p < weft_i + {}; weft_p += {}) {{ {} }}", n,
         kChainLanes, prefetch);
    }
  };
  l("for (int64_t weft_b = {0}; weft_b < {1}; weft_b += {2}) {{  // cascade: blocks of {2}", lo, hi,
    s_.block());
  l1("const int64_t weft_e = weft_imin(weft_b + {}, {});", s_.block(), hi);
  l1("{} weft_lane[{}];", r_.type, s_.lanes);
  l1("for (int64_t weft_l = 0; weft_l < {}; weft_l += 1) weft_lane[weft_l] = {};", s_.lanes,
     r_.identity);
  l1("int64_t weft_i = weft_b;");
  if (s_.lanes > chain) {
    l1("for (; weft_i + {0} <= weft_e; weft_i += {0}) {{  // {1} chains", s_.lanes,
       s_.lanes / chain);
    prefetch_block(s_.lanes);
    for (int64_t from = 0; from < s_.lanes; from += chain)
      chain_loop(from, depth + 2);
    l1("}}");
  }
  l1("for (; weft_i + {0} <= weft_e; weft_i += {0}) {{", chain);
  prefetch_block(chain);
  chain_loop(0, depth + 2);
  l1("}}");
  l1("for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {{  // the tail");
  l2("const int64_t {} = weft_i + weft_l;", iterator);
  r_.update("weft_lane[weft_l]", depth + 2, out_);
  l1("}}");
  tree(acc, depth + 1);
  l("}}");
}

// The lanes combine pairwise into "acc", one SIMD loop per level of the tree: constant trip
// counts keep it in registers (a loop over the levels goes through the stack), and SIMD
// keeps a max or min free of branches (GCC branches on a scalar one, at random on random
// data) and makes a sum's last levels vector shuffles. The order is fixed by the code, not
// the compiler.
void CpuReductionWriter::tree(const std::string& acc, int depth) {
  Lines l(out_, depth);
  l("// pairwise tree over the lanes");
  for (int64_t w = s_.lanes / 2; w >= 1; w /= 2) {
    if (w > 1) l("#pragma omp simd");
    l("for (int64_t weft_l = 0; weft_l < {0}; weft_l += 1) weft_lane[weft_l] = {1};", w,
      combine("weft_lane[weft_l]", fmt::format("weft_lane[weft_l + {}]", w)));
  }
  l("{} = {};", acc, combine(acc, "weft_lane[0]"));
}

void CpuReductionWriter::row(const std::string& iterator, const RangeText& range, int depth) {
  Lines l(out_, depth), l1(out_, depth + 1);
  l("{{  // ROW: {} lanes", s_.lanes);
  l1("const int64_t weft_lo = {}, weft_hi = {};", range.lo, range.hi);
  l1("{} weft_acc = {};", r_.total_type, r_.target);
  lanes(iterator, "weft_lo", "weft_hi", "weft_acc", depth + 1);
  l1("{}", r_.store("weft_acc"));
  l("}}");
}

// Chunk c goes to weft_part[c], and the partials combine in chunk order, so the result
// depends on the chunk count only: min(threads, kMaxThreads, size / min_per_thread). The
// team is the whole pool all the same, its threads past the chunks idle: libgomp ends the
// threads of its pool beyond a smaller team and starts new ones for the next larger one (a
// model of ALL reductions of different sizes, 64 threads: ~110 clone() calls a run).
void CpuReductionWriter::split(const std::string& iterator, const RangeText& range, int depth) {
  Lines l(out_, depth), l1(out_, depth + 1), l2(out_, depth + 2);
  l("{{  // ALL: split across threads, partials combined in chunk order");
  l1("const int64_t weft_lo = {0}, weft_hi = weft_imax({1}, {0});", range.lo, range.hi);
  l1("const int64_t weft_nt = weft_imax(1, weft_imin(weft_imin(omp_get_max_threads(), {}), "
     "(weft_hi - weft_lo) / {}));",
     kMaxThreads, s_.min_per_thread);
  l1("const int64_t weft_chunk = ((weft_hi - weft_lo + weft_nt - 1) / weft_nt + {0}) / {1} * {1};",
     s_.lanes - 1, s_.lanes);
  l1("{} weft_part[{}];", r_.total_type, kMaxThreads);
  l1("#pragma omp parallel if (weft_nt > 1)");
  l1("for (int64_t weft_c = omp_get_thread_num(); weft_c < weft_nt; weft_c += "
     "omp_get_num_threads()) {{");
  l2("const int64_t weft_from = weft_imin(weft_lo + weft_c * weft_chunk, weft_hi);");
  l2("const int64_t weft_to = weft_imin(weft_from + weft_chunk, weft_hi);");
  l2("{} weft_acc = {};", r_.total_type, r_.identity);
  lanes(iterator, "weft_from", "weft_to", "weft_acc", depth + 2);
  l2("weft_part[weft_c] = weft_acc;");
  l1("}}");
  l1("{} weft_acc = {};", r_.total_type, r_.target);
  l1("for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1)");
  l1("  weft_acc = {};", combine("weft_acc", "weft_part[weft_c]"));
  l1("{}", r_.store("weft_acc"));
  l("}}");
}

// Rows [from, to) of the columns [weft_kb, weft_ke) (at most s_.column_width): blocks of
// s_.column_rows rows accumulate in weft_col, blocks join weft_sum, and weft_sum finally
// combines into "dest" (an lvalue indexed by the K iterator), or into the statement's
// target when "dest" is empty. With short rows (one cascade block), the block's sums are the
// totals. With narrow columns (or short rows), each block's columns go in register blocks
// first, then the rest through weft_col.
void CpuReductionWriter::column_block(const std::string& r_iterator, const std::string& from,
                                      const std::string& to, const std::string& k_iterator,
                                      const std::string& dest, int depth) {
  Lines l(out_, depth), l1(out_, depth + 1), l2(out_, depth + 2), l3(out_, depth + 3);
  // The columns from "first" on: weft_kb, or weft_kr after the register blocks.
  std::string first = register_width_ > 0 ? "weft_kr" : "weft_kb";
  std::string col = fmt::format("weft_col[{} - {}]", k_iterator, first);
  std::string sum = fmt::format("weft_sum[{} - weft_kb]", k_iterator);
  auto columns_from = [&](const std::string& lo) {
    return fmt::format("for (int64_t {0} = {1}; {0} < weft_ke; {0} += 1)", k_iterator, lo);
  };
  std::string each_column = columns_from(first), all_columns = columns_from("weft_kb");
  auto join = [&](const std::string& totals) {
    return dest.empty() ? r_.store(combine(r_.target, totals))
                        : fmt::format("{} = {};", dest, combine(dest, totals));
  };
  // Rows [lo, hi) through weft_col, whose sums "done" then takes.
  auto through_l1 = [&](const std::string& lo, const std::string& hi,
                        const std::function<std::string(std::string)>& done, int d) {
    Lines m(out_, d), m1(out_, d + 1);
    m("{} weft_col[{}];", r_.type, s_.column_width);
    m("{} {} = {};", each_column, col, r_.identity);
    m("for (int64_t {0} = {1}; {0} < {2}; {0} += 1) {{", r_iterator, lo, hi);
    m1("#pragma omp simd");
    m1("{} {{", each_column);
    r_.update(col, d + 2, out_);
    m1("}}");
    m("}}");
    m("{} {}", each_column, done(col));
  };
  l("{{");
  if (short_rows_) { // one cascade block: its column sums are the totals
    if (register_width_ > 0) column_registers(r_iterator, from, to, k_iterator, join, depth + 1);
    through_l1(from, to, join, depth + 1);
    l("}}");
    return;
  }
  auto join_sum = [&](const std::string& block) {
    return fmt::format("{} = {};", sum, combine(sum, block));
  };
  l1("{} weft_sum[{}];", r_.total_type, s_.column_width);
  l1("{} {} = {};", all_columns, sum, r_.identity);
  l1("for (int64_t weft_rb = {0}; weft_rb < {1}; weft_rb += {2}) {{  // cascade: blocks of {2}",
     from, to, s_.column_rows);
  l2("const int64_t weft_re = weft_imin(weft_rb + {}, {});", s_.column_rows, to);
  if (register_width_ > 0)
    column_registers(r_iterator, "weft_rb", "weft_re", k_iterator, join_sum, depth + 2);
  through_l1("weft_rb", "weft_re", join_sum, depth + 2);
  l1("}}");
  l1("{} {}", all_columns, join(sum));
  l("}}");
}

// Rows [from, to) of the columns from weft_kb on, register_width_ at a time: each
// block's columns accumulate over the rows in registers (a chain of kChainLanes per SIMD
// loop, as in lanes()), then "join" them; weft_kr ends where the blocks stop. Through an L1
// buffer instead, each element costs a load and a store more: the MIDDLE [512, 16, 512]
// kernel took 0.54 ms that way and 0.46 ms with blocks of 64 columns (0.47 with 128;
// alternating runs, 2026-11-21).
void CpuReductionWriter::column_registers(const std::string& r_iterator, const std::string& from,
                                          const std::string& to, const std::string& k_iterator,
                                          const std::function<std::string(std::string)>& join,
                                          int depth) {
  Lines l(out_, depth), l1(out_, depth + 1), l2(out_, depth + 2);
  const int64_t width = register_width_;
  l("int64_t weft_kr = weft_kb;");
  l("for (; weft_kr + {0} <= weft_ke; weft_kr += {0}) {{  // {0} columns in {1} register chains",
    width, width / kChainLanes);
  l1("{} weft_reg[{}];", r_.type, width);
  l1("for (int64_t weft_l = 0; weft_l < {}; weft_l += 1) weft_reg[weft_l] = {};", width,
     r_.identity);
  l1("for (int64_t {0} = {1}; {0} < {2}; {0} += 1) {{", r_iterator, from, to);
  for (int64_t c = 0; c < width; c += kChainLanes)
    chain(k_iterator, "weft_kr", c, kChainLanes, "weft_reg[weft_l]", depth + 2);
  l1("}}");
  l1("for (int64_t weft_l = 0; weft_l < {}; weft_l += 1) {{", width);
  l2("const int64_t {} = weft_kr + weft_l;", k_iterator);
  l2("{}", join("weft_reg[weft_l]"));
  l1("}}");
  l("}}");
}

// Rows [from, to) of the columns [k.lo, k.hi), which name variables: in chunks of
// s_.column_width, unless "k" is statically narrower (then its bounds stay constants that let
// the compiler unroll the vector loop).
void CpuReductionWriter::column_chunks(const std::string& r_iterator, const std::string& from,
                                       const std::string& to, const std::string& k_iterator,
                                       const RangeText& k, const std::string& dest, int depth) {
  Lines l(out_, depth), l1(out_, depth + 1);
  if (k.extent && *k.extent <= s_.column_width) {
    l("{{");
    l1("const int64_t weft_kb = {}, weft_ke = {};", k.lo, k.hi);
  } else {
    l("for (int64_t weft_kb = {0}; weft_kb < {1}; weft_kb += {2}) {{  // chunks of {2} columns",
      k.lo, k.hi, s_.column_width);
    l1("const int64_t weft_ke = weft_imin(weft_kb + {}, {});", s_.column_width, k.hi);
  }
  column_block(r_iterator, from, to, k_iterator, dest, depth + 1);
  l("}}");
}

void CpuReductionWriter::column(const std::string& r_iterator, const RangeText& r,
                                const std::string& k_iterator, const RangeText& k, Threads threads,
                                int depth) {
  Lines l(out_, depth), l1(out_, depth + 1), l2(out_, depth + 2), l3(out_, depth + 3);
  RangeText ks{"weft_klo", "weft_khi", k.extent};
  // The cost model's chunk, widened to whole rows for a COLUMN read from memory (at least
  // the streaming size, 3/4 of the last-level cache); a cache-resident one keeps its chunks.
  if (s_ == CpuSchedule{} && k.extent && *k.extent > s_.column_width &&
      *k.extent <= kWholeRowColumns && r_.points * 4 >= s_.stream_min_bytes) {
    s_.column_width = *k.extent;
    s_.column_rows = kWholeRowBlock;
  }
  short_rows_ = r.extent && *r.extent <= s_.column_rows;
  register_width_ = 0;
  if (k.extent && (short_rows_ || *k.extent <= kRegisterColumnsMax)) {
    register_width_ = std::min(*k.extent, kRegisterColumnsMax) / kChainLanes * kChainLanes;
  } else if (short_rows_) {
    register_width_ = kColumnRegisterLanes;
  }
  l("{{  // COLUMN{}", threads == Threads::kSplit
                           ? ": R split across threads with a partial row each, or K when wide"
                           : "");
  l1("const int64_t weft_rlo = {0}, weft_rhi = weft_imax({1}, {0});", r.lo, r.hi);
  l1("const int64_t weft_klo = {0}, weft_khi = weft_imax({1}, {0});", k.lo, k.hi);
  if (threads == Threads::kOne) {
    column_chunks(r_iterator, "weft_rlo", "weft_rhi", k_iterator, ks, "", depth + 1);
    l("}}");
    return;
  }
  l1("const int64_t weft_r = weft_rhi - weft_rlo, weft_k = weft_khi - weft_klo;");
  l1("const int64_t weft_nt = weft_r * weft_k < {} ? 1 : weft_imin(omp_get_max_threads(), {});",
     2 * s_.min_per_thread, kMaxThreads);
  l1("// Threads read whole rows, each into its partial row (padded to 64 bytes, so that no");
  l1("// cache line is shared), unless K gives every thread a chunk of {} columns.",
     s_.column_width);
  l1("const int64_t weft_kp = (weft_k + 15) / 16 * 16;");
  l1("{}* weft_parts = nullptr;", r_.total_type);
  l1("if (weft_nt > 1 && weft_k < {} * weft_nt)", s_.column_width);
  l1("  weft_parts = static_cast<{0}*>(weft_scratch(sizeof({0}) * weft_nt * weft_kp));",
     r_.total_type);
  if (k.extent && *k.extent <= s_.column_width) { // one chunk: K is never split
    l1("if (weft_parts == nullptr) {{  // one thread");
    column_chunks(r_iterator, "weft_rlo", "weft_rhi", k_iterator, ks, "", depth + 2);
  } else {
    l1("if (weft_parts == nullptr) {{  // K split");
    l2("#pragma omp parallel for schedule(static) if (weft_nt > 1)");
    l2("for (int64_t weft_kb = weft_klo; weft_kb < weft_khi; weft_kb += {}) {{", s_.column_width);
    l3("const int64_t weft_ke = weft_imin(weft_kb + {}, weft_khi);", s_.column_width);
    column_block(r_iterator, "weft_rlo", "weft_rhi", k_iterator, "", depth + 3);
    l2("}}");
  }
  l1("}} else {{  // R split");
  l2("#pragma omp parallel  // the whole pool (split() says why), a partial row per chunk");
  l2("for (int64_t weft_c = omp_get_thread_num(); weft_c < weft_nt; weft_c += "
     "omp_get_num_threads()) {{");
  l3("{}* weft_part = weft_parts + weft_c * weft_kp;", r_.total_type);
  l3("for (int64_t weft_j = 0; weft_j < weft_k; weft_j += 1) weft_part[weft_j] = {};", r_.identity);
  l3("const int64_t weft_chunk = (weft_r + weft_nt - 1) / weft_nt;");
  l3("const int64_t weft_from = weft_imin(weft_rlo + weft_c * weft_chunk, weft_rhi);");
  l3("const int64_t weft_to = weft_imin(weft_from + weft_chunk, weft_rhi);");
  column_chunks(r_iterator, "weft_from", "weft_to", k_iterator, ks,
                fmt::format("weft_part[{} - weft_klo]", k_iterator), depth + 3);
  l2("}}");
  l2("for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1) {{");
  l3("for (int64_t {0} = weft_klo; {0} < weft_khi; {0} += 1)", k_iterator);
  l3("  {}", r_.store(combine(r_.target, fmt::format("weft_parts[weft_c * weft_kp + {} - weft_klo]",
                                                     k_iterator))));
  l2("}}");
  l1("}}");
  l("}}");
}

} // namespace weft::codegen
