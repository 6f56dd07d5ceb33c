#include "weft/kernel/lower_node.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// Dropout in training mode draws random masks, which Weft does not do, unless its ratio
// is 0 (then it keeps every element, as at inference). Specialization freezes the ratio
// and the training flag when they are graph inputs.
bool is_random_dropout(const Node& n) {
  if (n.op_type != "Dropout") return false;
  const Value* training = n.input(2);
  if (!training || (training->is_constant() && training->constant->get_int64(0) == 0)) return false;
  const Value* ratio = n.input(1); // absent: 0.5
  return !ratio || !ratio->is_constant() || ratio->constant->get_double(0) != 0.0;
}

// Ops whose output is the input's bytes under another shape (or, BitCast, another type).
bool is_alias(const Node& n) {
  static const std::set<std::string_view> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                 "BitCast"};
  if (ops.contains(n.op_type)) return true;
  // Dropout at inference with its mask unused.
  return n.op_type == "Dropout" && (n.outputs.size() < 2 || !n.outputs[1]) && !is_random_dropout(n);
}

bool has_static_shapes(const Node& n) {
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const Value* v : *list) {
      if (v && !v->type.has_static_shape()) return false;
    }
  }
  return true;
}

// Do "n"'s lowerings hold for dims known only at run time? Elementwise ops do when each
// input dim is the output's or a static 1 (equal symbols are equal extents at run time, and
// a symbol that may be 1 never broadcasts); so do Transposes (a copy over symbolic extents)
// Gathers of static indices along a static axis, and Splits and Concats along a static axis.
// Softmax, the reductions, the global poolings and InstanceNormalization do over any axes (a
// mean divides by the count of reduced elements, an ExprOp::kExtent); so does
// LayerNormalization, whose scale and bias hold an element per normalized element.
bool admits_symbolic_shapes(const Node& n) {
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const Value* v : *list) {
      if (v && !v->type.shape) return false;
    }
  }
  if (is_alias(n) || n.op_type == "Transpose" || n.op_type == "Trilu")
    return true; // the same bytes, or a copy (Trilu's by position)
  if (n.op_type == "Split" || n.op_type == "Concat") { // pieces along a static axis
    int64_t axis =
        n.op_type == "Split" ? n.attrs_as<SplitAttrs>().axis : n.attrs_as<AxisAttrs>().axis;
    const std::vector<Value*>& pieces = n.op_type == "Split" ? n.outputs : n.inputs;
    return std::all_of(pieces.begin(), pieces.end(), [&](const Value* v) {
      if (!v) return true;
      const Shape& s = *v->type.shape;
      int64_t a = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
      return a >= 0 && a < static_cast<int64_t>(s.size()) && s[static_cast<size_t>(a)].is_static();
    });
  }
  if (n.op_type == "Gather") { // static indices into a static axis
    const Shape& x = *n.inputs[0]->type.shape;
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    return n.inputs[1]->type.has_static_shape() && axis >= 0 &&
           axis < static_cast<int64_t>(x.size()) && x[static_cast<size_t>(axis)].is_static();
  }
  const Shape& out = *n.outputs[0]->type.shape;
  if (is_elementwise(n)) {
    for (const Value* v : n.inputs) {
      if (!v) continue;
      const Shape& in = *v->type.shape;
      for (size_t d = 0; d < in.size(); ++d) {
        if (in[d] != out[out.size() - in.size() + d] && in[d] != Dim(1)) return false;
      }
    }
    return true;
  }
  if (n.op_type == "Softmax" || n.op_type == "LogSoftmax" || n.op_type == "GlobalAveragePool" ||
      n.op_type == "GlobalMaxPool" || n.op_type == "InstanceNormalization")
    return true;
  if (n.op_type.starts_with("Reduce")) {
    const auto& axes = n.attrs_as<ReduceAttrs>().axes;
    return axes && !axes->empty();
  }
  if (n.op_type == "LayerNormalization") {
    const Shape& x = *n.inputs[0]->type.shape;
    Dim normalized = 1;
    int64_t axis = n.attrs_as<LayerNormAttrs>().axis;
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    for (size_t d = static_cast<size_t>(std::max<int64_t>(axis, 0)); d < x.size(); ++d)
      normalized = dim_mul(normalized, x[d]);
    for (int i : {1, 2}) {
      if (n.input(i) && !(num_elements(*n.inputs[static_cast<size_t>(i)]->type.shape) == normalized))
        return false;
    }
    return true;
  }
  return false;
}

// How an op lowers: its function, and the condition on the node under which it does, if
// any. The one table for lower_node and can_lower; elementwise ops and aliases are not in it.
struct Lowering {
  Result<LoweredNode> (*lower)(const Node&, const std::string&);
  bool (*accepts)(const Node&) = nullptr; // null: every node of the op
};

bool conv_accepts(const Node& n) { // f16 and bf16 accumulate in f32
  DType t = n.outputs[0]->type.dtype;
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
}

bool conv_transpose_accepts(const Node& n) {
  DType t = n.outputs[0]->type.dtype;
  return t == DType::kF32 || t == DType::kF64;
}

bool qlinear_accepts(const Node& n) { // per-tensor scales only
  for (size_t i : {1, 4, 6}) {
    const Value* scale = n.input(i);
    if (!scale || shape_num_elements(*scale->type.shape).value_or(0) != 1) return false;
  }
  DType t = n.outputs[0]->type.dtype;
  return t == DType::kU8 || t == DType::kI8;
}

const std::unordered_map<std::string_view, Lowering>& lowerings() {
  static const std::unordered_map<std::string_view, Lowering> table = [] {
    std::unordered_map<std::string_view, Lowering> t;
    auto add = [&](std::initializer_list<std::string_view> ops, Lowering l) {
      for (std::string_view op : ops)
        t.emplace(op, l);
    };
    add({"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
         "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"},
        {lower_reduce});
    add({"Softmax", "LogSoftmax"}, {lower_softmax});
    add({"ArgMax", "ArgMin"}, {lower_arg_reduce});
    add({"Hardmax"}, {lower_hardmax});
    add({"LayerNormalization"}, {lower_layer_norm});
    add({"InstanceNormalization"}, {lower_instance_norm});
    add({"MeanVarianceNormalization"}, {lower_mvn});
    add({"Det"}, {lower_det});
    add({kAdagradOp, kAdamOp, kMomentumOp}, {lower_optimizer});
    add({"Transpose"}, {lower_transpose});
    add({"Slice"}, {lower_slice});
    add({"Concat"}, {lower_concat});
    add({"Split"}, {lower_split});
    add({"Tile"}, {lower_tile});
    add({"Conv"}, {lower_conv, conv_accepts});
    add({"ConvInteger"}, {lower_conv});
    add({"QLinearConv"}, {lower_conv, qlinear_accepts});
    add({"ConvTranspose"}, {lower_conv_transpose, conv_transpose_accepts});
    add({"MaxPool", "AveragePool"}, {lower_pool});
    add({"Pad"}, {lower_pad, [](const Node& n) { return n.attrs_as<PadAttrs>().pads.has_value(); }});
    add({"MatMul", "MatMulInteger"}, {lower_matmul});
    add({"QLinearMatMul"}, {lower_matmul, qlinear_accepts});
    add({"Gemm"}, {lower_gemm});
    add({"Einsum"}, {lower_einsum});
    add({"DFT"}, {lower_dft, [](const Node& n) { // constant operands
           return dft_axis(n).has_value() && dft_length(n).has_value();
         }});
    add({"GlobalAveragePool", "GlobalMaxPool"}, {lower_global_pool});
    add({"BatchNormalization"}, {lower_batch_norm});
    add({"Gather"}, {lower_gather});
    add({"GatherElements"}, {lower_gather_elements});
    add({"GatherND"}, {lower_gather_nd});
    add({"Scatter", "ScatterElements"}, {lower_scatter_elements});
    add({"ScatterND"}, {lower_scatter_nd});
    add({"DepthToSpace", "SpaceToDepth"}, {lower_depth_space});
    add({"Trilu"}, {lower_trilu});
    add({"EyeLike"}, {lower_eye_like});
    add({"Range"}, {lower_range});
    add({"OneHot"}, {lower_one_hot});
    add({"CumSum", "CumProd"}, {lower_cum_sum, [](const Node& n) { // a constant axis
           return n.attrs_as<CumSumAttrs>().axis.has_value();
         }});
    add({"TopK"}, {lower_top_k});
    add({"Resize", "Upsample"},
        {lower_resize, [](const Node& n) { return resize_scales(n).has_value(); }});
    add({"GridSample"}, {lower_grid_sample});
    add({"RoiAlign"}, {lower_roi_align});
    add({"DeformConv"}, {lower_deform_conv});
    add({"LRN"}, {lower_lrn});
    add({"MaxUnpool"},
        {lower_max_unpool, [](const Node& n) { return n.outputs[0]->type.has_static_shape(); }});
    add({"ReverseSequence"}, {lower_reverse_sequence});
    add({"QuantizeLinear"}, {lower_quantize_linear});
    add({"DequantizeLinear"}, {lower_dequantize_linear});
    add({"DynamicQuantizeLinear"}, {lower_dynamic_quantize_linear});
    add({"BlackmanWindow", "HammingWindow", "HannWindow"}, {lower_window_function});
    add({"NegativeLogLikelihoodLoss"}, {lower_nll_loss});
    add({"SoftmaxCrossEntropyLoss"}, {lower_softmax_cross_entropy});
    return t;
  }();
  return table;
}

const Lowering* lowering_of(const Node& n) {
  auto it = lowerings().find(n.op_type);
  return it == lowerings().end() ? nullptr : &it->second;
}

} // namespace

bool can_lower(const Node& n) {
  if (is_alias(n)) return true;
  if (const Lowering* l = lowering_of(n)) return !l->accepts || l->accepts(n);
  return is_elementwise(n);
}

Result<LoweredNode> lower_node(const Node& n, const std::string& name) {
  if (!has_static_shapes(n) && !admits_symbolic_shapes(n))
    return Status::error(
        fmt::format("dims known only at run time are not supported for {} yet", n.op_type));
  if (is_random_dropout(n)) {
    return Status::error(
        "Dropout in training mode with a nonzero ratio draws random masks, which Weft does not do");
  }
  if (is_alias(n)) return LoweredNode{{}, n.inputs[0]};
  if (const Lowering* l = lowering_of(n)) return l->lower(n, name);
  if (is_elementwise(n)) return lower_elementwise(n, name);
  return Status::error(fmt::format("{} has no lowering yet", n.op_type));
}

} // namespace weft::kernel
