#include "weft/graph/passes/unify_dims.h"

#include <algorithm>
#include <set>
#include <string>
#include <variant>

#include "weft/graph/attrs.h"
#include "weft/support/log.h"

namespace weft {

namespace {

bool contains(const Dim& d, const std::string& symbol) {
  for (const std::string& s : dim_symbols(d)) {
    if (s == symbol) return true;
  }
  return false;
}

// Ops whose inputs broadcast to their output (numpy's rules).
bool is_broadcasting(Op op) {
  static const std::set<Op> kOps = {
      Op::kAdd,   Op::kSub,  Op::kMul,     Op::kDiv,         Op::kPow,
      Op::kWhere, Op::kMax,  Op::kMin,     Op::kMean,        Op::kSum,
      Op::kEqual, Op::kLess, Op::kGreater, Op::kLessOrEqual, Op::kGreaterOrEqual,
      Op::kAnd,   Op::kOr,   Op::kXor,     Op::kMod,         Op::kPRelu};
  return kOps.contains(op);
}

// The (symbol, dim) to unify at a broadcasting node whose inputs meet with two different
// dims on one axis, one of them an input's symbol that the other does not contain.
std::optional<std::pair<std::string, Dim>> candidate(const Node& n,
                                                     const std::set<std::string>& input_symbols) {
  if (!is_broadcasting(n.op_type) || n.outputs.empty() || !n.outputs[0] ||
      !n.outputs[0]->type.shape)
    return std::nullopt;
  size_t rank = n.outputs[0]->type.shape->size();
  for (size_t i = 0; i < rank; ++i) {
    std::vector<Dim> met;
    for (const Value* in : n.inputs) {
      if (!in || !in->type.shape || in->type.shape->size() > rank) continue;
      const Shape& s = *in->type.shape;
      if (i + s.size() < rank) continue;
      const Dim& d = s[i + s.size() - rank];
      if (d.is_static() && d.value() == 1) continue;
      if (std::find(met.begin(), met.end(), d) == met.end()) met.push_back(d);
    }
    if (met.size() != 2 || met[0].is_static() || met[1].is_static()) continue;
    if (met[0].is_unknown() || met[1].is_unknown()) continue;
    // M - P meeting T: M is T + P (OPT's positions past P of a mask of M), rather than T
    // being M - P, a dim that fewer ops take.
    for (int k = 0; k < 2; ++k) {
      std::optional<std::pair<Dim, Dim>> difference = dim_difference(met[k]);
      if (!difference) continue;
      const auto& [x, y] = *difference;
      const Dim& other = met[1 - k];
      if (!dim_is_symbol(x) || !input_symbols.contains(x.symbol_name()) ||
          contains(other, x.symbol_name()) || contains(y, x.symbol_name()))
        continue;
      if (std::optional<Dim> sum = dim_add(other, y)) return std::pair{x.symbol_name(), *sum};
    }
    for (int k = 0; k < 2; ++k) {
      const Dim& s = met[k];
      if (dim_is_symbol(s) && input_symbols.contains(s.symbol_name()) &&
          !contains(met[1 - k], s.symbol_name()))
        return std::pair{s.symbol_name(), met[1 - k]};
    }
  }
  return std::nullopt;
}

} // namespace

Result<bool> unify_dims(Graph& graph) {
  std::set<std::string> input_symbols;
  for (const Value* in : graph.inputs) {
    for (const Dim& d : in->type.shape.value_or(Shape{})) {
      if (dim_is_symbol(d)) input_symbols.insert(d.symbol_name());
    }
  }
  for (const auto& n : graph.nodes()) {
    std::optional<std::pair<std::string, Dim>> c = candidate(*n, input_symbols);
    if (!c) continue;
    const auto& [symbol, by] = *c;
    // Every dim must take the substitution, or none does.
    bool all =
        for_each_dim(graph, [&](Dim& d) { return dim_substitute(d, symbol, by).has_value(); });
    if (!all) continue;
    for_each_dim(graph, [&](Dim& d) {
      d = *dim_substitute(d, symbol, by);
      return true;
    });
    log_debug("node '{}' ({}): {} is taken to be {} (each run checks it)", n->name, n->op_type,
              symbol, by.to_string());
    return true;
  }
  return false;
}

} // namespace weft
