#include "weft/graph/passes/infer_shapes.h"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/support/log.h"

namespace weft {

namespace {

// Are all symbols of "d" (quotients looked into) in "bound"?
bool over(const Dim& d, const std::set<std::string>& bound) {
  std::vector<std::string> symbols = dim_symbols(d);
  return std::all_of(symbols.begin(), symbols.end(),
                     [&](const std::string& s) { return bound.contains(s); });
}

// The first dim that "stored" and "inferred" both fix, to different extents.
std::optional<size_t> conflicting_dim(const TensorType& stored, const TensorType& inferred) {
  if (!stored.shape || !inferred.shape || stored.shape->size() != inferred.shape->size())
    return std::nullopt;
  for (size_t i = 0; i < stored.shape->size(); ++i) {
    const Dim &a = (*stored.shape)[i], &b = (*inferred.shape)[i];
    if (a.is_static() && b.is_static() && a.value() != b.value()) return i;
  }
  return std::nullopt;
}

} // namespace

TensorType refine_type(const TensorType& stored, const TensorType& inferred, Graph& graph,
                       const std::set<std::string>* input_symbols) {
  if (!inferred.shape) return stored;
  if (!stored.shape) {
    Shape shape = *inferred.shape;
    for (Dim& d : shape) {
      if (d.is_unknown()) d = graph.fresh_symbol();
    }
    return {stored.dtype, shape};
  }
  if (stored.shape->size() != inferred.shape->size()) return stored;
  TensorType out = stored;
  for (size_t i = 0; i < out.shape->size(); ++i) {
    Dim& d = (*out.shape)[i];
    const Dim& given = (*inferred.shape)[i];
    // A static dim, or any dim where a fresh symbol stood for one nothing could tell (a
    // Reshape whose target fold_shape_values found since).
    if ((!d.is_static() && given.is_static()) ||
        (!d.is_static() && graph.is_fresh(d) && !given.is_unknown()))
      d = given;
    // A symbol the model declares for an expression (PyTorch's exporter writes
    // "((width - 1)//2) + 1") gives way to the expression over the inputs' symbols.
    else if (input_symbols && !d.is_static() && !given.is_static() && !given.is_unknown() &&
             !over(d, *input_symbols) && over(given, *input_symbols))
      d = given;
  }
  return out;
}

Status infer_shapes(Graph& graph) {
  std::set<std::string> input_symbols;
  for (const Value* v : graph.inputs) {
    for (const Dim& d : v->type.shape.value_or(Shape{})) {
      for (std::string& s : dim_symbols(d))
        input_symbols.insert(std::move(s));
    }
  }
  for (const auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (!node.def->infer) continue;
    Result<std::vector<TensorType>> inferred = node.def->infer(node);
    if (!inferred.ok()) {
      if (node.conditional) continue; // its If may never take its branch (graph.h)
      return inferred.status().with_location(location_of(graph, node));
    }
    for (size_t i = 0; i < node.outputs.size() && i < inferred->size(); ++i) {
      Value* out = node.outputs[i];
      if (!out) continue;
      if (std::optional<size_t> d = conflicting_dim(out->type, (*inferred)[i]);
          d && !node.conditional) {
        // A graph output's wrong dims (skl2onnx declares a multi-target regressor's [N, 1]):
        // the node decides, as in ONNX Runtime and graph_builder.
        const TensorType& computed = (*inferred)[i];
        if (std::find(graph.outputs.begin(), graph.outputs.end(), out) != graph.outputs.end()) {
          log_info("{}: output '{}' is declared {} but the node computes {}: taking the node's",
                   location_of(graph, node).to_string(), out->name, out->type.to_string(),
                   computed.to_string());
          out->type = refine_type({computed.dtype, std::nullopt}, computed, graph);
          continue;
        }
        // Elsewhere, a type the model declares that the node cannot compute (ONNX Runtime
        // refuses such a model too): trusting it would size buffers for data that is not there.
        return Status::error(
                   fmt::format("'{}' is declared {}, but the node computes {} (dim {} differs)",
                               out->name, out->type.to_string(), (*inferred)[i].to_string(), *d))
            .with_location(location_of(graph, node));
      }
      out->type = refine_type(out->type, (*inferred)[i], graph, &input_symbols);
    }
  }
  return Status();
}

Status check_conditional_shapes(const Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (!n->conditional || !n->def->infer) continue;
    Result<std::vector<TensorType>> inferred = n->def->infer(*n);
    if (!inferred.ok()) return inferred.status().with_location(location_of(graph, *n));
  }
  return Status();
}

} // namespace weft
