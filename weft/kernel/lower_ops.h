// The lowering functions of lower_node, by op family.
#pragma once

#include <string>

#include "weft/kernel/lower_node.h"

namespace weft::kernel {

bool is_elementwise(const Node& n);
Result<LoweredNode> lower_elementwise(const Node& n, const std::string& name);
Result<LoweredNode> lower_reduce(const Node& n, const std::string& name);
Result<LoweredNode> lower_arg_reduce(const Node& n, const std::string& name);
Result<LoweredNode> lower_hardmax(const Node& n, const std::string& name);
Result<LoweredNode> lower_softmax(const Node& n, const std::string& name);
Result<LoweredNode> lower_layer_norm(const Node& n, const std::string& name);
// Are a LayerNormalization's scale and bias one value per element of the normalized dims, the
// same for every row (so that a flat column index reads them)? Else they broadcast to the
// input another way ([1, 5] for normalized [4, 5], or [3, 5] for [2, 3, 5] over the last axis).
bool layer_norm_params_flat(const Node& n);
Result<LoweredNode> lower_instance_norm(const Node& n, const std::string& name);
Result<LoweredNode> lower_transpose(const Node& n, const std::string& name);
Result<LoweredNode> lower_slice(const Node& n, const std::string& name);
Result<LoweredNode> lower_concat(const Node& n, const std::string& name);
Result<LoweredNode> lower_matmul(const Node& n, const std::string& name);
Result<LoweredNode> lower_gemm(const Node& n, const std::string& name);
Result<LoweredNode> lower_einsum(const Node& n, const std::string& name);
Result<LoweredNode> lower_dft(const Node& n, const std::string& name);
Result<LoweredNode> lower_global_pool(const Node& n, const std::string& name);
Result<LoweredNode> lower_conv(const Node& n, const std::string& name);
Result<LoweredNode> lower_conv_channels_last(const Node& n, const std::string& name);
Result<LoweredNode> lower_conv_transpose(const Node& n, const std::string& name);
Result<LoweredNode> lower_pool(const Node& n, const std::string& name);
Result<LoweredNode> lower_lrn(const Node& n, const std::string& name);
Result<LoweredNode> lower_max_unpool(const Node& n, const std::string& name);
Result<LoweredNode> lower_reverse_sequence(const Node& n, const std::string& name);
Result<LoweredNode> lower_pad(const Node& n, const std::string& name);
Result<LoweredNode> lower_tile(const Node& n, const std::string& name);
Result<LoweredNode> lower_split(const Node& n, const std::string& name);
Result<LoweredNode> lower_batch_norm(const Node& n, const std::string& name);
Result<LoweredNode> lower_batch_norm_training(const Node& n, const std::string& name);
Result<LoweredNode> lower_mvn(const Node& n, const std::string& name);
Result<LoweredNode> lower_optimizer(const Node& n, const std::string& name);
Result<LoweredNode> lower_det(const Node& n, const std::string& name);
Result<LoweredNode> lower_gather(const Node& n, const std::string& name);
Result<LoweredNode> lower_gather_elements(const Node& n, const std::string& name);
Result<LoweredNode> lower_gather_nd(const Node& n, const std::string& name);
Result<LoweredNode> lower_scatter_elements(const Node& n, const std::string& name);
Result<LoweredNode> lower_scatter_nd(const Node& n, const std::string& name);
Result<LoweredNode> lower_depth_space(const Node& n, const std::string& name);
Result<LoweredNode> lower_trilu(const Node& n, const std::string& name);
Result<LoweredNode> lower_eye_like(const Node& n, const std::string& name);
Result<LoweredNode> lower_range(const Node& n, const std::string& name);
Result<LoweredNode> lower_constant_of_shape(const Node& n, const std::string& name);
Result<LoweredNode> lower_one_hot(const Node& n, const std::string& name);
Result<LoweredNode> lower_cum_sum(const Node& n, const std::string& name);
Result<LoweredNode> lower_top_k(const Node& n, const std::string& name);
Result<LoweredNode> lower_resize(const Node& n, const std::string& name);
Result<LoweredNode> lower_grid_sample(const Node& n, const std::string& name);
Result<LoweredNode> lower_roi_align(const Node& n, const std::string& name);
Result<LoweredNode> lower_deform_conv(const Node& n, const std::string& name);
Result<LoweredNode> lower_quantize_linear(const Node& n, const std::string& name);
Result<LoweredNode> lower_dequantize_linear(const Node& n, const std::string& name);
Result<LoweredNode> lower_dynamic_quantize_linear(const Node& n, const std::string& name);
Result<LoweredNode> lower_window_function(const Node& n, const std::string& name);
Result<LoweredNode> lower_nll_loss(const Node& n, const std::string& name);
Result<LoweredNode> lower_softmax_cross_entropy(const Node& n, const std::string& name);

} // namespace weft::kernel
