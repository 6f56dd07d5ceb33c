#include "weft/graph/passes/depthwise_multiplier.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "weft/graph/node_builder.h"

namespace weft {

namespace {

// Does "n" fit the rewrite (see the header)? Its channel multiplier, or 0.
int64_t multiplier(const Node& n) {
  if (n.op_type != Op::kConvChannelsLast || n.conditional || n.outputs.empty() || !n.outputs[0])
    return 0;
  const Value *x = n.input(0), *w = n.input(1), *y = n.outputs[0];
  if (!x || !w || x->type.dtype != DType::kF32 || !x->type.has_static_shape() ||
      !y->type.has_static_shape() || x->type.shape->size() < 3 || !w->type.has_static_shape())
    return 0;
  int64_t channels = x->type.shape->back().value(), outputs = y->type.shape->back().value();
  int64_t group = n.attrs_as<ConvAttrs>().group;
  bool depthwise = group == channels && (*w->type.shape)[1].value() == 1;
  return depthwise && channels > 1 && outputs > channels && outputs % channels == 0
             ? outputs / channels
             : 0;
}

} // namespace

Result<bool> depthwise_multiplier(Graph& graph) {
  std::vector<std::pair<Node*, int64_t>> found; // with its multiplier
  for (const auto& n : graph.nodes()) {
    if (int64_t m = multiplier(*n); m > 0) found.emplace_back(n.get(), m);
  }
  for (auto [n, m] : found) {
    NodeBuilder b(graph, *n);
    Value* x = n->inputs[0];
    std::vector<int64_t> dims = shape_static_dims(*x->type.shape);
    auto last = static_cast<int64_t>(dims.size());
    Value* stacked = b.stack(std::vector<Value*>(static_cast<size_t>(m), x), last);
    dims.back() *= m;
    Value* repeated = b.op(Op::kReshape, {stacked}, reshape_to(dims));
    ConvAttrs attrs = n->attrs_as<ConvAttrs>();
    attrs.group = dims.back();
    std::vector<Value*> inputs = {repeated, n->inputs[1]};
    if (Value* bias = n->input(2)) inputs.push_back(bias);
    Value* y = n->outputs[0];
    n->outputs[0] = nullptr;
    y->producer = nullptr;
    b.op(Op::kConvChannelsLast, inputs, attrs, y);
    WEFT_RETURN_IF_ERROR(b.status());
  }
  graph.remove_nodes_if([&](const Node& n) {
    return std::any_of(found.begin(), found.end(), [&](const auto& f) { return f.first == &n; });
  });
  return !found.empty();
}

} // namespace weft
