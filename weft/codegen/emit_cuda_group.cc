// The CUDA emitter's groups (emitter.h, cuda_strategy.h): a group of G lanes per point of a
// ROW or MIDDLE nest, its size, the row it holds in registers, and the body that its lanes
// run between synchronizations.
#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/emitter.h"

namespace weft::codegen {

int64_t Emitter::group_size(const AstNode& body, int64_t lane_elements) const {
  std::optional<int64_t> want;
  auto take = [&](std::optional<int64_t> g) {
    if (g) want = std::max(want.value_or(1), *g);
  };
  for (const AstNode* item : items_of(body)) {
    if (item->kind != AstNode::Kind::kFor) continue;
    if (const AstNode* call = register_reduction(k_, *item)) {
      take(cuda_group_size(trip_bound(k_, *item, *call), lane_elements, cuda_.max_group));
    } else if (const AstNode* inner = column_nest(k_, *item)) {
      std::optional<int64_t> k = range_text(*inner, inner->children[0]).extent;
      int64_t g = 1;
      while (k && g < 1024 && g * 2 <= *k)
        g *= 2;
      take(k ? std::optional<int64_t>(g) : std::nullopt);
    } else if (std::vector<std::pair<const AstNode*, LoopRange>> nest = parallel_chain(*item);
               nest.size() > 1) {
      std::optional<int64_t> points = 1; // emit_group_body flattens the nest
      for (const auto& loop : nest) {
        std::optional<int64_t> e = loop.second.static_extent();
        points = points && e ? std::optional<int64_t>(*points * *e) : std::nullopt;
      }
      if (points) take(cuda_group_size(points, lane_elements, cuda_.max_group));
    } else if (std::optional<LoopRange> r = loop_range(*item);
               r && item->mark == AstNode::Mark::kParallel) {
      take(cuda_group_size(r->static_extent(), lane_elements, cuda_.max_group));
    }
  }
  return want.value_or(1);
}

std::optional<Emitter::RowRegisters> Emitter::row_registers(const AstNode& body,
                                                            int64_t group) const {
  RowRegisters row;
  std::string hi;
  // Each buffer's accesses in the row's loops (one offset, contiguous) and elsewhere.
  std::map<int, std::set<std::string>> offsets;
  std::map<int, int> last_writer;      // buffer -> statement
  std::map<int, std::set<int>> passes; // buffer -> the row loops that access it
  std::set<int> scattered, outside;
  std::map<int, bool> read_first; // buffer -> is its first access in the row's loops a read
  int pass = 0;
  auto note = [&](const AstNode& call, bool in_row) {
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    std::vector<std::string> iters = call_iters(call);
    if (in_row) { // a statement reads before it writes
      for (const kernel::Access& r : s.reads)
        read_first.emplace(r.buffer, true);
      read_first.emplace(s.write.buffer, false);
    }
    std::vector<const kernel::Access*> accesses{&s.write};
    for (const kernel::Access& r : s.reads)
      accesses.push_back(&r);
    for (const kernel::Access* a : accesses) {
      if (!in_row) {
        outside.insert(a->buffer);
      } else if (!a->indirect.empty() || flat_coefficient(*a, call, row.iterator) != 1) {
        scattered.insert(a->buffer);
      } else {
        offsets[a->buffer].insert(offset(*a, iters));
        passes[a->buffer].insert(pass);
        if (a == &s.write) last_writer[a->buffer] = call.statement;
      }
    }
  };
  std::function<void(const AstNode&, bool)> visit = [&](const AstNode& n, bool in_row) {
    if (n.kind == AstNode::Kind::kCall) note(n, in_row);
    for (const AstNode& c : n.children)
      visit(c, in_row);
  };
  for (const AstNode* item : items_of(body)) {
    if (item->kind != AstNode::Kind::kFor) {
      if (has_loop(*item)) return std::nullopt;
      visit(*item, false);
      continue;
    }
    const AstNode* call = register_reduction(k_, *item);
    bool statements = !call && item->mark == AstNode::Mark::kParallel && !column_nest(k_, *item) &&
                      !has_loop(item->children[0]);
    std::optional<LoopRange> range = loop_range(*item);
    std::optional<int64_t> extent = range ? range->static_extent() : std::nullopt;
    if ((!call && !statements) || !extent || *extent % group != 0) return std::nullopt;
    if (row.iterator.empty()) {
      row.iterator = item->iterator;
      row.lo = ast_expr(range->lo);
      hi = ast_expr(range->hi);
      row.per_lane = *extent / group;
    } else if (item->iterator != row.iterator || ast_expr(range->lo) != row.lo ||
               ast_expr(range->hi) != hi) {
      return std::nullopt;
    }
    if (call)
      note(*call, true);
    else
      visit(item->children[0], true);
    ++pass;
  }
  if (row.per_lane < 2 || row.per_lane > kCudaRowRegisters) return std::nullopt;
  row.quads = cuda_.vector == 4 && row.per_lane % 4 == 0;
  row.element = row.quads ? fmt::format("{} + weft_k / 4 * {} + weft_lane * 4 + weft_k % 4", row.lo,
                                        4 * group)
                          : fmt::format("{} + weft_lane + weft_k * {}", row.lo, group);
  // Held: a buffer that a second pass reads (or a later one writes again); with quads, one of
  // a single pass too (its loads or stores then become float4), those stored before those only
  // read. Never a buffer that shares memory with another (its stores must reach the other
  // view).
  auto plain = [&](int buffer, const std::set<std::string>& at) { // one offset, its own memory
    DType t = k_.buffers[static_cast<size_t>(buffer)].dtype;
    return at.size() == 1 && !scattered.count(buffer) && !outside.count(buffer) &&
           !k_.buffers[static_cast<size_t>(buffer)].aliased() && storage_type(t) == "float" &&
           compute_type(t) == "float";
  };
  std::vector<std::pair<int, int>> order; // (rank, buffer)
  for (const auto& [buffer, at] : offsets) {
    bool several = passes[buffer].size() >= 2;
    if (plain(buffer, at) && (several || row.quads))
      order.emplace_back(several ? 0 : last_writer.count(buffer) ? 1 : 2, buffer);
  }
  std::sort(order.begin(), order.end());
  int64_t registers = 0;
  for (const auto& [rank, buffer] : order) {
    if (registers + row.per_lane > kCudaRowRegisterSum) continue;
    registers += row.per_lane;
    std::string location = fmt::format("b{}[{}]", buffer, *offsets[buffer].begin());
    row.buffers[location] = fmt::format("weft_r{}", buffer);
    if (last_writer.count(buffer)) row.last_store[location] = last_writer[buffer];
    if (read_first[buffer]) row.fill.insert(location);
  }
  if (row.buffers.empty()) return std::nullopt;
  for (const auto& [buffer, at] : offsets) {
    if (!row.quads || !plain(buffer, at) || passes[buffer].size() != 1 ||
        last_writer.count(buffer))
      continue;
    std::string location = fmt::format("b{}[{}]", buffer, *at.begin());
    if (!row.buffers.count(location)) row.quad_reads[location] = fmt::format("weft_q{}", buffer);
  }
  return row;
}

namespace {

// Each statement call under "n".
void for_each_call(const AstNode& n, const std::function<void(const AstNode&)>& f) {
  if (n.kind == AstNode::Kind::kCall) f(n);
  for (const AstNode& c : n.children)
    for_each_call(c, f);
}

} // namespace

std::vector<std::string> Emitter::row_quad_reads(const RowRegisters& row, const AstNode& pass,
                                                 int depth, std::string& declare,
                                                 std::string& load) const {
  std::set<std::string> read;
  for_each_call(pass, [&](const AstNode& call) {
    std::vector<std::string> iters = call_iters(call);
    for (const kernel::Access& a : k_.statements[static_cast<size_t>(call.statement)].reads) {
      std::string location = fmt::format("b{}[{}]", a.buffer, offset(a, iters));
      if (row.quad_reads.count(location)) read.insert(location);
    }
  });
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (const std::string& location : read) {
    const std::string& reg = row.quad_reads.at(location);
    declare += fmt::format("{}float {}[4];  // {}, a quad at a time\n", pad, reg, location);
    load += fmt::format(
        "{0}  if (weft_k % 4 == 0) {{  // {1}'s quad\n"
        "{0}    if (weft_aligned16(&{1})) {{\n"
        "{0}      const float4 weft_y = weft_load4(&{1}); {2}[0] = weft_y.x; {2}[1] = weft_y.y; "
        "{2}[2] = weft_y.z; {2}[3] = weft_y.w;\n"
        "{0}    }} else {{\n"
        "{0}      #pragma unroll\n"
        "{0}      for (int weft_j = 0; weft_j < 4; ++weft_j) {2}[weft_j] = {3} + weft_j];\n"
        "{0}    }}\n{0}  }}\n",
        pad, location, reg, location.substr(0, location.size() - 1));
    registers_[location] = reg + "[weft_k % 4]";
    filled_.insert(location);
  }
  return {read.begin(), read.end()};
}

bool Emitter::lane_private(const RowRegisters& row, const AstNode& pass) const {
  std::set<int> written;
  for (const Statement& s : k_.statements)
    written.insert(s.write.buffer);
  bool alone = row.quads; // (held rows store only after the items)
  for_each_call(pass, [&](const AstNode& call) {
    std::vector<std::string> iters = call_iters(call);
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    auto held = [&](const kernel::Access& a) {
      std::string location = fmt::format("b{}[{}]", a.buffer, offset(a, iters));
      return row.buffers.count(location) || row.quad_reads.count(location) ||
             contracted_.count(a.buffer);
    };
    alone = alone && held(s.write);
    for (const kernel::Access& a : s.reads)
      alone = alone && (held(a) || !written.count(a.buffer));
  });
  return alone;
}

void Emitter::emit_group_body(const AstNode& body, int64_t group, int depth,
                              std::string& out) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::string sync = group > 32 ? "__syncthreads();" : "__syncwarp(weft_mask);";
  std::optional<RowRegisters> row = registers_.empty() ? row_registers(body, group) : std::nullopt;
  if (row) {
    for (const auto& [location, reg] : row->buffers) {
      out += fmt::format("{}float {}[{}];  // {}, by weft_k\n", pad, reg, row->per_lane, location);
      registers_[location] = reg + "[weft_k]";
    }
    if (row->quads) { // the quads are loaded here and stored after the items
      emit_row_quads(*row, group, row->fill, false, depth, out);
      filled_.insert(row->fill.begin(), row->fill.end());
    } else {
      last_store_ = row->last_store;
    }
  }
  for (const AstNode* item : items_of(body)) {
    const AstNode& n = *item;
    if (n.kind == AstNode::Kind::kFor && row) {
      if (const AstNode* call = register_reduction(k_, n)) {
        ReductionText r = reduction_text(*call);
        r.lanes_hold_target = writes_row_scalar(n);
        CudaReductionWriter(r, out).group_unrolled(n.iterator, row->element, row->per_lane, group,
                                                   depth);
      } else {
        out += hoist_reciprocals(n.children[0], {n.iterator}, depth);
        std::string load;
        std::vector<std::string> quads = row_quad_reads(*row, n.children[0], depth, out, load);
        out += fmt::format("{0}#pragma unroll\n{0}for (int weft_k = 0; weft_k < {1}; ++weft_k) {{\n"
                           "{0}  const int64_t {2} = {3};\n{4}",
                           pad, row->per_lane, n.iterator, row->element, load);
        emit_node(n.children[0], depth + 1, true, out);
        out += pad + "}\n";
        reciprocals_.clear();
        for (const std::string& location : quads) {
          registers_.erase(location);
          filled_.erase(location);
        }
      }
    } else if (n.kind == AstNode::Kind::kFor) {
      if (const AstNode* call = register_reduction(k_, n)) {
        ReductionText r = strided_reduction(*call, n.iterator);
        r.lanes_hold_target = writes_row_scalar(n);
        CudaReductionWriter(r, out, cuda_.unroll).group(loop_text(n), group, depth);
      } else if (const AstNode* inner = column_nest(k_, n)) {
        const AstNode& c = inner->children[0];
        ReductionText r = reduction_text(c);
        RangeText rows = range_text(n, c), cols = range_text(*inner, c);
        out += fmt::format("{0}for (int64_t {1} = {2} + weft_lane; {1} < {3}; {1} += {4}) {{  "
                           "// a lane per column\n{0}  {5} acc = {6};\n",
                           pad, inner->iterator, cols.lo, cols.hi, group, r.type, r.target);
        // (One chain of combines: 4 accumulators took a [256, 256, 256] MIDDLE sum from 83%
        // to 79% of the copy bandwidth on an H200.)
        CudaReductionWriter(r, out).strided_loop(
            {n.iterator, rows.lo, fmt::format("{} < {}", n.iterator, rows.hi), 1, rows.hi}, "0",
            "1", "acc", depth + 1);
        out += fmt::format("{0}  {1}\n{0}}}\n", pad, r.store("acc"));
      } else if (std::vector<std::pair<const AstNode*, LoopRange>> nest = parallel_chain(n);
                 nest.size() > 1) {
        // The lanes take the points of the whole nest, flattened: the innermost loop is the
        // fastest, so neighbouring lanes touch neighbouring elements (an epilogue over
        // [8, 56, 56] otherwise gives 8 lanes 3136 elements each).
        std::vector<std::string> iterators;
        for (const auto& [loop, range] : nest)
          iterators.push_back(loop->iterator);
        out += hoist_reciprocals(nest.back().first->children[0], iterators, depth);
        emit_points(
            nest, depth, out,
            [&](const std::string& count) {
              return fmt::format("{0}for (int64_t weft_l = weft_lane; weft_l < {1}; weft_l += {2}) "
                                 "{{\n",
                                 pad, count, group);
            },
            "weft_l", "weft_lq");
        flattened_ = flattened(nest, "weft_l");
        emit_node(nest.back().first->children[0], depth + 1, true, out);
        out += pad + "}\n";
        reciprocals_.clear();
        flattened_.reset();
      } else if (n.mark == AstNode::Mark::kParallel) {
        out += hoist_reciprocals(n.children[0], {n.iterator}, depth);
        out += fmt::format("{0}for (int64_t {1} = {2} + weft_lane * {3}; {4}; {1} += {5} * {3}) "
                           "{{\n",
                           pad, n.iterator, ast_expr(n.init), n.step, ast_expr(n.cond), group);
        emit_node(n.children[0], depth + 1, true, out);
        out += pad + "}\n";
        reciprocals_.clear();
      } else {
        out += fmt::format("{}if (weft_lane == 0) {{\n", pad);
        emit_node(n, depth + 1, true, out);
        out += pad + "}\n";
      }
    } else if (n.kind == AstNode::Kind::kIf) {
      out += fmt::format("{}if ({}) {{\n", pad, ast_expr(n.cond));
      emit_group_body(n.children[0], group, depth + 1, out);
      if (n.children.size() > 1) {
        out += pad + "} else {\n";
        emit_group_body(n.children[1], group, depth + 1, out);
      }
      out += pad + "}\n";
    } else if (n.kind == AstNode::Kind::kBlock) {
      emit_group_body(n, group, depth, out);
    } else if (writes_row_scalar(n)) { // every lane, into its register
      emit_node(n, depth, true, out);
    } else {
      out += fmt::format("{}if (weft_lane == 0) {{\n", pad);
      emit_node(n, depth + 1, true, out);
      out += pad + "}\n";
    }
    // What a lane writes to its registers alone, no other lane waits for.
    bool alone = writes_row_scalar(n) ||
                 (row && n.kind == AstNode::Kind::kFor && lane_private(*row, n.children[0]));
    if (!alone) out += pad + sync + "\n";
  }
  if (row) {
    if (row->quads) {
      std::set<std::string> stored;
      for (const auto& [location, statement] : row->last_store)
        stored.insert(location);
      emit_row_quads(*row, group, stored, true, depth, out);
    }
    registers_.clear();
    filled_.clear();
    last_store_.clear();
  }
}

void Emitter::emit_row_quads(const RowRegisters& row, int64_t group,
                             const std::set<std::string>& locations, bool store, int depth,
                             std::string& out) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (const std::string& location : locations) {
    const std::string& reg = row.buffers.at(location);
    std::string quad =
        store ? fmt::format("weft_store4(&{0}, {1}[weft_k], {1}[weft_k + 1], {1}[weft_k + 2], "
                            "{1}[weft_k + 3]);",
                            location, reg)
              : fmt::format("const float4 weft_y = weft_load4(&{0}); {1}[weft_k] = weft_y.x; "
                            "{1}[weft_k + 1] = weft_y.y; {1}[weft_k + 2] = weft_y.z; "
                            "{1}[weft_k + 3] = weft_y.w;",
                            location, reg);
    std::string one = store ? fmt::format("{} = {}[weft_k];", location, reg)
                            : fmt::format("{}[weft_k] = {};", reg, location);
    out += fmt::format(
        "{0}{{  // {1} {2} by quads\n"
        "{0}  const int64_t {3} = {4} + weft_lane * 4;\n"
        "{0}  if (weft_aligned16(&{2})) {{\n"
        "{0}    #pragma unroll\n{0}    for (int weft_k = 0; weft_k < {5}; weft_k += 4) {{\n"
        "{0}      const int64_t {3} = {4} + weft_k * {6} + weft_lane * 4;\n"
        "{0}      {7}\n{0}    }}\n"
        "{0}  }} else {{\n"
        "{0}    #pragma unroll\n{0}    for (int weft_k = 0; weft_k < {5}; ++weft_k) {{\n"
        "{0}      const int64_t {3} = {8};\n{0}      {9}\n{0}    }}\n{0}  }}\n{0}}}\n",
        pad, store ? "store" : "load", location, row.iterator, row.lo, row.per_lane, group, quad,
        row.element, one);
  }
}

} // namespace weft::codegen
