#include "weft/graph/passes/unify_dims.h"

#include <algorithm>
#include <set>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "weft/graph/attrs.h"
#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
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

// The symbol to substitute and the dim it takes, if any.
using Unification = std::optional<std::pair<std::string, Dim>>;

// Groups of dims that "n" requires to be equal: a Concat's inputs' off its axis, a MatMul's
// or Gemm's inner dims (none of them broadcasts), a Conv's channels and bias, a
// normalization's per-channel inputs, RoiAlign's boxes of 4, GridSample's batch.
std::vector<std::vector<Dim>> required_equal(const Node& n) {
  std::vector<std::vector<Dim>> groups;
  auto shape = [&](size_t i) -> const Shape* {
    const Value* v = n.input(i);
    return v && v->type.shape ? &*v->type.shape : nullptr;
  };
  if (n.op_type == Op::kConcat && shape(0)) {
    size_t rank = shape(0)->size();
    Result<int64_t> axis = normalize_axis(n.attrs_as<AxisAttrs>().axis, static_cast<int64_t>(rank));
    if (!axis.ok()) return groups;
    for (size_t k = 0; k < rank; ++k) {
      if (static_cast<int64_t>(k) == *axis) continue;
      groups.emplace_back();
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (shape(i) && shape(i)->size() == rank) groups.back().push_back((*shape(i))[k]);
      }
    }
  } else if (n.op_type == Op::kMatMul && shape(0) && shape(1) && !shape(0)->empty() &&
             !shape(1)->empty()) {
    const Shape &a = *shape(0), &b = *shape(1);
    groups.push_back({a.back(), b.size() == 1 ? b[0] : b[b.size() - 2]});
  } else if (n.op_type == Op::kGemm && shape(0) && shape(1) && shape(0)->size() == 2 &&
             shape(1)->size() == 2) {
    const auto& g = n.attrs_as<GemmAttrs>();
    groups.push_back({(*shape(0))[g.trans_a ? 0 : 1], (*shape(1))[g.trans_b ? 1 : 0]});
  } else if (n.op_type == Op::kConv && shape(0) && shape(1) && shape(0)->size() >= 3 &&
             shape(1)->size() == shape(0)->size()) {
    // The input's channels are the weights' per group times group; the bias is per output
    // channel.
    const Shape &x = *shape(0), &w = *shape(1);
    groups.push_back({x[1], dim_mul(w[1], Dim(n.attrs_as<ConvAttrs>().group))});
    if (shape(2) && shape(2)->size() == 1) groups.push_back({(*shape(2))[0], w[0]});
  } else if ((n.op_type == Op::kBatchNormalization || n.op_type == Op::kInstanceNormalization) &&
             shape(0) && shape(0)->size() >= 2) {
    groups.push_back({(*shape(0))[1]}); // scale, bias (mean, variance): one per channel
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      if (shape(i) && shape(i)->size() == 1) groups.back().push_back((*shape(i))[0]);
    }
  } else if (n.op_type == Op::kGridSample && shape(0) && shape(1) && !shape(0)->empty() &&
             !shape(1)->empty()) {
    groups.push_back({(*shape(0))[0], (*shape(1))[0]}); // one grid per image
  } else if (n.op_type == Op::kRoiAlign && shape(1) && shape(1)->size() == 2) {
    groups.push_back({(*shape(1))[1], Dim(4)}); // rois [R, 4], batch_indices [R]
    if (shape(2) && shape(2)->size() == 1) groups.push_back({(*shape(1))[0], (*shape(2))[0]});
  }
  return groups;
}

// The (symbol, dim) to unify where "n" requires dims to be equal (required_equal) and two
// differ, one of them an input's symbol that the other does not contain. A Concat of a KV
// cache's past [N, 4, P, D] and the new keys [N, 4, T, 64] gives D = 64.
Unification required_candidate(const Node& n, const std::set<std::string>& input_symbols) {
  for (const std::vector<Dim>& group : required_equal(n)) {
    for (const Dim& s : group) {
      if (!dim_is_symbol(s) || !input_symbols.contains(s.symbol_name())) continue;
      for (const Dim& other : group) {
        if (other != s && !other.is_unknown() && !contains(other, s.symbol_name()))
          return std::pair{s.symbol_name(), other};
      }
    }
  }
  return std::nullopt;
}

// Where the model declares a dim of an output of "n" that its node computes otherwise, the
// (symbol, dim) that makes them agree: a declared input symbol takes a computed dim over the
// inputs' symbols that does not contain it (ONNX Runtime GenAI's builder declares the KV
// cache's present as [N, 4, total_sequence_length, 64], the mask's length, where the node
// computes the past's P + T), and a computed input symbol takes a declared static dim. An
// error where a declared static dim meets any other computed dim. Either way the declared
// dim would size the buffer that the node writes the computed one into.
Result<Unification> declared_candidate(const Graph& graph, const Node& n,
                                       const std::set<std::string>& input_symbols) {
  if (!n.def || !n.def->infer) return Unification();
  Result<std::vector<TensorType>> inferred = n.def->infer(n);
  if (!inferred.ok()) return Unification();
  auto over_inputs = [&](const Dim& d) {
    std::vector<std::string> symbols = dim_symbols(d);
    return std::all_of(symbols.begin(), symbols.end(),
                       [&](const std::string& x) { return input_symbols.contains(x); });
  };
  auto input_symbol = [&](const Dim& d) {
    return dim_is_symbol(d) && input_symbols.contains(d.symbol_name());
  };
  for (size_t i = 0; i < n.outputs.size() && i < inferred->size(); ++i) {
    const Value* out = n.outputs[i];
    const std::optional<Shape>& computed = (*inferred)[i].shape;
    if (!out || !out->type.shape || !computed || computed->size() != out->type.shape->size())
      continue;
    for (size_t k = 0; k < computed->size(); ++k) {
      const Dim &declared = (*out->type.shape)[k], &by = (*computed)[k];
      if (declared == by || by.is_unknown() || declared.is_unknown()) continue;
      if (input_symbol(declared) && over_inputs(by) && !contains(by, declared.symbol_name()))
        return Unification(std::pair{declared.symbol_name(), by});
      if (declared.is_static() && input_symbol(by))
        return Unification(std::pair{by.symbol_name(), declared});
      if (declared.is_static())
        return Status::error(fmt::format("'{}' is declared {}, but the node computes {}", out->name,
                                         out->type.to_string(), (*inferred)[i].to_string()))
            .with_location(location_of(graph, n));
    }
  }
  return Unification();
}

// The (symbol, dim) to unify at a broadcasting node whose inputs meet with two different
// dims on one axis, one of them an input's symbol that the other does not contain; or where
// "n" requires dims to be equal (required_candidate).
Unification candidate(const Node& n, const std::set<std::string>& input_symbols) {
  if (!is_broadcasting(n.op_type)) return required_candidate(n, input_symbols);
  if (n.outputs.empty() || !n.outputs[0] || !n.outputs[0]->type.shape) return std::nullopt;
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
  // Whether every dim takes "by" for "symbol" (then each does), or none does.
  auto take = [&](const std::string& symbol, const Dim& by) {
    if (!for_each_dim(graph, [&](Dim& d) { return dim_substitute(d, symbol, by).has_value(); }))
      return false;
    for_each_dim(graph, [&](Dim& d) {
      d = *dim_substitute(d, symbol, by);
      return true;
    });
    return true;
  };
  // A limit requiring an input's symbol to equal another dim (GroupNormalization's channels
  // against its scale, one per channel from opset 21, which its decomposition broadcasts over
  // them): the symbol is that dim, as an op's required_equal dims are.
  for (const DimLimit& limit : graph.dim_limits) {
    if (limit.kind != DimLimit::Kind::kEqual) continue;
    for (const auto& [s, by] : {std::pair{limit.dim, limit.bound}, {limit.bound, limit.dim}}) {
      if (!dim_is_symbol(s) || !input_symbols.contains(s.symbol_name()) || by.is_unknown() ||
          contains(by, s.symbol_name()) || !take(s.symbol_name(), by))
        continue;
      log_debug("node '{}': {} is taken to be {} ({}; each run checks it)", limit.node,
                s.symbol_name(), by.to_string(), limit.need);
      return true;
    }
  }
  for (const auto& n : graph.nodes()) {
    Unification c = candidate(*n, input_symbols);
    bool declared = !c;
    if (declared) {
      WEFT_ASSIGN_OR_RETURN(c, declared_candidate(graph, *n, input_symbols));
    }
    if (!c) continue;
    const auto& [symbol, by] = *c;
    bool all = take(symbol, by);
    if (!all && declared)
      return Status::error(fmt::format("'{}' cannot be taken to be {}", symbol, by.to_string()))
          .with_location(location_of(graph, *n));
    if (!all) continue;
    log_debug("node '{}' ({}): {} is taken to be {} (each run checks it)", n->name, n->op_type,
              symbol, by.to_string());
    return true;
  }
  return false;
}

} // namespace weft
