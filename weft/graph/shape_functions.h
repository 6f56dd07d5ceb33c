// Shape functions of the op table: the output types of a node from its input types, its
// constant inputs and its attributes. Dims a function cannot determine are Dim::unknown().
// A function fails only when the inputs contradict the op (e.g. broadcasting 3 against 4).
#pragma once

#include <optional>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

using TypesOrError = Result<std::vector<TensorType>>;

TypesOrError infer_same(const Node& node);
// infer_same, with Clip's min and max (inputs 1 and 2) of one element each.
TypesOrError infer_clip(const Node& node);
TypesOrError infer_same_bool(const Node& node);
TypesOrError infer_broadcast(const Node& node);
TypesOrError infer_broadcast_bool(const Node& node);
TypesOrError infer_where(const Node& node);
TypesOrError infer_cast(const Node& node);
TypesOrError infer_cast_like(const Node& node);
TypesOrError infer_bit_cast(const Node& node);
TypesOrError infer_reduce(const Node& node);
TypesOrError infer_arg_reduce(const Node& node);
TypesOrError infer_rms_norm(const Node& node);
TypesOrError infer_attention(const Node& node);
TypesOrError infer_rotary(const Node& node);
TypesOrError infer_lp_norm(const Node& node);
TypesOrError infer_center_crop_pad(const Node& node);
TypesOrError infer_lp_pool(const Node& node);
TypesOrError infer_swiglu(const Node& node);
TypesOrError infer_moe(const Node& node);
TypesOrError infer_optional_has_element(const Node& node);
TypesOrError infer_optional_get_element(const Node& node);
TypesOrError infer_affine_grid(const Node& node);
TypesOrError infer_col2im(const Node& node);
TypesOrError infer_tensor_scatter(const Node& node);
TypesOrError infer_group_norm(const Node& node);
TypesOrError infer_layer_norm(const Node& node);
TypesOrError infer_batch_norm(const Node& node);
TypesOrError infer_top_k(const Node& node);
TypesOrError infer_einsum(const Node& node);
TypesOrError infer_dft(const Node& node);
TypesOrError infer_stft(const Node& node);
TypesOrError infer_mel_weight_matrix(const Node& node);
TypesOrError infer_quantize_linear(const Node& node);
TypesOrError infer_dequantize_linear(const Node& node);
TypesOrError infer_dynamic_quantize_linear(const Node& node);
TypesOrError infer_window(const Node& node);
TypesOrError infer_eye_like(const Node& node);
TypesOrError infer_one_hot(const Node& node);
TypesOrError infer_depth_to_space(const Node& node);
TypesOrError infer_space_to_depth(const Node& node);
TypesOrError infer_resize(const Node& node);
TypesOrError infer_grid_sample(const Node& node);
TypesOrError infer_roi_align(const Node& node);
TypesOrError infer_deform_conv(const Node& node);
TypesOrError infer_nll_loss(const Node& node);
TypesOrError infer_softmax_cross_entropy(const Node& node);
TypesOrError infer_matmul(const Node& node);
TypesOrError infer_gemm(const Node& node);
TypesOrError infer_conv(const Node& node);
// Op::kConvChannelsLast: Conv over [N, spatial..., C] activations into [N, spatial..., M];
// Op::kQLinearConvChannelsLast too (weights input 3, the dtype y_zero_point's).
TypesOrError infer_conv_channels_last(const Node& node);
TypesOrError infer_conv_transpose(const Node& node);
TypesOrError infer_pad(const Node& node);
TypesOrError infer_pool(const Node& node);
// Op::kMaxPoolChannelsLast, Op::kAveragePoolChannelsLast: pooling over [N, spatial..., C].
TypesOrError infer_pool_channels_last(const Node& node);
// "s" (rank 3 or more) with its last dim moved to 1 (channels last to first), or back
// ("to_last").
Shape move_channels(const Shape& s, bool to_last);
TypesOrError infer_max_unpool(const Node& node);
TypesOrError infer_global_pool(const Node& node);
TypesOrError infer_concat(const Node& node);
TypesOrError infer_gather(const Node& node);
TypesOrError infer_gather_elements(const Node& node);
TypesOrError infer_reverse_sequence(const Node& node);
TypesOrError infer_instance_norm(const Node& node);
TypesOrError infer_conv_integer(const Node& node);
TypesOrError infer_matmul_integer(const Node& node);
TypesOrError infer_qlinear(const Node& node);
TypesOrError infer_gather_nd(const Node& node);
TypesOrError infer_scatter(const Node& node);
TypesOrError infer_compress(const Node& node);
TypesOrError infer_flatten(const Node& node);
TypesOrError infer_squeeze(const Node& node);
TypesOrError infer_unsqueeze(const Node& node);
TypesOrError infer_split(const Node& node);
// Pad's pads from its constant inputs, over every axis (opset 18's axes input spread out);
// none when they are known only at run time.
Result<std::optional<Ints>> constant_pads(const Node& node, int64_t rank);
// Split's parts for opset 18's num_outputs: ceil(extent / parts) each, the last ones smaller.
Ints split_sizes(int64_t extent, int64_t parts);
TypesOrError infer_transpose(const Node& node);
TypesOrError infer_reshape(const Node& node);
TypesOrError infer_expand(const Node& node);
TypesOrError infer_tile(const Node& node);
TypesOrError infer_slice(const Node& node);
TypesOrError infer_shape_op(const Node& node);
TypesOrError infer_size(const Node& node);
TypesOrError infer_range(const Node& node);
TypesOrError infer_constant(const Node& node);
TypesOrError infer_constant_of_shape(const Node& node);
TypesOrError infer_dropout(const Node& node);
TypesOrError infer_random(const Node& node);
TypesOrError infer_recurrent(const Node& node);
TypesOrError infer_mvn(const Node& node);
TypesOrError infer_det(const Node& node);
TypesOrError infer_optimizer(const Node& node);

// A DFT's signal axis (as given: the attribute, or opset 20's input, -2 when absent), or
// none when it is an input not known yet.
std::optional<int64_t> dft_axis(const Node& node);
// A DFT's transform length n: its dft_length input, else the signal axis's extent (twice the
// extent less one for a one-sided inverse); none when not known yet.
std::optional<int64_t> dft_length(const Node& node);
// The frames of an STFT: "count" of them, "length" samples each, "step" apart.
struct StftFrames {
  int64_t count = 0, length = 0, step = 0;
};
// Requires the signal's static shape and a constant frame_step (and frame_length, when
// given); fails when they do not fit.
Result<StftFrames> stft_frames(const Node& node);
// The axes that a Resize's roi, scales or sizes give (opset 18's axes attribute, normalized;
// all by default), or none when one is out of range.
std::optional<Ints> resize_axes(const Node& node, size_t rank);
// The scale of each axis of a Resize or Upsample: its constant scales, or its constant sizes
// over the input's static extents, or with sizes over symbols (ResizeAttrs::symbolic_sizes)
// the output's static extents over the input's; none when neither is known.
std::optional<std::vector<double>> resize_scales(const Node& node);
// k where "scale" is 1 / k for a power of two k up to 1024 (a downsampling by 2, 4, ...): then
// floor(X * scale) is floor(X / k) exactly, a dim over a symbolic X.
std::optional<int64_t> resize_divisor(double scale);
// Whether a Resize's sizes (constant or over symbols) stretch each axis they give to its
// output extent (keep_aspect_ratio_policy stretch): its scales are then the output's extents
// over the input's, which a run knows where they are symbolic.
bool resize_stretched_to_sizes(const Node& node);
// The output extents of a Resize or Upsample: its sizes, or floor(extent * scale); an axis
// whose scale is 1 keeps its extent, symbolic or not.
std::optional<Shape> resize_extents(const Node& node);

// One spatial dim of a Conv or pool with static shapes: output position o reads input
// positions o * stride + k * dilation - pad_begin for taps k in [0, kernel).
struct Window {
  int64_t kernel, stride, dilation, pad_begin, pad_end, in, out;
};
// The spatial dims of a window op from its attributes (empty lists take their defaults;
// auto_pad overrides pads) and its input and output shapes "x" and "y".
std::vector<Window> window_dims(const Ints& kernel, const Ints& strides, const Ints& dilations,
                                const Ints& pads, AutoPad auto_pad, const Shape& x, const Shape& y);

// One spatial dim of a ConvTranspose: input position i and tap k add into output position
// i * stride + k * dilation - pad_begin, for outputs in [0, out).
struct TransposedWindow {
  int64_t kernel, stride, dilation, pad_begin, out;
};
// The spatial dims of a ConvTranspose with static input and weight shapes, after its
// auto_pad, output_shape and output_padding rules.
Result<std::vector<TransposedWindow>> conv_transpose_windows(const Node& node);

// An Einsum equation with its ellipses expanded for the inputs' ranks: one label per dim,
// for each input and for the output. Letters label themselves; the dims an ellipsis stands
// for are labelled '0', '1', ... aligned to the right, as numpy broadcasts them.
struct EinsumLabels {
  std::vector<std::string> inputs;
  std::string output;
};
Result<EinsumLabels> einsum_labels(const std::string& equation, const std::vector<size_t>& ranks);

// The positions a Compress keeps (where its constant condition is true, within the
// extent it applies to), or none when the condition is not constant.
std::optional<Ints> compress_positions(const Node& node);

// The output shape of a MaxUnpool without output_shape: [N, C, (in - 1) * stride + kernel -
// pads...]. Its indices address this shape even when output_shape is larger.
Result<Shape> max_unpool_default_shape(const Node& node);

// Numpy broadcasting of "shapes".
Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes);
// "axis" in [-rank, rank) made non-negative.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);
// The elements of a constant integer input, or none when "v" is absent or not constant.
std::optional<Ints> constant_ints(const Value* v);

// The permutation of a Transpose node: its perm, or the input's dims reversed without one;
// none when that needs the input's rank and it is not known.
std::optional<Ints> transpose_perm(const Node& transpose);

} // namespace weft
