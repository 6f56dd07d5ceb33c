#include "weft/codegen/emit_c.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "weft/codegen/dialect.h"
#include "weft/codegen/emitter.h"

namespace weft::codegen {

namespace {

std::string literal(double v, DType t) {
  // An infinite constant of an integer or bool type is a max's or min's identity (lowering
  // writes combine_identity): the type's extremes stand for it.
  if (!dtype_is_float(t) && std::isinf(v))
    return identity_literal(v < 0 ? kernel::Combine::kMax : kernel::Combine::kMin, t);
  if (t == DType::kBool) return v != 0 ? "true" : "false";
  if (!dtype_is_float(t))
    return fmt::format("static_cast<{}>({})", compute_type(t), static_cast<int64_t>(v));
  std::string_view type = compute_type(t);
  if (std::isnan(v)) return fmt::format("static_cast<{}>(NAN)", type);
  if (std::isinf(v)) return fmt::format("static_cast<{}>({}INFINITY)", type, v < 0 ? "-" : "");
  std::string s = type == "float" ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return type == "float" ? s + "f" : s;
}

} // namespace

std::string identity_literal(kernel::Combine c, DType t) {
  std::string_view type = compute_type(t);
  if (dtype_is_float(t) || c == kernel::Combine::kSum || c == kernel::Combine::kProd)
    return literal(kernel::combine_identity(c), t);
  // Spelled as numbers: CUDA has no <limits>.
  bool lowest = c == kernel::Combine::kMax || c == kernel::Combine::kShiftMax;
  if (t == DType::kBool) return lowest ? "false" : "true";
  if (dtype_is_unsigned_int(t))
    return lowest ? fmt::format("static_cast<{}>(0)", type)
                  : fmt::format("static_cast<{}>(~0ull)", type);
  int bits = 8 * dtype_size(t);
  uint64_t max = (uint64_t{1} << (bits - 1)) - 1;
  return lowest ? fmt::format("static_cast<{}>(-{}ll - 1)", type, max)
                : fmt::format("static_cast<{}>({}ll)", type, max);
}

Emitter::Emitter(const Kernel& k, const DialectTable& d, const CpuSchedule& schedule)
    : k_(k), d_(d), schedule_(schedule) {
  int64_t work = 0;
  bool known = true;
  for (const Statement& s : k.statements) {
    int64_t n = 1;
    for (const Dim& dim : s.domain) {
      if (dim.is_static())
        n *= dim.value();
      else
        known = false;
    }
    work = std::max(work, n);
  }
  small_ = known && work < schedule.min_parallel_work;
  std::vector<std::string> symbols = kernel_symbols(k);
  for (size_t i = 0; i < symbols.size(); ++i)
    symbol_names_[symbols[i]] = fmt::format("s{}", i);
  // A ROW reduction's rows are its innermost loop: where they have one symbolic extent, loop
  // overhead that a known trip count removes (full unrolling, no tails) is paid per row.
  std::set<std::string> rows;
  for (const Statement& s : k.statements) {
    int last = static_cast<int>(s.domain.size()) - 1;
    bool kept = false;
    for (int i = 0; i < last; ++i)
      kept |= !s.is_reduced(i);
    if (s.combine != kernel::Combine::kNone && kept && s.is_reduced(last) &&
        !s.domain.back().is_static())
      rows.insert(s.domain.back().symbol_name());
  }
  if (d_.cpu_reduction_strategies && rows.size() == 1 &&
      symbol_names_.contains(*rows.begin()) && !row_variants(schedule.max_row_variant).empty())
    row_symbol_ = symbol_names_.at(*rows.begin());
}

// Without a row symbol, one function. With one, a template over its extent (0: read at run
// time) and the function, which runs the micro-kernel for the run's extent where there is one
// (DietCode's dispatch, with the extent as the micro-kernel's parameter).
std::string Emitter::function(const AstNode& loops) {
  std::string name = "weft_" + k_.name, signature = "(void* const* buffers, const int64_t* extents)";
  std::string out = fmt::format("// kernel {}\n", k_.name);
  if (row_symbol_.empty()) {
    out += header(fmt::format("{}void {}{}", d_.function_prefix, name, signature));
    emit_node(loops, 1, false, out);
    return out + "}\n";
  }
  out += header(fmt::format("template <int64_t kExtent>\nstatic void {}_at{}", name, signature),
                row_symbol_);
  emit_node(loops, 1, false, out);
  out += fmt::format("}}\n{}void {}{} {{\n  switch (extents[{}]) {{  // micro-kernels\n",
                     d_.function_prefix, name, signature, row_symbol_.substr(1));
  for (int64_t e : row_variants(schedule_.max_row_variant))
    out += fmt::format("    case {0}: return {1}_at<{0}>(buffers, extents);\n", e, name);
  return out + fmt::format("    default: return {}_at<0>(buffers, extents);\n  }}\n}}\n", name);
}

std::string Emitter::header(const std::string& signature, const std::string& fixed) const {
  std::string out = signature + " {\n";
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const kernel::Buffer& b = k_.buffers[i];
    if (contracted_.contains(static_cast<int>(i))) continue; // a local array
    const char* qual = b.role == kernel::BufferRole::kInput ? "const " : "";
    out += fmt::format("  {0}{1}* {4}b{2} = static_cast<{0}{1}*>(buffers[{2}]);  // {3}\n", qual,
                       storage_type(b.dtype), i, b.name, b.aliased() ? "" : "__restrict__ ");
  }
  for (const auto& [symbol, name] : symbol_names_) {
    std::string value = fmt::format("extents[{}]", name.substr(1));
    if (name == fixed) value = fmt::format("kExtent != 0 ? kExtent : {}", value);
    out += fmt::format("  const int64_t {} = {};  // {}\n", name, value, symbol);
  }
  out += "  (void)extents;\n";
  return out;
}

std::vector<std::string> Emitter::call_iters(const AstNode& call) const {
  std::vector<std::string> iters;
  for (const AstExpr& e : call.args)
    iters.push_back(ast_expr(e));
  return iters;
}

std::string Emitter::ast_expr(const AstExpr& e) const {
  switch (e.kind) {
    case AstExpr::Kind::kInt: return std::to_string(e.value);
    case AstExpr::Kind::kId: {
      auto it = symbol_names_.find(e.id);
      return it == symbol_names_.end() ? e.id : it->second;
    }
    case AstExpr::Kind::kOp: break;
  }
  auto a = [&](size_t i) { return ast_expr(e.args[i]); };
  using O = AstExpr::Op;
  switch (e.op) {
    case O::kNeg: return "(-" + a(0) + ")";
    case O::kMin: return fmt::format("weft_imin({}, {})", a(0), a(1));
    case O::kMax: return fmt::format("weft_imax({}, {})", a(0), a(1));
    case O::kFloorDiv: return fmt::format("weft_floord({}, {})", a(0), a(1));
    default: break;
  }
  static const std::map<O, const char*> kInfix = {{O::kAdd, "+"},  {O::kSub, "-"}, {O::kMul, "*"},
                                                  {O::kRem, "%"},  {O::kLe, "<="}, {O::kLt, "<"},
                                                  {O::kGe, ">="},  {O::kGt, ">"},  {O::kEq, "=="},
                                                  {O::kAnd, "&&"}, {O::kOr, "||"}};
  return fmt::format("({} {} {})", a(0), kInfix.at(e.op), a(1));
}

std::string Emitter::dim_text(const Dim& d) const {
  return d.is_static() ? std::to_string(d.value()) : symbol_names_.at(d.symbol_name());
}

std::string Emitter::extent_value(const kernel::ExprNode& e) const {
  return fmt::format("static_cast<{}>({})", compute_type(e.dtype), dim_text(e.extent));
}

std::string Emitter::offset(const kernel::Access& a, const std::vector<std::string>& iters) const {
  const Shape& shape = k_.buffers[static_cast<size_t>(a.buffer)].shape;
  std::vector<std::string> terms;
  size_t dims = a.index.size(), flat = flattened_ ? flattened_->iterators.size() : 0;
  for (size_t j = 0; flat > 0 && j < flattened_->iterators.size(); ++j) {
    size_t d = dims - flat + j;
    const AffineExpr& e = a.index[d];
    bool same = dims >= flat && !a.indirect_at(static_cast<int>(d)) && e.constant == 0 &&
                e.terms.size() == 1 && e.terms[0].second == 1 &&
                iters[static_cast<size_t>(e.terms[0].first)] == flattened_->iterators[j] &&
                shape[d].is_static() && shape[d].value() == flattened_->extents[j];
    if (!same) flat = 0;
  }
  if (flat > 0) dims -= flat; // the last dims: the flat index, after the others
  for (size_t d = 0; d < dims; ++d) {
    if (dropped(a.buffer, d)) continue;
    const AffineExpr& e = a.index[d];
    std::vector<std::string> parts;
    if (const kernel::IndirectIndex* ind = a.indirect_at(static_cast<int>(d))) {
      parts.push_back(fmt::format("{}(t{}, {})",
                                  ind->wrap == kernel::IndexWrap::kClamp ? "weft_clamp_index"
                                                                         : "weft_wrap_index",
                                  ind->node, dim_text(shape[d])));
    }
    for (auto [iter, coeff] : e.terms) {
      parts.push_back(coeff == 1 ? iters[static_cast<size_t>(iter)]
                                 : fmt::format("{} * {}", coeff, iters[static_cast<size_t>(iter)]));
    }
    if (e.constant != 0) parts.push_back(std::to_string(e.constant));
    if (parts.empty()) continue;
    std::string index = parts.size() == 1 ? parts[0] : fmt::format("({})", fmt::join(parts, " + "));
    std::vector<std::string> stride;
    for (size_t s = d + 1; s < shape.size(); ++s) {
      if (!(shape[s].is_static() && shape[s].value() == 1) && !dropped(a.buffer, s))
        stride.push_back(dim_text(shape[s]));
    }
    terms.push_back(stride.empty() ? index
                                   : fmt::format("{} * {}", index, fmt::join(stride, " * ")));
  }
  if (flat > 0) terms.push_back(flattened_->index);
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

std::string Emitter::load(const kernel::Access& a, const std::vector<std::string>& iters) const {
  std::string ref = fmt::format("b{}[{}]", a.buffer, offset(a, iters));
  DType t = k_.buffers[static_cast<size_t>(a.buffer)].dtype;
  if (auto r = registers_.find(ref); r != registers_.end()) { // a row in registers (CUDA)
    if (filled_.insert(ref).second) return fmt::format("({} = {})", r->second, ref);
    return r->second;
  }
  return from_storage(t, ref);
}

std::string Emitter::store_value(DType t, const std::string& v) const { return to_storage(t, v); }

std::vector<bool> Emitter::blended_selects(const Statement& s) const {
  std::vector<bool> feeds(s.expr.size(), false), blends(s.expr.size(), false);
  if (!d_.cpu_reduction_strategies) return blends;
  for (size_t n = s.expr.size(); n-- > 0;) {
    const kernel::ExprNode& e = s.expr[n];
    bool selecting = e.op == kernel::ExprOp::kExp || e.op == kernel::ExprOp::kShiftedExp ||
                     e.op == kernel::ExprOp::kLog || e.op == kernel::ExprOp::kSigmoid ||
                     e.op == kernel::ExprOp::kErf;
    if (!feeds[n] && !(selecting && e.dtype == DType::kF32)) continue;
    for (int o : e.operands)
      feeds[static_cast<size_t>(o)] = true;
  }
  for (size_t n = 0; n < s.expr.size(); ++n) {
    const kernel::ExprNode& e = s.expr[n];
    bool select = e.op == kernel::ExprOp::kSelect || e.op == kernel::ExprOp::kMax ||
                  e.op == kernel::ExprOp::kMin || e.op == kernel::ExprOp::kExp ||
                  e.op == kernel::ExprOp::kLog;
    blends[n] = feeds[n] && select && e.dtype == DType::kF32;
  }
  return blends;
}

int Emitter::sigmoid_factor(const Statement& s, size_t n, int statement) const {
  const kernel::ExprNode& e = s.expr[n];
  if (e.op != kernel::ExprOp::kMul || e.dtype != DType::kF32 || e.operands.size() != 2) return -1;
  for (int g : e.operands) {
    const kernel::ExprNode& f = s.expr[static_cast<size_t>(g)];
    if (f.op != kernel::ExprOp::kSigmoid || f.dtype != DType::kF32 ||
        e.operands[0] == e.operands[1] || hoisted_.contains(g) || staged_.contains({statement, g}))
      continue;
    size_t readers = 0;
    for (const kernel::ExprNode& r : s.expr)
      readers += static_cast<size_t>(std::count(r.operands.begin(), r.operands.end(), g));
    if (readers == 1) return g;
  }
  return -1;
}

void Emitter::emit_statement(const AstNode& call, int depth, std::string& out,
                             const std::string& accumulator) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::vector<std::string> iters = call_iters(call);
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  out += fmt::format("{}{{  // {}\n", pad, s.name);
  std::vector<bool> blends = blended_selects(s);
  for (size_t n = 0; n < s.expr.size(); ++n) {
    const kernel::ExprNode& e = s.expr[n];
    std::string value;
    if (auto h = hoisted_.find(static_cast<int>(n)); h != hoisted_.end()) {
      value = h->second;
    } else if (auto v = staged_.find({call.statement, static_cast<int>(n)}); v != staged_.end()) {
      value = v->second;
    } else if (e.op == kernel::ExprOp::kLoad) {
      value = load(s.reads[static_cast<size_t>(e.access)], iters);
    } else if (e.op == kernel::ExprOp::kConstant) {
      value = literal(e.value, e.dtype);
    } else if (e.op == kernel::ExprOp::kExtent) {
      value = extent_value(e);
    } else if (e.op == kernel::ExprOp::kIterator) {
      value = fmt::format("static_cast<int64_t>({})", iters[static_cast<size_t>(e.access)]);
    } else if (auto r = reciprocals_.find({call.statement, static_cast<int>(n)});
               r != reciprocals_.end()) {
      value = fmt::format("weft_div_by(t{}, t{}, {})", e.operands[0], e.operands[1], r->second);
    } else {
      std::vector<std::string> args;
      for (int o : e.operands)
        args.push_back(fmt::format("t{}", o));
      const kernel::ExprNode* bound =
          e.operands.size() == 2 ? &s.expr[static_cast<size_t>(e.operands[1])] : nullptr;
      bool clamps = (e.op == kernel::ExprOp::kMax || e.op == kernel::ExprOp::kMin) &&
                    dtype_is_float(e.dtype) && bound && bound->op == kernel::ExprOp::kConstant &&
                    !std::isnan(bound->value);
      if (int g = sigmoid_factor(s, n, call.statement); g >= 0) {
        int a = e.operands[0] == g ? e.operands[1] : e.operands[0];
        value = fmt::format("(t{} / (1 + weft_exp(-t{})))", a,
                            s.expr[static_cast<size_t>(g)].operands[0]);
      } else if (blends[n] && (e.op == kernel::ExprOp::kExp || e.op == kernel::ExprOp::kLog)) {
        value = fmt::format("weft_{}_blended({})", e.op == kernel::ExprOp::kExp ? "exp" : "log",
                            args[0]);
      } else if (blends[n] && e.op == kernel::ExprOp::kSelect) {
        value = fmt::format("weft_blend({}, {}, {})", args[0], args[1], args[2]);
      } else if (blends[n] && clamps) {
        value = fmt::format("weft_blend({1} {2} {0}, {1}, {0})", args[0], args[1],
                            e.op == kernel::ExprOp::kMax ? ">=" : "<=");
      } else {
        value = clamps ? bound_by_constant(e.op, args[0], args[1]) : apply_op(e.op, e.dtype, args);
      }
    }
    out += fmt::format("{}  const {} t{} = {};\n", pad, compute_type(e.dtype), n, value);
  }
  DType t = k_.buffers[static_cast<size_t>(s.write.buffer)].dtype;
  std::string result = fmt::format("t{}", s.expr.size() - 1);
  std::string old = accumulator.empty() ? load(s.write, iters) : accumulator;
  result = combine_expr(s.combine, old, result);
  if (!accumulator.empty()) {
    out += fmt::format("{}  {} = {};\n{}}}\n", pad, accumulator, result, pad);
    return;
  }
  std::string ref = fmt::format("b{}[{}]", s.write.buffer, offset(s.write, iters));
  if (auto r = registers_.find(ref); r != registers_.end()) { // a row in registers (CUDA)
    filled_.insert(ref);
    out += fmt::format("{}  {} = {};\n", pad, r->second, result);
    auto last = last_store_.find(ref);
    if (last == last_store_.end() || last->second != call.statement) {
      out += pad + "}\n"; // a later statement stores the row's final value
      return;
    }
    result = r->second;
  }
  out += fmt::format("{}  {} = {};\n{}}}\n", pad, ref, store_value(t, result), pad);
}

AstExpr Emitter::substitute(AstExpr e, const std::string& id, const AstExpr& by) {
  if (e.kind == AstExpr::Kind::kId && e.id == id) return by;
  for (AstExpr& a : e.args)
    a = substitute(a, id, by);
  return e;
}

std::vector<bool> Emitter::invariant_nodes(const AstNode& call,
                                           const std::vector<std::string>& moving,
                                           const std::set<int>& written) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::vector<bool> fixed(s.expr.size(), false);
  for (size_t i = 0; i < s.expr.size(); ++i) {
    const kernel::ExprNode& e = s.expr[i];
    if (e.op == kernel::ExprOp::kConstant || e.op == kernel::ExprOp::kExtent) {
      fixed[i] = true;
    } else if (e.op == kernel::ExprOp::kLoad) {
      const kernel::Access& a = s.reads[static_cast<size_t>(e.access)];
      bool moves = std::any_of(a.index.begin(), a.index.end(), [&](const AffineExpr& x) {
        return std::any_of(x.terms.begin(), x.terms.end(), [&](const auto& term) {
          return std::any_of(moving.begin(), moving.end(), [&](const std::string& it) {
            return mentions(call.args[static_cast<size_t>(term.first)], it);
          });
        });
      });
      fixed[i] = !moves && a.indirect.empty() && !written.count(a.buffer);
    } else if (e.op != kernel::ExprOp::kIterator && !e.operands.empty()) {
      fixed[i] = std::all_of(e.operands.begin(), e.operands.end(),
                             [&](int o) { return fixed[static_cast<size_t>(o)]; });
    }
  }
  return fixed;
}

std::string Emitter::invariant_value(const AstNode& call, size_t node,
                                     const std::vector<std::string>& values) const {
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  const kernel::ExprNode& e = s.expr[node];
  if (e.op == kernel::ExprOp::kConstant) return literal(e.value, e.dtype);
  if (e.op == kernel::ExprOp::kExtent) return extent_value(e);
  if (e.op == kernel::ExprOp::kLoad) {
    return load(s.reads[static_cast<size_t>(e.access)], call_iters(call));
  }
  std::vector<std::string> args;
  for (int o : e.operands)
    args.push_back(values[static_cast<size_t>(o)]);
  return apply_op(e.op, e.dtype, args);
}

std::string Emitter::hoist_reciprocals(const AstNode& body, std::vector<std::string> moving,
                                       int depth) const {
  std::vector<const AstNode*> calls;
  std::function<void(const AstNode&)> visit = [&](const AstNode& n) {
    if (n.kind == AstNode::Kind::kFor) moving.push_back(n.iterator);
    if (n.kind == AstNode::Kind::kCall) calls.push_back(&n);
    for (const AstNode& c : n.children)
      visit(c);
  };
  visit(body);
  std::set<int> written;
  for (const AstNode* call : calls) {
    const Statement& s = k_.statements[static_cast<size_t>(call->statement)];
    written.insert(s.write.buffer);
    if (k_.buffers[static_cast<size_t>(s.write.buffer)].aliased()) return ""; // views share memory
  }
  std::string pad(static_cast<size_t>(2 * depth), ' '), out;
  for (const AstNode* call : calls) {
    const Statement& s = k_.statements[static_cast<size_t>(call->statement)];
    std::vector<bool> fixed = invariant_nodes(*call, moving, written);
    std::vector<std::string> values(s.expr.size());
    for (size_t i = 0; i < s.expr.size(); ++i) {
      if (fixed[i]) values[i] = "(" + invariant_value(*call, i, values) + ")";
      const kernel::ExprNode& e = s.expr[i];
      if (e.op != kernel::ExprOp::kDiv || compute_type(e.dtype) != "float" || fixed[i] ||
          !fixed[static_cast<size_t>(e.operands[1])])
        continue;
      std::string name = fmt::format("weft_rcp{}_{}", call->statement, i);
      reciprocals_[{call->statement, static_cast<int>(i)}] = name;
      out += fmt::format("{}const float {} = weft_reciprocal({});\n", pad, name,
                         values[static_cast<size_t>(e.operands[1])]);
    }
  }
  return out;
}

bool Emitter::emit_hoisted_loop(const AstNode& n, int depth, std::string& out) const {
  const AstNode& call = n.children[0];
  const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
  std::string pad(static_cast<size_t>(2 * depth), ' '), loads;
  // (A store can change a load only through the same buffer, or when the written buffer is a
  // view that shares memory with another.)
  if (k_.buffers[static_cast<size_t>(s.write.buffer)].aliased()) return false;
  std::vector<bool> fixed = invariant_nodes(call, {n.iterator}, {s.write.buffer});
  std::vector<std::string> invariant(s.expr.size()); // the value, for nodes that do not move
  for (size_t i = 0; i < s.expr.size(); ++i) {
    const kernel::ExprNode& e = s.expr[i];
    if (!fixed[i]) continue;
    if (e.op == kernel::ExprOp::kConstant || e.op == kernel::ExprOp::kExtent) {
      invariant[i] = invariant_value(call, i, invariant);
      continue;
    }
    // Loads that do not move, and ops on them alone (sqrt(var + eps) in a normalization),
    // are computed once.
    std::string value = invariant_value(call, i, invariant);
    invariant[i] = hoisted_[static_cast<int>(i)] = fmt::format("weft_h{}", i);
    loads += fmt::format("{}  const {} weft_h{} = {};\n", pad, compute_type(e.dtype), i, value);
  }
  if (hoisted_.empty()) return false;
  out += fmt::format(
      "{}if ({}) {{  // loads (and ops on them) that do not move with {} are hoisted\n{}", pad,
      ast_expr(substitute(n.cond, n.iterator, n.init)), n.iterator, loads);
  emit_simd_loop(n, call, depth + 1, out);
  out += pad + "}\n";
  hoisted_.clear();
  return true;
}

bool Emitter::packs_tiny_rows(const AstNode& n) const {
  if (!d_.cpu_reduction_strategies) return false;
  bool any = false;
  for (const AstNode* item : items_of(n.children[0])) {
    if (item->kind == AstNode::Kind::kCall) continue;
    const AstNode* call =
        item->kind == AstNode::Kind::kFor ? register_reduction(k_, *item) : nullptr;
    std::optional<int64_t> trip = call ? trip_bound(k_, *item, *call) : std::nullopt;
    if (!trip || *trip > kTinyRow) return false;
    any = true;
  }
  return any;
}

void Emitter::emit_node(const AstNode& n, int depth, bool in_loop, std::string& out) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  switch (n.kind) {
    case AstNode::Kind::kBlock:
      out += local_arrays(n, depth);
      for (const AstNode& c : n.children) {
        emit_node(c, depth, in_loop, out);
        if (!row_.iterator.empty()) note_row_accesses(c);
      }
      break;
    case AstNode::Kind::kFor: {
      // The inner loop of a collapse(2) stays as it is, and owns the fence.
      bool collapsed_inner = std::exchange(collapsing_, false);
      std::optional<AstNode> loop = in_loop && !collapsed_inner ? coalesced(n) : std::nullopt;
      if (loop) {
        out += fmt::format("{}// {} and {} as one loop\n", pad, n.iterator, loop->iterator);
        emit_node(*loop, depth, in_loop, out);
        break;
      }
      if (emit_cpu_strategy(n, depth, in_loop, out)) break;
      if (in_loop && emit_tap_lanes(n, depth, out)) break;
      if (!collapsed_inner && emit_transposing_tiles(n, depth, in_loop, out)) break;
      if (const AstNode* call = register_reduction(k_, n)) {
        emit_register_reduction(n, *call, depth, out);
        break;
      }
      // A nest of little work (a squeeze-excitation's few hundred products between two
      // passes over an image) runs on this thread: a parallel region costs about 1.3 us.
      // Such loops, and those of a small kernel, keep their SIMD lanes.
      std::optional<int64_t> work = in_loop ? std::nullopt : nest_work(n);
      bool top = n.mark == AstNode::Mark::kParallel && !in_loop;
      bool one_thread = top && (small_ || (work && *work < schedule_.min_parallel_work));
      bool parallel = top && !one_thread;
      bool packed = top && packs_tiny_rows(n);
      if (packed) {
        out += fmt::format("{}{}  // tiny rows: vectorized across rows\n", pad,
                           parallel ? d_.parallel_for_simd : d_.simd_for);
      } else if (parallel && !d_.parallel_for.empty()) {
        collapsing_ = collapses(n);
        out += fmt::format("{}{}\n", pad, collapsing_ ? d_.parallel_for_2 : d_.parallel_for);
      }
      if (std::vector<const AstNode*> items = tiny_inner_items(n);
          !items.empty() && in_loop && !collapsed_inner && !d_.simd_for.empty()) {
        out +=
            fmt::format("{0}{1}  // around tiny loops, unrolled\n{0}for (int64_t {2} = {3}; {4}; "
                        "{2} += {5}) {{\n",
                        pad, d_.simd_for, n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step);
        for (const AstNode* item : items) {
          if (item->kind == AstNode::Kind::kCall) {
            emit_statement(*item, depth + 1, out);
            continue;
          }
          out += fmt::format("{0}  #pragma GCC unroll {1}\n{0}  for (int64_t {2} = {3}; {4}; {2} "
                             "+= 1) {{\n",
                             pad, *loop_range(*item)->static_extent(), item->iterator,
                             ast_expr(item->init), ast_expr(item->cond));
          emit_statement(item->children[0], depth + 2, out);
          out += pad + "  }\n";
        }
        out += pad + "}\n";
        break;
      }
      // An innermost loop that carries no dependence (isl proved it) may run in SIMD lanes.
      bool simd = n.mark == AstNode::Mark::kParallel && (in_loop || one_thread) &&
                  !has_loop(n.children[0]) && !d_.simd_for.empty();
      if (simd && n.children[0].kind == AstNode::Kind::kCall) {
        if (emit_hoisted_loop(n, depth, out)) break;
        emit_simd_loop(n, n.children[0], depth, out);
        break;
      }
      if (simd && n.children[0].kind == AstNode::Kind::kBlock &&
          local_arrays(n.children[0], depth + 1).empty() &&
          emit_half_blocks(n, items_of(n.children[0]), "", depth, out)) {
        if (!row_.iterator.empty()) note_row_accesses(n.children[0]);
        break;
      }
      if (simd) out += fmt::format("{}{}\n", pad, d_.simd_for);
      out += fmt::format("{0}for (int64_t {1} = {2}; {3}; {1} += {4}) {{{5}\n", pad, n.iterator,
                         ast_expr(n.init), ast_expr(n.cond), n.step,
                         n.mark == AstNode::Mark::kReduction ? "  // reduction" : "");
      // A parallel loop around a block: a row loop whose passes may prefetch the next row.
      RowLoop outer = row_;
      if (n.mark == AstNode::Mark::kParallel && n.children[0].kind == AstNode::Kind::kBlock)
        row_ = {n.iterator, {}, {}, false};
      packing_ = packed;
      // Streaming stores under a top-level loop (the inner one of two collapsed) are fenced
      // once per iteration of it.
      StreamFence fence = fence_;
      bool owner = (!in_loop && !collapsing_) || collapsed_inner;
      if (owner) fence_ = {true, false};
      emit_node(n.children[0], depth + 1, true, out);
      if (owner && fence_.streamed) out += pad + "  weft_stream_fence();\n";
      if (owner) fence_ = fence;
      packing_ = false;
      row_ = outer;
      out += pad + "}\n";
      break;
    }
    case AstNode::Kind::kIf:
      out += fmt::format("{}if ({}) {{\n", pad, ast_expr(n.cond));
      emit_node(n.children[0], depth + 1, in_loop, out);
      if (n.children.size() > 1) {
        out += pad + "} else {\n";
        emit_node(n.children[1], depth + 1, in_loop, out);
      }
      out += pad + "}\n";
      break;
    case AstNode::Kind::kCall: emit_statement(n, depth, out); break;
  }
}

std::vector<std::string> kernel_symbols(const Kernel& k) {
  std::set<std::string> symbols;
  for (const kernel::Buffer& b : k.buffers) {
    for (const Dim& d : b.shape) {
      if (!d.is_static()) symbols.insert(d.symbol_name());
    }
  }
  for (const Statement& s : k.statements) {
    for (const Dim& d : s.domain) {
      if (!d.is_static()) symbols.insert(d.symbol_name());
    }
    for (const kernel::ExprNode& e : s.expr) {
      if (e.op == kernel::ExprOp::kExtent && !e.extent.is_static())
        symbols.insert(e.extent.symbol_name());
    }
  }
  return {symbols.begin(), symbols.end()};
}

namespace {

const DialectTable& table_of(Dialect dialect) {
  return dialect == Dialect::kCuda ? cuda_dialect() : cpu_dialect();
}

} // namespace

std::string emit_prelude(Dialect dialect) { return std::string(table_of(dialect).prelude); }

Result<EmittedFunction> emit_function(const Kernel& k, const poly::AstNode& loops,
                                      Dialect dialect, const CpuSchedule& schedule,
                                      const CudaOptions& cuda) {
  WEFT_RETURN_IF_ERROR(kernel::verify_kernel(k));
  Emitter emitter(k, table_of(dialect), schedule);
  if (dialect == Dialect::kCpu) {
    emitter.find_contractions(loops);
    std::string source = emitter.function(loops);
    if (emitter.contractions_scoped(source)) return EmittedFunction{std::move(source), {}};
    return EmittedFunction{Emitter(k, table_of(dialect), schedule).function(loops), {}};
  }
  std::string source = emitter.cuda_function(loops, cuda);
  return EmittedFunction{std::move(source), emitter.launches()};
}

Result<std::string> emit_kernel(const Kernel& k, const poly::AstNode& loops, Dialect dialect,
                                const CpuSchedule& schedule, const CudaOptions& cuda) {
  WEFT_ASSIGN_OR_RETURN(EmittedFunction function, emit_function(k, loops, dialect, schedule, cuda));
  return emit_prelude(dialect) + "\n" + function.source;
}

} // namespace weft::codegen
