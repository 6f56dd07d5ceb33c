#include "weft/graph/passes/specialize_shapes.h"

#include <map>

#include <fmt/format.h>

#include "weft/graph/passes/infer_shapes.h"

namespace weft {

Status specialize_shapes(Graph& graph, const std::vector<TensorType>& types) {
  if (types.size() != graph.inputs.size()) {
    return Status::error(fmt::format("{}: the model has {} inputs, {} were given", graph.source,
                                     graph.inputs.size(), types.size()));
  }
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < types.size(); ++i) {
    const Value* in = graph.inputs[i];
    const TensorType& given = types[i];
    auto mismatch = [&](const std::string& what) {
      return Status::error(fmt::format("{}: input '{}' expects {}, got {}: {}", graph.source,
                                       in->name, in->type.to_string(), given.to_string(), what));
    };
    if (given.dtype != in->type.dtype) return mismatch("wrong data type");
    if (!in->type.shape) continue;
    if (given.shape->size() != in->type.shape->size()) return mismatch("wrong rank");
    for (size_t d = 0; d < given.shape->size(); ++d) {
      const Dim& declared = (*in->type.shape)[d];
      int64_t extent = (*given.shape)[d].value();
      if (declared.is_static() && declared.value() != extent) {
        return mismatch(fmt::format("dim {} must be {}", d, declared.value()));
      }
      if (!declared.is_static()) {
        auto [it, inserted] = bound.emplace(declared.symbol_name(), extent);
        if (!inserted && it->second != extent) {
          return mismatch(
              fmt::format("dim {} ('{}') is {} elsewhere", d, declared.symbol_name(), it->second));
        }
      }
    }
  }
  for (const auto& value : graph.values()) {
    if (!value->type.shape) continue;
    for (Dim& d : *value->type.shape) {
      if (!d.is_static()) {
        auto it = bound.find(d.symbol_name());
        if (it != bound.end()) d = it->second;
      }
    }
  }
  for (size_t i = 0; i < types.size(); ++i)
    graph.inputs[i]->type = types[i];
  return infer_shapes(graph);
}

} // namespace weft
