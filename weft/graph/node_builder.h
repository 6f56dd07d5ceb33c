// NodeBuilder: new nodes right before a given node, at its opset (or a given one), their outputs
// typed by the op table's shape functions. For rewrites that expand one node into many
// (expand_recurrent, the unrolling of Loop and Scan).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

class NodeBuilder {
public:
  NodeBuilder(Graph& graph, const Node& at) : NodeBuilder(graph, at, at.opset) {}
  // The same with the new nodes at "opset" (the ops a node of another domain expands into
  // may need a newer ai.onnx opset than the model's).
  NodeBuilder(Graph& graph, const Node& at, int opset) : graph_(graph), at_(at), opset_(opset) {}

  // A new node's outputs; "into", when given (a value without a producer), becomes its first
  // output. A shape function that rejects the node is noted in status(), and the outputs are
  // then typed by the first input's dtype alone.
  std::vector<Value*> node(Op op, std::vector<Value*> inputs, OpAttrs attrs, size_t num_outputs,
                           Value* into = nullptr);
  Value* op(Op op, std::vector<Value*> inputs, OpAttrs attrs = NoAttrs{}, Value* into = nullptr) {
    return node(op, std::move(inputs), std::move(attrs), 1, into)[0];
  }

  Value* constant(const std::string& what, Tensor t);
  Value* fill(DType dtype, std::vector<int64_t> dims, double value);
  // The slice at "index" of "v" along "axis", without that axis.
  Value* take(Value* v, int64_t index, int64_t axis);
  std::vector<Value*> split(Value* v, int64_t axis, Ints sizes);
  // "parts" stacked along a new "axis".
  Value* stack(const std::vector<Value*>& parts, int64_t axis, Value* into = nullptr);

  // The first failure of a shape function, if any.
  const Status& status() const { return status_; }

private:
  Graph& graph_;
  const Node& at_;
  int opset_;
  std::map<int64_t, Value*> indices_;
  Status status_;
};

} // namespace weft
