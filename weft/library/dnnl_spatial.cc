// oneDNN's calls between channels-last regions (dnnl.h): ConvTranspose, Resize and pooling, on
// activations as channels_last's Transposes around them leave them, or plain.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"

namespace weft::library {

namespace {

// The activations of a 4-D call between channels-last regions (channels_last's Transposes
// around pooling, ConvTranspose and Resize): x read through an absorbed Transpose from
// channels-last, and the output written through one to channels-last, in place; otherwise
// plain. "y" is the value the call writes without an output Transpose.
struct Activations {
  memory::desc x, y;     // as they lie in memory
  const Value *in, *out; // the values bound for them
};

Activations activations(const Absorbed& absorbed, const Value* x, const Value* y) {
  const Node *in = absorbed.input_transposes[0], *out = absorbed.output_transpose;
  Dims dx = dims_of(x), dy = dims_of(y);
  return {in ? transposed_input(*in, dx.size()) : plain(dx),
          out ? transposed_output(dy, *out) : plain(dy), in ? in->inputs[0] : x,
          out ? out->outputs[0] : y};
}

// How a call's activations relate to the primitive's layout, for the profile.
std::string layout_note(const Activations& act, const memory::desc& x, const memory::desc& y) {
  if (x == plain(x.dims())) return "";
  return act.x == x && act.y == y ? ", channels-last in place" : ", channels-last";
}

} // namespace

// ConvTranspose in 1-3 spatial dims: oneDNN's deconvolution, on channels-last activations
// reordered from and to the plain buffers around it as for Conv. ONNX's weights are [C_in,
// C_out / group, k...], which oneDNN reads as (g)iohw; an output_padding is padding taken off
// the end. A window whose padding would be negative is left to generated code.
std::optional<LibraryCall> conv_transpose_call(const Node& n, const Absorbed& absorbed,
                                               std::string* why_not) {
  const std::vector<PostOp>& ops = absorbed.epilogue;
  const auto& at = n.attrs_as<ConvTransposeAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2), *y = n.outputs[0];
  Dims dx = dims_of(x), dw = dims_of(w), dy = dims_of(y);
  if (dx.size() < 3 || dx.size() > 5 || at.group < 1) {
    *why_not = fmt::format("{} spatial dims", dx.size() - 2);
    return std::nullopt;
  }
  Result<std::vector<TransposedWindow>> win = conv_transpose_windows(n);
  if (!win.ok()) {
    *why_not = win.status().message();
    return std::nullopt;
  }
  Dims strides, dilates, pad_l, pad_r;
  for (size_t i = 0; i < win->size(); ++i) {
    const TransposedWindow& d = (*win)[i];
    int64_t end =
        (dx[i + 2] - 1) * d.stride + (d.kernel - 1) * d.dilation + 1 - d.out - d.pad_begin;
    if (d.pad_begin < 0 || end < 0 || d.out != dy[i + 2]) {
      *why_not = "a window with negative padding";
      return std::nullopt;
    }
    strides.push_back(d.stride);
    dilates.push_back(d.dilation - 1);
    pad_l.push_back(d.pad_begin);
    pad_r.push_back(end);
  }
  // Logical weights [(G,) OC/G, IC/G, k...] over ONNX's [IC, OC/G, k...] memory.
  using T = memory::format_tag;
  size_t spatial = dx.size() - 2;
  Dims wdims = {dw[1], dw[0] / at.group};
  wdims.insert(wdims.end(), dw.begin() + 2, dw.end());
  T wtag = spatial == 1 ? T::bac : spatial == 2 ? T::bacd : T::bacde; // i, o, k... in memory
  if (at.group > 1) {
    wdims.insert(wdims.begin(), at.group);
    wtag = spatial == 1 ? T::acbd : spatial == 2 ? T::acbde : T::acbdef; // g, i, o, k...
  }
  memory::desc w_user(wdims, memory::data_type::f32, wtag);
  bool constant_weights = w->is_constant();
  memory::desc wmd = constant_weights
                         ? memory::desc(wdims, memory::data_type::f32, memory::format_tag::any)
                         : w_user;
  memory::desc bmd = b ? plain({dy[1]}) : memory::desc();
  Activations act = activations(absorbed, x, final_output(n, ops));
  auto build = [&](const Layout& layout) {
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::deconvolution_direct, layout(dx), wmd, bmd,
                                        layout(dy), strides, dilates, pad_l, pad_r);
    LibraryCall call;
    std::vector<DnnlKernel::Arg> args = {
        {DNNL_ARG_SRC, position(call.values, act.in), act.x, layout(dx)}};
    int w_buffer = position(call.values, w); // bound even when reordered, for the profile
    dnnl::primitive_attr attr = post_op_attr(ops, call, args, dy, layout);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine());
    std::string impl = pd.impl_info_str();
    if (impl.starts_with("ref") && layout(dx) != plain(dx)) return LibraryCall{};
    DnnlKernel::Owned owned;
    if (constant_weights) {
      owned.emplace(DNNL_ARG_WEIGHTS, reordered_constant(w, w_user, pd.weights_desc()));
    } else {
      args.push_back({DNNL_ARG_WEIGHTS, w_buffer, w_user});
    }
    if (b) args.push_back({DNNL_ARG_BIAS, position(call.values, b), bmd});
    args.push_back({DNNL_ARG_DST, position(call.values, act.out), act.y, layout(dy)});
    call.kernel = std::make_shared<DnnlKernel>(
        dnnl::deconvolution_forward(pd), std::move(args), std::move(owned),
        fmt::format("oneDNN deconvolution ({}{})", impl, layout_note(act, layout(dx), layout(dy))));
    return call;
  };
  try {
    if (LibraryCall call = build(channels_last); call.kernel) return call;
  } catch (const dnnl::error&) { // not implemented channels-last: plain below
  }
  return build(plain);
}

// oneDNN's linear resampling (onednn_resamples), activations channels-last inside, as for Conv.
std::optional<LibraryCall> resize_call(const Node& n, const Absorbed& absorbed,
                                       std::string* why_not) {
  const Value *x = n.inputs[0], *y = n.outputs[0];
  Dims dx = dims_of(x), dy = dims_of(y);
  if (!onednn_resamples(n) || !absorbed.epilogue.empty()) {
    *why_not = "a Resize form oneDNN's resampling does not compute as ONNX does";
    return std::nullopt;
  }
  Activations act = activations(absorbed, x, y);
  auto build = [&](const Layout& layout) {
    dnnl::resampling_forward::desc d(dnnl::prop_kind::forward_inference,
                                     dnnl::algorithm::resampling_linear, layout(dx), layout(dy));
    dnnl::resampling_forward::primitive_desc pd(d, own_scratchpad(), engine());
    LibraryCall call;
    std::vector<DnnlKernel::Arg> args = {
        {DNNL_ARG_SRC, position(call.values, act.in), act.x, layout(dx)},
        {DNNL_ARG_DST, position(call.values, act.out), act.y, layout(dy)}};
    std::string impl = pd.impl_info_str();
    if (impl.starts_with("ref") && layout(dx) != plain(dx)) return LibraryCall{};
    call.kernel = std::make_shared<DnnlKernel>(
        dnnl::resampling_forward(pd), std::move(args), DnnlKernel::Owned{},
        fmt::format("oneDNN linear resampling ({}{})", impl,
                    layout_note(act, layout(dx), layout(dy))));
    return call;
  };
  try {
    if (LibraryCall call = build(channels_last); call.kernel) return call;
  } catch (const dnnl::error&) { // not implemented channels-last: plain below
  }
  return build(plain);
}

// MaxPool (without its Indices output) and AveragePool on plain activations, f32; MaxPool
// also on u8 or s8 ones (a quantized model's, quantized_products.h); their channels-last
// forms (weft.MaxPoolChannelsLast, weft.AveragePoolChannelsLast) in place. ceil_mode's extra
// windows become right padding, which oneDNN never reads for max; an average over them is
// left to generated code when the padding counts.
std::optional<LibraryCall> pool_call(const Node& n, const Absorbed& absorbed,
                                     std::string* why_not) {
  const std::vector<PostOp>& ops = absorbed.epilogue;
  const auto& at = n.attrs_as<PoolAttrs>();
  bool max = shown_op(n.op_type) == Op::kMaxPool;
  bool in_place = shown_op(n.op_type) != n.op_type; // channels-last activations
  const Value *x = n.inputs[0], *y = n.outputs[0];
  const Shape& x_shape = *x->type.shape;
  const Shape& y_shape = *y->type.shape;
  Shape sx = in_place ? move_channels(x_shape, false) : x_shape; // channels first
  Shape sy = in_place ? move_channels(y_shape, false) : y_shape;
  Dims dx = shape_static_dims(sx), dy = shape_static_dims(sy);
  if (!ops.empty() || (n.outputs.size() > 1 && n.outputs[1]) || dx.size() < 3 || dx.size() > 5 ||
      (!max && at.ceil_mode && at.count_include_pad)) {
    *why_not = "a pooling form oneDNN does not take here";
    return std::nullopt;
  }
  std::vector<Window> win =
      window_dims(at.kernel_shape, at.strides, at.dilations, at.pads, at.auto_pad, sx, sy);
  Dims strides, kernel, dilation, pad_l, pad_r;
  for (const Window& d : win) {
    strides.push_back(d.stride);
    kernel.push_back(d.kernel);
    dilation.push_back(d.dilation - 1);
    pad_l.push_back(d.pad_begin);
    int64_t needed = (d.out - 1) * d.stride + (d.kernel - 1) * d.dilation + 1 - d.in - d.pad_begin;
    pad_r.push_back(at.ceil_mode ? std::max(needed, int64_t{0}) : d.pad_end);
  }
  using A = dnnl::algorithm;
  A algorithm = max                    ? A::pooling_max
                : at.count_include_pad ? A::pooling_avg_include_padding
                                       : A::pooling_avg_exclude_padding;
  // Pooling runs on the activations as they lie: plain, or channels-last (Activations); on
  // plain ones reordered to channels-last when oneDNN has only a slow kernel for them (3-D
  // windows over ncdhw: "simple_nchw", 26 ms for a 24 MB MaxPool in MViT-v2, 1 GB/s).
  Activations act = in_place ? Activations{channels_last(dx), channels_last(dy), x, y}
                             : activations(absorbed, x, y);
  if (x->type.dtype != DType::kF32) { // (static_call takes only max pooling of u8 or s8)
    auto type = x->type.dtype == DType::kU8 ? memory::data_type::u8 : memory::data_type::s8;
    auto retyped = [&](const memory::desc& md) {
      return memory::desc(md.dims(), type, strides_of(md));
    };
    act.x = retyped(act.x);
    act.y = retyped(act.y);
  }
  auto build = [&](const memory::desc& x_in, const memory::desc& y_in) {
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, algorithm, x_in, y_in,
                                     strides, kernel, dilation, pad_l, pad_r);
    dnnl::pooling_v2_forward::primitive_desc pd(d, own_scratchpad(), engine());
    LibraryCall call;
    std::vector<DnnlKernel::Arg> args = {
        {DNNL_ARG_SRC, position(call.values, act.in), act.x, x_in},
        {DNNL_ARG_DST, position(call.values, act.out), act.y, y_in}};
    call.kernel = std::make_shared<DnnlKernel>(
        dnnl::pooling_v2_forward(pd), std::move(args), DnnlKernel::Owned{},
        fmt::format("oneDNN pooling ({}{})", pd.impl_info_str(),
                    x_in != act.x ? ", reordered to channels-last"
                    : in_place    ? ", channels-last in place"
                                  : ""));
    return call;
  };
  LibraryCall call = build(act.x, act.y);
  std::string impl = call.kernel->describe();
  if (act.x == row_major(dx, act.x.data_type()) && impl.find("(jit") == std::string::npos) {
    try {
      auto nhwc = [&](const Dims& d) {
        return memory::desc(d, act.x.data_type(), strides_of(channels_last(d)));
      };
      LibraryCall reordered = build(nhwc(dx), nhwc(dy));
      if (reordered.kernel->describe().find("(jit") != std::string::npos) return reordered;
    } catch (const dnnl::error&) { // keep the plain call
    }
  }
  return call;
}

} // namespace weft::library
