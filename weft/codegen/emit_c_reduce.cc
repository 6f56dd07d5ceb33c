// The CPU emitter's reduction nests (emitter.h): a reduction in registers, the reduction
// nests that the CPU strategies (cpu_strategy.h) emit, and few long rows split across threads.
#include <algorithm>

#include <fmt/format.h>

#include "weft/codegen/dialect.h"
#include "weft/codegen/emitter.h"

namespace weft::codegen {

bool Emitter::has_loop(const AstNode& n) {
  if (n.kind == AstNode::Kind::kFor) return true;
  return std::any_of(n.children.begin(), n.children.end(),
                     [](const AstNode& c) { return has_loop(c); });
}

void Emitter::emit_register_reduction(const AstNode& n, const AstNode& call, int depth,
                                      std::string& out) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::vector<std::string> iters = call_iters(call);
  DType t = k_.buffers[static_cast<size_t>(s.write.buffer)].dtype;
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  out += fmt::format("{0}{{  // accumulate in a register\n{0}  {1} acc = {2};\n", pad,
                     compute_type(t), load(s.write, iters));
  // A max or min is a chain of dependent compares, one per element (a row of 64: 64 times
  // the latency). 16 lanes, each starting from acc (max and min are idempotent), run as one
  // SIMD chain per block of 16, then fold into acc; the tail goes to acc directly (a loop of
  // fewer than 16 stays one chain). Sums take the dialect's simd reduction below instead.
  using kernel::Combine;
  std::optional<LoopRange> range = loop_range(n);
  bool lanes = (s.combine == Combine::kMax || s.combine == Combine::kMin ||
                s.combine == Combine::kShiftMax) &&
               range && range->static_extent().value_or(16) >= 16 && d_.cpu_reduction_strategies &&
               !packing_;
  if (lanes) {
    std::string lo = ast_expr(range->lo), hi = ast_expr(range->hi);
    out += fmt::format("{0}  {1} weft_lanes[16];\n{0}  for (int weft_l = 0; weft_l < 16; ++weft_l) "
                       "weft_lanes[weft_l] = acc;\n{0}  int64_t weft_p = {2};\n"
                       "{0}  for (; weft_p + 16 <= {3}; weft_p += 16) {{  // 16 lanes\n"
                       "{0}    #pragma omp simd\n"
                       "{0}    for (int64_t {4} = weft_p; {4} < weft_p + 16; {4} += 1) {{\n",
                       pad, compute_type(t), lo, hi, n.iterator);
    emit_statement(call, depth + 3, out, fmt::format("weft_lanes[{} - weft_p]", n.iterator));
    out += fmt::format(
        "{0}    }}\n{0}  }}\n{0}  for (int64_t {1} = weft_p; {1} < {2}; {1} += 1) {{  // "
        "the tail\n",
        pad, n.iterator, hi);
    emit_statement(call, depth + 2, out, "acc");
    out += fmt::format("{0}  }}\n{0}  for (int weft_l = 0; weft_l < 16; ++weft_l) acc = {1};\n"
                       "{0}  b{2}[{3}] = {4};\n{0}}}\n",
                       pad, combine_expr(s.combine, "acc", "weft_lanes[weft_l]"), s.write.buffer,
                       offset(s.write, iters), store_value(t, "acc"));
    return;
  }
  if (s.combine == kernel::Combine::kSum && !d_.simd_sum.empty() && !packing_)
    out += fmt::format("{}  {}\n", pad, d_.simd_sum);
  out += fmt::format("{0}  for (int64_t {1} = {2}; {3}; {1} += {4}) {{  // reduction\n", pad,
                     n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step);
  emit_statement(call, depth + 2, out, "acc");
  out += fmt::format("{0}  }}\n{0}  b{1}[{2}] = {3};\n{0}}}\n", pad, s.write.buffer,
                     offset(s.write, iters), store_value(t, "acc"));
}

ReductionText Emitter::reduction_text(const AstNode& call) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::vector<std::string> iters = call_iters(call);
  DType t = k_.buffers[static_cast<size_t>(s.write.buffer)].dtype;
  std::string location = fmt::format("b{}[{}]", s.write.buffer, offset(s.write, iters));
  ReductionText r;
  r.combine = s.combine;
  r.type = compute_type(t);
  r.total_type = s.combine == kernel::Combine::kSum && r.type == "float" ? "double" : r.type;
  r.identity = identity_literal(s.combine, t);
  r.target = load(s.write, iters);
  r.address = fmt::format("&b{}[{}]", s.write.buffer, offset(s.write, iters));
  r.storage = storage_type(t);
  r.points = 1;
  for (const Dim& d : s.domain)
    r.points = d.is_static() && r.points >= 0 ? r.points * d.value() : -1;
  for (const kernel::Access& a : s.reads)
    r.reads_bytes =
        r.reads_bytes || dtype_size(k_.buffers[static_cast<size_t>(a.buffer)].dtype) == 1;
  r.store = [this, location, t](const std::string& value) {
    return fmt::format("{} = {};", location, store_value(t, value));
  };
  r.update = [this, &call](const std::string& accumulator, int depth, std::string& out) {
    emit_statement(call, depth, out, accumulator);
  };
  if (d_.cpu_reduction_strategies && schedule_.half_blocks) {
    r.stage = [this, &call](const std::string& iterator, const std::string& at) {
      staged_.clear();
      bool left = false;
      return at.empty() ? std::vector<std::string>{}
                        : half_reads(call, iterator, at, staged_, left);
    };
  }
  return r;
}

RangeText Emitter::range_text(const AstNode& loop, const AstNode& call) const {
  LoopRange r = *loop_range(loop);
  return {ast_expr(r.lo), ast_expr(r.hi), trip_bound(k_, loop, call)};
}

void Emitter::emit_reduction_nest(const AstNode& n, Threads threads, int depth,
                                  std::string& out) const {
  if (const AstNode* call = register_reduction(k_, n)) {
    ReductionText r = reduction_text(*call);
    if (threads == Threads::kOne) {
      r.prefetch = [this, call, &n](const std::string& at) {
        return next_row_prefetch(*call, n, at);
      };
    }
    CpuReductionWriter w(r, schedule_, out);
    RangeText range = range_text(n, *call);
    if (threads == Threads::kSplit) {
      w.split(n.iterator, range, depth);
    } else if (range.extent) {
      w.row(n.iterator, range, depth);
    } else {
      // A trip count known only at run time: each run takes what a static compile would,
      // lanes for long rows and one accumulator for short ones (rows of 16 took 4x longer
      // in lanes: a row sum over [65536, 16], 0.71 ms against 0.18).
      std::string pad(static_cast<size_t>(2 * depth), ' ');
      out += fmt::format("{}if ({} >= {}) {{  // long rows: lanes\n", pad, extent_text(range),
                         schedule_.min_lane_extent());
      CpuReductionWriter(r, schedule_, out).row(n.iterator, range, depth + 1);
      out += pad + "} else {  // short rows: one accumulator\n";
      emit_register_reduction(n, *call, depth + 1, out);
      out += pad + "}\n";
    }
    return;
  }
  const AstNode& inner = *column_nest(k_, n);
  ReductionText r = reduction_text(inner.children[0]);
  const AstNode& call = inner.children[0];
  CpuReductionWriter(r, schedule_, out)
      .column(n.iterator, range_text(n, call), inner.iterator, range_text(inner, call), threads,
              depth);
}

std::optional<std::pair<std::string, std::optional<int64_t>>>
Emitter::reduction_work(const AstNode& n, const std::string& outer) const {
  std::vector<const AstNode*> loops;
  const AstNode* call = register_reduction(k_, n);
  if (call && lanes_apply(k_, n, *call, schedule_)) {
    loops = {&n};
  } else if (const AstNode* inner = column_nest(k_, n)) {
    loops = {&n, inner};
    call = &inner->children[0];
  } else {
    return std::nullopt;
  }
  std::vector<std::string> factors;
  std::optional<int64_t> count = 1;
  for (const AstNode* loop : loops) {
    LoopRange r = *loop_range(*loop);
    if (range_mentions(r, outer)) return std::nullopt;
    RangeText t = range_text(*loop, *call);
    factors.push_back(extent_text(t));
    std::optional<int64_t> e = t.extent;
    count = count && e ? std::optional<int64_t>(*count * *e) : std::nullopt;
  }
  return std::pair{fmt::format("{}", fmt::join(factors, " * ")), count};
}

bool Emitter::collapses(const AstNode& n) {
  const AstNode& inner = n.children[0];
  if (!loop_range(n) || inner.kind != AstNode::Kind::kFor ||
      inner.mark != AstNode::Mark::kParallel || !has_loop(inner.children[0]) ||
      !tiny_inner_items(inner).empty())
    return false;
  std::optional<LoopRange> r = loop_range(inner);
  return r && !range_mentions(*r, n.iterator);
}

std::vector<const AstNode*> Emitter::tiny_inner_items(const AstNode& n) {
  if (n.kind != AstNode::Kind::kFor || n.mark != AstNode::Mark::kParallel) return {};
  std::optional<LoopRange> outer = loop_range(n);
  std::optional<int64_t> outer_extent = outer ? outer->static_extent() : std::nullopt;
  if (!outer || (outer_extent && *outer_extent <= kTinyInner)) return {};
  std::vector<const AstNode*> items = items_of(n.children[0]);
  bool any = false;
  for (const AstNode* item : items) {
    if (item->kind == AstNode::Kind::kCall) continue;
    if (item->kind != AstNode::Kind::kFor || item->mark != AstNode::Mark::kParallel ||
        item->children[0].kind != AstNode::Kind::kCall || item->step != 1)
      return {};
    std::optional<LoopRange> r = loop_range(*item);
    std::optional<int64_t> extent = r ? r->static_extent() : std::nullopt;
    if (!extent || *extent < 2 || *extent > kTinyInner || range_mentions(*r, n.iterator)) return {};
    any = true;
  }
  return any ? items : std::vector<const AstNode*>();
}

std::vector<const AstNode*> Emitter::items_of(const AstNode& n) {
  std::vector<const AstNode*> items;
  if (n.kind == AstNode::Kind::kBlock) {
    for (const AstNode& c : n.children)
      items.push_back(&c);
  } else {
    items.push_back(&n);
  }
  return items;
}

bool Emitter::emit_few_rows(const AstNode& n, int depth, std::string& out) const {
  std::optional<LoopRange> outer = loop_range(n);
  if (!outer) return false;
  std::vector<const AstNode*> parts = items_of(n.children[0]);
  std::optional<std::pair<std::string, std::optional<int64_t>>> work;
  std::vector<bool> reduces; // per part; the others (inits) run as they are
  for (const AstNode* p : parts) {
    auto w = p->kind == AstNode::Kind::kFor ? reduction_work(*p, n.iterator) : std::nullopt;
    reduces.push_back(w.has_value());
    if (w && !work) work = w;
  }
  std::optional<int64_t> rows = outer->static_extent();
  if (!work || (rows && *rows >= kMaxThreads) || !may_split(work->second, schedule_)) return false;
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::string loop = fmt::format("for (int64_t {0} = {1}; {2}; {0} += 1) {{\n", n.iterator,
                                 ast_expr(n.init), ast_expr(n.cond));
  auto emit_parts = [&](Threads threads) {
    // Rows on threads: a row loop, whose passes may prefetch the next row (as emit_node's).
    RowLoop outer_row = row_;
    if (threads == Threads::kOne) row_ = {n.iterator, {}, {}, false};
    for (size_t i = 0; i < parts.size(); ++i) {
      if (reduces[i])
        emit_reduction_nest(*parts[i], threads, depth + 2, out);
      else
        emit_node(*parts[i], depth + 2, true, out);
      if (!row_.iterator.empty()) note_row_accesses(*parts[i]);
    }
    row_ = outer_row;
  };
  out += fmt::format(
      "{}if ({}) {{  // few rows: split each row's reduction across threads\n", pad,
      few_rows_condition({ast_expr(outer->lo), ast_expr(outer->hi), rows}, work->first, schedule_));
  out += pad + "  " + loop;
  emit_parts(Threads::kSplit);
  out += fmt::format("{0}  }}\n{0}}} else {{\n{0}  {1}\n{0}  {2}", pad, d_.parallel_for, loop);
  emit_parts(Threads::kOne);
  out += fmt::format("{0}  }}\n{0}}}\n", pad);
  return true;
}

bool Emitter::emit_cpu_strategy(const AstNode& n, int depth, bool in_loop, std::string& out) const {
  if (!d_.cpu_reduction_strategies) return false;
  if (const AstNode* call = register_reduction(k_, n)) {
    if (!lanes_apply(k_, n, *call, schedule_)) return false;
    bool split = !in_loop && may_split(trip_bound(k_, n, *call), schedule_);
    emit_reduction_nest(n, split ? Threads::kSplit : Threads::kOne, depth, out);
    return true;
  }
  if (const AstNode* inner = column_nest(k_, n)) {
    // A few rows inside other loops (a depthwise convolution's taps along a row of channels)
    // add into the target's row in place: a row of partials to clear and add back costs more.
    std::optional<int64_t> rows = trip_bound(k_, n, inner->children[0]);
    if (in_loop && rows && *rows <= kTinyRow) return false;
    std::optional<int64_t> work = reduction_work(n, "")->second;
    bool split = !in_loop && may_split(work, schedule_);
    emit_reduction_nest(n, split ? Threads::kSplit : Threads::kOne, depth, out);
    return true;
  }
  return !in_loop && !small_ && n.mark == AstNode::Mark::kParallel && emit_few_rows(n, depth, out);
}

} // namespace weft::codegen
