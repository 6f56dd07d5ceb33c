#include "weft/graph/node_builder.h"

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/support/check.h"

namespace weft {

std::vector<Value*> NodeBuilder::node(Op op, std::vector<Value*> inputs, OpAttrs attrs,
                                      size_t num_outputs, Value* into) {
  Node n;
  n.name = graph_.unique_node_name(fmt::format("{}_{}", at_.name, op));
  n.op_type = op;
  n.opset = opset_;
  n.conditional = at_.conditional; // part of the same If branch, if any
  n.def = find_op(op, opset_);
  WEFT_CHECK(n.def, "NodeBuilder: the op exists at the builder's opset");
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs.assign(num_outputs, nullptr);
  Result<std::vector<TensorType>> types = n.def->infer(n);
  if (!types.ok() || types->size() < num_outputs) {
    if (status_.ok())
      status_ =
          types.ok() ? Status::error(fmt::format("{} has too few outputs", op)) : types.status();
    types = std::vector<TensorType>(num_outputs, {n.inputs[0]->type.dtype, std::nullopt});
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    n.outputs[i] =
        i == 0 && into ? into : graph_.add_value(graph_.unique_name(n.name), (*types)[i]);
  }
  std::vector<Value*> outputs = n.outputs;
  graph_.insert_node_before(&at_, std::move(n));
  return outputs;
}

Value* NodeBuilder::constant(const std::string& what, Tensor t) {
  return graph_.add_constant(graph_.unique_name(fmt::format("{}_{}", at_.name, what)),
                             std::move(t));
}

Value* NodeBuilder::fill(DType dtype, std::vector<int64_t> dims, double value) {
  Tensor t(dtype, std::move(dims));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.set_double(i, value);
  return constant(value == 0 ? "zeros" : "ones", std::move(t));
}

Value* NodeBuilder::take(Value* v, int64_t index, int64_t axis) {
  auto [it, added] = indices_.try_emplace(index, nullptr);
  if (added) it->second = constant(fmt::format("i{}", index), Tensor::scalar_i64(index));
  return op(Op::kGather, {v, it->second}, AxisAttrs{axis});
}

std::vector<Value*> NodeBuilder::split(Value* v, int64_t axis, Ints sizes) {
  size_t n = sizes.size();
  return node(Op::kSplit, {v}, SplitAttrs{axis, std::move(sizes), std::nullopt}, n);
}

Value* NodeBuilder::stack(const std::vector<Value*>& parts, int64_t axis, Value* into) {
  if (parts.size() == 1) return op(Op::kUnsqueeze, {parts[0]}, AxesAttrs{Ints{axis}}, into);
  std::vector<Value*> expanded;
  for (Value* p : parts)
    expanded.push_back(op(Op::kUnsqueeze, {p}, AxesAttrs{Ints{axis}}));
  return op(Op::kConcat, expanded, AxisAttrs{axis}, into);
}

} // namespace weft
