#include "weft/graph/passes/expand_moe.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"

namespace weft {

namespace {

Status expand(Graph& graph, Node& node, Value* y) {
  const auto& a = node.attrs_as<MoEAttrs>();
  Value *x = node.inputs[0], *logits = node.inputs[1];
  std::optional<int64_t> experts =
      logits->type.shape && logits->type.shape->size() == 2 && (*logits->type.shape)[1].is_static()
          ? std::optional((*logits->type.shape)[1].value())
          : std::nullopt;
  if (!experts)
    return Status::error("the router's logits must be [tokens, experts], experts static");
  if (a.k < 1 || a.k > *experts)
    return Status::error(fmt::format("k={} of {} experts", a.k, *experts));
  NodeBuilder b(graph, node);
  auto ints = [&](const Ints& v) { return b.constant("ints", Tensor::vector_i64(v)); };
  auto scalar = [&](double v) {
    Tensor t(x->type.dtype, {});
    t.set_double(0, v);
    return b.constant("scalar", std::move(t));
  };
  std::vector<Value*> top = b.node(Op::kTopK, {logits, ints({a.k})}, TopKAttrs{}, 2);
  Value* weights =
      a.normalize ? b.op(Op::kSoftmax, {top[0]}, SoftmaxAttrs{-1})
                  : b.op(Op::kGatherElements,
                         {b.op(Op::kSoftmax, {logits}, SoftmaxAttrs{-1}), top[1]}, AxisAttrs{1});
  // routing[t, e]: the weight of expert e for token t, 0 where it was not chosen.
  Ints all(static_cast<size_t>(*experts));
  std::iota(all.begin(), all.end(), 0);
  Value* chosen =
      b.op(Op::kEqual, {b.op(Op::kUnsqueeze, {top[1], ints({2})}, AxesAttrs{}), ints(all)});
  Value* routing = b.op(Op::kReduceSum,
                        {b.op(Op::kMul, {b.op(Op::kCast, {chosen}, CastAttrs{x->type.dtype}),
                                         b.op(Op::kUnsqueeze, {weights, ints({2})}, AxesAttrs{})}),
                         ints({1})},
                        ReduceAttrs{std::nullopt, false});
  // Every expert on every token: [E, T, F], then [E, T, H].
  auto linear = [&](Value* in, Value* w, Value* bias) {
    Value* out = b.op(Op::kMatMul, {in, b.op(Op::kTranspose, {w}, TransposeAttrs{Ints{0, 2, 1}})});
    return bias ? b.op(Op::kAdd, {out, b.op(Op::kUnsqueeze, {bias, ints({1})}, AxesAttrs{})}) : out;
  };
  Value* h =
      linear(b.op(Op::kUnsqueeze, {x, ints({0})}, AxesAttrs{}), node.inputs[2], node.input(3));
  Value* act = nullptr;
  if (a.activation == "swiglu") { // gate and linear halves interleaved
    auto every_other = [&](int64_t from) {
      return b.op(
          Op::kSlice,
          {h, ints({from}), ints({std::numeric_limits<int64_t>::max()}), ints({-1}), ints({2})},
          SliceAttrs{});
    };
    Value *gate = every_other(0), *lin = every_other(1);
    if (a.limit) {
      gate = b.op(Op::kMin, {gate, scalar(*a.limit)});
      lin = b.op(Op::kMax, {b.op(Op::kMin, {lin, scalar(*a.limit)}), scalar(-*a.limit)});
    }
    Value* glu =
        b.op(Op::kMul, {gate, b.op(Op::kSigmoid, {b.op(Op::kMul, {gate, scalar(a.alpha)})})});
    act = b.op(Op::kMul, {glu, b.op(Op::kAdd, {lin, scalar(a.beta)})});
  } else if (a.activation == "relu") {
    act = b.op(Op::kRelu, {h});
  } else if (a.activation == "silu") {
    act = b.op(Op::kMul, {h, b.op(Op::kSigmoid, {h})});
  } else if (a.activation == "gelu") { // h (1 + tanh(sqrt(2 / pi) (h + 0.044715 h^3))) / 2
    Value* cube = b.op(Op::kMul, {b.op(Op::kMul, {h, h}), h});
    Value* inner = b.op(Op::kMul, {b.op(Op::kAdd, {h, b.op(Op::kMul, {cube, scalar(0.044715)})}),
                                   scalar(std::sqrt(2.0 / M_PI))});
    act = b.op(Op::kMul, {b.op(Op::kMul, {h, scalar(0.5)}),
                          b.op(Op::kAdd, {b.op(Op::kTanh, {inner}), scalar(1.0)})});
  } else {
    return Status::error(fmt::format("activation_type '{}' is not supported", a.activation));
  }
  Value* each = linear(act, node.inputs[4], node.input(5));
  // y[t] = sum over e of routing[t, e] each[e, t].
  Value* mix =
      b.op(Op::kUnsqueeze, {b.op(Op::kTranspose, {routing}, TransposeAttrs{Ints{1, 0}}), ints({2})},
           AxesAttrs{});
  b.op(Op::kReduceSum, {b.op(Op::kMul, {each, mix}), ints({0})}, ReduceAttrs{std::nullopt, false},
       y);
  return b.status();
}

} // namespace

Result<bool> expand_moe(Graph& graph, const std::function<bool(const Node&)>& keep) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    if (n->op_type == Op::kMoE && !keep(*n)) nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    Location where = location_of(graph, *node);
    Value* y = node->outputs[0];
    y->producer = nullptr;
    node->outputs[0] = nullptr;
    WEFT_RETURN_IF_ERROR(expand(graph, *node, y).with_location(where));
    graph.remove_nodes_if([&](const Node& n) { return &n == node; });
  }
  return !nodes.empty();
}

} // namespace weft
