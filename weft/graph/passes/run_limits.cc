#include "weft/graph/passes/run_limits.h"

#include <algorithm>

#include "weft/graph/attrs.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

void add(Graph& graph, const DimLimit& limit) {
  if ((limit.dim.is_static() && limit.bound.is_static()) || limit.dim.is_unknown() ||
      limit.bound.is_unknown())
    return; // shape inference checked it, or no run can
  if (limit.kind == DimLimit::Kind::kNotEmpty && limit.bound.is_static())
    return; // a static axis that is empty: shape inference checked it; one that is not holds
  if (std::find(graph.dim_limits.begin(), graph.dim_limits.end(), limit) == graph.dim_limits.end())
    graph.dim_limits.push_back(limit);
}

// Gemm's C broadcasts to its output [M, N].
void note_gemm_limits(Graph& graph, const Node& gemm) {
  const Value* c = gemm.input(2);
  const Value* y = gemm.outputs[0];
  if (!c || !c->type.shape || !y->type.shape || c->type.shape->size() > y->type.shape->size())
    return;
  const Shape &from = *c->type.shape, &to = *y->type.shape;
  for (size_t d = 0; d < from.size(); ++d) {
    const Dim &s = from[d], &n = to[to.size() - from.size() + d];
    if (s != n && !(s.is_static() && s.value() == 1))
      add(graph,
          {s, n, gemm.name, DimLimit::Kind::kOneOrEqual, "a C that broadcasts to the output"});
  }
}

// Reflect padding over a symbolic axis mirrors once about each border: the axis is longer than
// its pads (a shorter one reflects again and again, ONNX's reference as numpy's pad: a
// static compile for its shape).
void note_reflect_limits(Graph& graph, const Node& pad) {
  const auto& a = pad.attrs_as<PadAttrs>();
  const Value* x = pad.inputs[0];
  if (a.mode != PadMode::kReflect || !a.pads || !x->type.shape) return;
  const Shape& xs = *x->type.shape;
  for (size_t d = 0; d < xs.size() && d + xs.size() < a.pads->size(); ++d) {
    int64_t most = std::max((*a.pads)[d], (*a.pads)[d + xs.size()]);
    if (most > 0)
      add(graph, {Dim(most + 1), xs[d], pad.name, DimLimit::Kind::kAtMost,
                  "an axis longer than its reflect padding"});
  }
}

} // namespace

void note_run_limits(Graph& graph) {
  using Kind = DimLimit::Kind;
  for (const auto& n : graph.nodes()) {
    if (n->op_type == Op::kGemm) {
      note_gemm_limits(graph, *n);
      continue;
    }
    if (n->op_type == Op::kPad) {
      note_reflect_limits(graph, *n);
      continue;
    }
    const Value* data = n->input(0);
    const Value* idx = n->inputs.size() > 1 ? n->input(1) : nullptr;
    if (!data || !idx || !data->type.shape || !idx->type.shape) continue;
    const Shape &x = *data->type.shape, &i = *idx->type.shape;
    auto rank = static_cast<int64_t>(x.size());
    // Axis "axis" of the data holds an element where the indices' first "dims" give one.
    auto indexed = [&](int64_t axis, size_t dims) {
      if (axis >= 0 && axis < rank) {
        add(graph, {dims_product(i, 0, dims), x[static_cast<size_t>(axis)], n->name,
                    Kind::kNotEmpty, "an index into that axis"});
      }
    };
    Op op = n->op_type;
    if (op == Op::kGather) {
      Result<int64_t> axis = normalize_axis(n->attrs_as<AxisAttrs>().axis, rank);
      if (axis.ok()) indexed(*axis, i.size());
    } else if ((op == Op::kGatherElements || op == Op::kScatterElements) && i.size() == x.size()) {
      int64_t a = op == Op::kGatherElements ? n->attrs_as<AxisAttrs>().axis
                                            : n->attrs_as<ScatterAttrs>().axis;
      Result<int64_t> axis = normalize_axis(a, rank);
      if (!axis.ok()) continue;
      indexed(*axis, i.size());
      for (int64_t d = 0; d < rank; ++d) {
        auto k = static_cast<size_t>(d);
        if (d != *axis && i[k] != x[k])
          add(graph, {i[k], x[k], n->name, Kind::kAtMost, "indices within the data off the axis"});
      }
    } else if ((op == Op::kGatherND || op == Op::kScatterND) && !i.empty() &&
               i.back().is_static()) {
      int64_t first = op == Op::kGatherND ? n->attrs_as<BatchDimsAttrs>().batch_dims : 0;
      for (int64_t d = first; d < first + i.back().value(); ++d)
        indexed(d, i.size() - 1);
    } else if (op == Op::kNegativeLogLikelihoodLoss || op == Op::kSoftmaxCrossEntropyLoss) {
      indexed(1, i.size()); // the classes
    }
  }
}

} // namespace weft
