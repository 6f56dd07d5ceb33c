#include "weft/graph/passes/specialize_shapes.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "weft/graph/evaluate.h"
#include "weft/graph/passes/infer_shapes.h"

namespace weft {

bool is_shape_operand(const Node& n, size_t i) {
  static const std::map<Op, std::vector<size_t>> operands = {
      {Op::kReshape, {1}},        {Op::kExpand, {1}},
      {Op::kTile, {1}},           {Op::kSqueeze, {1}},
      {Op::kUnsqueeze, {1}},      {Op::kSplit, {1}},
      {Op::kSlice, {1, 2, 3, 4}}, {Op::kConstantOfShape, {0}},
      {Op::kRange, {0, 1, 2}},    {Op::kPad, {1, 3}},
      {Op::kCumSum, {1}},         {Op::kCumProd, {1}},
      {Op::kOneHot, {1}},         {Op::kResize, {1, 2, 3}},
      {Op::kUpsample, {1}},       {Op::kTopK, {1}},
      {Op::kCompress, {1}},       {Op::kMaxUnpool, {2}},
      {Op::kHannWindow, {0}},     {Op::kHammingWindow, {0}},
      {Op::kBlackmanWindow, {0}}, {Op::kDropout, {1, 2}},
      {Op::kCol2Im, {1, 2}},      {Op::kDFT, {1, 2}},
      {Op::kSTFT, {1, 3}},        {Op::kMelWeightMatrix, {0, 1}},
      {Op::kCenterCropPad, {1}}};
  if (is_reduce_op(n.op_type)) return i == 1;
  auto it = operands.find(n.op_type);
  return it != operands.end() &&
         std::find(it->second.begin(), it->second.end(), i) != it->second.end();
}

namespace {

constexpr int64_t kMaxFrozenElements = 64;

// Does the value of "v" reach a shape operand, directly or through nodes that constant
// folding evaluates (e.g. a window size cast to float, then the bound of a Range)? Shape
// and Size read only their input's type, so the walk stops there.
bool determines_shapes(const Graph& graph, const Value* v, int depth = 0) {
  if (depth > 16) return false;
  for (const auto& n : graph.nodes()) {
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      if (n->inputs[k] != v) continue;
      if (is_shape_operand(*n, k)) return true;
      if (n->op_type == Op::kShape || n->op_type == Op::kSize || !can_evaluate(*n)) continue;
      for (const Value* out : n->outputs) {
        if (out && determines_shapes(graph, out, depth + 1)) return true;
      }
    }
  }
  return false;
}

} // namespace

std::vector<int> shape_operand_inputs(const Graph& graph) {
  std::vector<int> found;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const Value* in = graph.inputs[i];
    if (!graph.is_graph_output(in) && determines_shapes(graph, in))
      found.push_back(static_cast<int>(i));
  }
  return found;
}

std::vector<int> freeze_shape_operands(Graph& graph, const std::vector<Tensor>& values) {
  std::vector<int> frozen;
  for (int i : shape_operand_inputs(graph)) {
    size_t u = static_cast<size_t>(i);
    if (u >= values.size() || values[u].num_elements() > kMaxFrozenElements) continue;
    Value* in = graph.inputs[u];
    Value* constant = graph.add_constant(graph.unique_name(in->name + "_value"), values[u]);
    graph.replace_all_uses(in, constant);
    frozen.push_back(i);
  }
  return frozen;
}

Status specialize_shapes(Graph& graph, const std::vector<TensorType>& types) {
  if (types.size() != graph.inputs.size()) {
    return Status::error(fmt::format("{}: the model has {} inputs, {} were given", graph.source,
                                     graph.inputs.size(), types.size()),
                         StatusCode::kInvalidArgument);
  }
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < types.size(); ++i) {
    const Value* in = graph.inputs[i];
    const TensorType& given = types[i];
    auto mismatch = [&](const std::string& what) {
      return Status::error(fmt::format("{}: input '{}' expects {}, got {}: {}", graph.source,
                                       in->name, in->type.to_string(), given.to_string(), what),
                           StatusCode::kInvalidArgument);
    };
    if (given.dtype != in->type.dtype) return mismatch("wrong data type");
    if (!in->type.shape) continue;
    if (given.shape->size() != in->type.shape->size()) return mismatch("wrong rank");
    for (size_t d = 0; d < given.shape->size(); ++d) {
      const Dim& declared = (*in->type.shape)[d];
      const Dim& dim = (*given.shape)[d];
      if (!dim.is_static()) { // left symbolic: only as declared
        if (dim == declared) continue;
        return mismatch(fmt::format("dim {} must be {} or an extent", d, declared.to_string()));
      }
      int64_t extent = dim.value();
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
  // Dims over the bound ones become static too, in attributes as well: a handed-over input of
  // min(100,N) boxes, bound to 100, gives their 20*min(100,N) coordinates.
  for_each_dim(graph, [&](Dim& d) {
    if (std::optional<int64_t> extent = d.is_static() ? std::nullopt : eval_dim(d, bound))
      d = *extent;
    return true;
  });
  for (size_t i = 0; i < types.size(); ++i)
    graph.inputs[i]->type = types[i];
  return infer_shapes(graph);
}

} // namespace weft
