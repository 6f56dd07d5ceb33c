#include "weft/kernel/lower_node.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// Dropout in training mode with a constant ratio in (0, 1) was decomposed into random draws
// (graph/passes/decompose.cc); one left here in training mode draws masks at a ratio known
// only at run time, which Weft does not do, unless its ratio is 0 (then it keeps every
// element, as at inference). Specialization freezes the ratio and the training flag when
// they are graph inputs.
bool is_random_dropout(const Node& n) {
  if (n.op_type != Op::kDropout) return false;
  const Value* training = n.input(2);
  if (!training || (training->is_constant() && training->constant->get_int64(0) == 0)) return false;
  const Value* ratio = n.input(1); // absent: 0.5
  return !ratio || !ratio->is_constant() || ratio->constant->get_double(0) != 0.0;
}

// Ops whose output is the input's bytes under another shape (or, BitCast, another type).
bool is_alias(const Node& n) {
  static const std::set<Op> ops = {Op::kReshape, Op::kFlatten, Op::kSqueeze, Op::kUnsqueeze,
                                   Op::kBitCast};
  if (ops.contains(n.op_type)) return true;
  // Dropout at inference with its mask unused.
  return n.op_type == Op::kDropout && (n.outputs.size() < 2 || !n.outputs[1]) &&
         !is_random_dropout(n);
}

bool has_static_shapes(const Node& n) {
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const Value* v : *list) {
      if (v && !v->type.has_static_shape()) return false;
    }
  }
  return true;
}

// Does Resize "n" upsample symbolic axis "d" by an integer factor, or downsample it by a power
// of two (its output extent then a dim over the input's; lower_resize reads both as
// ExprOp::kExtent values)? A U-Net's or an FPN's x2 over a dynamic image, an
// `interpolate(scale_factor=0.5)`.
bool scaled_over_symbols(const Node& n, size_t d) {
  std::optional<std::vector<double>> scales = resize_scales(n);
  if (!scales) return false;
  const Dim& x = (*n.inputs[0]->type.shape)[d];
  const Dim& y = (*n.outputs[0]->type.shape)[d];
  double s = (*scales)[d];
  if (std::optional<int64_t> k = resize_divisor(s)) return y == dim_floor_div(x, 0, *k);
  return s >= 2 && std::floor(s) == s && y == dim_mul(x, static_cast<int64_t>(s));
}

// Do "n"'s lowerings hold for dims known only at run time? Elementwise ops do when each
// input dim is the output's or a static 1 (equal symbols are equal extents at run time, and
// a symbol that may be 1 never broadcasts); so do Transposes (a copy over symbolic extents),
// Gathers (any number of indices, into static dims: an index is clamped into their extent),
// and Splits and Concats along a static axis.
// Softmax, the reductions, the global poolings and InstanceNormalization do over any axes (a
// mean divides by the count of reduced elements, an ExprOp::kExtent); so does
// LayerNormalization, whose scale and bias hold an element per normalized element. RoiAlign
// does over a symbolic count of regions, ScatterElements over symbolic updates along its axis;
// Resize scaling a symbolic axis by an integer factor or its inverse (a power of two), or
// stretching axes to sizes over symbols, DepthToSpace and SpaceToDepth over a symbolic plane.
bool admits_symbolic_shapes(const Node& n) {
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const Value* v : *list) {
      if (v && !v->type.shape) return false;
    }
  }
  if (is_alias(n) || n.op_type == Op::kTranspose || n.op_type == Op::kTrilu ||
      n.op_type == Op::kRange || n.op_type == Op::kConstantOfShape || n.op_type == Op::kCumSum ||
      n.op_type == Op::kCumProd)
    return true; // the same bytes, or a copy (by position), or a scan along the axis
  if (n.op_type == Op::kSlice) { // known bounds, from the start of a symbolic axis or reversed
    const auto& a = n.attrs_as<SliceAttrs>();
    if (a.symbolic_starts) return true; // steps of 1 from starts >= 0 (fold_shape_values)
    if (!a.starts || !a.axes || !a.steps) return false;
    const Shape& x = *n.inputs[0]->type.shape;
    for (size_t i = 0; i < a.starts->size(); ++i) {
      auto axis = static_cast<size_t>((*a.axes)[i]);
      if (axis >= x.size()) return false;
      if (x[axis].is_static()) continue;
      // From a start >= 0 by steps of 1, or reversed whole (torch.flip: from the last element
      // by -1 to an end before any extent's start, the output as long as the input).
      int64_t start = (*a.starts)[i], step = (*a.steps)[i];
      bool whole_reversed = step == -1 && start == -1 && a.ends &&
                            (*a.ends)[i] <= std::numeric_limits<int64_t>::min() / 2 &&
                            (*n.outputs[0]->type.shape)[axis] == x[axis];
      if (!whole_reversed && (start < 0 || step != 1)) return false;
    }
    return true;
  }
  if (n.op_type == Op::kConcat) return true; // offsets symbolic or not (lower_concat)
  if (n.op_type == Op::kQuantizeLinear || n.op_type == Op::kDequantizeLinear) {
    // Per tensor: elementwise, its scale and zero point one element each.
    return std::all_of(n.inputs.begin() + 1, n.inputs.end(), [](const Value* v) {
      return !v || (v->type.has_static_shape() && shape_num_elements(*v->type.shape) == 1);
    });
  }
  if (n.op_type == Op::kDynamicQuantizeLinear) return true; // a flat pass, over any count
  if (n.op_type == Op::kSplit) {             // pieces at static offsets along the axis
    int64_t axis = n.attrs_as<SplitAttrs>().axis;
    return std::all_of(n.outputs.begin(), n.outputs.end(), [&](const Value* v) {
      if (!v) return true;
      const Shape& s = *v->type.shape;
      int64_t a = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
      return a >= 0 && a < static_cast<int64_t>(s.size()) && s[static_cast<size_t>(a)].is_static();
    });
  }
  if (n.op_type == Op::kGather || n.op_type == Op::kGatherElements) {
    // (An index wraps and clamps by the axis's extent, symbolic or not: Emitter::offset.)
    auto rank = static_cast<int64_t>(n.inputs[0]->type.shape->size());
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    return axis >= -rank && axis < rank;
  }
  if (n.op_type == Op::kGatherND || n.op_type == Op::kScatterND) { // tuples of a static length
    const Shape& x = *n.inputs[0]->type.shape;
    const Shape& idx = *n.inputs[1]->type.shape;
    if (idx.empty() || !idx.back().is_static()) return false;
    size_t first = n.op_type == Op::kGatherND
                       ? static_cast<size_t>(n.attrs_as<BatchDimsAttrs>().batch_dims)
                       : 0;
    return first + static_cast<size_t>(idx.back().value()) <= x.size();
  }
  const Shape& out = *n.outputs[0]->type.shape;
  if (n.op_type == Op::kTile) { // a symbolic dim is not repeated; a repeated one is static
    const Shape& x = *n.inputs[0]->type.shape;
    for (size_t d = 0; d < x.size(); ++d) {
      const Dim& y = out[d];
      if (!x[d].is_static() && y != x[d]) return false;
      if (x[d].is_static() && !y.is_static() && (x[d].value() == 0 || !dim_div(y, x[d])))
        return false;
    }
    return true;
  }
  if (is_elementwise(n)) {
    for (const Value* v : n.inputs) {
      // Expand's target shape and CastLike's "like" (only its type is read) are not loaded.
      if (!v || ((n.op_type == Op::kExpand || n.op_type == Op::kCastLike) && v != n.inputs[0]))
        continue;
      const Shape& in = *v->type.shape;
      for (size_t d = 0; d < in.size(); ++d) {
        if (in[d] != out[out.size() - in.size() + d] && in[d] != Dim(1)) return false;
      }
    }
    return true;
  }
  if (n.op_type == Op::kSoftmax || n.op_type == Op::kLogSoftmax ||
      n.op_type == Op::kGlobalAveragePool || n.op_type == Op::kGlobalMaxPool ||
      n.op_type == Op::kInstanceNormalization)
    return true;
  if (is_reduce_op(n.op_type)) {
    const auto& axes = n.attrs_as<ReduceAttrs>().axes;
    return axes && !axes->empty();
  }
  if (n.op_type == Op::kArgMax || n.op_type == Op::kArgMin) return true;
  if (n.op_type == Op::kResize || n.op_type == Op::kUpsample) {
    // Symbolic axes that keep their extent (the R-CNN keypoint head's count of boxes), the
    // resized ones static.
    std::optional<std::vector<double>> scales = resize_scales(n);
    const Shape& x = *n.inputs[0]->type.shape;
    const auto& a = n.attrs_as<ResizeAttrs>();
    if (a.coordinate_transformation_mode == ResizeCoordinates::kTfCropAndResize) return false;
    // Stretched to sizes over symbols: each axis's scale is the extents' ratio, which a run
    // knows (not antialias's filter, whose width the scale sets).
    if (!scales)
      return resize_stretched_to_sizes(n) && (!a.antialias || a.mode == ResizeMode::kNearest);
    for (size_t d = 0; d < x.size(); ++d) {
      bool resized = (*scales)[d] != 1 || out[d] != x[d];
      if (resized && (!x[d].is_static() || !out[d].is_static()) && !scaled_over_symbols(n, d))
        return false;
    }
    return true;
  }
  if (n.op_type == Op::kRoiAlign) // a symbolic count of rois over a static input and grid
    return n.inputs[0]->type.has_static_shape() && n.attrs_as<RoiAlignAttrs>().sampling_ratio > 0;
  if (n.op_type == Op::kScatterElements || n.op_type == Op::kScatter) {
    // Updates as long as the data off the axis, any count along it (torchvision's
    // `result[idx_in_level] = ...` of a data-dependent count of rois): an index is wrapped
    // into the axis's extent.
    const Shape& x = *n.inputs[0]->type.shape;
    const Shape& updates = *n.inputs[2]->type.shape;
    int64_t axis = n.attrs_as<ScatterAttrs>().axis;
    if (axis < 0) axis += static_cast<int64_t>(x.size());
    if (updates.size() != x.size() || *n.inputs[1]->type.shape != updates) return false;
    for (size_t d = 0; d < x.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && updates[d] != x[d]) return false;
    }
    return true;
  }
  if (n.op_type == Op::kPad) { // padding in any mode, growing the symbolic dims if any
    const auto& a = n.attrs_as<PadAttrs>();
    const Shape& x = *n.inputs[0]->type.shape;
    if (!a.pads || a.pads->size() != 2 * x.size()) return false;
    for (size_t d = 0; d < x.size(); ++d) {
      if (!x[d].is_static() && ((*a.pads)[d] < 0 || (*a.pads)[d + x.size()] < 0)) return false;
    }
    return true;
  }
  if (n.op_type == Op::kLayerNormalization) return layer_norm_params_flat(n);
  if (n.op_type == Op::kDepthToSpace || n.op_type == Op::kSpaceToDepth) {
    // Channels static, the plane's dims (symbolic or not) multiples of the block: PixelShuffle
    // over a dynamic image.
    int64_t b = n.attrs_as<BlockAttrs>().blocksize;
    const Shape& s = *(n.op_type == Op::kDepthToSpace ? n.outputs[0] : n.inputs[0])->type.shape;
    return s.size() == 4 && s[1].is_static() && dim_div(s[2], b) && dim_div(s[3], b);
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

// (The scales' and zero points' lengths are infer_qlinear's: per tensor, per output channel
// of QLinearConv's weights, per row of QLinearMatMul's A and column of its B.)
bool qlinear_accepts(const Node& n) {
  DType t = n.outputs[0]->type.dtype;
  return t == DType::kU8 || t == DType::kI8;
}

// Kernel constants are doubles: an integer value they do not hold exactly (beyond 2^53) has
// no lowering.
bool constant_of_shape_accepts(const Node& n) {
  const Tensor& v = *n.attrs_as<ConstantOfShapeAttrs>().value;
  if (!n.outputs[0]->type.shape || v.num_elements() != 1) return false;
  if (dtype_is_float(v.dtype())) return true;
  double d = v.get_double(0);
  return std::abs(d) < 0x1p53 && static_cast<int64_t>(d) == v.get_int64(0);
}

const std::unordered_map<Op, Lowering>& lowerings() {
  static const std::unordered_map<Op, Lowering> table = [] {
    std::unordered_map<Op, Lowering> t;
    auto add = [&](std::initializer_list<Op> ops, Lowering l) {
      for (Op op : ops)
        t.emplace(op, l);
    };
    add({Op::kReduceL1, Op::kReduceL2, Op::kReduceLogSum, Op::kReduceLogSumExp, Op::kReduceMax,
         Op::kReduceMean, Op::kReduceMin, Op::kReduceProd, Op::kReduceSum, Op::kReduceSumSquare},
        {lower_reduce});
    add({Op::kSoftmax, Op::kLogSoftmax}, {lower_softmax});
    add({Op::kArgMax, Op::kArgMin}, {lower_arg_reduce});
    add({Op::kHardmax}, {lower_hardmax});
    add({Op::kLayerNormalization}, {lower_layer_norm});
    add({Op::kInstanceNormalization}, {lower_instance_norm});
    add({Op::kMeanVarianceNormalization}, {lower_mvn});
    add({Op::kDet}, {lower_det});
    add({Op::kAdagrad, Op::kAdam, Op::kMomentum}, {lower_optimizer});
    add({Op::kTranspose}, {lower_transpose});
    add({Op::kSlice}, {lower_slice});
    add({Op::kConcat}, {lower_concat});
    add({Op::kSplit}, {lower_split});
    add({Op::kTile}, {lower_tile});
    add({Op::kConv}, {lower_conv, conv_accepts});
    // Over static shapes; otherwise only oneDNN runs it.
    add({Op::kConvChannelsLast}, {lower_conv_channels_last, [](const Node& n) {
                                    return conv_accepts(n) &&
                                           n.inputs[0]->type.has_static_shape() &&
                                           n.outputs[0]->type.has_static_shape();
                                  }});
    add({Op::kConvInteger}, {lower_conv});
    add({Op::kQLinearConv}, {lower_conv, qlinear_accepts});
    add({Op::kConvTranspose}, {lower_conv_transpose, conv_accepts});
    add({Op::kMaxPool, Op::kAveragePool, Op::kMaxPoolChannelsLast, Op::kAveragePoolChannelsLast},
        {lower_pool});
    add({Op::kPad},
        {lower_pad, [](const Node& n) { return n.attrs_as<PadAttrs>().pads.has_value(); }});
    add({Op::kMatMul, Op::kMatMulInteger}, {lower_matmul});
    add({Op::kQLinearMatMul}, {lower_matmul, qlinear_accepts});
    add({Op::kGemm}, {lower_gemm});
    add({Op::kEinsum}, {lower_einsum});
    add({Op::kDFT}, {lower_dft, [](const Node& n) { // constant operands
                       return dft_axis(n).has_value() && dft_length(n).has_value();
                     }});
    add({Op::kGlobalAveragePool, Op::kGlobalMaxPool}, {lower_global_pool});
    add({Op::kBatchNormalization}, {lower_batch_norm});
    add({Op::kGather}, {lower_gather});
    add({Op::kGatherElements}, {lower_gather_elements});
    add({Op::kGatherND}, {lower_gather_nd});
    add({Op::kScatter, Op::kScatterElements}, {lower_scatter_elements});
    add({Op::kScatterND}, {lower_scatter_nd});
    add({Op::kDepthToSpace, Op::kSpaceToDepth}, {lower_depth_space});
    add({Op::kTrilu}, {lower_trilu});
    add({Op::kEyeLike}, {lower_eye_like});
    add({Op::kRange}, {lower_range});
    add({Op::kConstantOfShape}, {lower_constant_of_shape, constant_of_shape_accepts});
    add({Op::kOneHot}, {lower_one_hot});
    add({Op::kCumSum, Op::kCumProd}, {lower_cum_sum, [](const Node& n) { // a constant axis
                                        return n.attrs_as<CumSumAttrs>().axis.has_value();
                                      }});
    add({Op::kTopK}, {lower_top_k});
    add({Op::kResize, Op::kUpsample}, {lower_resize, [](const Node& n) {
                                         return resize_scales(n).has_value() ||
                                                resize_stretched_to_sizes(n);
                                       }});
    add({Op::kGridSample}, {lower_grid_sample});
    add({Op::kRoiAlign}, {lower_roi_align});
    add({Op::kDeformConv}, {lower_deform_conv});
    add({Op::kLRN}, {lower_lrn});
    add({Op::kMaxUnpool},
        {lower_max_unpool, [](const Node& n) { return n.outputs[0]->type.has_static_shape(); }});
    add({Op::kReverseSequence}, {lower_reverse_sequence});
    add({Op::kQuantizeLinear}, {lower_quantize_linear});
    add({Op::kDequantizeLinear}, {lower_dequantize_linear});
    add({Op::kDynamicQuantizeLinear}, {lower_dynamic_quantize_linear});
    add({Op::kBlackmanWindow, Op::kHammingWindow, Op::kHannWindow}, {lower_window_function});
    add({Op::kNegativeLogLikelihoodLoss}, {lower_nll_loss});
    add({Op::kSoftmaxCrossEntropyLoss}, {lower_softmax_cross_entropy});
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
  if (!has_static_shapes(n) && !admits_symbolic_shapes(n)) {
    std::vector<std::string> ins, outs;
    for (const Value* v : n.inputs)
      ins.push_back(v ? v->type.to_string() : "-");
    for (const Value* v : n.outputs)
      outs.push_back(v ? v->type.to_string() : "-");
    return Status::error(fmt::format("dims known only at run time are not supported for {} "
                                     "yet ({} -> {})",
                                     n.op_type, fmt::join(ins, ", "), fmt::join(outs, ", ")));
  }
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
