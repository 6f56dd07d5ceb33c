#include "weft/kernel/lower_node.h"

#include <algorithm>
#include <set>

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

} // namespace

bool can_lower(const Node& n) {
  if (n.op_type == "ConvInteger") return true;
  if (n.op_type == "DFT") return dft_axis(n) && dft_length(n);      // constant operands
  if (n.op_type == "QLinearMatMul" || n.op_type == "QLinearConv") { // per-tensor scales only
    for (size_t i : {1, 4, 6}) {
      const Value* scale = n.input(i);
      if (!scale || shape_num_elements(*scale->type.shape).value_or(0) != 1) return false;
    }
    DType t = n.outputs[0]->type.dtype;
    return t == DType::kU8 || t == DType::kI8;
  }
  if (n.op_type == "Conv") { // f16 and bf16 accumulate in f32
    DType t = n.outputs[0]->type.dtype;
    return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64;
  }
  if (n.op_type == "ConvTranspose")
    return n.outputs[0]->type.dtype == DType::kF32 || n.outputs[0]->type.dtype == DType::kF64;
  if (n.op_type == "AveragePool" || n.op_type == "MaxPool") return true;
  if (n.op_type == "MaxUnpool") return n.outputs[0]->type.has_static_shape();
  if (n.op_type == "Pad") return n.attrs_as<PadAttrs>().pads.has_value();
  if (n.op_type == "Resize" || n.op_type == "Upsample") return resize_scales(n).has_value();
  if (n.op_type == "CumSum" || n.op_type == "CumProd") // a constant axis
    return n.attrs_as<CumSumAttrs>().axis.has_value();
  static const std::set<std::string_view> ops = {"ArgMax",
                                                 "ArgMin",
                                                 "BatchNormalization",
                                                 "BlackmanWindow",
                                                 "Concat",
                                                 "DeformConv",
                                                 "DepthToSpace",
                                                 "Det",
                                                 "DequantizeLinear",
                                                 "DynamicQuantizeLinear",
                                                 "Einsum",
                                                 "EyeLike",
                                                 "Gather",
                                                 "GatherElements",
                                                 "GatherND",
                                                 "Gemm",
                                                 "GlobalAveragePool",
                                                 "GlobalMaxPool",
                                                 "GridSample",
                                                 "HammingWindow",
                                                 "HannWindow",
                                                 "Hardmax",
                                                 "InstanceNormalization",
                                                 "LRN",
                                                 "LayerNormalization",
                                                 "LogSoftmax",
                                                 "MatMul",
                                                 "MeanVarianceNormalization",
                                                 "MatMulInteger",
                                                 "NegativeLogLikelihoodLoss",
                                                 "OneHot",
                                                 "QuantizeLinear",
                                                 "Range",
                                                 "ReduceL1",
                                                 "ReduceL2",
                                                 "ReduceLogSum",
                                                 "ReduceLogSumExp",
                                                 "ReduceMax",
                                                 "ReduceMean",
                                                 "ReduceMin",
                                                 "ReduceProd",
                                                 "ReduceSum",
                                                 "ReduceSumSquare",
                                                 "ReverseSequence",
                                                 "RoiAlign",
                                                 "Scatter",
                                                 "ScatterElements",
                                                 "ScatterND",
                                                 "Slice",
                                                 "Softmax",
                                                 "SoftmaxCrossEntropyLoss",
                                                 "SpaceToDepth",
                                                 "Split",
                                                 "Tile",
                                                 "TopK",
                                                 "Transpose",
                                                 "Trilu",
                                                 kAdagradOp,
                                                 kAdamOp,
                                                 kMomentumOp};
  return is_alias(n) || is_elementwise(n) || ops.contains(n.op_type);
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
  const std::string& op = n.op_type;
  if (op.starts_with("Reduce")) return lower_reduce(n, name);
  if (op == "Softmax" || op == "LogSoftmax") return lower_softmax(n, name);
  if (op == "ArgMax" || op == "ArgMin") return lower_arg_reduce(n, name);
  if (op == "Hardmax") return lower_hardmax(n, name);
  if (op == "LayerNormalization") return lower_layer_norm(n, name);
  if (op == "InstanceNormalization") return lower_instance_norm(n, name);
  if (op == "MeanVarianceNormalization") return lower_mvn(n, name);
  if (op == "Det") return lower_det(n, name);
  if (op == kAdagradOp || op == kAdamOp || op == kMomentumOp) return lower_optimizer(n, name);
  if (op == "Transpose") return lower_transpose(n, name);
  if (op == "Slice") return lower_slice(n, name);
  if (op == "Concat") return lower_concat(n, name);
  if (op == "Split") return lower_split(n, name);
  if (op == "Tile") return lower_tile(n, name);
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") return lower_conv(n, name);
  if (op == "ConvTranspose") return lower_conv_transpose(n, name);
  if (op == "MaxPool" || op == "AveragePool") return lower_pool(n, name);
  if (op == "Pad") return lower_pad(n, name);
  if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul")
    return lower_matmul(n, name);
  if (op == "Gemm") return lower_gemm(n, name);
  if (op == "Einsum") return lower_einsum(n, name);
  if (op == "DFT") return lower_dft(n, name);
  if (op.starts_with("Global")) return lower_global_pool(n, name);
  if (op == "BatchNormalization") return lower_batch_norm(n, name);
  if (op == "Gather") return lower_gather(n, name);
  if (op == "GatherElements") return lower_gather_elements(n, name);
  if (op == "GatherND") return lower_gather_nd(n, name);
  if (op == "Scatter" || op == "ScatterElements") return lower_scatter_elements(n, name);
  if (op == "ScatterND") return lower_scatter_nd(n, name);
  if (op == "DepthToSpace" || op == "SpaceToDepth") return lower_depth_space(n, name);
  if (op == "Trilu") return lower_trilu(n, name);
  if (op == "EyeLike") return lower_eye_like(n, name);
  if (op == "Range") return lower_range(n, name);
  if (op == "OneHot") return lower_one_hot(n, name);
  if (op == "CumSum" || op == "CumProd") return lower_cum_sum(n, name);
  if (op == "TopK") return lower_top_k(n, name);
  if (op == "Resize" || op == "Upsample") return lower_resize(n, name);
  if (op == "GridSample") return lower_grid_sample(n, name);
  if (op == "RoiAlign") return lower_roi_align(n, name);
  if (op == "DeformConv") return lower_deform_conv(n, name);
  if (op == "LRN") return lower_lrn(n, name);
  if (op == "MaxUnpool") return lower_max_unpool(n, name);
  if (op == "ReverseSequence") return lower_reverse_sequence(n, name);
  if (op == "QuantizeLinear") return lower_quantize_linear(n, name);
  if (op == "DequantizeLinear") return lower_dequantize_linear(n, name);
  if (op == "DynamicQuantizeLinear") return lower_dynamic_quantize_linear(n, name);
  if (op.ends_with("Window")) return lower_window_function(n, name);
  if (op == "NegativeLogLikelihoodLoss") return lower_nll_loss(n, name);
  if (op == "SoftmaxCrossEntropyLoss") return lower_softmax_cross_entropy(n, name);
  if (is_elementwise(n)) return lower_elementwise(n, name);
  return Status::error(fmt::format("{} has no lowering yet", op));
}

} // namespace weft::kernel
