// QLinearConv (and its channels-last form) as oneDNN's int8 convolution.
#include <algorithm>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"

namespace weft::library {

namespace {

// QLinearConv's operands as oneDNN's int8 convolution takes them: u8 or s8 activations
// with a zero point, s8 weights without one, an int32 bias, and the requantization as
// output scales (x_scale * w_scale / y_scale, per output channel where w_scale is) and a
// destination zero point. The zero points are run-time arguments, which oneDNN's JIT
// kernels take. The activations are channels-last inside, as oneDNN has only its reference
// kernel on plain int8 activations: a weft.QLinearConvChannelsLast's lie so already, a
// QLinearConv's are reordered from and to plain memory.
struct QLinearConv {
  dnnl::convolution_forward::primitive_desc pd;
  memory::desc x_user, y_user, x_inside, y_inside, wmd_user, bias;
  int32_t x_zero = 0, y_zero = 0;
};

int32_t scalar_of(const Value* v) { return static_cast<int32_t>(v->constant->get_int64(0)); }

memory::data_type int8_type(const Value* v) {
  return v->type.dtype == DType::kU8 ? memory::data_type::u8 : memory::data_type::s8;
}

// oneDNN's channels-last layout of activation dims [N, C, spatial...] in "type".
memory::desc channels_last_of(const Dims& dims, memory::data_type type) {
  using T = memory::format_tag;
  return memory::desc(dims, type,
                      dims.size() == 3   ? T::nwc
                      : dims.size() == 4 ? T::nhwc
                                         : T::ndhwc);
}

// Why QLinearConv's form is not oneDNN's int8 convolution, if it is not.
std::optional<std::string> qlinear_conv_form_unfit(const Node& n) {
  if ((n.op_type != Op::kQLinearConv && n.op_type != Op::kQLinearConvChannelsLast) ||
      n.inputs.size() < 8)
    return "not a QLinearConv";
  if (!int8_products_exact()) return "int8 products are not exact on this CPU (no VNNI)";
  const Value *x = n.inputs[0], *w = n.inputs[3], *y = n.outputs[0], *b = n.input(8);
  auto int8 = [](const Value* v) {
    return v->type.dtype == DType::kU8 || v->type.dtype == DType::kI8;
  };
  if (!int8(x) || !int8(y) || !w->is_constant() || w->type.dtype != DType::kI8 ||
      w->constant->rank() < 3 || w->constant->rank() > 5)
    return "not u8 or s8 activations by constant s8 weights in 1-3 spatial dims";
  for (int i : {1, 2, 6, 7}) {
    if (!n.inputs[static_cast<size_t>(i)]->is_constant() ||
        n.inputs[static_cast<size_t>(i)]->constant->num_elements() != 1)
      return "scales or zero points of the activations that are not constants per tensor";
  }
  int64_t channels = w->constant->dims()[0];
  const Value *ws = n.inputs[4], *wz = n.inputs[5];
  if (!ws->is_constant() ||
      (ws->constant->num_elements() != 1 && ws->constant->num_elements() != channels))
    return "weight scales neither per tensor nor per output channel";
  std::vector<int64_t> zeros = wz->is_constant() ? wz->constant->to_int64_vector() : Ints{1};
  if (std::any_of(zeros.begin(), zeros.end(), [](int64_t z) { return z != 0; }))
    return "the weights' zero point is not 0";
  if (b && (!b->is_constant() || b->type.dtype != DType::kI32))
    return "a bias that is not constant";
  for (const Value* v : {x, y}) {
    std::optional<int64_t> elements = shape_num_elements(*v->type.shape);
    if (!elements || *elements == 0) return fmt::format("'{}' is empty or symbolic", v->name);
  }
  return std::nullopt;
}

QLinearConv qlinear_conv(const Node& n) {
  const auto& at = n.attrs_as<ConvAttrs>();
  auto [dx, dw, dy, win] = conv_shape(n);
  auto [strides, dilates, pad_l, pad_r, wdims] = primitive_windows(win, dw, at.group);
  using T = memory::data_type;
  T xt = int8_type(n.inputs[0]), yt = int8_type(n.outputs[0]);
  memory::desc wmd(wdims, T::s8, memory::format_tag::any);
  memory::desc bias =
      n.input(8) ? memory::desc({dw[0]}, T::s32, memory::format_tag::x) : memory::desc();
  // The requantization, in f32 as QLinearConv's reference computes it.
  const Tensor& ws = *n.inputs[4]->constant;
  auto xs = static_cast<float>(n.inputs[1]->constant->get_double(0));
  auto ys = static_cast<float>(n.inputs[6]->constant->get_double(0));
  std::vector<float> scales;
  for (int64_t c = 0; c < ws.num_elements(); ++c)
    scales.push_back(xs * static_cast<float>(ws.get_double(c)) / ys);
  dnnl::primitive_attr attr = own_scratchpad();
  attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);
  bool in_place = n.op_type == Op::kQLinearConvChannelsLast;
  QLinearConv q{{},
                in_place ? channels_last_of(dx, xt) : row_major(dx, xt),
                in_place ? channels_last_of(dy, yt) : row_major(dy, yt),
                channels_last_of(dx, xt),
                channels_last_of(dy, yt),
                row_major(wdims, T::s8),
                bias,
                scalar_of(n.inputs[2]),
                scalar_of(n.inputs[7])};
  if (q.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (q.y_zero != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, q.x_inside, wmd, bias,
                                    q.y_inside, strides, dilates, pad_l, pad_r);
  q.pd = dnnl::convolution_forward::primitive_desc(d, attr, engine());
  return q;
}

} // namespace

std::optional<std::string> int8_conv_unfit(const Node& n) {
  if (std::optional<std::string> unfit = qlinear_conv_form_unfit(n)) return unfit;
  try {
    if (std::string(qlinear_conv(n).pd.impl_info_str()).starts_with("ref"))
      return "oneDNN has only its reference int8 convolution for it";
  } catch (const dnnl::error& e) {
    return fmt::format("oneDNN: {}", e.what());
  }
  return std::nullopt;
}

std::optional<LibraryCall> qlinear_conv_call(const Node& n, const Absorbed& /*absorbed*/,
                                             std::string* why_not) {
  if (std::optional<std::string> unfit = int8_conv_unfit(n)) {
    *why_not = *unfit;
    return std::nullopt;
  }
  QLinearConv q = qlinear_conv(n);
  LibraryCall call;
  std::vector<DnnlKernel::Arg> args = {
      {DNNL_ARG_SRC, position(call.values, n.inputs[0]), q.x_user, q.x_inside}};
  position(call.values, n.inputs[3]); // bound though reordered, for the profile
  DnnlKernel::Owned owned;
  owned.emplace(DNNL_ARG_WEIGHTS, reordered_constant(n.inputs[3], q.wmd_user, q.pd.weights_desc()));
  if (q.x_zero != 0)
    owned.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                  std::make_shared<const memory>(s32_scalar(q.x_zero)));
  if (q.y_zero != 0)
    owned.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
                  std::make_shared<const memory>(s32_scalar(q.y_zero)));
  if (const Value* b = n.input(8))
    args.push_back({DNNL_ARG_BIAS, position(call.values, b), q.bias});
  args.push_back({DNNL_ARG_DST, position(call.values, n.outputs[0]), q.y_user, q.y_inside});
  call.kernel = std::make_shared<DnnlKernel>(
      dnnl::convolution_forward(q.pd), std::move(args), std::move(owned),
      fmt::format("oneDNN int8 convolution ({}, channels-last{})", q.pd.impl_info_str(),
                  n.op_type == Op::kQLinearConvChannelsLast ? " in place" : ""));
  return call;
}

} // namespace weft::library
