#include "weft/codegen/emit_c.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/codegen/cpu_strategy.h"
#include "weft/codegen/cuda_strategy.h"
#include "weft/codegen/dialect.h"

namespace weft::codegen {

namespace {

using kernel::AffineExpr;
using kernel::Kernel;
using kernel::Statement;
using poly::AstExpr;
using poly::AstNode;

std::string literal(double v, DType t) {
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

// The identity of "c" in the compute type of "t": for integers, the type's extremes stand
// for -inf and +inf.
std::string identity_literal(kernel::Combine c, DType t) {
  std::string_view type = compute_type(t);
  if (dtype_is_float(t) || c == kernel::Combine::kSum || c == kernel::Combine::kProd)
    return literal(kernel::combine_identity(c), t);
  // Spelled as numbers: CUDA has no <limits>.
  bool lowest = c == kernel::Combine::kMax;
  if (t == DType::kBool) return lowest ? "false" : "true";
  if (dtype_is_unsigned_int(t))
    return lowest ? fmt::format("static_cast<{}>(0)", type)
                  : fmt::format("static_cast<{}>(~0ull)", type);
  int bits = 8 * dtype_size(t);
  uint64_t max = (uint64_t{1} << (bits - 1)) - 1;
  return lowest ? fmt::format("static_cast<{}>(-{}ll - 1)", type, max)
                : fmt::format("static_cast<{}>({}ll)", type, max);
}

class Emitter {
public:
  Emitter(const Kernel& k, const DialectTable& d, const CpuSchedule& schedule)
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
  }

  std::string function(const AstNode& loops) {
    std::string out = header("weft_" + k_.name);
    emit_node(loops, 1, false, out);
    return out + "}\n";
  }

  // One __global__ function per top-level nest, launched in order on one stream (the order
  // is the barrier between nests): "weft_NAME_pI", each after a line "// launch FUNCTION
  // block=B grid=G" (G: 1, or "device", a persistent grid). The strategies are those of
  // cuda_strategy.h; a nest they do not cover runs on one thread.
  std::string cuda_function(const AstNode& loops, const CudaOptions& options) {
    std::vector<const AstNode*> parts;
    if (loops.kind == AstNode::Kind::kBlock) {
      for (const AstNode& c : loops.children)
        parts.push_back(&c);
    } else {
      parts.push_back(&loops);
    }
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

private:
  // "// kernel ...", the signature, and the buffer and extent locals.
  std::string header(const std::string& function_name) const {
    std::string out = fmt::format(
        "{}{}void {}(void* const* buffers, const int64_t* extents) {{\n",
        function_name == "weft_" + k_.name ? fmt::format("// kernel {}\n", k_.name) : "",
        d_.function_prefix, function_name);
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const kernel::Buffer& b = k_.buffers[i];
      const char* qual = b.role == kernel::BufferRole::kInput ? "const " : "";
      out += fmt::format("  {0}{1}* {4}b{2} = static_cast<{0}{1}*>(buffers[{2}]);  // {3}\n", qual,
                         storage_type(b.dtype), i, b.name, b.aliased ? "" : "__restrict__ ");
    }
    for (const auto& [symbol, name] : symbol_names_) {
      out +=
          fmt::format("  const int64_t {} = extents[{}];  // {}\n", name, name.substr(1), symbol);
    }
    out += "  (void)extents;\n";
    return out;
  }

  std::string ast_expr(const AstExpr& e) const {
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

  std::string dim_text(const Dim& d) const {
    return d.is_static() ? std::to_string(d.value()) : symbol_names_.at(d.symbol_name());
  }

  // Row-major offset of an access, with iterators replaced by "iters"; an indirect index is
  // the statement's value "t<node>", brought into the buffer by the prelude's helpers.
  std::string offset(const kernel::Access& a, const std::vector<std::string>& iters) const {
    const Shape& shape = k_.buffers[static_cast<size_t>(a.buffer)].shape;
    std::vector<std::string> terms;
    for (size_t d = 0; d < a.index.size(); ++d) {
      const AffineExpr& e = a.index[d];
      std::vector<std::string> parts;
      if (const kernel::IndirectIndex* ind = a.indirect_at(static_cast<int>(d))) {
        parts.push_back(fmt::format("{}(t{}, {})",
                                    ind->wrap == kernel::IndexWrap::kClamp ? "weft_clamp_index"
                                                                           : "weft_wrap_index",
                                    ind->node, dim_text(shape[d])));
      }
      for (auto [iter, coeff] : e.terms) {
        parts.push_back(coeff == 1
                            ? iters[static_cast<size_t>(iter)]
                            : fmt::format("{} * {}", coeff, iters[static_cast<size_t>(iter)]));
      }
      if (e.constant != 0) parts.push_back(std::to_string(e.constant));
      if (parts.empty()) continue;
      std::string index =
          parts.size() == 1 ? parts[0] : fmt::format("({})", fmt::join(parts, " + "));
      std::vector<std::string> stride;
      for (size_t s = d + 1; s < shape.size(); ++s) {
        if (!(shape[s].is_static() && shape[s].value() == 1)) stride.push_back(dim_text(shape[s]));
      }
      terms.push_back(stride.empty() ? index
                                     : fmt::format("{} * {}", index, fmt::join(stride, " * ")));
    }
    return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
  }

  std::string load(const kernel::Access& a, const std::vector<std::string>& iters) const {
    std::string ref = fmt::format("b{}[{}]", a.buffer, offset(a, iters));
    DType t = k_.buffers[static_cast<size_t>(a.buffer)].dtype;
    if (t == DType::kF16) return "weft_h2f(" + ref + ")";
    if (t == DType::kBF16) return "weft_bf2f(" + ref + ")";
    if (t == DType::kBool) return "(" + ref + " != 0)";
    return ref;
  }

  std::string store_value(DType t, const std::string& v) const {
    if (t == DType::kF16) return "weft_f2h(" + v + ")";
    if (t == DType::kBF16) return "weft_f2bf(" + v + ")";
    if (t == DType::kBool) return "static_cast<uint8_t>(" + v + ")";
    return v;
  }

  // With "accumulator" set, a combining statement combines into that local variable
  // instead of its write location.
  void emit_statement(const AstNode& call, int depth, std::string& out,
                      const std::string& accumulator = "") const {
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    std::vector<std::string> iters;
    for (const AstExpr& e : call.args)
      iters.push_back(ast_expr(e));
    std::string pad(static_cast<size_t>(2 * depth), ' ');
    out += fmt::format("{}{{  // {}\n", pad, s.name);
    for (size_t n = 0; n < s.expr.size(); ++n) {
      const kernel::ExprNode& e = s.expr[n];
      std::string value;
      if (auto h = hoisted_.find(static_cast<int>(n)); h != hoisted_.end()) {
        value = h->second;
      } else if (e.op == kernel::ExprOp::kLoad) {
        value = load(s.reads[static_cast<size_t>(e.access)], iters);
      } else if (e.op == kernel::ExprOp::kConstant) {
        value = literal(e.value, e.dtype);
      } else if (e.op == kernel::ExprOp::kIterator) {
        value = fmt::format("static_cast<int64_t>({})", iters[static_cast<size_t>(e.access)]);
      } else {
        std::vector<std::string> args;
        for (int o : e.operands)
          args.push_back(fmt::format("t{}", o));
        value = apply_op(e.op, e.dtype, args);
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
    out += fmt::format("{}  b{}[{}] = {};\n{}}}\n", pad, s.write.buffer, offset(s.write, iters),
                       store_value(t, result), pad);
  }

  static bool has_loop(const AstNode& n) {
    if (n.kind == AstNode::Kind::kFor) return true;
    return std::any_of(n.children.begin(), n.children.end(),
                       [](const AstNode& c) { return has_loop(c); });
  }

  // { acc = y[i]; for (...) acc = combine(acc, ...); y[i] = acc; } A sum may be
  // vectorized (reassociated); max and min stay in order, so that NaN propagates.
  void emit_register_reduction(const AstNode& n, const AstNode& call, int depth,
                               std::string& out) const {
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    std::vector<std::string> iters;
    for (const AstExpr& e : call.args)
      iters.push_back(ast_expr(e));
    DType t = k_.buffers[static_cast<size_t>(s.write.buffer)].dtype;
    std::string pad(static_cast<size_t>(2 * depth), ' ');
    out += fmt::format("{0}{{  // accumulate in a register\n{0}  {1} acc = {2};\n", pad,
                       compute_type(t), load(s.write, iters));
    if (s.combine == kernel::Combine::kSum && !d_.simd_sum.empty())
      out += fmt::format("{}  {}\n", pad, d_.simd_sum);
    out += fmt::format("{0}  for (int64_t {1} = {2}; {3}; {1} += {4}) {{  // reduction\n", pad,
                       n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step);
    emit_statement(call, depth + 2, out, "acc");
    out += fmt::format("{0}  }}\n{0}  b{1}[{2}] = {3};\n{0}}}\n", pad, s.write.buffer,
                       offset(s.write, iters), store_value(t, "acc"));
  }

  // The combining statement "call" as cpu_strategy.h's skeletons print it.
  ReductionText reduction_text(const AstNode& call) const {
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    std::vector<std::string> iters;
    for (const AstExpr& e : call.args)
      iters.push_back(ast_expr(e));
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
    r.store = [this, location, t](const std::string& value) {
      return fmt::format("{} = {};", location, store_value(t, value));
    };
    r.update = [this, &call](const std::string& accumulator, int depth, std::string& out) {
      emit_statement(call, depth, out, accumulator);
    };
    return r;
  }

  // The range of "loop", which runs statement "call".
  RangeText range_text(const AstNode& loop, const AstNode& call) const {
    LoopRange r = *loop_range(loop);
    return {ast_expr(r.lo), ast_expr(r.hi), trip_bound(k_, loop, call)};
  }

  // The reduction nest "n" (a register reduction, or a COLUMN nest), with or without
  // threads.
  void emit_reduction_nest(const AstNode& n, Threads threads, int depth, std::string& out) const {
    if (const AstNode* call = register_reduction(k_, n)) {
      ReductionText r = reduction_text(*call);
      CpuReductionWriter w(r, schedule_, out);
      if (threads == Threads::kSplit) {
        w.split(n.iterator, range_text(n, *call), depth);
      } else {
        w.row(n.iterator, range_text(n, *call), depth);
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

  // The number of elements reduction nest "n" combines, as C text and, when known, an
  // upper bound; none when "n" is no reduction nest with lanes or its ranges mention the
  // iterator "outer" (empty: no outer loop).
  std::optional<std::pair<std::string, std::optional<int64_t>>>
  reduction_work(const AstNode& n, const std::string& outer) const {
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

  // A parallel loop "n" around a reduction nest (or, after loop fusion, around a block of
  // reduction nests and other statements, such as their inits): with fewer iterations than
  // threads, it runs serially and splits each inner reduction across the threads instead.
  // False when that can never happen (then the ordinary emission applies).
  bool emit_few_rows(const AstNode& n, int depth, std::string& out) const {
    std::optional<LoopRange> outer = loop_range(n);
    if (!outer) return false;
    const AstNode& body = n.children[0];
    std::vector<const AstNode*> parts;
    if (body.kind == AstNode::Kind::kBlock) {
      for (const AstNode& c : body.children)
        parts.push_back(&c);
    } else {
      parts.push_back(&body);
    }
    std::optional<std::pair<std::string, std::optional<int64_t>>> work;
    std::vector<bool> reduces; // per part; the others (inits) run as they are
    for (const AstNode* p : parts) {
      auto w = p->kind == AstNode::Kind::kFor ? reduction_work(*p, n.iterator) : std::nullopt;
      reduces.push_back(w.has_value());
      if (w && !work) work = w;
    }
    std::optional<int64_t> rows = outer->static_extent();
    if (!work || (rows && *rows >= kMaxThreads) || !may_split(work->second, schedule_))
      return false;
    std::string pad(static_cast<size_t>(2 * depth), ' ');
    std::string loop = fmt::format("for (int64_t {0} = {1}; {2}; {0} += 1) {{\n", n.iterator,
                                   ast_expr(n.init), ast_expr(n.cond));
    auto emit_parts = [&](Threads threads) {
      for (size_t i = 0; i < parts.size(); ++i) {
        if (reduces[i])
          emit_reduction_nest(*parts[i], threads, depth + 2, out);
        else
          emit_node(*parts[i], depth + 2, true, out);
      }
    };
    out +=
        fmt::format("{}if ({}) {{  // few rows: split each row's reduction across threads\n", pad,
                    few_rows_condition({ast_expr(outer->lo), ast_expr(outer->hi), rows},
                                       work->first, schedule_));
    out += pad + "  " + loop;
    emit_parts(Threads::kSplit);
    out += fmt::format("{0}  }}\n{0}}} else {{\n{0}  {1}\n{0}  {2}", pad, d_.parallel_for, loop);
    emit_parts(Threads::kOne);
    out += fmt::format("{0}  }}\n{0}}}\n", pad);
    return true;
  }

  // Emits "n" with a CPU reduction strategy (cpu_strategy.h) when one applies.
  bool emit_cpu_strategy(const AstNode& n, int depth, bool in_loop, std::string& out) const {
    if (!d_.cpu_reduction_strategies) return false;
    if (const AstNode* call = register_reduction(k_, n)) {
      if (!lanes_apply(k_, n, *call, schedule_)) return false;
      bool split = !in_loop && may_split(trip_bound(k_, n, *call), schedule_);
      emit_reduction_nest(n, split ? Threads::kSplit : Threads::kOne, depth, out);
      return true;
    }
    if (column_nest(k_, n)) {
      std::optional<int64_t> work = reduction_work(n, "")->second;
      bool split = !in_loop && may_split(work, schedule_);
      emit_reduction_nest(n, split ? Threads::kSplit : Threads::kOne, depth, out);
      return true;
    }
    return !in_loop && !small_ && n.mark == AstNode::Mark::kParallel &&
           emit_few_rows(n, depth, out);
  }

  // "e" with the identifier "id" replaced by "by".
  static AstExpr substitute(AstExpr e, const std::string& id, const AstExpr& by) {
    if (e.kind == AstExpr::Kind::kId && e.id == id) return by;
    for (AstExpr& a : e.args)
      a = substitute(a, id, by);
    return e;
  }

  // A SIMD loop "n" around one statement whose loads include some that do not move with it
  // (a row's max or sum in softmax, a per-channel scale): those are loaded once before the
  // loop, when it runs at all. Inside an OpenMP region GCC cannot prove them invariant and
  // leaves such a loop scalar. False when there is nothing to hoist.
  bool emit_hoisted_loop(const AstNode& n, int depth, std::string& out) const {
    const AstNode& call = n.children[0];
    const Statement& s = k_.statements[static_cast<size_t>(call.statement)];
    std::vector<std::string> iters;
    for (const AstExpr& e : call.args)
      iters.push_back(ast_expr(e));
    std::string pad(static_cast<size_t>(2 * depth), ' '), loads;
    for (size_t i = 0; i < s.expr.size(); ++i) {
      const kernel::ExprNode& e = s.expr[i];
      if (e.op != kernel::ExprOp::kLoad) continue;
      const kernel::Access& a = s.reads[static_cast<size_t>(e.access)];
      bool moves = std::any_of(a.index.begin(), a.index.end(), [&](const AffineExpr& x) {
        return std::any_of(x.terms.begin(), x.terms.end(), [&](const auto& term) {
          return mentions(call.args[static_cast<size_t>(term.first)], n.iterator);
        });
      });
      // (A store can change a load only through the same buffer, or when the written buffer
      // is a view that shares memory with another.)
      if (moves || !a.indirect.empty() || a.buffer == s.write.buffer ||
          k_.buffers[static_cast<size_t>(s.write.buffer)].aliased)
        continue;
      hoisted_[static_cast<int>(i)] = fmt::format("weft_h{}", i);
      loads += fmt::format("{}  const {} weft_h{} = {};\n", pad, compute_type(e.dtype), i,
                           load(a, iters));
    }
    if (hoisted_.empty()) return false;
    out += fmt::format("{}if ({}) {{  // loads that do not move with {} are hoisted\n{}", pad,
                       ast_expr(substitute(n.cond, n.iterator, n.init)), n.iterator, loads);
    out += fmt::format("{0}  {1}\n{0}  for (int64_t {2} = {3}; {4}; {2} += {5}) {{\n", pad,
                       d_.simd_for, n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step);
    emit_statement(call, depth + 2, out);
    out += fmt::format("{0}  }}\n{0}}}\n", pad);
    hoisted_.clear();
    return true;
  }

  // "in_loop": inside another loop. Only a loop at the top of its nest opens a parallel
  // region: one nested under a serial loop (the K loop of a column reduction) would open a
  // region per outer iteration.
  void emit_node(const AstNode& n, int depth, bool in_loop, std::string& out) const {
    std::string pad(static_cast<size_t>(2 * depth), ' ');
    switch (n.kind) {
      case AstNode::Kind::kBlock:
        for (const AstNode& c : n.children)
          emit_node(c, depth, in_loop, out);
        break;
      case AstNode::Kind::kFor: {
        if (emit_cpu_strategy(n, depth, in_loop, out)) break;
        if (const AstNode* call = register_reduction(k_, n)) {
          emit_register_reduction(n, *call, depth, out);
          break;
        }
        bool parallel = n.mark == AstNode::Mark::kParallel && !in_loop && !small_;
        if (parallel && !d_.parallel_for.empty())
          out += fmt::format("{}{}\n", pad, d_.parallel_for);
        // An innermost loop that carries no dependence (isl proved it) may run in SIMD lanes.
        bool simd = n.mark == AstNode::Mark::kParallel && in_loop && !has_loop(n.children[0]) &&
                    !d_.simd_for.empty();
        if (simd && n.children[0].kind == AstNode::Kind::kCall && emit_hoisted_loop(n, depth, out))
          break;
        if (simd) out += fmt::format("{}{}\n", pad, d_.simd_for);
        out += fmt::format("{0}for (int64_t {1} = {2}; {3}; {1} += {4}) {{{5}\n", pad, n.iterator,
                           ast_expr(n.init), ast_expr(n.cond), n.step,
                           n.mark == AstNode::Mark::kReduction ? "  // reduction" : "");
        emit_node(n.children[0], depth + 1, true, out);
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

  // ---- CUDA (cuda_strategy.h) ----

  // Is "init" a statement that the ALL nest "next" may run in its last block, before
  // combining into the same location? Then the two are one launch.
  bool folds_into(const AstNode& init, const AstNode& next) const {
    const AstNode* call = next.kind == AstNode::Kind::kFor ? register_reduction(k_, next) : nullptr;
    if (init.kind != AstNode::Kind::kCall || !call) return false;
    const Statement& a = k_.statements[static_cast<size_t>(init.statement)];
    const Statement& b = k_.statements[static_cast<size_t>(call->statement)];
    if (a.combine != kernel::Combine::kNone || a.write.buffer != b.write.buffer ||
        k_.buffers[static_cast<size_t>(b.write.buffer)].aliased || !a.write.indirect.empty())
      return false;
    for (const kernel::Access& r : b.reads) {
      if (r.buffer == b.write.buffer) return false;
    }
    auto iters = [&](const AstNode& c) {
      std::vector<std::string> out;
      for (const AstExpr& e : c.args)
        out.push_back(ast_expr(e));
      return out;
    };
    return offset(a.write, iters(init)) == offset(b.write, iters(*call));
  }

  static bool contains_reduction(const AstNode& n) {
    if (n.kind == AstNode::Kind::kFor && n.mark == AstNode::Mark::kReduction) return true;
    return std::any_of(n.children.begin(), n.children.end(),
                       [](const AstNode& c) { return contains_reduction(c); });
  }

  static std::vector<const AstNode*> items_of(const AstNode& n) {
    std::vector<const AstNode*> items;
    if (n.kind == AstNode::Kind::kBlock) {
      for (const AstNode& c : n.children)
        items.push_back(&c);
    } else {
      items.push_back(&n);
    }
    return items;
  }

  // The perfectly nested parallel loops at the top of "n", with their ranges, as long as
  // those are free of the loops' own iterators.
  std::vector<std::pair<const AstNode*, LoopRange>> parallel_chain(const AstNode& n) const {
    std::vector<std::pair<const AstNode*, LoopRange>> chain;
    const AstNode* loop = &n;
    while (loop->kind == AstNode::Kind::kFor && loop->mark == AstNode::Mark::kParallel) {
      std::optional<LoopRange> r = loop_range(*loop);
      if (!r) break;
      bool free = std::none_of(chain.begin(), chain.end(), [&](const auto& c) {
        return range_mentions(*r, c.first->iterator);
      });
      if (!free) break;
      chain.emplace_back(loop, *r);
      loop = &loop->children[0];
    }
    return chain;
  }

  // Threads per point of a group body: the largest of its items' wants (cuda_group_size of
  // a reduction's or loop's extent; a COLUMN nest wants a lane per column).
  int64_t group_size(const AstNode& body) const {
    std::optional<int64_t> want;
    auto take = [&](std::optional<int64_t> g) {
      if (g) want = std::max(want.value_or(1), *g);
    };
    for (const AstNode* item : items_of(body)) {
      if (item->kind != AstNode::Kind::kFor) continue;
      if (const AstNode* call = register_reduction(k_, *item)) {
        take(cuda_group_size(trip_bound(k_, *item, *call)));
      } else if (const AstNode* inner = column_nest(k_, *item)) {
        std::optional<int64_t> k = range_text(*inner, inner->children[0]).extent;
        int64_t g = 1;
        while (k && g < 1024 && g * 2 <= *k)
          g *= 2;
        take(k ? std::optional<int64_t>(g) : std::nullopt);
      } else if (std::optional<LoopRange> r = loop_range(*item)) {
        std::optional<int64_t> e = r->static_extent();
        if (e) take(cuda_group_size(e));
      }
    }
    return want.value_or(32);
  }

  // The items of a point's body, for a group of "group" threads: see cuda_strategy.h (ROW).
  void emit_group_body(const AstNode& body, int64_t group, int depth, std::string& out) const {
    std::string pad(static_cast<size_t>(2 * depth), ' ');
    std::string sync = group > 32 ? "__syncthreads();" : "__syncwarp(weft_mask);";
    for (const AstNode* item : items_of(body)) {
      const AstNode& n = *item;
      if (n.kind == AstNode::Kind::kFor) {
        if (const AstNode* call = register_reduction(k_, n)) {
          CudaReductionWriter(reduction_text(*call), out)
              .group(n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step, group, depth);
        } else if (const AstNode* inner = column_nest(k_, n)) {
          const AstNode& c = inner->children[0];
          ReductionText r = reduction_text(c);
          RangeText rows = range_text(n, c), cols = range_text(*inner, c);
          out += fmt::format("{0}for (int64_t {1} = {2} + weft_lane; {1} < {3}; {1} += {4}) {{  "
                             "// a lane per column\n{0}  {5} acc = {6};\n"
                             "{0}  for (int64_t {7} = {8}; {7} < {9}; ++{7}) {{\n",
                             pad, inner->iterator, cols.lo, cols.hi, group, r.type, r.target,
                             n.iterator, rows.lo, rows.hi);
          r.update("acc", depth + 2, out);
          out += fmt::format("{0}  }}\n{0}  {1}\n{0}}}\n", pad, r.store("acc"));
        } else if (n.mark == AstNode::Mark::kParallel) {
          out += fmt::format("{0}for (int64_t {1} = {2} + weft_lane * {3}; {4}; {1} += {5} * {3}) "
                             "{{\n",
                             pad, n.iterator, ast_expr(n.init), n.step, ast_expr(n.cond), group);
          emit_node(n.children[0], depth + 1, true, out);
          out += pad + "}\n";
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
      } else {
        out += fmt::format("{}if (weft_lane == 0) {{\n", pad);
        emit_node(n, depth + 1, true, out);
        out += pad + "}\n";
      }
      out += pad + sync + "\n";
    }
  }

  // A loop over the points of "chain", flattened, from "weft_first" by "weft_groups"; the
  // innermost loop varies fastest. 32-bit index arithmetic when the count is static and fits.
  // "loop" replaces the loop's opening: given the point count, it defines weft_p.
  void emit_points(const std::vector<std::pair<const AstNode*, LoopRange>>& chain, int depth,
                   std::string& out,
                   const std::function<std::string(const std::string&)>& loop = nullptr) const {
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
    if (chain.size() > 1) out += fmt::format("{}  {} weft_q = weft_p;\n", pad, index);
    for (size_t i = chain.size(); i-- > 0;) {
      std::string lo = ast_expr(chain[i].second.lo);
      const std::string& it = chain[i].first->iterator;
      if (chain.size() == 1) {
        out += fmt::format("{}  const int64_t {} = {} + weft_p;\n", pad, it, lo);
      } else if (i == 0) {
        out += fmt::format("{}  const int64_t {} = {} + weft_q;\n", pad, it, lo);
      } else {
        out += fmt::format("{0}  const int64_t {1} = {2} + weft_q % {3}{4};\n"
                           "{0}  weft_q /= {3}{4};\n",
                           pad, it, lo, extents[i], extents[i].starts_with("weft_") ? "" : suffix);
      }
    }
  }

  // Few long rows: the register reduction of a point body that is otherwise statements
  // (inits before it, an epilogue after), when the points are few and static and the rows
  // long, with atomics for its combine. Null otherwise.
  const AstNode* few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
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

  // ROW with few long rows (cuda_strategy.h): each row split across blocks.
  void emit_few_long_rows(const std::vector<std::pair<const AstNode*, LoopRange>>& chain,
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
    CudaReductionWriter(reduction_text(call), out)
        .split_row(loop.iterator, range_text(loop, call), function, rows, before, after, 2,
                   globals);
    out += "  }\n";
  }

  // "// launch ...", the signature (buffers and extents by value), and the body's opening.
  std::string cuda_header(const std::string& function, int64_t block, bool one_block) const {
    std::vector<std::string> params, names;
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const kernel::Buffer& b = k_.buffers[i];
      params.push_back(fmt::format("{}{}* {}b{}",
                                   b.role == kernel::BufferRole::kInput ? "const " : "",
                                   storage_type(b.dtype), b.aliased ? "" : "__restrict__ ", i));
      names.push_back(fmt::format("b{} {}", i, b.name));
    }
    for (const auto& [symbol, name] : symbol_names_) {
      params.push_back("const int64_t " + name);
      names.push_back(fmt::format("{} {}", name, symbol));
    }
    return fmt::format("// launch {} block={} grid={}\n// {}\n{}void __launch_bounds__({}) "
                       "{}({}) {{\n",
                       function, block, one_block ? "1" : "device", fmt::join(names, ", "),
                       d_.function_prefix, block, function, fmt::join(params, ", "));
  }

  // One top-level nest "n" as a __global__ function; "first": an init folded into it.
  std::string cuda_part(const AstNode& n, const std::string& function, const AstNode* first,
                        const CudaOptions& options) const {
    std::string globals, body;
    int64_t block = kCudaBlock;
    bool one_block = false;
    const AstNode* call = n.kind == AstNode::Kind::kFor ? register_reduction(k_, n) : nullptr;
    const AstNode* inner = n.kind == AstNode::Kind::kFor ? column_nest(k_, n) : nullptr;
    std::vector<std::pair<const AstNode*, LoopRange>> chain = parallel_chain(n);
    if (call) {
      ReductionText r = reduction_text(*call);
      std::string first_text;
      if (first) emit_statement(*first, 3, first_text);
      bool atomic = !options.deterministic && cuda_atomic_applies(r.combine, r.type);
      CudaReductionWriter(r, body).all(n.iterator, ast_expr(n.init), ast_expr(n.cond), n.step,
                                       function, atomic, first_text, 1, globals);
    } else if (inner) {
      const AstNode& c = inner->children[0];
      ReductionText r = reduction_text(c);
      bool split =
          !options.deterministic && cuda_atomic_applies(r.combine, r.type) && r.storage == r.type;
      block = 32 * kCudaColumnRows;
      CudaReductionWriter(r, body).column(n.iterator, range_text(n, c), inner->iterator,
                                          range_text(*inner, c), split, 1);
    } else if (const AstNode* loop = chain.empty() ? nullptr : few_long_rows(chain, options)) {
      emit_few_long_rows(chain, *loop, function, body, globals);
    } else if (!chain.empty()) {
      const AstNode& point = chain.back().first->children[0];
      int64_t group = contains_reduction(point) ? group_size(point) : 1;
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
            group == 32
                ? "0xffffffffu"
                : fmt::format("((1u << {0}) - 1u) << (threadIdx.x % 32 / {0} * {0})", group));
      }
      emit_points(chain, 1, body);
      if (group == 1) {
        emit_node(point, 2, true, body);
      } else {
        body += fmt::format("    // a group of {} threads per point\n", group);
        emit_group_body(point, group, 2, body);
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
    return globals + cuda_header(function, block, one_block) + body + "}\n";
  }

  const Kernel& k_;
  const DialectTable& d_;
  const CpuSchedule& schedule_;
  // Statically less work than the schedule's min_parallel_work: no parallel regions.
  bool small_ = false;
  std::map<std::string, std::string> symbol_names_; // symbol -> C name
  mutable std::map<int, std::string> hoisted_;      // expression node -> hoisted load
};

} // namespace

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
  }
  return {symbols.begin(), symbols.end()};
}

namespace {

const DialectTable& table_of(Dialect dialect) {
  return dialect == Dialect::kCuda ? cuda_dialect() : cpu_dialect();
}

} // namespace

std::string emit_prelude(Dialect dialect) { return std::string(table_of(dialect).prelude); }

Result<std::string> emit_function(const Kernel& k, const poly::AstNode& loops, Dialect dialect,
                                  const CpuSchedule& schedule, const CudaOptions& cuda) {
  WEFT_RETURN_IF_ERROR(kernel::verify_kernel(k));
  Emitter emitter(k, table_of(dialect), schedule);
  return dialect == Dialect::kCuda ? emitter.cuda_function(loops, cuda) : emitter.function(loops);
}

Result<std::string> emit_kernel(const Kernel& k, const poly::AstNode& loops, Dialect dialect,
                                const CpuSchedule& schedule, const CudaOptions& cuda) {
  WEFT_ASSIGN_OR_RETURN(std::string function, emit_function(k, loops, dialect, schedule, cuda));
  return emit_prelude(dialect) + "\n" + function;
}

} // namespace weft::codegen
