// The CPU emitter's memory traffic (emitter.h): prefetching the next row in fused row loops,
// elementwise loop coalescing, transposing tiles, and streaming stores for large outputs,
// around the SIMD loops that run one statement.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/emitter.h"

namespace weft::codegen {

namespace {

// How far ahead a row pass prefetches (next_row_prefetch): at least this many bytes, in
// whole rows. For attention softmax's rows of 1 KB, prefetching 2 rows ahead took 1.93 ms
// against 2.05 for 1 row, 1.97 for 4 and 2.08 for 8 (alternating runs, 2026-11-21); softmax's
// rows of 4 KB measured the same at 1 and 2 rows ahead.
constexpr int64_t kPrefetchAheadBytes = 2048;

} // namespace

std::string Emitter::next_row_prefetch(const AstNode& call, const AstNode& loop,
                                       const std::string& at, int64_t block) const {
  if (row_.iterator.empty() || !d_.cpu_reduction_strategies) return "";
  const std::string& iterator = loop.iterator;
  // The call's indices at "start_at" in row iteration "row" + "ahead".
  auto indices_ahead = [&](const std::string& ahead, const std::string& start_at) {
    AstExpr row, step, next, start;
    row.kind = start.kind = step.kind = AstExpr::Kind::kId;
    row.id = row_.iterator;
    start.id = start_at;
    step.id = ahead; // C text, printed as it is
    next.kind = AstExpr::Kind::kOp;
    next.op = AstExpr::Op::kAdd;
    next.args = {row, step};
    std::vector<std::string> iters;
    for (const AstExpr& e : call.args)
      iters.push_back(ast_expr(substitute(substitute(e, row_.iterator, next), iterator, start)));
    return iters;
  };
  // Does "a" move with the row and along the pass (and so stream through memory)?
  auto streams = [&](const kernel::Access& a) {
    bool with_row = false, along = false;
    for (const AffineExpr& x : a.index) {
      for (const auto& term : x.terms) {
        with_row = with_row || mentions(call.args[static_cast<size_t>(term.first)], row_.iterator);
        along = along || mentions(call.args[static_cast<size_t>(term.first)], iterator);
      }
    }
    return with_row && along && a.indirect.empty();
  };
  auto prefetch = [&](const kernel::Access& a, int for_write) {
    std::string ahead = "1";
    if (std::optional<int64_t> row_bytes = row_step_bytes(a, call)) {
      ahead = std::to_string((kPrefetchAheadBytes + *row_bytes - 1) / *row_bytes);
    } else if (std::optional<std::string> bytes = row_step_text(a, call)) {
      ahead = fmt::format("({} + {} - 1) / ({})", kPrefetchAheadBytes, *bytes, *bytes);
    }
    std::vector<std::string> lines;
    const int64_t line = 64 / dtype_size(k_.buffers[static_cast<size_t>(a.buffer)].dtype);
    for (int64_t from = 0; from < block; from += std::max<int64_t>(line, 1)) {
      std::string start = from == 0 ? at : fmt::format("({} + {})", at, from);
      lines.push_back(fmt::format("__builtin_prefetch(&b{}[{}], {}, 3);", a.buffer,
                                  offset(a, indices_ahead(ahead, start)), for_write));
    }
    return fmt::format("{}", fmt::join(lines, " "));
  };
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::set<int> done;
  std::vector<std::string> lines;
  for (const kernel::Access& a : s.reads) {
    if (row_.prefetched || !streams(a) || !row_.reads.contains(a.buffer) ||
        contracted_.contains(a.buffer) || !done.insert(a.buffer).second)
      continue;
    lines.push_back(prefetch(a, 0));
  }
  row_.prefetched = row_.prefetched || !lines.empty();
  // The row's first pass that stores into a buffer no earlier pass touched: its cache lines
  // come from memory (a read for ownership) while the pass stores, so they are prefetched for
  // writing. Softmax's exp pass, alternating kernel runs on 2026-11-21: softmax_4096x1024
  // 1.69 -> 1.58 ms, attention softmax 2.04 -> 1.82.
  int w = s.write.buffer;
  if (s.combine == kernel::Combine::kNone && streams(s.write) && !contracted_.contains(w) &&
      !row_.reads.contains(w) && !row_.writes.contains(w) && !streams_write(call, loop))
    lines.push_back(prefetch(s.write, 1));
  return fmt::format("{}", fmt::join(lines, " "));
}

std::optional<int64_t> Emitter::row_step_bytes(const kernel::Access& a, const AstNode& call) const {
  std::optional<int64_t> step = flat_coefficient(a, call, row_.iterator);
  if (!step || *step <= 0) return std::nullopt;
  return *step * dtype_size(k_.buffers[static_cast<size_t>(a.buffer)].dtype);
}

std::optional<std::string> Emitter::row_step_text(const kernel::Access& a,
                                                  const AstNode& call) const {
  const kernel::Buffer& b = k_.buffers[static_cast<size_t>(a.buffer)];
  std::optional<std::string> step;
  std::vector<std::string> stride; // the extents of the dims after d, innermost first
  for (size_t d = a.index.size(); d-- > 0;) {
    if (dropped(a.buffer, d)) continue;
    for (auto [i, c] : a.index[d].terms) {
      const AstExpr& arg = call.args[static_cast<size_t>(i)];
      if (!mentions(arg, row_.iterator)) continue;
      if (arg.kind != AstExpr::Kind::kId || c <= 0 || step) return std::nullopt;
      std::vector<std::string> factors = {std::to_string(c * dtype_size(b.dtype))};
      factors.insert(factors.end(), stride.rbegin(), stride.rend());
      step = fmt::format("{}", fmt::join(factors, " * "));
    }
    if (!(b.shape[d] == Dim(1))) stride.push_back(dim_text(b.shape[d]));
  }
  return step;
}

std::optional<int64_t> Emitter::flat_coefficient(const kernel::Access& a, const AstNode& call,
                                                 const std::string& iterator) const {
  const kernel::Buffer& b = k_.buffers[static_cast<size_t>(a.buffer)];
  int64_t coefficient = 0;
  std::optional<int64_t> stride = 1; // of dim d, in elements
  for (size_t d = a.index.size(); d-- > 0;) {
    if (dropped(a.buffer, d)) continue;
    for (auto [i, c] : a.index[d].terms) {
      const AstExpr& arg = call.args[static_cast<size_t>(i)];
      if (!mentions(arg, iterator)) continue;
      if (arg.kind != AstExpr::Kind::kId || !stride) return std::nullopt;
      coefficient += c * *stride;
    }
    if (stride && b.shape[d].is_static()) {
      *stride *= b.shape[d].value();
    } else {
      stride.reset();
    }
  }
  return coefficient;
}

std::string Emitter::offset_at(const kernel::Access& a, const AstNode& call,
                               const std::string& iterator, const std::string& at) const {
  AstExpr by;
  by.kind = AstExpr::Kind::kId;
  by.id = at;
  std::vector<std::string> iters;
  for (const AstExpr& e : call.args)
    iters.push_back(ast_expr(substitute(e, iterator, by)));
  return offset(a, iters);
}

std::optional<AstNode> Emitter::coalesced(const AstNode& n) const {
  if (!d_.cpu_reduction_strategies || n.kind != AstNode::Kind::kFor ||
      n.mark != AstNode::Mark::kParallel)
    return std::nullopt;
  const AstNode& inner = n.children[0];
  if (inner.kind != AstNode::Kind::kFor || inner.mark != AstNode::Mark::kParallel ||
      inner.children[0].kind != AstNode::Kind::kCall)
    return std::nullopt;
  std::optional<LoopRange> outer_range = loop_range(n), inner_range = loop_range(inner);
  if (!outer_range || !inner_range) return std::nullopt;
  std::optional<int64_t> h = outer_range->static_extent(), w = inner_range->static_extent();
  auto from_zero = [](const LoopRange& r) {
    return r.lo.kind == AstExpr::Kind::kInt && r.lo.value == 0;
  };
  if (!h || !w || !from_zero(*outer_range) || !from_zero(*inner_range)) return std::nullopt;
  const AstNode& call = inner.children[0];
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  for (const kernel::ExprNode& e : s.expr) {
    if (e.op == kernel::ExprOp::kIterator) return std::nullopt;
  }
  auto fits = [&](const kernel::Access& a) {
    std::optional<int64_t> outer = flat_coefficient(a, call, n.iterator),
                           along = flat_coefficient(a, call, inner.iterator);
    return a.indirect.empty() && outer && along && *outer == *w * *along;
  };
  if (!fits(s.write) || !std::all_of(s.reads.begin(), s.reads.end(), fits)) return std::nullopt;
  AstNode loop = inner;
  AstExpr it, end, zero;
  it.kind = AstExpr::Kind::kId;
  it.id = inner.iterator;
  end.value = *h * *w;
  zero.value = 0;
  loop.cond.kind = AstExpr::Kind::kOp;
  loop.cond.op = AstExpr::Op::kLt;
  loop.cond.args = {it, end};
  loop.children[0].args.clear();
  for (const AstExpr& e : call.args)
    loop.children[0].args.push_back(substitute(e, n.iterator, zero));
  return loop;
}

bool Emitter::emit_transposing_tiles(const AstNode& nest, int depth, bool in_loop,
                                     std::string& out) const {
  if (!d_.cpu_reduction_strategies || small_ || nest.mark != AstNode::Mark::kParallel ||
      nest.children[0].kind != AstNode::Kind::kFor)
    return false;
  // Innermost loops that run as one count as one loop (H and W of an NHWC -> NCHW Transpose,
  // [1, 112, 112, 96]: 2.3 ms plain, 16 lines read for each one used).
  auto holds_loop = [](const AstNode& n) {
    return n.kind == AstNode::Kind::kFor && n.children[0].kind == AstNode::Kind::kFor;
  };
  AstNode top = nest;
  for (bool merged = true; merged;) {
    AstNode* above = &top; // the loop above the innermost two, if any
    while (holds_loop(above->children[0]) && holds_loop(above->children[0].children[0]))
      above = &above->children[0];
    std::optional<AstNode> one =
        holds_loop(above->children[0]) ? coalesced(above->children[0]) : std::nullopt;
    merged = one.has_value();
    if (one) above->children[0] = std::move(*one);
  }
  // The two loops: "top" and its loop, or, under a batch loop ("top", at the top of the nest),
  // its loop and theirs.
  bool batched = !in_loop && top.children[0].children[0].kind == AstNode::Kind::kFor;
  const AstNode& n = batched ? top.children[0] : top;
  const AstNode& inner = n.children[0];
  if (n.mark != AstNode::Mark::kParallel || inner.kind != AstNode::Kind::kFor ||
      inner.mark != AstNode::Mark::kParallel || inner.children[0].kind != AstNode::Kind::kCall)
    return false;
  std::optional<LoopRange> batch_range = loop_range(top), outer_range = loop_range(n),
                           inner_range = loop_range(inner);
  if (!batch_range || !outer_range || !inner_range ||
      outer_range->static_extent().value_or(0) < kTransposeTile ||
      inner_range->static_extent().value_or(0) < kTransposeTile)
    return false;
  const AstNode& call = inner.children[0];
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  const kernel::Buffer& written = k_.buffers[static_cast<size_t>(s.write.buffer)];
  auto plain = [&](const kernel::Access& a) {
    return a.indirect.empty() && !contracted_.contains(a.buffer);
  };
  if (s.combine != kernel::Combine::kNone || written.aliased() || !plain(s.write) ||
      flat_coefficient(s.write, call, inner.iterator) != 1 ||
      !std::all_of(s.reads.begin(), s.reads.end(), plain))
    return false;
  // The plain nest reads such an array a line per inner iteration, and each line again in the
  // next kTransposeTile - 1 outer ones: tiles pay where those lines do not stay in the L1, too
  // many of them falling in the sets the stride visits (a stride of 4 KB visits one). A
  // Transpose of [80, 3000] (lines 12 KB apart, all sets) ran 0.10 ms plain, 0.26 in tiles.
  int64_t inner_extent = *inner_range->static_extent();
  bool transposed = std::any_of(s.reads.begin(), s.reads.end(), [&](const kernel::Access& a) {
    std::optional<int64_t> along = flat_coefficient(a, call, inner.iterator);
    if (flat_coefficient(a, call, n.iterator) != 1 || !along || std::abs(*along) < kTransposeTile)
      return false;
    int64_t bytes = std::abs(*along) * dtype_size(k_.buffers[static_cast<size_t>(a.buffer)].dtype);
    int64_t lines = std::max<int64_t>(bytes / kL1Line, 1);
    int64_t sets = kL1Sets / std::gcd(lines, kL1Sets);
    return inner_extent > sets * kL1KeptWays;
  });
  if (!transposed) return false;
  std::vector<std::string> iters = call_iters(call);
  std::string pad(static_cast<size_t>(2 * depth), ' '), o = n.iterator, i = inner.iterator;
  std::string tile = fmt::format("weft_tile[{} - weft_i][{} - weft_o]", i, o);
  // collapse(2): the batch loop and the tiles' rows, or the tiles' rows and columns; inside
  // another loop, that loop's threads run them.
  out += fmt::format("{0}{1}  // tiles of {2} x {2}: computed along {3}, stored along {4}\n", pad,
                     in_loop ? "" : d_.parallel_for_2, kTransposeTile, o, i);
  if (batched) {
    out += fmt::format("{0}for (int64_t {1} = {2}; {1} < {3}; {1} += 1) {{\n", pad, top.iterator,
                       ast_expr(batch_range->lo), ast_expr(batch_range->hi));
    pad += "  ";
    ++depth;
  }
  out += fmt::format("{0}for (int64_t weft_o = {1}; weft_o < {2}; weft_o += {3}) {{\n"
                     "{0}  for (int64_t weft_i = {4}; weft_i < {5}; weft_i += {3}) {{\n"
                     "{0}    const int64_t weft_oe = weft_imin(weft_o + {3}, {2}), "
                     "weft_ie = weft_imin(weft_i + {3}, {5});\n"
                     "{0}    {6} weft_tile[{3}][{3}];\n"
                     "{0}    for (int64_t {7} = weft_i; {7} < weft_ie; {7} += 1) {{\n"
                     "{0}      {8}\n"
                     "{0}      for (int64_t {9} = weft_o; {9} < weft_oe; {9} += 1) {{\n",
                     pad, ast_expr(outer_range->lo), ast_expr(outer_range->hi), kTransposeTile,
                     ast_expr(inner_range->lo), ast_expr(inner_range->hi),
                     compute_type(written.dtype), i, d_.simd_for, o);
  emit_statement(call, depth + 4, out, tile);
  out += fmt::format("{0}      }}\n{0}    }}\n", pad);
  // A full tile of floats is stored through registers (weft_store_transposed16).
  std::optional<int64_t> row_stride = flat_coefficient(s.write, call, o);
  if (written.dtype == DType::kF32 && row_stride && *row_stride > 0) {
    out +=
        fmt::format("{0}    if (weft_oe - weft_o == {1} && weft_ie - weft_i == {1}) {{\n"
                    "{0}      const int64_t {2} = weft_o, {3} = weft_i;\n"
                    "{0}      weft_store_transposed16(&b{4}[{5}], {6}, &weft_tile[0][0]);\n"
                    "{0}      continue;\n{0}    }}\n",
                    pad, kTransposeTile, o, i, s.write.buffer, offset(s.write, iters), *row_stride);
  }
  out += fmt::format("{0}    for (int64_t {1} = weft_o; {1} < weft_oe; {1} += 1) {{\n"
                     "{0}      {2}\n"
                     "{0}      for (int64_t {3} = weft_i; {3} < weft_ie; {3} += 1) "
                     "b{4}[{5}] = {6};\n"
                     "{0}    }}\n{0}  }}\n{0}}}\n",
                     pad, o, d_.simd_for, i, s.write.buffer, offset(s.write, iters),
                     store_value(written.dtype, tile));
  if (batched) out += pad.substr(2) + "}\n";
  return true;
}

bool Emitter::streams_write(const AstNode& call, const AstNode& loop) const {
  if (!d_.cpu_reduction_strategies) return false;
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  int w = s.write.buffer;
  const kernel::Buffer& b = k_.buffers[static_cast<size_t>(w)];
  if (s.combine != kernel::Combine::kNone || b.dtype != DType::kF32 || b.aliased() ||
      contracted_.contains(w) || !s.write.indirect.empty() ||
      flat_coefficient(s.write, call, loop.iterator) != 1)
    return false;
  int64_t bytes = dtype_size(b.dtype);
  for (const Dim& d : b.shape) {
    if (!d.is_static()) return false;
    bytes *= d.value();
  }
  if (bytes < schedule_.stream_min_bytes) return false;
  for (size_t i = 0; i < k_.statements.size(); ++i) {
    const Statement& other = k_.statements[i];
    if (i != static_cast<size_t>(call.statement) && other.write.buffer == w) return false;
    for (const kernel::Access& a : other.reads) {
      if (a.buffer == w) return false;
    }
  }
  return true;
}

void Emitter::note_row_accesses(const AstNode& n) const {
  if (n.kind == AstNode::Kind::kCall) {
    const Statement& s = k_.statements[static_cast<size_t>(n.statement)];
    for (const kernel::Access& a : s.reads)
      row_.reads.insert(a.buffer);
    row_.writes.insert(s.write.buffer);
  }
  for (const AstNode& c : n.children)
    note_row_accesses(c);
}

void Emitter::emit_simd_loop(const AstNode& n, const AstNode& call, int depth,
                             std::string& out) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::optional<LoopRange> r = loop_range(n);
  bool stream = r && streams_write(call, n);
  // Blocks of 64 where an element read or written is a byte: GCC sizes its vectors by the
  // narrowest element, and a bool mask in blocks of 16 vectorized a Where-then-exp statement 2
  // floats at a time (attention's masked softmax, [16, 1024, 1024]: 17.8 -> 7.5 ms; 5.2 with
  // ROW's SIMD loops of 64 lanes, ReductionText::reads_bytes).
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  bool bytes = dtype_size(k_.buffers[static_cast<size_t>(s.write.buffer)].dtype) == 1;
  for (const kernel::Access& a : s.reads)
    bytes = bytes || dtype_size(k_.buffers[static_cast<size_t>(a.buffer)].dtype) == 1;
  const int64_t block = bytes ? 4 * kChainLanes : kChainLanes;
  std::string prefetch = r ? next_row_prefetch(call, n, "weft_p", block) : "";
  if (!stream && emit_half_blocks(n, {&call}, prefetch, depth, out)) return;
  if (prefetch.empty() && !stream) {
    out += fmt::format("{0}{1}\n{0}for (int64_t {2} = {3}; {4}; {2} += {5}) {{\n", pad, d_.simd_for,
                       n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step);
    emit_statement(call, depth + 1, out);
    out += pad + "}\n";
    return;
  }
  std::string lo = ast_expr(r->lo), hi = ast_expr(r->hi);
  const kernel::Access& write = s.write;
  out += fmt::format("{0}{{\n{0}  int64_t weft_p = {1};\n", pad, lo);
  if (stream) {
    out += fmt::format(
        "{0}  while (weft_p < {1} && reinterpret_cast<uintptr_t>(&b{2}[{3}]) % 64 != 0) "
        "weft_p += 1;\n{0}  for (int64_t {4} = {5}; {4} < weft_p; {4} += 1) {{  // "
        "plain stores up to the first cache line\n",
        pad, hi, write.buffer, offset_at(write, call, n.iterator, "weft_p"), n.iterator, lo);
    emit_statement(call, depth + 2, out);
    out += pad + "  }\n";
  }
  out += fmt::format("{0}  for (; weft_p + {4} <= {1}; weft_p += {4}) {{  // blocks of {4}{2}{3}\n",
                     pad, hi, prefetch.empty() ? "" : ", each prefetching the next row's",
                     stream ? ", streamed to memory" : "", block);
  if (!prefetch.empty()) out += fmt::format("{}    {}\n", pad, prefetch);
  if (stream) out += fmt::format("{}    alignas(64) float weft_s[{}];\n", pad, block);
  out += fmt::format(
      "{0}    {1}\n{0}    for (int64_t {2} = weft_p; {2} < weft_p + {3}; {2} += 1) {{\n", pad,
      d_.simd_for, n.iterator, block);
  emit_statement(call, depth + 3, out,
                 stream ? fmt::format("weft_s[{} - weft_p]", n.iterator) : std::string());
  out += pad + "    }\n";
  for (int64_t at = 0; stream && at < block; at += 16) {
    std::string from = at == 0 ? "weft_p" : fmt::format("(weft_p + {})", at);
    out += fmt::format("{}    weft_stream16(&b{}[{}], weft_s + {});\n", pad, write.buffer,
                       offset_at(write, call, n.iterator, from), at);
  }
  out += pad + "  }\n";
  std::optional<int64_t> extent = r->static_extent();
  if (stream || !extent || *extent % block != 0) {
    out += fmt::format("{0}  {1}\n{0}  for (int64_t {2} = weft_p; {2} < {3}; {2} += 1) {{  // the "
                       "tail\n",
                       pad, d_.simd_for, n.iterator, hi);
    emit_statement(call, depth + 2, out);
    out += pad + "  }\n";
  }
  if (stream && fence_.pending) {
    fence_.streamed = true;
  } else if (stream) {
    out += pad + "  weft_stream_fence();\n";
  }
  out += pad + "}\n";
}

std::vector<std::string> Emitter::half_reads(const AstNode& call, const std::string& iterator,
                                             const std::string& at,
                                             std::map<std::pair<int, int>, std::string>& staged,
                                             bool& left) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::string from = at.find(' ') == std::string::npos ? at : "(" + at + ")";
  std::vector<std::string> lines;
  for (size_t i = 0; i < s.expr.size(); ++i) {
    const kernel::ExprNode& e = s.expr[i];
    bool rounds = e.op == kernel::ExprOp::kCast && e.dtype == DType::kF16 &&
                  s.expr[static_cast<size_t>(e.operands[0])].op == kernel::ExprOp::kLoad;
    if ((e.op != kernel::ExprOp::kLoad && !rounds) || hoisted_.contains(static_cast<int>(i)))
      continue;
    const kernel::ExprNode& load = rounds ? s.expr[static_cast<size_t>(e.operands[0])] : e;
    const kernel::Access& a = s.reads[static_cast<size_t>(load.access)];
    if (!converts(a, call, iterator, rounds ? DType::kF32 : DType::kF16)) {
      left = left || (!rounds && narrow(a.buffer));
      continue;
    }
    std::string array = fmt::format("weft_v{}", i);
    lines.push_back(fmt::format("alignas(64) float {}[16];", array));
    lines.push_back(fmt::format("{}(&b{}[{}], {});", rounds ? "weft_round_f16x16" : "weft_h2f16",
                                a.buffer, offset_at(a, call, iterator, from), array));
    staged[{call.statement, static_cast<int>(i)}] =
        fmt::format("{}[{} - {}]", array, iterator, from);
  }
  return lines;
}

bool Emitter::converts(const kernel::Access& a, const AstNode& call, const std::string& iterator,
                       DType t) const {
  return k_.buffers[static_cast<size_t>(a.buffer)].dtype == t && !contracted_.contains(a.buffer) &&
         a.indirect.empty() && flat_coefficient(a, call, iterator) == 1;
}

bool Emitter::narrow(int buffer) const {
  return dtype_size(k_.buffers[static_cast<size_t>(buffer)].dtype) == 2;
}

bool Emitter::emit_half_blocks(const AstNode& n, const std::vector<const AstNode*>& calls,
                               const std::string& prefetch, int depth, std::string& out) const {
  std::optional<LoopRange> r = loop_range(n);
  if (!schedule_.half_blocks || !d_.cpu_reduction_strategies || packing_ || !r ||
      r->static_extent().value_or(16) < 16)
    return false;
  std::string pad(static_cast<size_t>(2 * depth), ' '), it = n.iterator;
  // Each statement's conversions before its lanes, after them, and where it stores.
  std::vector<std::string> before(calls.size()), after(calls.size()), store(calls.size());
  std::map<std::pair<int, int>, std::string> staged;
  for (size_t c = 0; c < calls.size(); ++c) {
    const AstNode& call = *calls[c];
    if (call.kind != AstNode::Kind::kCall) return false;
    // A 16-bit load or store left in the lanes makes GCC vectorize them at half width (8
    // floats with AVX-512): SiLU into an f16 store so ran 1.5x slower than in the plain loop.
    bool left = false;
    for (const std::string& line : half_reads(call, it, "weft_p", staged, left))
      before[c] += fmt::format("{}      {}\n", pad, line);
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    if (left || (narrow(s.write.buffer) && (s.combine != kernel::Combine::kNone ||
                                            !converts(s.write, call, it, DType::kF16))))
      return false;
    if (narrow(s.write.buffer)) {
      before[c] += fmt::format("{}      alignas(64) float weft_w[16];\n", pad);
      after[c] = fmt::format("{}      weft_f2h16(weft_w, &b{}[{}]);\n", pad, s.write.buffer,
                             offset_at(s.write, call, it, "weft_p"));
      store[c] = fmt::format("weft_w[{} - weft_p]", it);
    }
  }
  if (staged.empty() && std::all_of(store.begin(), store.end(), [](auto& w) { return w.empty(); }))
    return false;
  std::string lo = ast_expr(r->lo), hi = ast_expr(r->hi);
  out += fmt::format("{0}{{  // blocks of 16, their f16 values converted 16 at a time\n"
                     "{0}  int64_t weft_p = {1};\n"
                     "{0}  for (; weft_p + 16 <= {2}; weft_p += 16) {{\n",
                     pad, lo, hi);
  if (!prefetch.empty()) out += fmt::format("{}    {}\n", pad, prefetch);
  staged_ = staged;
  for (size_t c = 0; c < calls.size(); ++c) {
    out +=
        fmt::format("{0}    {{\n{1}{0}      {2}\n{0}      for (int64_t {3} = weft_p; {3} < weft_p "
                    "+ 16; {3} += 1) {{\n",
                    pad, before[c], d_.simd_for, it);
    emit_statement(*calls[c], depth + 4, out, store[c]);
    out += fmt::format("{0}      }}\n{1}{0}    }}\n", pad, after[c]);
  }
  staged_.clear();
  out += pad + "  }\n";
  std::optional<int64_t> extent = r->static_extent();
  if (!extent || *extent % 16 != 0) {
    out += fmt::format("{0}  {1}\n{0}  for (int64_t {2} = weft_p; {2} < {3}; {2} += 1) {{  // the "
                       "tail\n",
                       pad, d_.simd_for, it, hi);
    for (const AstNode* call : calls)
      emit_statement(*call, depth + 2, out);
    out += pad + "  }\n";
  }
  out += pad + "}\n";
  return true;
}

namespace {

// The constant that bounds "e" from the side that a min (upper bounds) or max (lower bounds)
// of a number and other terms takes inside the domain: "weft_imin(2, 56 - c1)" is 2 for
// every pixel but the last. None when "e" has no number to offer.
std::optional<int64_t> interior_bound(const AstExpr& e, AstExpr::Op op) {
  if (e.kind == AstExpr::Kind::kInt) return e.value;
  if (e.kind != AstExpr::Kind::kOp || e.op != op) return std::nullopt;
  for (const AstExpr& a : e.args)
    if (a.kind == AstExpr::Kind::kInt) return a.value;
  return std::nullopt;
}

} // namespace

// Accumulated in place, each tap loads and stores the targets again, and each tap's update
// waits for the last one's store (a 3x3 max pooling, 9 such round trips an output pixel).
// In registers, a block of lanes loads its targets once, combines every tap into them in
// the same order (the same results, bit for bit) and stores them once.
//
// Where every tap of an output lies inside the input (all pixels but the border's), the taps
// are loops of constant bounds, which the compiler unrolls: a branch tests that each tap
// loop's bounds are those constants. A generated depthwise 3x3 convolution over
// [1,112,112,32]: 0.164 -> 0.100 ms (AMD EPYC, 2 threads, 2026-12-02).
bool Emitter::emit_tap_lanes(const AstNode& n, int depth, std::string& out) const {
  const AstNode* lanes = d_.cpu_reduction_strategies ? tap_nest(k_, n) : nullptr;
  if (!lanes || packing_) return false;
  const AstNode& call = lanes->children[0];
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  if (k_.buffers[static_cast<size_t>(s.write.buffer)].dtype != DType::kF32) return false;
  LoopRange range = *loop_range(*lanes);
  std::optional<int64_t> extent = range.static_extent();
  if (extent.value_or(16) < 16) return false;
  std::vector<std::string> iters = call_iters(call);
  const std::string target = fmt::format("b{}[{}]", s.write.buffer, offset(s.write, iters));
  const std::string& lane = lanes->iterator;
  const std::string hi = ast_expr(range.hi);
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  // The interior test, and each tap loop's constant bounds in it.
  std::vector<std::string> interior;
  std::map<const AstNode*, std::pair<int64_t, int64_t>> constant;
  std::vector<std::string> taps_seen;
  for (const AstNode* m = &n; m != lanes; m = &m->children[0]) {
    taps_seen.push_back(m->iterator);
    bool comparison = m->cond.kind == AstExpr::Kind::kOp && m->cond.args.size() == 2 &&
                      (m->cond.op == AstExpr::Op::kLe || m->cond.op == AstExpr::Op::kLt);
    const AstExpr* bound = comparison ? &m->cond.args[1] : nullptr;
    std::optional<int64_t> lo = interior_bound(m->init, AstExpr::Op::kMax),
                           up = bound ? interior_bound(*bound, AstExpr::Op::kMin) : std::nullopt;
    bool inner = std::any_of(taps_seen.begin(), taps_seen.end(), [&](const std::string& t) {
      return mentions(m->init, t) || (bound && mentions(*bound, t));
    });
    if (!lo || !up || inner) {
      interior.clear();
      constant.clear();
      break;
    }
    bool le = m->cond.op == AstExpr::Op::kLe;
    if (m->init.kind != AstExpr::Kind::kInt)
      interior.push_back(fmt::format("{} == {}", ast_expr(m->init), *lo));
    if (bound->kind != AstExpr::Kind::kInt)
      interior.push_back(fmt::format("{} == {}", ast_expr(*bound), *up));
    constant[m] = {*lo, le ? *up + 1 : *up};
  }
  // The tap loops' headers at "at", and their closing braces; constant bounds with "fixed".
  auto taps = [&](int at, bool fixed) {
    std::string open, close;
    for (const AstNode* m = &n; m != lanes; m = &m->children[0], ++at) {
      std::string p(static_cast<size_t>(2 * at), ' ');
      if (fixed) {
        auto [lo, up] = constant.at(m);
        open += fmt::format("{0}for (int64_t {1} = {2}; {1} < {3}; {1} += {4}) {{  // reduction\n",
                            p, m->iterator, lo, up, m->step);
      } else {
        open += fmt::format("{0}for (int64_t {1} = {2}; {3}; {1} += {4}) {{  // reduction\n", p,
                            m->iterator, ast_expr(m->init), ast_expr(m->cond), m->step);
      }
      close = p + "}\n" + close;
    }
    return std::make_tuple(open, close, at);
  };
  auto lane_loop = [&](int at, int64_t from, int64_t to) {
    std::string p(static_cast<size_t>(2 * at), ' ');
    return fmt::format("{0}#pragma omp simd\n{0}for (int64_t weft_l = {1}; weft_l < {2}; weft_l "
                       "+= 1) {{\n{0}  const int64_t {3} = weft_p + weft_l;\n",
                       p, from, to, lane);
  };
  // Blocks of 64, 32, 16 and 8 lanes (8: the half register that channels such as 24 leave
  // after 16, in place a 3x3 max pooling's 9 round trips through memory); with a static
  // extent, only the widths that run.
  auto blocks = [&](int at, bool fixed) {
    std::string b, p(static_cast<size_t>(2 * at), ' ');
    std::optional<int64_t> left = extent;
    for (int64_t width : {64, 32, 16, 8}) {
      if (left && *left < width) continue;
      if (left) *left %= width;
      b += fmt::format("{0}for (; weft_p + {1} <= {2}; weft_p += {1}) {{\n{0}  float "
                       "weft_acc[{1}];\n",
                       p, width, hi);
      b += lane_loop(at + 1, 0, width) +
           fmt::format("{0}  weft_acc[weft_l] = {1};\n{0}}}\n", p + "  ", target);
      auto [open, close, in] = taps(at + 1, fixed);
      b += open;
      for (int64_t from = 0; from < width; from += 16) {
        b += lane_loop(in, from, std::min<int64_t>(from + 16, width));
        emit_statement(call, in + 1, b, "weft_acc[weft_l]");
        b += std::string(static_cast<size_t>(2 * in), ' ') + "}\n";
      }
      b += close;
      b += lane_loop(at + 1, 0, width) +
           fmt::format("{0}    {1} = weft_acc[weft_l];\n{0}  }}\n{0}}}\n", p, target);
    }
    return b;
  };
  out += fmt::format("{0}{{  // the taps' targets in registers, 64, 32, 16 and 8 lanes at a time\n"
                     "{0}  int64_t weft_p = {1};\n",
                     pad, ast_expr(range.lo));
  if (interior.empty()) {
    out += blocks(depth + 1, false);
  } else {
    out += fmt::format("{0}  if ({1}) {{  // every tap inside\n", pad, fmt::join(interior, " && "));
    out += blocks(depth + 2, true) + pad + "  } else {\n";
    out += blocks(depth + 2, false) + pad + "  }\n";
  }
  if (!extent || *extent % 8 != 0) { // the rest, in place
    auto [open, close, at] = taps(depth + 1, false);
    std::string p(static_cast<size_t>(2 * at), ' ');
    out += open + fmt::format("{0}#pragma omp simd\n{0}for (int64_t {1} = weft_p; {1} < {2}; {1} "
                              "+= 1) {{\n",
                              p, lane, hi);
    emit_statement(call, at + 1, out);
    out += p + "}\n" + close;
  }
  out += pad + "}\n";
  return true;
}

} // namespace weft::codegen
