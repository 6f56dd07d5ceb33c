#include "weft/poly/schedule_kernel.h"

#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <isl/cpp.h>
#include <isl/options.h>

namespace weft::poly {

namespace {

using kernel::AffineExpr;
using kernel::Kernel;
using kernel::Statement;

// One isl context per call; isl objects must die before it, so they live in a nested scope.
class IslContext {
public:
  IslContext() : ctx_(isl_ctx_alloc()) { isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE); }
  ~IslContext() { isl_ctx_free(ctx_); }
  IslContext(const IslContext&) = delete;
  IslContext& operator=(const IslContext&) = delete;
  isl::ctx get() const { return isl::ctx(ctx_); }

private:
  isl_ctx* ctx_;
};

// A reduction of few terms per output, whose innermost output iterator k moves along the
// innermost dim of its write, with stride 1, and of every read that k moves, with stride 1
// or 2 (a strided convolution's input), and nowhere else: its iterators with k moved inside the
// reduced ones, so that the vector loop runs over outputs (a depthwise convolution's row, each tap
// adding into it) instead of over the few terms of each (a scalar sum of 9 products per output ran
// 8-13x slower than oneDNN's depthwise kernel). Empty when that does not hold. The reduced
// iterators must follow the kept ones (as the lowerings write them) and number 2 to kFewTerms
// terms, and k must span at least kVectorOutputs.
constexpr int64_t kFewTerms = 64, kVectorOutputs = 16;
std::vector<int> outputs_innermost(const Statement& st) {
  if (st.combine == kernel::Combine::kNone || !st.write.indirect.empty()) return {};
  int n = static_cast<int>(st.domain.size()), k = -1;
  int64_t terms = 1;
  for (int i = 0; i < n; ++i) {
    const Dim& d = st.domain[static_cast<size_t>(i)];
    if (!st.is_reduced(i)) {
      if (terms > 1) return {}; // a kept iterator after a reduced one
      k = i;
    } else if (d.is_static()) {
      terms *= d.value();
    } else {
      return {};
    }
  }
  const Dim& extent = k < 0 ? Dim(0) : st.domain[static_cast<size_t>(k)];
  if (k < 0 || terms < 2 || terms > kFewTerms || !extent.is_static() ||
      extent.value() < kVectorOutputs)
    return {};
  // k along the last dim only, with stride 1 (the write) or 0, 1 or 2 (each read).
  auto along_last = [&](const kernel::Access& a, bool may_skip) {
    if (!a.indirect.empty() || a.index.empty()) return false;
    for (size_t d = 0; d + 1 < a.index.size(); ++d) {
      if (a.index[d].coefficient(k) != 0) return false;
    }
    int64_t c = a.index.back().coefficient(k);
    return c == 1 || (may_skip && (c == 0 || c == 2));
  };
  if (!along_last(st.write, false)) return {};
  for (const kernel::Access& r : st.reads) {
    if (!along_last(r, true)) return {};
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (i != k) order.push_back(i);
  }
  order.push_back(k);
  return order;
}

// The kernel in isl's notation: statements "S<k>", buffers "B<k>", symbolic extents as
// parameters "p<k>" (the kernel's symbols need not be isl identifiers).
class PolyModel {
public:
  PolyModel(const Kernel& k, const ScheduleOptions& options)
      : kernel_(k), min_shared_points_(options.min_shared_points),
        chained_gathers_apart_(options.chained_gathers_apart) {
    for (const Statement& s : k.statements) {
      for (const Dim& d : s.domain)
        add_param(d);
      // An indirect access (a read, or a write: a Concat's piece at a symbolic offset) is
      // bounded by its buffer's extent.
      std::vector<const kernel::Access*> accesses = {&s.write};
      for (const kernel::Access& a : s.reads)
        accesses.push_back(&a);
      for (const kernel::Access* a : accesses) {
        for (const kernel::IndirectIndex& ind : a->indirect)
          add_param(k.buffers[static_cast<size_t>(a->buffer)].shape[static_cast<size_t>(ind.dim)]);
      }
    }
  }

  // "[p0, p1] -> ", or nothing without parameters ("[] -> [...]" misparses as a band).
  std::string param_list() const {
    if (symbols_.empty()) return "";
    std::vector<std::string> ps;
    for (const auto& [p, sym] : symbols_)
      ps.push_back(p);
    return fmt::format("[{}] -> ", fmt::join(ps, ", "));
  }
  // The symbol an isl identifier stands for, or the identifier itself.
  std::string symbol_of(const std::string& id) const {
    auto it = symbols_.find(id);
    return it == symbols_.end() ? id : it->second;
  }

  std::string iterator_list(size_t s, const char* iterator) const {
    std::vector<std::string> its;
    for (size_t i = 0; i < kernel_.statements[s].domain.size(); ++i)
      its.push_back(fmt::format("{}{}", iterator, i));
    return fmt::format("{}", fmt::join(its, ", "));
  }
  std::string tuple(size_t s, const char* iterator = "i") const {
    return fmt::format("S{}[{}]", s, iterator_list(s, iterator));
  }

  std::string domain(size_t s) const {
    const Statement& st = kernel_.statements[s];
    std::vector<std::string> bounds;
    for (size_t i = 0; i < st.domain.size(); ++i)
      bounds.push_back(fmt::format("0 <= i{} < {}", i, extent(st.domain[i])));
    for (const AffineExpr& g : st.guards)
      bounds.push_back(kernel::print_affine(g) + " >= 0");
    return bounds.empty() ? tuple(s) : fmt::format("{} : {}", tuple(s), fmt::join(bounds, " and "));
  }

  std::string all_domains() const {
    std::vector<std::string> parts;
    for (size_t s = 0; s < kernel_.statements.size(); ++s)
      parts.push_back(domain(s));
    return fmt::format("{}{{ {} }}", param_list(), fmt::join(parts, "; "));
  }

  // An indirect index may touch any element along its dim: the relation over-approximates
  // it by the whole extent there. Buffers that share memory (views of one value with two shapes,
  // after stitching: a view group) must be seen as one array. With static shapes they are:
  // "BA<g>" for group g, indexed by each element's row-major position, so dependences between
  // the views are exact. With a symbolic extent the position is not affine; each view keeps
  // its own name and view_dependences() orders the statements instead.
  std::string access(size_t s, const kernel::Access& a) const {
    const kernel::Buffer& buffer = kernel_.buffers[static_cast<size_t>(a.buffer)];
    const Shape& shape = buffer.shape;
    std::vector<std::string> idx, bounds;
    for (size_t d = 0; d < a.index.size(); ++d) {
      if (!a.indirect_at(static_cast<int>(d))) {
        idx.push_back(kernel::print_affine(a.index[d]));
        continue;
      }
      idx.push_back(fmt::format("o{}", d));
      bounds.push_back(fmt::format("0 <= o{} < {}", d, extent(shape[d])));
    }
    std::string relation;
    if (!buffer.aliased() || !linear_views()) {
      relation = fmt::format("{} -> B{}[{}]", tuple(s), a.buffer, fmt::join(idx, ", "));
    } else if (!bounds.empty()) { // an indirect index: any element
      return fmt::format("{} -> BA{}[o] : o >= 0", tuple(s), buffer.view_group);
    } else {
      std::string position = "0";
      for (size_t d = 0; d < idx.size(); ++d)
        position = fmt::format("({}) * {} + ({})", position, shape[d].value(), idx[d]);
      relation = fmt::format("{} -> BA{}[{}]", tuple(s), buffer.view_group, position);
    }
    return bounds.empty() ? relation : fmt::format("{} : {}", relation, fmt::join(bounds, " and "));
  }

  // Are all aliased buffers of static shape (one array "BA<g>" a view group)?
  bool linear_views() const {
    return std::all_of(kernel_.buffers.begin(), kernel_.buffers.end(), [](const kernel::Buffer& b) {
      return !b.aliased() || shape_is_static(b.shape);
    });
  }

  // Without linear_views(): every instance of a statement that accesses one aliased buffer
  // comes before every instance of a later statement that accesses another of its view group,
  // when either writes it (a barrier between them).
  std::string view_dependences() const {
    if (linear_views()) return "{ }";
    std::vector<std::string> parts;
    for (size_t s1 = 0; s1 < kernel_.statements.size(); ++s1) {
      for (size_t s2 = s1 + 1; s2 < kernel_.statements.size(); ++s2) {
        if (views_conflict(kernel_.statements[s1], kernel_.statements[s2]))
          parts.push_back(fmt::format("{} -> {}", tuple(s1), tuple(s2, "j")));
      }
    }
    return union_of(parts);
  }

  // The read accesses, including a combining statement's read of its own accumulator.
  std::string reads() const {
    std::vector<std::string> parts;
    for (size_t s = 0; s < kernel_.statements.size(); ++s) {
      const Statement& st = kernel_.statements[s];
      if (st.combine != kernel::Combine::kNone) parts.push_back(access(s, st.write));
      for (const kernel::Access& a : st.reads)
        parts.push_back(access(s, a));
    }
    return union_of(parts);
  }

  // The writes of "kind": an affine write certainly writes what its relation says; an
  // indirect one may write any element of its over-approximation.
  enum class WriteKind : uint8_t { kMust, kMay };
  std::string writes(WriteKind kind) const {
    std::vector<std::string> parts;
    for (size_t s = 0; s < kernel_.statements.size(); ++s) {
      const kernel::Access& w = kernel_.statements[s].write;
      if (w.indirect.empty() == (kind == WriteKind::kMust)) parts.push_back(access(s, w));
    }
    return union_of(parts);
  }

  // The original program order: statements in sequence, iterators lexicographic.
  std::string sequential_schedule() const {
    size_t depth = 0;
    for (const Statement& st : kernel_.statements)
      depth = std::max(depth, st.domain.size());
    std::vector<std::string> parts;
    for (size_t s = 0; s < kernel_.statements.size(); ++s) {
      std::vector<std::string> out = {std::to_string(s)};
      for (size_t i = 0; i < depth; ++i) {
        out.push_back(i < kernel_.statements[s].domain.size() ? fmt::format("i{}", i) : "0");
      }
      parts.push_back(fmt::format("{} -> [{}]", tuple(s), fmt::join(out, ", ")));
    }
    return fmt::format("{}{{ {} }}", param_list(), fmt::join(parts, "; "));
  }

  // The iterator of statement "s" that its band "d" runs: the domain's order, but for the
  // statements that order_outputs_innermost reorders.
  int band(size_t s, size_t d) const {
    return orders_.empty() ? static_cast<int>(d) : orders_[s][d];
  }

  // Each reduction that outputs_innermost takes runs its innermost output loop inside its
  // reduced loops, where no dependence between its own instances crosses outputs there
  // (other statements come before or after it whole, below the loops it shares).
  void order_outputs_innermost(const isl::union_map& deps) {
    const std::vector<Statement>& st = kernel_.statements;
    for (size_t s = 0; s < st.size(); ++s) {
      std::vector<int> order(st[s].domain.size());
      std::iota(order.begin(), order.end(), 0);
      std::vector<int> inner = outputs_innermost(st[s]);
      if (!inner.empty() && !moves_across(deps, s, inner.back())) order = std::move(inner);
      orders_.push_back(std::move(order));
    }
  }

  // Does a dependence between instances of statement "s" join two values of iterator "i"?
  bool moves_across(const isl::union_map& deps, size_t s, int i) const {
    isl::union_map own(deps.ctx(),
                       fmt::format("{}{{ {} -> {} }}", param_list(), tuple(s), tuple(s, "j")));
    isl::union_set across(deps.ctx(), fmt::format("{}{{ S{}[{}] : e{} < 0 or e{} > 0 }}",
                                                  param_list(), s, iterator_list(s, "e"), i, i));
    return !deps.intersect(own).deltas().intersect(across).is_empty();
  }

  // Does a dependence between instances of statement "s" differ first at its band "d"?
  bool carries(const isl::union_map& deps, size_t s, size_t d) const {
    size_t n = kernel_.statements[s].domain.size();
    std::vector<std::string> es, conds;
    for (size_t i = 0; i < n; ++i)
      es.push_back(fmt::format("e{}", i));
    for (size_t i = 0; i < d; ++i)
      conds.push_back(fmt::format("e{} = 0", band(s, i)));
    conds.push_back(fmt::format("(e{0} < 0 or e{0} > 0)", band(s, d)));
    isl::union_set carried(deps.ctx(), fmt::format("{}{{ S{}[{}] : {} }}", param_list(), s,
                                                   fmt::join(es, ", "), fmt::join(conds, " and ")));
    return !deps.deltas().intersect(carried).is_empty();
  }

  // How many outer loops statements [first, last) share: common_depth's, but with fewer than
  // ScheduleOptions::min_shared_points points in them, or a number not known before the run,
  // only when one of the statements reduces (each point's nests then go to a group of
  // threads), and none when they have a single point: isl drops loops of extent 1, and the
  // statements would run one after another on one thread.
  size_t shared_depth(const isl::union_map& deps, size_t first, size_t last) const {
    size_t depth = common_depth(deps, first, last);
    if (min_shared_points_ == 0) return depth;
    const std::vector<Statement>& st = kernel_.statements;
    std::optional<int64_t> points = 1;
    for (size_t d = 0; d < depth && points; ++d) {
      const Dim& extent = st[first].domain[band(first, d)];
      points = extent.is_static() ? std::optional<int64_t>(*points * extent.value()) : std::nullopt;
    }
    if (points && *points >= min_shared_points_) return depth;
    if (points == 1) return 0;
    for (size_t s = first; s < last; ++s) {
      if (st[s].combine != kernel::Combine::kNone) return depth;
    }
    return 0;
  }

  // How many outer loops can statements [first, last) have in common (loop fusion)? Loop d is
  // shared when each statement's iterator d has one common extent, is reduced by none of them, and
  // every dependence among them stays within one iteration of the loops up to d; then, per
  // iteration, the statements run in order. Stitched kernels (softmax, LayerNorm) so finish a
  // row before the next, which keeps the row in cache between their passes; a softmax over
  // [B, H, S, S] shares B, H and S. (A dependence across iterations would leave a fused loop
  // serial, which costs more than the locality gains: then each statement keeps its nest.)
  // Reduced loops stay unshared, so that each reduction keeps a nest of its own for the CPU
  // strategies.
  size_t common_depth(const isl::union_map& deps, size_t first, size_t last) const {
    const std::vector<Statement>& st = kernel_.statements;
    if (last - first < 2) return 0;
    bool chained = false;
    for (size_t s = first + 1; s < last && chained_gathers_apart_; ++s)
      chained |= indexes_by_earlier(first, s);
    size_t depth = 0;
    for (;; ++depth) {
      for (size_t s = first; s < last; ++s) {
        if (chained && st[s].domain.size() == depth + 1) return depth;
        // A dim of extent 1 that a write leaves out reduces nothing (softmax over
        // [1, H, S, S]: without it sharing, each pass read the whole input from memory).
        if (st[s].domain.size() <= depth ||
            !(st[s].domain[band(s, depth)] == st[first].domain[band(first, depth)]) ||
            (st[s].combine != kernel::Combine::kNone && !(st[s].domain[band(s, depth)] == Dim(1)) &&
             st[s].is_reduced(band(s, depth))))
          return depth;
      }
      isl::union_map outer(deps.ctx(), outer_loops(first, last, depth + 1));
      std::vector<std::string> deltas, nonzero;
      for (size_t i = 0; i <= depth; ++i) {
        deltas.push_back(fmt::format("d{}", i));
        nonzero.push_back(fmt::format("d{0} < 0 or d{0} > 0", i));
      }
      isl::union_set along = deps.apply_domain(outer).apply_range(outer).deltas();
      isl::union_set across(deps.ctx(),
                            fmt::format("{}{{ [{}] : {} }}", param_list(), fmt::join(deltas, ", "),
                                        fmt::join(nonzero, " or ")));
      if (!along.intersect(across).is_empty()) return depth;
    }
  }

  // Does statement "s" index a read with a value it loads from what statements [first, s)
  // write (a tree walk's next node, gathered from the position the step before wrote)?
  bool indexes_by_earlier(size_t first, size_t s) const {
    const std::vector<Statement>& st = kernel_.statements;
    std::set<int> written;
    for (size_t w = first; w < s; ++w)
      written.insert(st[w].write.buffer);
    std::vector<int> stack;
    for (const kernel::Access& a : st[s].reads) {
      for (const kernel::IndirectIndex& i : a.indirect)
        stack.push_back(i.node);
    }
    while (!stack.empty()) {
      const kernel::ExprNode& e = st[s].expr[static_cast<size_t>(stack.back())];
      stack.pop_back();
      if (e.op == kernel::ExprOp::kLoad &&
          written.contains(st[s].reads[static_cast<size_t>(e.access)].buffer))
        return true;
      stack.insert(stack.end(), e.operands.begin(), e.operands.end());
    }
    return false;
  }

  // Runs of consecutive statements [first, last) that share loops: the whole kernel when it
  // can; otherwise each run as long as its statements share an outer loop, so that, e.g., a
  // BN-train's per-row statistics share their rows while its per-channel steps and the
  // normalized write keep their own nests.
  std::vector<std::pair<size_t, size_t>> fused_runs(const isl::union_map& deps) const {
    size_t n = kernel_.statements.size();
    if (n < 2 || shared_depth(deps, 0, n) > 0) return {{0, n}};
    std::vector<std::pair<size_t, size_t>> runs;
    for (size_t first = 0; first < n;) {
      size_t last = first + 1;
      while (last < n && shared_depth(deps, first, last + 1) > 0)
        ++last;
      runs.emplace_back(first, last);
      first = last;
    }
    return runs;
  }

  // The schedule tree in isl's text form: a sequence of runs of statements (fused_runs),
  // each a sequence of statements with one marked band per iterator below the loops the
  // run shares, and those shared bands over it.
  std::string schedule_tree(const isl::union_map& deps) const {
    std::vector<std::pair<size_t, size_t>> runs = fused_runs(deps);
    if (runs.size() == 1)
      return fmt::format("{{ domain: \"{}\", child: {{ {} }} }}", all_domains(),
                         run_tree(deps, 0, kernel_.statements.size()));
    std::vector<std::string> filters;
    for (auto [first, last] : runs) {
      std::vector<std::string> tuples;
      for (size_t s = first; s < last; ++s)
        tuples.push_back(tuple(s));
      filters.push_back(fmt::format("{{ filter: \"{}\", child: {{ {} }} }}", union_of(tuples),
                                    run_tree(deps, first, last)));
    }
    return fmt::format("{{ domain: \"{}\", child: {{ sequence: [ {} ] }} }}", all_domains(),
                       fmt::join(filters, ", "));
  }

  // Statements [first, last): the loops they share, over a sequence of their own nests.
  std::string run_tree(const isl::union_map& deps, size_t first, size_t last) const {
    size_t shared = shared_depth(deps, first, last);
    std::vector<std::string> filters;
    for (size_t s = first; s < last; ++s) {
      const Statement& st = kernel_.statements[s];
      std::string child;
      for (size_t d = st.domain.size(); d-- > shared;) {
        std::string loop = fmt::format("schedule: \"{}[{{ {} -> [(i{})] }}]\"", param_list(),
                                       tuple(s), band(s, d));
        if (!child.empty()) loop += ", child: { " + child + " }";
        const char* mark = st.combine != kernel::Combine::kNone && st.is_reduced(band(s, d))
                               ? "reduction"
                           : carries(deps, s, d) ? nullptr
                                                 : "parallel";
        // The mark names its loop ("parallel c3"): isl names the loop of band d "c<d>",
        // and generates none for a band of one iteration, whose mark must not pass to the
        // loop below it.
        child = mark ? fmt::format("mark: \"{} c{}\", child: {{ {} }}", mark, d, loop) : loop;
      }
      std::string filter = fmt::format("filter: \"{}{{ {} }}\"", param_list(), tuple(s));
      filters.push_back(child.empty() ? "{ " + filter + " }"
                                      : fmt::format("{{ {}, child: {{ {} }} }}", filter, child));
    }
    std::string tree = fmt::format("sequence: [ {} ]", fmt::join(filters, ", "));
    // The shared loops, innermost first; all are parallel (no statement reduces them, and
    // dependences stay within an iteration). The CPU opens a parallel region at the outermost
    // only; CUDA flattens them all into the grid's index space.
    for (size_t d = shared; d-- > 0;) {
      tree = fmt::format("schedule: \"{}\", child: {{ {} }}", outer_loop(first, last, d), tree);
      tree = fmt::format("mark: \"parallel c{}\", child: {{ {} }}", d, tree);
    }
    return tree;
  }

private:
  // Statements [first, last) mapped to their first "n" iterators.
  std::string outer_loops(size_t first, size_t last, size_t n) const {
    std::vector<std::string> parts;
    for (size_t s = first; s < last; ++s) {
      std::vector<std::string> its;
      for (size_t i = 0; i < n; ++i)
        its.push_back(fmt::format("i{}", band(s, i)));
      parts.push_back(fmt::format("{} -> [{}]", tuple(s), fmt::join(its, ", ")));
    }
    return union_of(parts);
  }
  // The band of loop "d" over statements [first, last), in a schedule tree's notation.
  std::string outer_loop(size_t first, size_t last, size_t d) const {
    std::vector<std::string> maps;
    for (size_t s = first; s < last; ++s)
      maps.push_back(fmt::format("{} -> [(i{})]", tuple(s), band(s, d)));
    return fmt::format("{}[{{ {} }}]", param_list(), fmt::join(maps, "; "));
  }
  // Does one statement write an aliased buffer that the other accesses through another
  // view of its group, or access one that the other writes so?
  bool views_conflict(const Statement& a, const Statement& b) const {
    auto aliased = [&](int buffer) {
      return kernel_.buffers[static_cast<size_t>(buffer)].aliased();
    };
    auto other_view = [&](int buffer, int of) {
      return buffer != of && kernel_.buffers[static_cast<size_t>(buffer)].view_group ==
                                 kernel_.buffers[static_cast<size_t>(of)].view_group;
    };
    auto touches_other = [&](const Statement& s, int buffer) {
      if (other_view(s.write.buffer, buffer)) return true;
      return std::any_of(s.reads.begin(), s.reads.end(),
                         [&](const kernel::Access& r) { return other_view(r.buffer, buffer); });
    };
    auto writes_other = [&](const Statement& s, int buffer) {
      return other_view(s.write.buffer, buffer);
    };
    for (const Statement* s : {&a, &b}) {
      const Statement& other = s == &a ? b : a;
      if (aliased(s->write.buffer) && touches_other(other, s->write.buffer)) return true;
      for (const kernel::Access& r : s->reads) {
        if (aliased(r.buffer) && writes_other(other, r.buffer)) return true;
      }
    }
    return false;
  }

  // "{ a; b }" over the parameters; "{ }" when empty.
  std::string union_of(const std::vector<std::string>& parts) const {
    return fmt::format("{}{{ {} }}", param_list(), fmt::join(parts, "; "));
  }

  void add_param(const Dim& d) {
    if (d.is_static() || params_.contains(d.symbol_name())) return;
    std::string p = fmt::format("p{}", params_.size());
    params_[d.symbol_name()] = p;
    symbols_[p] = d.symbol_name();
  }

  // An extent in isl's notation: a number or a parameter.
  std::string extent(const Dim& d) const {
    return d.is_static() ? std::to_string(d.value()) : params_.at(d.symbol_name());
  }

  const Kernel& kernel_;
  int64_t min_shared_points_;                  // ScheduleOptions::min_shared_points
  bool chained_gathers_apart_;                 // ScheduleOptions::chained_gathers_apart
  std::vector<std::vector<int>> orders_;       // per statement, its iterators by band
  std::map<std::string, std::string> params_;  // symbol -> isl parameter
  std::map<std::string, std::string> symbols_; // isl parameter -> symbol
};

AstExpr convert_expr(const isl::ast_expr& e, const PolyModel& model) {
  AstExpr out;
  if (e.isa<isl::ast_expr_int>()) {
    out.kind = AstExpr::Kind::kInt;
    out.value = e.as<isl::ast_expr_int>().val().get_num_si();
    return out;
  }
  if (e.isa<isl::ast_expr_id>()) {
    out.kind = AstExpr::Kind::kId;
    out.id = model.symbol_of(e.as<isl::ast_expr_id>().id().name());
    return out;
  }
  auto op = e.as<isl::ast_expr_op>();
  out.kind = AstExpr::Kind::kOp;
  using O = AstExpr::Op;
  if (op.isa<isl::ast_expr_op_add>())
    out.op = O::kAdd;
  else if (op.isa<isl::ast_expr_op_sub>())
    out.op = O::kSub;
  else if (op.isa<isl::ast_expr_op_mul>())
    out.op = O::kMul;
  else if (op.isa<isl::ast_expr_op_minus>())
    out.op = O::kNeg;
  else if (op.isa<isl::ast_expr_op_min>())
    out.op = O::kMin;
  else if (op.isa<isl::ast_expr_op_max>())
    out.op = O::kMax;
  else if (op.isa<isl::ast_expr_op_fdiv_q>() || op.isa<isl::ast_expr_op_pdiv_q>())
    out.op = O::kFloorDiv;
  else if (op.isa<isl::ast_expr_op_pdiv_r>() || op.isa<isl::ast_expr_op_zdiv_r>())
    out.op = O::kRem;
  else if (op.isa<isl::ast_expr_op_le>())
    out.op = O::kLe;
  else if (op.isa<isl::ast_expr_op_lt>())
    out.op = O::kLt;
  else if (op.isa<isl::ast_expr_op_ge>())
    out.op = O::kGe;
  else if (op.isa<isl::ast_expr_op_gt>())
    out.op = O::kGt;
  else if (op.isa<isl::ast_expr_op_eq>())
    out.op = O::kEq;
  else if (op.isa<isl::ast_expr_op_and>() || op.isa<isl::ast_expr_op_and_then>())
    out.op = O::kAnd;
  else if (op.isa<isl::ast_expr_op_or>() || op.isa<isl::ast_expr_op_or_else>())
    out.op = O::kOr;
  else
    throw std::runtime_error("unsupported isl AST expression: " + e.to_C_str());
  for (unsigned i = 0; i < op.n_arg(); ++i)
    out.args.push_back(convert_expr(op.arg(static_cast<int>(i)), model));
  return out;
}

// "mark" applies to the loop named "marked" (a mark's own band), if isl generated one.
AstNode convert_node(const isl::ast_node& n, const PolyModel& model, AstNode::Mark mark,
                     const std::string& marked) {
  AstNode out;
  if (n.isa<isl::ast_node_block>()) {
    out.kind = AstNode::Kind::kBlock;
    isl::ast_node_list children = n.as<isl::ast_node_block>().children();
    for (unsigned i = 0; i < children.size(); ++i) {
      out.children.push_back(
          convert_node(children.at(static_cast<int>(i)), model, AstNode::Mark::kNone, ""));
    }
  } else if (n.isa<isl::ast_node_mark>()) {
    auto m = n.as<isl::ast_node_mark>();
    std::string name = m.id().name();
    size_t space = name.find(' ');
    std::string kind = name.substr(0, space);
    return convert_node(m.node(), model,
                        kind == "parallel"    ? AstNode::Mark::kParallel
                        : kind == "reduction" ? AstNode::Mark::kReduction
                                              : AstNode::Mark::kNone,
                        space == std::string::npos ? "" : name.substr(space + 1));
  } else if (n.isa<isl::ast_node_for>()) {
    auto f = n.as<isl::ast_node_for>();
    out.kind = AstNode::Kind::kFor;
    out.iterator = f.iterator().as<isl::ast_expr_id>().id().name();
    out.init = convert_expr(f.init(), model);
    out.cond = convert_expr(f.cond(), model);
    out.step = f.inc().as<isl::ast_expr_int>().val().get_num_si();
    out.mark = out.iterator == marked ? mark : AstNode::Mark::kNone;
    out.children.push_back(convert_node(f.body(), model, AstNode::Mark::kNone, ""));
  } else if (n.isa<isl::ast_node_if>()) {
    auto i = n.as<isl::ast_node_if>();
    out.kind = AstNode::Kind::kIf;
    out.cond = convert_expr(i.cond(), model);
    out.children.push_back(convert_node(i.then_node(), model, AstNode::Mark::kNone, ""));
    if (i.has_else_node())
      out.children.push_back(convert_node(i.else_node(), model, AstNode::Mark::kNone, ""));
  } else if (n.isa<isl::ast_node_user>()) {
    auto call = n.as<isl::ast_node_user>().expr().as<isl::ast_expr_op>();
    out.kind = AstNode::Kind::kCall;
    out.statement = std::stoi(call.arg(0).as<isl::ast_expr_id>().id().name().substr(1));
    for (unsigned a = 1; a < call.n_arg(); ++a)
      out.args.push_back(convert_expr(call.arg(static_cast<int>(a)), model));
  } else {
    throw std::runtime_error("unsupported isl AST node");
  }
  return out;
}

template <typename T> std::string to_text(const T& isl_object) {
  std::ostringstream out;
  out << isl_object;
  return out.str();
}

Result<ScheduledKernel> schedule_in(const isl::ctx& ctx, const Kernel& k,
                                    const ScheduleOptions& options) {
  PolyModel model(k, options);
  // Accesses and order hold only on the iteration domains; unbounded, isl's last-writer
  // search has no optimum.
  isl::union_set domain(ctx, model.all_domains());
  auto relation = [&](const std::string& text) {
    return isl::union_map(ctx, text).intersect_domain(domain);
  };
  isl::union_map reads = relation(model.reads());
  isl::union_map must_writes = relation(model.writes(PolyModel::WriteKind::kMust));
  isl::union_map may_writes = relation(model.writes(PolyModel::WriteKind::kMay));
  isl::union_map writes = must_writes.unite(may_writes);
  isl::union_map order = relation(model.sequential_schedule());
  // A may-write (indirect) never hides an earlier write from a later access.
  isl::union_map flow = isl::union_access_info(reads)
                            .set_must_source(must_writes)
                            .set_may_source(may_writes)
                            .set_schedule_map(order)
                            .compute_flow()
                            .may_dependence();
  isl::union_map output = isl::union_access_info(writes)
                              .set_must_source(must_writes)
                              .set_may_source(may_writes)
                              .set_schedule_map(order)
                              .compute_flow()
                              .may_dependence();
  isl::union_map anti = isl::union_access_info(writes)
                            .set_may_source(reads)
                            .set_schedule_map(order)
                            .compute_flow()
                            .may_dependence();
  isl::union_map views = relation(model.view_dependences()).intersect_range(domain);
  isl::union_map deps = flow.unite(output).unite(anti).unite(views);
  if (options.outputs_innermost) model.order_outputs_innermost(deps);
  isl::schedule schedule(ctx, model.schedule_tree(deps));
  isl::ast_node ast = isl::ast_build(ctx).node_from(schedule);
  ScheduledKernel out;
  out.loops = convert_node(ast, model, AstNode::Mark::kNone, "");
  out.schedule_tree = to_text(schedule);
  out.dependences = to_text(deps);
  return out;
}

} // namespace

Result<ScheduledKernel> schedule_kernel(const Kernel& k, const ScheduleOptions& options) {
  WEFT_RETURN_IF_ERROR(kernel::verify_kernel(k));
  IslContext ctx;
  try {
    return schedule_in(ctx.get(), k, options);
  } catch (const std::exception& e) {
    return Status::error(
        fmt::format("internal error: scheduling kernel {} with isl: {}", k.name, e.what()));
  }
}

} // namespace weft::poly
