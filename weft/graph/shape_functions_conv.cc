// Shape functions of MatMul, Gemm, convolutions, Pad and pooling, and the windows of
// convolution and pooling.
#include <algorithm>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"
#include "weft/graph/shape_functions.h"

namespace weft {

using namespace shape_detail;

TypesOrError infer_matmul(const Node& node) {
  const TensorType& a = in_type(node, 0);
  const TensorType& b = in_type(node, 1);
  if (!a.shape || !b.shape) return one({a.dtype, std::nullopt});
  Shape sa = *a.shape, sb = *b.shape;
  if (sa.empty() || sb.empty()) return fail("MatMul inputs must have rank >= 1");
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim(1));
  if (b_vec) sb.push_back(Dim(1));
  const Dim& ka = sa[sa.size() - 1];
  const Dim& kb = sb[sb.size() - 2];
  if (ka.is_static() && kb.is_static() && ka.value() != kb.value()) {
    return fail(fmt::format("MatMul inner dims differ: {} and {}", shape_to_string(*a.shape),
                            shape_to_string(*b.shape)));
  }
  WEFT_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes({Shape(sa.begin(), sa.end() - 2),
                                                       Shape(sb.begin(), sb.end() - 2)}));
  if (!a_vec) batch.push_back(sa[sa.size() - 2]);
  if (!b_vec) batch.push_back(sb[sb.size() - 1]);
  return one({a.dtype, batch});
}

TypesOrError infer_gemm(const Node& node) {
  const auto& g = node.attrs_as<GemmAttrs>();
  const TensorType& a = in_type(node, 0);
  const TensorType& b = in_type(node, 1);
  if (!a.shape || !b.shape) return one({a.dtype, std::nullopt});
  if (a.shape->size() != 2 || b.shape->size() != 2) return fail("Gemm inputs must have rank 2");
  Dim m = (*a.shape)[g.trans_a ? 1 : 0];
  Dim n = (*b.shape)[g.trans_b ? 0 : 1];
  const Dim& ka = (*a.shape)[g.trans_a ? 0 : 1];
  const Dim& kb = (*b.shape)[g.trans_b ? 1 : 0];
  if (!agree(ka, kb)) {
    return fail(fmt::format("Gemm inner dims differ: A is {} and B is {} (transA {}, transB {})",
                            shape_to_string(*a.shape), shape_to_string(*b.shape), g.trans_a,
                            g.trans_b));
  }
  const Value* c = node.input(2);
  if (c && c->type.shape && !broadcasts_to(*c->type.shape, {m, n})) {
    return fail(fmt::format("C is {}, which does not broadcast to the output's [{}, {}]",
                            shape_to_string(*c->type.shape), m.to_string(), n.to_string()));
  }
  return one({a.dtype, Shape{m, n}});
}

namespace {
// Output extent of one spatial dim of a window op: over a symbolic input a quotient
// (dim_floor_div); with ceil_mode too where the stride is at most the window less the end
// padding, so that no window can start past the input (the rule below never applies).
Result<Dim> window_output(const Dim& in, int64_t kernel, int64_t stride, int64_t dilation,
                          int64_t pad_total, AutoPad auto_pad, bool ceil_mode) {
  if (!in.is_static()) {
    if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower)
      return dim_floor_div(in, stride - 1, stride);
    if (auto_pad == AutoPad::kValid) pad_total = 0;
    int64_t window = dilation * (kernel - 1) + 1;
    if (!ceil_mode) return dim_floor_div(in, pad_total - window + stride, stride);
    if (stride > window - (pad_total - pad_total / 2)) return Dim::unknown();
    return dim_floor_div(in, pad_total - window + 2 * stride - 1, stride); // ceil(...) + 1
  }
  int64_t x = in.value();
  if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    return Dim((x + stride - 1) / stride);
  }
  if (auto_pad == AutoPad::kValid) pad_total = 0;
  // ONNX's floor(span / stride) + 1 (or its ceiling): 0 where the window is one element longer
  // than the padded input, less where it is longer still.
  int64_t span = x + pad_total - dilation * (kernel - 1) - 1;
  int64_t out = dim_floor_div(Dim(span + (ceil_mode ? stride - 1 : 0)), 0, stride).value() + 1;
  if (out < 0) {
    return fail(fmt::format("a window of {} elements does not fit in {} with {} of padding",
                            dilation * (kernel - 1) + 1, x, pad_total));
  }
  // With ceil mode, the last window must start inside the input or its begin padding.
  if (ceil_mode && (out - 1) * stride >= x + pad_total / 2) --out;
  return Dim(out);
}

Result<Shape> window_shape(const Shape& x, Dim out_channels, const Ints& kernel,
                           const Ints& strides, const Ints& dilations, const Ints& pads,
                           AutoPad auto_pad, bool ceil_mode) {
  size_t spatial = x.size() - 2;
  if (kernel.size() != spatial) {
    return fail(
        fmt::format("kernel has {} dims, input has {} spatial dims", kernel.size(), spatial));
  }
  Shape out = {x[0], out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t stride = strides.empty() ? 1 : strides[i];
    int64_t dilation = dilations.empty() ? 1 : dilations[i];
    int64_t pad = pads.empty() ? 0 : pads[i] + pads[i + spatial];
    if (stride <= 0 || dilation <= 0) return fail("strides and dilations must be positive");
    Result<Dim> d = window_output(x[i + 2], kernel[i], stride, dilation, pad, auto_pad, ceil_mode);
    if (!d.ok()) return fail(fmt::format("spatial dim {}: {}", i, d.status().message()));
    out.push_back(*d);
  }
  return out;
}
} // namespace

namespace {

// Conv's output type for input "x" (channels first) and weights "w".
TypesOrError conv_output(const ConvAttrs& a, const TensorType& x, const TensorType& w) {
  if (!x.shape || !w.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3 || w.shape->size() != x.shape->size()) {
    return fail("Conv input and weights must have the same rank, at least 3");
  }
  // Each group's weights read C / group input channels (a mismatch read past the input).
  const Dim& c = (*x.shape)[1];
  const Dim& per_group = (*w.shape)[1];
  if (a.group < 1) return fail(fmt::format("group must be positive, got {}", a.group));
  if (c.is_static() && per_group.is_static() && c.value() != per_group.value() * a.group) {
    return fail(fmt::format("the input has {} channels, the weights {} per group in {} group(s)",
                            c.value(), per_group.value(), a.group));
  }
  const Dim& m = (*w.shape)[0]; // output channels, each group's share the same
  if (m.is_static() && m.value() % a.group != 0) {
    return fail(fmt::format("the weights' {} output channels are not a multiple of group {}",
                            m.value(), a.group));
  }
  Ints kernel = a.kernel_shape;
  if (kernel.empty()) {
    for (size_t i = 2; i < w.shape->size(); ++i) {
      if (!(*w.shape)[i].is_static()) return one({x.dtype, unknown_shape(x.shape->size())});
      kernel.push_back((*w.shape)[i].value());
    }
  }
  WEFT_ASSIGN_OR_RETURN(Shape out, window_shape(*x.shape, (*w.shape)[0], kernel, a.strides,
                                                a.dilations, a.pads, a.auto_pad, false));
  return one({x.dtype, out});
}

} // namespace

Shape move_channels(const Shape& s, bool to_last) {
  Shape out = s;
  if (s.size() < 3) return out;
  if (to_last) {
    std::rotate(out.begin() + 1, out.begin() + 2, out.end());
  } else {
    std::rotate(out.begin() + 1, out.end() - 1, out.end());
  }
  return out;
}

// The bias: one value per output channel (a shorter one was read past its end).
TypesOrError infer_conv(const Node& node) {
  const TensorType& w = in_type(node, 1);
  const Value* bias = node.op_type == Op::kConv ? node.input(2) : nullptr;
  if (bias && bias->type.shape && w.shape && !w.shape->empty() &&
      (bias->type.shape->size() != 1 || !agree((*bias->type.shape)[0], (*w.shape)[0]))) {
    return fail(fmt::format("the bias is {}, but the weights have {} output channels",
                            bias->type.to_string(), (*w.shape)[0].to_string()));
  }
  return conv_output(node.attrs_as<ConvAttrs>(), in_type(node, 0), w);
}

TypesOrError infer_conv_channels_last(const Node& node) {
  bool quantized = node.op_type == Op::kQLinearConvChannelsLast;
  TensorType x = in_type(node, 0);
  if (x.shape) x.shape = move_channels(*x.shape, false);
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> out, conv_output(node.attrs_as<ConvAttrs>(), x,
                                                                 in_type(node, quantized ? 3 : 1)));
  if (out[0].shape) out[0].shape = move_channels(*out[0].shape, true);
  if (quantized) out[0].dtype = node.input(7) ? node.input(7)->type.dtype : DType::kU8;
  return out;
}

std::vector<Window> window_dims(const Ints& kernel, const Ints& strides, const Ints& dilations,
                                const Ints& pads, AutoPad auto_pad, const Shape& x,
                                const Shape& y) {
  size_t spatial = x.size() - 2;
  std::vector<Window> w(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    Window& d = w[i];
    d.kernel = kernel[i];
    d.stride = strides.empty() ? 1 : strides[i];
    d.dilation = dilations.empty() ? 1 : dilations[i];
    d.in = x[i + 2].value();
    d.out = y[i + 2].value();
    d.pad_begin = pads.empty() ? 0 : pads[i];
    d.pad_end = pads.empty() ? 0 : pads[i + spatial];
    if (auto_pad == AutoPad::kValid) d.pad_begin = d.pad_end = 0;
    if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
      int64_t total =
          std::max<int64_t>((d.out - 1) * d.stride + (d.kernel - 1) * d.dilation + 1 - d.in, 0);
      d.pad_begin = auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      d.pad_end = total - d.pad_begin;
    }
  }
  return w;
}

Result<std::vector<TransposedWindow>> conv_transpose_windows(const Node& node) {
  const auto& a = node.attrs_as<ConvTransposeAttrs>();
  const Shape& x = *in_type(node, 0).shape;
  const Shape& w = *in_type(node, 1).shape;
  size_t spatial = x.size() - 2;
  auto at = [&](const Ints& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; };
  for (const Ints* v : {&a.dilations, &a.kernel_shape, &a.output_padding, &a.strides}) {
    if (!v->empty() && v->size() != spatial)
      return fail(
          fmt::format("an attribute has {} values for {} spatial dims", v->size(), spatial));
  }
  if ((!a.pads.empty() && a.pads.size() != 2 * spatial) ||
      (!a.output_shape.empty() && a.output_shape.size() != spatial))
    return fail("pads or output_shape do not match the spatial dims");
  std::vector<TransposedWindow> out;
  for (size_t i = 0; i < spatial; ++i) {
    TransposedWindow d;
    d.kernel = at(a.kernel_shape, i, w[i + 2].value());
    d.stride = at(a.strides, i, 1);
    d.dilation = at(a.dilations, i, 1);
    int64_t in = x[i + 2].value();
    int64_t full =
        d.stride * (in - 1) + at(a.output_padding, i, 0) + (d.kernel - 1) * d.dilation + 1;
    bool same = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower;
    if (!a.output_shape.empty() || same) {
      // The pads follow from the requested extent; SAME_UPPER puts the smaller half first.
      // A negative total (a larger output) halves rounding down with auto_pad SAME, as ONNX's
      // reference does; without it the extra positions all come at the end, as an
      // output_padding (ONNX Runtime, ONNX's reference and PyTorch's output_size: an output
      // 2 larger had been shifted down by 1; found by tests/fuzz/attribute_oracle.py).
      d.out = a.output_shape.empty() ? in * d.stride : a.output_shape[i];
      int64_t total = full - d.out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      d.pad_begin = a.auto_pad == AutoPad::kSameUpper ? half : total - half;
      if (!same && total < 0) d.pad_begin = 0;
    } else {
      int64_t begin = a.auto_pad == AutoPad::kValid ? 0 : at(a.pads, i, 0);
      int64_t end = a.auto_pad == AutoPad::kValid ? 0 : at(a.pads, i + spatial, 0);
      d.pad_begin = begin;
      d.out = full - begin - end;
    }
    if (d.out < 0) return fail(fmt::format("spatial dim {} of the output is negative", i));
    out.push_back(d);
  }
  return out;
}

// Each dim grows by its pads (a negative pad crops), from the attribute or a constant input.
Result<std::optional<Ints>> constant_pads(const Node& node, int64_t rank) {
  std::optional<Ints> pads = constant_ints(node.input(1));
  if (!pads || !node.input(3)) return pads;
  std::optional<Ints> axes = constant_ints(node.input(3));
  if (!axes) return std::optional<Ints>();
  if (pads->size() != 2 * axes->size())
    return fail(fmt::format("pads has {} values for {} axes", pads->size(), axes->size()));
  Ints full(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < axes->size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis((*axes)[i], rank));
    full[static_cast<size_t>(axis)] = (*pads)[i];
    full[static_cast<size_t>(axis + rank)] = (*pads)[i + axes->size()];
  }
  return std::optional<Ints>(full);
}

TypesOrError infer_pad(const Node& node) {
  WEFT_RETURN_IF_ERROR(check_one_element(node.input(2), "Pad's constant_value"));
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> pads = node.attrs_as<PadAttrs>().pads;
  if (!pads && x.shape) {
    WEFT_ASSIGN_OR_RETURN(pads, constant_pads(node, static_cast<int64_t>(x.shape->size())));
  }
  if (!x.shape || !pads) return one({x.dtype, x.shape ? unknown_shape(x.shape->size()) : x.shape});
  size_t rank = x.shape->size();
  if (pads->size() != 2 * rank)
    return fail(fmt::format("pads has {} values for rank {}", pads->size(), rank));
  Shape out;
  for (size_t d = 0; d < rank; ++d) {
    const Dim& in = (*x.shape)[d];
    int64_t grow = (*pads)[d] + (*pads)[d + rank];
    if (!in.is_static()) {
      out.push_back(grow >= 0 ? dim_floor_div(in, grow, 1) : Dim::unknown()); // (X+grow)/1
    } else if (in.value() + grow < 0) {
      return fail(fmt::format("pads crop dim {} of extent {} below 0", d, in.value()));
    } else {
      out.push_back(in.value() + grow);
    }
  }
  return one({x.dtype, out});
}

// y: [N, weights' dim 1 * group, spatial...].
TypesOrError infer_conv_transpose(const Node& node) {
  const auto& a = node.attrs_as<ConvTransposeAttrs>();
  const TensorType& x = in_type(node, 0);
  const TensorType& w = in_type(node, 1);
  if (!x.shape || !w.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3 || w.shape->size() != x.shape->size())
    return fail("ConvTranspose input and weights must have the same rank, at least 3");
  if (!agree((*x.shape)[1], (*w.shape)[0]) ||
      ((*x.shape)[1].is_static() && (*x.shape)[1].value() % a.group != 0))
    return fail("the weights' first dim must be the input's channels, a multiple of group");
  Dim channels = (*w.shape)[1].is_static() ? Dim((*w.shape)[1].value() * a.group) : Dim::unknown();
  Shape out = {(*x.shape)[0], channels};
  // (The windows need the spatial dims only: a batch over symbols keeps them.)
  bool spatial =
      std::all_of(x.shape->begin() + 2, x.shape->end(), [](const Dim& d) { return d.is_static(); });
  if (!spatial || !w.has_static_shape()) {
    out.resize(x.shape->size(), Dim::unknown());
    return one({x.dtype, out});
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<TransposedWindow> windows, conv_transpose_windows(node));
  for (const TransposedWindow& d : windows)
    out.push_back(d.out);
  return one({x.dtype, out});
}

namespace {

TypesOrError pool_types(const Node& node, const PoolAttrs& a) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3) return fail("pooling input must have rank >= 3");
  WEFT_ASSIGN_OR_RETURN(Shape out, window_shape(*x.shape, (*x.shape)[1], a.kernel_shape, a.strides,
                                                a.dilations, a.pads, a.auto_pad, a.ceil_mode));
  std::vector<TensorType> types = {{x.dtype, out}};
  if (node.outputs.size() > 1) types.push_back({DType::kI64, out}); // MaxPool indices
  return types;
}

} // namespace

TypesOrError infer_pool(const Node& node) { return pool_types(node, node.attrs_as<PoolAttrs>()); }

TypesOrError infer_pool_channels_last(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3) return fail("pooling input must have rank >= 3");
  const auto& a = node.attrs_as<PoolAttrs>();
  Shape first = move_channels(*x.shape, false);
  WEFT_ASSIGN_OR_RETURN(Shape out, window_shape(first, first[1], a.kernel_shape, a.strides,
                                                a.dilations, a.pads, a.auto_pad, a.ceil_mode));
  return one({x.dtype, move_channels(out, true)});
}

TypesOrError infer_lp_pool(const Node& node) {
  return pool_types(node, node.attrs_as<LpPoolAttrs>().window);
}

Result<Shape> max_unpool_default_shape(const Node& node) {
  const auto& a = node.attrs_as<PoolAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return fail("the input's rank is unknown");
  size_t spatial = x.shape->size() - 2;
  if (a.kernel_shape.size() != spatial) return fail("kernel_shape does not match the input");
  Shape out = {(*x.shape)[0], (*x.shape)[1]};
  for (size_t i = 0; i < spatial; ++i) {
    const Dim& in = (*x.shape)[i + 2];
    int64_t stride = a.strides.empty() ? 1 : a.strides[i];
    int64_t pads = a.pads.empty() ? 0 : a.pads[i] + a.pads[i + spatial];
    out.push_back(in.is_static() ? Dim((in.value() - 1) * stride + a.kernel_shape[i] - pads)
                                 : Dim::unknown());
  }
  return out;
}

// The output_shape input when given (constant), else the default shape.
TypesOrError infer_max_unpool(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  if (x.shape && idx.shape && *x.shape != *idx.shape)
    return fail("the indices must have X's shape");
  if (std::optional<Ints> given = constant_ints(node.input(2))) {
    if (x.shape && given->size() != x.shape->size())
      return fail("output_shape does not match the input's rank");
    return one({x.dtype, Shape(given->begin(), given->end())});
  }
  if (!x.shape || node.input(2)) return one({x.dtype, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(Shape out, max_unpool_default_shape(node));
  return one({x.dtype, out});
}

TypesOrError infer_global_pool(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  if (x.shape->size() < 2) return fail("global pooling input must have rank >= 2");
  Shape out = {(*x.shape)[0], (*x.shape)[1]};
  out.resize(x.shape->size(), Dim(1));
  return one({x.dtype, out});
}

} // namespace weft
