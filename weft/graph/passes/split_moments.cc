#include "weft/graph/passes/split_moments.h"

#include <vector>

#include "weft/graph/node_builder.h"

namespace weft {

namespace {

// The axes of a canonical mean reduction "n" that keeps its dims, or none.
const Ints* mean_axes(const Node* n, bool need_keepdims) {
  if (!n || n->op_type != Op::kReduceMean || n->inputs.size() != 1) return nullptr;
  const auto& a = n->attrs_as<ReduceAttrs>();
  if (!a.axes || (need_keepdims && !a.keepdims)) return nullptr;
  return &*a.axes;
}

// Is "n" d * d, or d ^ 2 with a constant exponent?
bool squares(const Node* n, const Value* d) {
  if (!n) return false;
  if (n->op_type == Op::kMul) return n->inputs[0] == d && n->inputs[1] == d;
  if (n->op_type != Op::kPow || n->inputs[0] != d || !n->inputs[1]->is_constant()) return false;
  const Tensor& e = *n->inputs[1]->constant;
  return e.num_elements() == 1 && e.get_double(0) == 2.0;
}

// What match() finds for a variance node "v" (ReduceMean of a centred square) that fits the
// pattern split_moments.h describes and is worth splitting: its mean node, and the inner
// axes (the trailing run of its axes; the others are the outer ones).
struct Match {
  Node* mean = nullptr;
  Ints inner;
};

std::optional<Match> match(Node& v) {
  const Ints* axes = mean_axes(&v, false);
  if (!axes || axes->empty()) return std::nullopt;
  const Node* square = v.inputs[0]->producer;
  if (!square) return std::nullopt;
  const Value* d = square->inputs[0];
  const Node* sub = d->producer;
  if (!squares(square, d) || !sub || sub->op_type != Op::kSub) return std::nullopt;
  Value *x = sub->inputs[0], *m = sub->inputs[1];
  Node* mean = m->producer;
  const Ints* mean_ax = mean_axes(mean, true);
  if (!mean_ax || *mean_ax != *axes || mean->inputs[0] != x) return std::nullopt;
  if (!x->type.has_static_shape() || (x->type.dtype != DType::kF32 && x->type.dtype != DType::kF64))
    return std::nullopt;
  const Shape& shape = *x->type.shape;
  Match out{mean, {}};
  int64_t next = static_cast<int64_t>(shape.size()) - 1, row = 1, rows = 1;
  for (auto it = axes->rbegin(); it != axes->rend(); ++it) {
    if (*it == next) {
      out.inner.insert(out.inner.begin(), *it);
      row *= shape[static_cast<size_t>(*it)].value();
      --next;
    } else {
      rows *= shape[static_cast<size_t>(*it)].value();
    }
  }
  if (out.inner.empty() || out.inner.size() == axes->size() || row < 64 || rows < 2)
    return std::nullopt;
  return out;
}

} // namespace

Status split_moments(Graph& graph) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes())
    nodes.push_back(n.get());
  for (Node* v : nodes) {
    std::optional<Match> m = match(*v);
    if (!m) continue;
    Value* x = m->mean->inputs[0];
    ReduceAttrs per_row{m->inner, true, false};
    NodeBuilder before_mean(graph, *m->mean);
    Value* row_mean = before_mean.op(Op::kReduceMean, {x}, per_row);
    Value* row_dev = before_mean.op(Op::kSub, {x, row_mean});
    Value* row_var =
        before_mean.op(Op::kReduceMean, {before_mean.op(Op::kMul, {row_dev, row_dev})}, per_row);
    WEFT_RETURN_IF_ERROR(before_mean.status());
    m->mean->inputs[0] = row_mean; // the mean of the row means
    NodeBuilder before_var(graph, *v);
    Value* shift = before_var.op(Op::kSub, {row_mean, m->mean->outputs[0]});
    v->inputs[0] = before_var.op(Op::kAdd, {row_var, before_var.op(Op::kMul, {shift, shift})});
    WEFT_RETURN_IF_ERROR(before_var.status());
  }
  return Status();
}

} // namespace weft
