#include "weft/graph/passes/fold_constants.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "weft/graph/evaluate.h"
#include "weft/graph/op_table.h"
#include "weft/graph/print_graph.h"

namespace weft {

namespace {

// Are the inputs of "node" known well enough to evaluate it?
bool inputs_known(const Node& node) {
  if (node.op_type == Op::kShape || node.op_type == Op::kSize) {
    return node.inputs[0]->type.has_static_shape();
  }
  if (node.op_type == Op::kCastLike) return node.inputs[0]->is_constant(); // a dtype from input 1
  for (const Value* in : node.inputs) {
    if (in && !in->is_constant()) return false;
  }
  return true;
}

// The values read only as the weights (input 1) of "ops": convolutions and matrix products,
// whose weights the library packs at compile time when they are constant.
std::unordered_set<const Value*> weights_only(const Graph& graph, const std::set<Op>& ops) {
  std::unordered_map<const Value*, int> weight_uses;
  for (const auto& n : graph.nodes()) {
    if (ops.contains(n->op_type) && n->input(1)) ++weight_uses[n->input(1)];
  }
  std::unordered_set<const Value*> out;
  std::unordered_map<const Value*, int> uses = graph.use_counts();
  for (const auto& [v, count] : weight_uses) {
    if (uses[v] == count) out.insert(v);
  }
  return out;
}

// The weights the compile decides about once it knows the device (of_int8_candidates):
// DequantizeLinear of constants read only as the weights of Conv, MatMul or Gemm, which a library
// may run in int8 (graph/passes/quantized_products.h) and which quantized_in_float folds
// otherwise.
struct Weights {
  std::unordered_set<const Value*> of_products, of_int8_candidates;
};

// Refines the output types of "node" with its shape function, now that more of its inputs
// are constant; returns whether every output is static and small enough to fold. A
// quantized model's weights (DequantizeLinear of int8 constants, ONNX Runtime's QDQ format)
// fold at any size where only convolutions and matrix products read them: they run on f32
// weights, which the library packs once, instead of dequantizing every run. Those of
// convolutions, MatMuls and Gemms alone wait (Weights).
bool outputs_foldable(Node& node, const Weights& weights) {
  if (node.op_type == Op::kConstant) return true;
  if (node.op_type == Op::kDequantizeLinear) {
    if (weights.of_int8_candidates.contains(node.outputs[0])) return false;
    if (weights.of_products.contains(node.outputs[0])) return true;
  }
  // f16 and bf16 weights that narrow_in_f32 cast to f32 for the library: packed once too.
  if (node.op_type == Op::kCast && weights.of_products.contains(node.outputs[0]) &&
      (node.inputs[0]->type.dtype == DType::kF16 || node.inputs[0]->type.dtype == DType::kBF16))
    return true;
  if (node.def->infer) {
    Result<std::vector<TensorType>> inferred = node.def->infer(node);
    if (inferred.ok()) {
      for (size_t i = 0; i < node.outputs.size() && i < inferred->size(); ++i) {
        const TensorType& t = (*inferred)[i];
        if (node.outputs[i] && t.has_static_shape() && !node.outputs[i]->type.has_static_shape()) {
          node.outputs[i]->type = t;
        }
      }
    }
  }
  // Ops whose output is some of their input's elements, moved: at most as large as the
  // constant they read, so they fold at any size.
  static const std::set<Op> kSubset = {Op::kTranspose, Op::kSlice,     Op::kReshape,
                                       Op::kSqueeze,   Op::kUnsqueeze, Op::kFlatten};
  // Those whose output is their inputs' elements, some repeated (a Concat's, its inputs'
  // together: Funnel-Transformer's sine and cosine tables), fold up to a bound.
  static const std::set<Op> kMoved = {Op::kGather, Op::kGatherND, Op::kConcat};
  int64_t limit = kSubset.contains(node.op_type)  ? std::numeric_limits<int64_t>::max()
                  : kMoved.contains(node.op_type) ? kMaxFoldedMovedElements
                                                  : kMaxFoldedElements;
  // Nor does a result inflate the model when it has no more bytes than a constant it reads
  // (a weight normalized at every run, as weight_norm exports: wav2vec 2.0's positional
  // convolution; not a Cast of int8 weights to f32), or for a MatMul twice as many: a table
  // through a Linear with more outputs than inputs (ConViT's positional scores, 3 -> 4 a
  // position), which costs a product at every run, not a pass over memory.
  size_t inflation = node.op_type == Op::kMatMul ? 2 : 1;
  size_t largest_input = 0;
  for (const Value* in : node.inputs) {
    if (in && in->is_constant()) largest_input = std::max(largest_input, in->constant->num_bytes());
  }
  for (const Value* out : node.outputs) {
    if (!out) continue;
    if (!out->type.has_static_shape()) return false;
    std::optional<int64_t> n = shape_num_elements(*out->type.shape);
    if (!n) return false;
    size_t bytes = static_cast<size_t>(*n) * static_cast<size_t>(dtype_size(out->type.dtype));
    if (*n > limit && bytes > inflation * largest_input) return false;
  }
  return true;
}

} // namespace

Status fold_constants(Graph& graph) {
  std::unordered_set<const Node*> folded;
  Weights weights{weights_only(graph, {Op::kConv, Op::kConvTranspose, Op::kGemm, Op::kMatMul}),
                  weights_only(graph, {Op::kConv, Op::kMatMul, Op::kGemm})};
  for (const auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (!can_evaluate(node) || !inputs_known(node) || !outputs_foldable(node, weights)) continue;
    if (node.op_type == Op::kConstant && node.outputs[0]) { // its value shared, not copied
      graph.make_constant(node.outputs[0], node.attrs_as<ConstantAttrs>().value);
      folded.insert(&node);
      continue;
    }
    Result<std::vector<Tensor>> outputs = evaluate_node(node);
    if (!outputs.ok()) {
      return outputs.status().with_location(location_of(graph, node));
    }
    if (outputs->empty()) continue; // this form of the op is not folded
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i]) graph.make_constant(node.outputs[i], std::move((*outputs)[i]));
    }
    folded.insert(&node);
  }
  graph.remove_nodes_if([&](const Node& n) { return folded.contains(&n); });
  return Status();
}

} // namespace weft
