// The CUDA dialect's part of the emitter (emitter.h): one __global__ function per top-level
// nest, with the strategies of cuda_strategy.h.
#include <algorithm>
#include <functional>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/emitter.h"

namespace weft::codegen {

std::string Emitter::cuda_function(const AstNode& loops, const CudaOptions& options) {
  cuda_ = options;
  root_ = &loops;
  std::vector<const AstNode*> parts = items_of(loops);
  std::string out;
  int functions = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (p + 1 < parts.size() && folds_into(*parts[p], *parts[p + 1])) {
      out +=
          cuda_part(*parts[p + 1], fmt::format("weft_{}_p{}", k_.name, p + 1), parts[p], options);
      ++p;
    } else {
      out += cuda_part(*parts[p], fmt::format("weft_{}_p{}", k_.name, p), nullptr, options);
    }
    ++functions;
  }
  return fmt::format("// kernel {}: {} part(s)\n{}", k_.name, functions, out);
}

const AstNode* Emitter::column_init(const AstNode& init, const AstNode& inner) const {
  if (init.kind != AstNode::Kind::kFor || init.mark != AstNode::Mark::kParallel ||
      init.children.size() != 1 || init.children[0].kind != AstNode::Kind::kCall)
    return nullptr;
  const AstNode& call = init.children[0];
  const AstNode& c = inner.children[0];
  std::optional<LoopRange> a_range = loop_range(init), b_range = loop_range(inner);
  if (!a_range || !b_range || ast_expr(a_range->lo) != ast_expr(b_range->lo) ||
      ast_expr(a_range->hi) != ast_expr(b_range->hi) || !b_range->static_extent())
    return nullptr;
  const Statement& a = k_.statements[static_cast<size_t>(call.statement)];
  const Statement& b = k_.statements[static_cast<size_t>(c.statement)];
  if (a.combine != kernel::Combine::kNone || a.write.buffer != b.write.buffer ||
      k_.buffers[static_cast<size_t>(b.write.buffer)].aliased() || !a.write.indirect.empty())
    return nullptr;
  for (const kernel::Access& r : b.reads) {
    if (r.buffer == b.write.buffer) return nullptr;
  }
  // Split across blocks, the partials meet in an accumulator that starts as zero bits.
  ReductionText r = reduction_text(c);
  bool split =
      !cuda_.deterministic && cuda_atomic_applies(r.combine, r.type) && r.storage == r.type;
  std::string bits = split ? identity_bits(r.combine, r.type) : "0x0u";
  if (bits != "0x0u" && bits != "0x0ull") return nullptr;
  AstExpr column;
  column.kind = AstExpr::Kind::kId;
  column.id = inner.iterator;
  std::vector<std::string> at;
  for (const AstExpr& e : call.args)
    at.push_back(ast_expr(substitute(e, init.iterator, column)));
  return offset(a.write, at) == offset(b.write, call_iters(c)) ? &call : nullptr;
}

bool Emitter::folds_into(const AstNode& init, const AstNode& next) const {
  if (next.kind != AstNode::Kind::kFor) return false;
  if (const AstNode* inner = column_nest(k_, next)) return column_init(init, *inner) != nullptr;
  const AstNode* call = register_reduction(k_, next);
  if (init.kind != AstNode::Kind::kCall || !call) return false;
  const Statement& a = k_.statements[static_cast<size_t>(init.statement)];
  const Statement& b = k_.statements[static_cast<size_t>(call->statement)];
  if (a.combine != kernel::Combine::kNone || a.write.buffer != b.write.buffer ||
      k_.buffers[static_cast<size_t>(b.write.buffer)].aliased() || !a.write.indirect.empty())
    return false;
  for (const kernel::Access& r : b.reads) {
    if (r.buffer == b.write.buffer) return false;
  }
  return offset(a.write, call_iters(init)) == offset(b.write, call_iters(*call));
}

LoopText Emitter::loop_text(const AstNode& loop) const {
  std::optional<LoopRange> r = loop_range(loop);
  return {loop.iterator, ast_expr(loop.init), ast_expr(loop.cond), loop.step,
          r ? ast_expr(r->hi) : ""};
}

ReductionText Emitter::strided_reduction(const AstNode& call, const std::string& iterator,
                                         bool vector) const {
  ReductionText r = reduction_text(call);
  if (!vector) return r;
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::vector<std::string> iters = call_iters(call);
  std::vector<const kernel::Access*> moving; // one per location
  std::set<std::string> locations;
  for (const kernel::Access& a : s.reads) {
    std::optional<int64_t> c = flat_coefficient(a, call, iterator);
    DType t = k_.buffers[static_cast<size_t>(a.buffer)].dtype;
    if (!a.indirect.empty() || !c) return r;
    if (*c == 0) continue;
    if (*c != 1 || storage_type(t) != "float" || compute_type(t) != "float") return r;
    if (locations.insert(fmt::format("b{}[{}]", a.buffer, offset(a, iters))).second)
      moving.push_back(&a);
  }
  if (moving.empty()) return r;
  r.vector_reads = [this, &call, iterator, moving](const std::string& at) {
    std::vector<std::string> out;
    for (const kernel::Access* a : moving)
      out.push_back(fmt::format("&b{}[{}]", a->buffer, offset_at(*a, call, iterator, at)));
    return out;
  };
  r.vector_update = [this, &call, iters, moving](const std::string& accumulator, int depth,
                                                 std::string& out) {
    // The reads come from the quad's registers while the statement prints (no row is held
    // around a strided loop: row_registers refuses loops in other items).
    std::vector<std::string> refs;
    for (size_t i = 0; i < moving.size(); ++i) {
      refs.push_back(fmt::format("b{}[{}]", moving[i]->buffer, offset(*moving[i], iters)));
      registers_[refs.back()] = fmt::format("weft_x{}[weft_j]", i);
      filled_.insert(refs.back());
    }
    emit_statement(call, depth, out, accumulator);
    for (const std::string& ref : refs) {
      registers_.erase(ref);
      filled_.erase(ref);
    }
  };
  return r;
}

bool Emitter::steady_quads(const AstNode& call, const std::string& along,
                           const std::string& outer) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  return std::all_of(s.reads.begin(), s.reads.end(), [&](const kernel::Access& a) {
    std::optional<int64_t> moving = flat_coefficient(a, call, along);
    std::optional<int64_t> step = flat_coefficient(a, call, outer);
    return (moving && *moving == 0) || (step && *step % 4 == 0);
  });
}

bool Emitter::contains_reduction(const AstNode& n) {
  if (n.kind == AstNode::Kind::kFor && n.mark == AstNode::Mark::kReduction) return true;
  return std::any_of(n.children.begin(), n.children.end(),
                     [](const AstNode& c) { return contains_reduction(c); });
}

std::vector<std::pair<const AstNode*, LoopRange>> Emitter::parallel_chain(const AstNode& n) const {
  std::vector<std::pair<const AstNode*, LoopRange>> chain;
  const AstNode* loop = &n;
  while (loop->kind == AstNode::Kind::kFor && loop->mark == AstNode::Mark::kParallel) {
    std::optional<LoopRange> r = loop_range(*loop);
    if (!r) break;
    bool free = std::none_of(chain.begin(), chain.end(),
                             [&](const auto& c) { return range_mentions(*r, c.first->iterator); });
    if (!free) break;
    chain.emplace_back(loop, *r);
    loop = &loop->children[0];
  }
  return chain;
}

size_t
Emitter::invariant_split(const std::vector<std::pair<const AstNode*, LoopRange>>& chain) const {
  const AstNode& point = chain.back().first->children[0];
  if (chain.size() < 2 || point.kind != AstNode::Kind::kCall) return 0;
  const Statement& s = k_.statements[static_cast<size_t>(point.statement)];
  if (k_.buffers[static_cast<size_t>(s.write.buffer)].aliased()) return 0;
  auto cheap = [](kernel::ExprOp op) {
    using kernel::ExprOp;
    return op == ExprOp::kLoad || op == ExprOp::kConstant || op == ExprOp::kExtent ||
           op == ExprOp::kIterator || op == ExprOp::kCast || op == ExprOp::kNeg ||
           op == ExprOp::kAbs || op == ExprOp::kAdd || op == ExprOp::kSub || op == ExprOp::kMul ||
           op == ExprOp::kMax || op == ExprOp::kMin;
  };
  for (size_t split = 1; split < chain.size(); ++split) {
    std::vector<std::string> inner;
    int64_t points = 1;
    for (size_t i = split; i < chain.size(); ++i) {
      inner.push_back(chain[i].first->iterator);
      points *= chain[i].second.static_extent().value_or(0); // 0: not static
    }
    if (points < kCudaSplitInner) break; // too few inner points for a group's lanes
    std::vector<bool> fixed = invariant_nodes(point, inner, {s.write.buffer});
    auto loaded = [&](size_t i) { // fixed, and not of constants alone (those fold)
      const kernel::ExprNode& e = s.expr[i];
      return fixed[i] && e.op != kernel::ExprOp::kConstant && e.op != kernel::ExprOp::kExtent;
    };
    for (size_t i = 0; i < s.expr.size(); ++i) {
      const kernel::ExprNode& e = s.expr[i];
      bool costly = loaded(i) && !cheap(e.op) &&
                    std::any_of(e.operands.begin(), e.operands.end(),
                                [&](int o) { return loaded(static_cast<size_t>(o)); });
      // A division by such a value becomes a product with its reciprocal (hoist_reciprocals).
      bool divides = e.op == kernel::ExprOp::kDiv && compute_type(e.dtype) == "float" &&
                     !fixed[i] && loaded(static_cast<size_t>(e.operands[1]));
      if (costly || divides) return split;
    }
  }
  return 0;
}

std::optional<Emitter::Flattened>
Emitter::flattened(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                   const std::string& index) const {
  Flattened flat{{}, {}, index};
  for (const auto& [loop, range] : chain) {
    std::optional<int64_t> extent = range.static_extent();
    if (!extent || ast_expr(range.lo) != "0") return std::nullopt;
    flat.iterators.push_back(loop->iterator);
    flat.extents.push_back(*extent);
  }
  return flat;
}

void Emitter::emit_points(const std::vector<std::pair<const AstNode*, LoopRange>>& chain, int depth,
                          std::string& out,
                          const std::function<std::string(const std::string&)>& loop,
                          const std::string& point, const std::string& quotient) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::vector<std::string> extents;
  std::optional<int64_t> total = 1;
  for (size_t i = 0; i < chain.size(); ++i) {
    const LoopRange& r = chain[i].second;
    std::optional<int64_t> e = r.static_extent();
    if (e) {
      extents.push_back(std::to_string(*e));
    } else {
      extents.push_back(fmt::format("weft_e{}", i));
      out += fmt::format("{}const int64_t weft_e{} = weft_imax({} - {}, 0);\n", pad, i,
                         ast_expr(r.hi), ast_expr(r.lo));
    }
    total = total && e ? std::optional<int64_t>(*total * *e) : std::nullopt;
  }
  bool narrow = total && *total < (int64_t{1} << 31);
  std::string index = narrow ? "uint32_t" : "int64_t", suffix = narrow ? "u" : "";
  std::string count = fmt::format("{}", fmt::join(extents, " * "));
  out += loop ? loop(count)
              : fmt::format("{0}for (int64_t weft_p = weft_first; weft_p < {1}; weft_p += "
                            "weft_groups) {{\n",
                            pad, count);
  if (chain.size() > 1) out += fmt::format("{}  {} {} = {};\n", pad, index, quotient, point);
  for (size_t i = chain.size(); i-- > 0;) {
    std::string lo = ast_expr(chain[i].second.lo);
    const std::string& it = chain[i].first->iterator;
    if (chain.size() == 1) {
      out += fmt::format("{}  const int64_t {} = {} + {};\n", pad, it, lo, point);
    } else if (i == 0) {
      out += fmt::format("{}  const int64_t {} = {} + {};\n", pad, it, lo, quotient);
    } else {
      out += fmt::format("{0}  const int64_t {1} = {2} + {5} % {3}{4};\n"
                         "{0}  {5} /= {3}{4};\n",
                         pad, it, lo, extents[i], extents[i].starts_with("weft_") ? "" : suffix,
                         quotient);
    }
  }
}

const AstNode*
Emitter::few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                       const CudaOptions& options) const {
  if (options.deterministic) return nullptr;
  int64_t points = 1;
  for (const auto& [loop, range] : chain) {
    std::optional<int64_t> e = range.static_extent();
    if (!e) return nullptr;
    points *= *e;
  }
  if (points > kCudaFewRows) return nullptr;
  const AstNode* reduction = nullptr;
  for (const AstNode* item : items_of(chain.back().first->children[0])) {
    if (item->kind == AstNode::Kind::kCall) continue;
    const AstNode* call = register_reduction(k_, *item);
    if (reduction || !call || !loop_range(*item)) return nullptr;
    std::optional<int64_t> r = trip_bound(k_, *item, *call);
    ReductionText text = reduction_text(*call);
    if (!r || *r < kCudaLongRow || !cuda_atomic_applies(text.combine, text.type)) return nullptr;
    reduction = item;
  }
  return reduction;
}

void Emitter::emit_few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
                                 const AstNode& loop, const std::string& function, std::string& out,
                                 std::string& globals) const {
  std::string before, after;
  bool seen = false;
  for (const AstNode* item : items_of(chain.back().first->children[0])) {
    if (item == &loop) {
      seen = true;
      continue;
    }
    emit_statement(*item, 4, seen ? after : before);
  }
  const AstNode& call = loop.children[0];
  int64_t rows = 1;
  for (const auto& c : chain)
    rows *= *c.second.static_extent();
  emit_points(chain, 1, out, [&](const std::string& count) {
    return fmt::format(
        "  const int64_t weft_splits = weft_imax(1, (int64_t)gridDim.x / ({0}));\n"
        "  for (int64_t weft_u = blockIdx.x; weft_u < ({0}) * weft_splits; weft_u += "
        "gridDim.x) {{\n"
        "    const int64_t weft_p = weft_u / weft_splits, weft_s = weft_u % weft_splits;\n",
        count);
  });
  ReductionText r = strided_reduction(call, loop.iterator);
  CudaReductionWriter(r, out, cuda_.unroll)
      .split_row(loop.iterator, range_text(loop, call), function, rows, before, after, 2, globals);
  out += "  }\n";
}

std::set<int> Emitter::written_and_read(const AstNode& n, const AstNode* first) const {
  std::set<int> written, read;
  std::function<void(const AstNode&)> visit = [&](const AstNode& a) {
    if (a.kind == AstNode::Kind::kCall) {
      const Statement& s = k_.statements[static_cast<size_t>(a.statement)];
      written.insert(s.write.buffer);
      if (s.combine != kernel::Combine::kNone) read.insert(s.write.buffer);
      for (const kernel::Access& r : s.reads)
        read.insert(r.buffer);
    }
    for (const AstNode& c : a.children)
      visit(c);
  };
  visit(n);
  if (first) visit(*first);
  std::set<int> both;
  std::set_intersection(written.begin(), written.end(), read.begin(), read.end(),
                        std::inserter(both, both.end()));
  auto group = [&](int b) { return k_.buffers[static_cast<size_t>(b)].view_group; };
  for (int w : written) {
    for (int r : read) {
      if (r != w && group(w) >= 0 && group(r) == group(w)) { // a view of a buffer it writes
        for (size_t i = 0; i < k_.buffers.size(); ++i)
          both.insert(static_cast<int>(i));
        return both;
      }
    }
  }
  return both;
}

std::string Emitter::cuda_header(const std::string& function, int64_t block, bool one_block,
                                 int64_t resident_threads, const std::set<int>& shared) {
  launches_.push_back({function, block, one_block});
  std::vector<std::string> params, names;
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const kernel::Buffer& b = k_.buffers[i];
    bool restrict = !b.aliased() && !shared.count(static_cast<int>(i));
    params.push_back(fmt::format("{}{}* {}b{}",
                                 b.role == kernel::BufferRole::kInput ? "const " : "",
                                 storage_type(b.dtype), restrict ? "__restrict__ " : "", i));
    names.push_back(fmt::format("b{} {}", i, b.name));
  }
  for (const auto& [symbol, name] : symbol_names_) {
    params.push_back("const int64_t " + name);
    names.push_back(fmt::format("{} {}", name, symbol));
  }
  // Blocks an SM should hold: the compiler then keeps to 64K / (block * blocks) registers.
  int64_t blocks = one_block ? 1 : resident_threads / block;
  std::string bounds = blocks > 1 ? fmt::format("{}, {}", block, blocks) : std::to_string(block);
  return fmt::format("// launch {} block={} grid={}\n// {}\n{}void __launch_bounds__({}) "
                     "{}({}) {{\n",
                     function, block, one_block ? "1" : "device", fmt::join(names, ", "),
                     d_.function_prefix, bounds, function, fmt::join(params, ", "));
}

std::string Emitter::cuda_part(const AstNode& n, const std::string& function, const AstNode* first,
                               const CudaOptions& options) {
  std::string globals, body;
  int64_t block = kCudaBlock;
  bool one_block = false;
  int64_t resident = cuda_.resident_threads;
  const AstNode* call = n.kind == AstNode::Kind::kFor ? register_reduction(k_, n) : nullptr;
  const AstNode* inner = n.kind == AstNode::Kind::kFor ? column_nest(k_, n) : nullptr;
  std::vector<std::pair<const AstNode*, LoopRange>> chain = parallel_chain(n);
  if (call) {
    ReductionText r = strided_reduction(*call, n.iterator);
    std::string first_text;
    if (first) emit_statement(*first, 3, first_text);
    bool atomic = !options.deterministic && cuda_atomic_applies(r.combine, r.type);
    // Its loop keeps few registers live: a full SM's threads fit without spills (on an H200,
    // 6 -> 8 blocks a SM took a 64 MB sum from 76% to 81% of the copy bandwidth).
    resident = std::max(resident, kCudaAllResidentThreads);
    CudaReductionWriter(r, body, options.unroll)
        .all(loop_text(n), function, atomic, first_text, 1, globals);
  } else if (inner) {
    const AstNode& c = inner->children[0];
    ReductionText r = reduction_text(c);
    bool split =
        !options.deterministic && cuda_atomic_applies(r.combine, r.type) && r.storage == r.type;
    block = 32 * kCudaColumnRows;
    // By quads where the reads that move along the columns are contiguous f32.
    ReductionText by_quads = strided_reduction(c, inner->iterator, options.column_vector == 4);
    // A folded init runs for each column before its total applies (its iterator bound).
    std::optional<ColumnInit> init;
    if (const AstNode* init_call = first ? column_init(*first, *inner) : nullptr) {
      init.emplace();
      init->function = function;
      init->columns = *range_text(*inner, c).extent;
      init->statements = [this, first, inner, init_call](int depth, std::string& out) {
        if (first->iterator == inner->iterator) {
          emit_statement(*init_call, depth, out);
          return;
        }
        std::string pad(static_cast<size_t>(2 * depth), ' ');
        out += fmt::format("{0}{{\n{0}  const int64_t {1} = {2};\n", pad, first->iterator,
                           inner->iterator);
        emit_statement(*init_call, depth + 1, out);
        out += pad + "}\n";
      };
    }
    const ColumnInit* folded = init ? &*init : nullptr;
    if (by_quads.vector_reads) {
      CudaReductionWriter(by_quads, body, options.unroll)
          .column_quads(n.iterator, range_text(n, c), inner->iterator, range_text(*inner, c), split,
                        steady_quads(c, inner->iterator, n.iterator), folded, 1, globals);
    } else {
      CudaReductionWriter(r, body, options.unroll)
          .column(n.iterator, range_text(n, c), inner->iterator, range_text(*inner, c), split,
                  folded, 1, globals);
    }
  } else if (const AstNode* loop = chain.empty() ? nullptr : few_long_rows(chain, options)) {
    emit_few_long_rows(chain, *loop, function, body, globals);
  } else if (!chain.empty()) {
    int64_t group = 1;
    // An elementwise nest whose statement computes something costly from its outer iterators
    // alone (BatchNorm's per-channel sqrt and division) gives its inner loops to a group of
    // lanes, which computes that once per point (hoisted by the compiler, or as a reciprocal).
    if (size_t split = invariant_split(chain); split > 0) {
      int64_t points = 1; // static: invariant_split splits only there
      for (size_t i = split; i < chain.size(); ++i)
        points *= *chain[i].second.static_extent();
      chain.resize(split);
      group = cuda_group_size(points, cuda_.lane_elements, cuda_.max_group);
    }
    const AstNode& point = chain.back().first->children[0];
    if (group == 1 && contains_reduction(point)) group = group_size(point, cuda_.lane_elements);
    // A row held in registers takes its own elements a lane, when it is held at that size.
    if (int64_t held = group > 1 ? group_size(point, cuda_.held_elements) : 1;
        held > 1 && held != group && row_registers(point, held))
      group = held;
    if (group == 1) {
      body += "  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;\n";
    } else if (group > 32) {
      block = group;
      body += "  const int64_t weft_lane = threadIdx.x;\n"
              "  const unsigned int weft_mask = 0xffffffffu;\n"
              "  const int64_t weft_first = blockIdx.x, weft_groups = gridDim.x;\n";
    } else {
      body += fmt::format(
          "  const int64_t weft_lane = threadIdx.x % {0};\n"
          "  const unsigned int weft_mask = {1};\n"
          "  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / {0};\n"
          "  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / {0};\n",
          group,
          group == 32 ? "0xffffffffu"
                      : fmt::format("((1u << {0}) - 1u) << (threadIdx.x % 32 / {0} * {0})", group));
    }
    emit_points(chain, 1, body);
    if (group == 1) {
      flattened_ = flattened(chain, "weft_p");
      emit_node(point, 2, true, body);
      flattened_.reset();
    } else {
      body += fmt::format("    // a group of {} threads per point\n", group);
      body += contract_row_scalars(point, 2);
      emit_group_body(point, group, 2, body);
      contracted_.clear();
    }
    body += "  }\n";
  } else if (n.kind == AstNode::Kind::kFor && n.mark == AstNode::Mark::kParallel) {
    body += fmt::format("  const int64_t weft_stride = (int64_t)gridDim.x * blockDim.x;\n"
                        "  for (int64_t {0} = {1} + ((int64_t)blockIdx.x * blockDim.x + "
                        "threadIdx.x) * {2}; {3}; {0} += weft_stride * {2}) {{\n",
                        n.iterator, ast_expr(n.init), n.step, ast_expr(n.cond));
    emit_node(n.children[0], 2, true, body);
    body += "  }\n";
  } else {
    block = 1;
    one_block = true;
    body += "  // one thread\n";
    emit_node(n, 1, true, body);
  }
  return globals + cuda_header(function, block, one_block, resident, written_and_read(n, first)) +
         body + "}\n";
}

} // namespace weft::codegen
