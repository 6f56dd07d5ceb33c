#include "weft/graph/shape_functions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/op_table.h"

namespace weft {

namespace {

TypesOrError one(TensorType t) { return std::vector<TensorType>{std::move(t)}; }

Status fail(std::string message) { return Status::error(std::move(message)); }

const TensorType& in_type(const Node& node, size_t i) { return node.inputs[i]->type; }

// A shape of "rank" unknown dims.
Shape unknown_shape(size_t rank) { return Shape(rank, Dim::unknown()); }

// Does dim "inner" fit in dim "outer" (or is either unknown)?
bool fits(const Dim& inner, const Dim& outer) {
  return !inner.is_static() || !outer.is_static() || inner.value() <= outer.value();
}

// Are "a" and "b" equal where both are static?
bool agree(const Dim& a, const Dim& b) {
  return !a.is_static() || !b.is_static() || a.value() == b.value();
}

// Is "v" (when present, with a known shape) a vector of "n" elements, or of one?
Status check_per_channel(const Value* v, const Dim& n, const char* what) {
  if (!v || !v->type.shape) return Status();
  std::optional<int64_t> count = shape_num_elements(*v->type.shape);
  if (count && *count == 1) return Status();
  if (v->type.shape->size() != 1 || !agree((*v->type.shape)[0], n))
    return fail(fmt::format("{} must have one element or {}", what, n.to_string()));
  return Status();
}

// Product of dims, or unknown when any dim is not static.
Dim product(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) {
    if (!shape[i].is_static()) return Dim::unknown();
    n *= shape[i].value();
  }
  return n;
}

Result<Ints> normalize_axes(const Ints& axes, int64_t rank) {
  Ints out;
  for (int64_t a : axes) {
    WEFT_ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return fail(fmt::format("axis {} is repeated", a));
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Axes given as an attribute, or as the constant input at "input_index"; none when neither
// is known (an input that is not constant).
std::optional<Ints> attr_or_input_axes(const std::optional<Ints>& attr, const Node& node,
                                       size_t input_index) {
  if (attr) return attr;
  return constant_ints(node.input(input_index));
}

} // namespace

std::optional<Ints> constant_ints(const Value* v) {
  if (v == nullptr || !v->is_constant()) return std::nullopt;
  DType t = v->constant->dtype();
  if (!dtype_is_signed_int(t) && !dtype_is_unsigned_int(t)) return std::nullopt;
  return v->constant->to_int64_vector();
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, Dim(1));
  for (size_t i = 0; i < rank; ++i) {
    std::optional<int64_t> fixed; // the static extent other than 1, if any
    std::optional<Dim> symbolic;
    bool mixed_symbols = false;
    for (const Shape& s : shapes) {
      if (i + s.size() < rank) continue;
      const Dim& d = s[i + s.size() - rank];
      if (d.is_static()) {
        if (d.value() == 1) continue;
        if (fixed && *fixed != d.value()) {
          return fail(fmt::format("shapes {} cannot be broadcast together", [&] {
            std::string all;
            for (const Shape& x : shapes)
              all += shape_to_string(x);
            return all;
          }()));
        }
        fixed = d.value();
      } else if (!symbolic) {
        symbolic = d;
      } else if (!(*symbolic == d)) {
        mixed_symbols = true;
      }
    }
    if (fixed) {
      out[i] = *fixed;
    } else if (symbolic) {
      out[i] = mixed_symbols ? Dim::unknown() : *symbolic;
    }
  }
  return out;
}

TypesOrError infer_same(const Node& node) { return one(in_type(node, 0)); }

TypesOrError infer_same_bool(const Node& node) {
  return one({DType::kBool, in_type(node, 0).shape});
}

namespace {
// Broadcast of every present input; with legacy broadcasting (before opset 7), B's dims
// align at the legacy axis instead of at the trailing dims.
Result<std::optional<Shape>> broadcast_inputs(const Node& node, size_t first) {
  std::vector<Shape> shapes;
  for (size_t i = first; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) continue;
    if (!node.inputs[i]->type.shape) return std::optional<Shape>();
    shapes.push_back(*node.inputs[i]->type.shape);
  }
  if (const auto* legacy = std::get_if<LegacyBroadcastAttrs>(&node.attrs)) {
    if (shapes.size() == 2 && legacy->axis) {
      WEFT_ASSIGN_OR_RETURN(int64_t axis,
                            normalize_axis(*legacy->axis, static_cast<int64_t>(shapes[0].size())));
      size_t trailing = shapes[0].size() - static_cast<size_t>(axis);
      if (shapes[1].size() > trailing) return fail("legacy broadcast: B has too many dims");
      shapes[1].resize(trailing, Dim(1));
    }
  }
  WEFT_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(shapes));
  return std::optional<Shape>(std::move(out));
}
} // namespace

TypesOrError infer_broadcast(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(std::optional<Shape> shape, broadcast_inputs(node, 0));
  return one({in_type(node, 0).dtype, shape});
}

TypesOrError infer_broadcast_bool(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(std::optional<Shape> shape, broadcast_inputs(node, 0));
  return one({DType::kBool, shape});
}

TypesOrError infer_where(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(std::optional<Shape> shape, broadcast_inputs(node, 0));
  return one({in_type(node, 1).dtype, shape});
}

TypesOrError infer_cast(const Node& node) {
  return one({node.attrs_as<CastAttrs>().to, in_type(node, 0).shape});
}

TypesOrError infer_cast_like(const Node& node) {
  return one({in_type(node, 1).dtype, in_type(node, 0).shape});
}

namespace {
// Output shape of reducing "shape" over "axes" (all when empty and not "noop").
Result<Shape> reduce_shape(const Shape& shape, Ints axes, bool keepdims, bool noop) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axes.empty()) {
    if (noop) return shape;
    axes.resize(shape.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  WEFT_ASSIGN_OR_RETURN(Ints norm, normalize_axes(axes, rank));
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = std::binary_search(norm.begin(), norm.end(), i);
    if (!reduced) {
      out.push_back(shape[static_cast<size_t>(i)]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}
} // namespace

TypesOrError infer_reduce(const Node& node) {
  const auto& a = node.attrs_as<ReduceAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, std::nullopt});
  std::optional<Ints> axes = a.axes;
  if (!axes && node.input(1)) {
    axes = constant_ints(node.input(1));
    if (!axes) { // axes known only at run time
      if (!a.keepdims) return one({x.dtype, std::nullopt});
      return one({x.dtype, unknown_shape(x.shape->size())});
    }
  }
  WEFT_ASSIGN_OR_RETURN(
      Shape out, reduce_shape(*x.shape, axes.value_or(Ints{}), a.keepdims, a.noop_with_empty_axes));
  return one({x.dtype, out});
}

TypesOrError infer_arg_reduce(const Node& node) {
  const auto& a = node.attrs_as<ArgReduceAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({DType::kI64, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(Shape out, reduce_shape(*x.shape, {a.axis}, a.keepdims, false));
  return one({DType::kI64, out});
}

TypesOrError infer_layer_norm(const Node& node) {
  const auto& a = node.attrs_as<LayerNormAttrs>();
  const TensorType& x = in_type(node, 0);
  std::vector<TensorType> out = {x};
  std::optional<Shape> stat_shape;
  if (x.shape) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis,
                          normalize_axis(a.axis, static_cast<int64_t>(x.shape->size())));
    stat_shape = *x.shape;
    for (size_t i = static_cast<size_t>(axis); i < stat_shape->size(); ++i)
      (*stat_shape)[i] = 1;
  }
  out.resize(node.outputs.size(), TensorType{a.stash_type, stat_shape});
  return out;
}

TypesOrError infer_batch_norm(const Node& node) {
  std::vector<TensorType> out = {in_type(node, 0)};
  // Training outputs: running mean and variance, shaped like the mean and var inputs.
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    out.push_back(node.input(2 + std::min<size_t>(i, 2)) ? in_type(node, 2 + std::min<size_t>(i, 2))
                                                         : in_type(node, 0));
  }
  return out;
}

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
  return one({a.dtype, Shape{m, n}});
}

namespace {
// Output extent of one spatial dim of a window op.
Dim window_output(const Dim& in, int64_t kernel, int64_t stride, int64_t dilation,
                  int64_t pad_total, AutoPad auto_pad, bool ceil_mode) {
  if (!in.is_static()) return Dim::unknown();
  int64_t x = in.value();
  if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    return (x + stride - 1) / stride;
  }
  if (auto_pad == AutoPad::kValid) pad_total = 0;
  int64_t span = x + pad_total - dilation * (kernel - 1) - 1;
  if (span < 0) return Dim::unknown();
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil mode, the last window must start inside the input or its begin padding.
  if (ceil_mode && (out - 1) * stride >= x + pad_total / 2) --out;
  return out;
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
    out.push_back(window_output(x[i + 2], kernel[i], stride, dilation, pad, auto_pad, ceil_mode));
  }
  return out;
}
} // namespace

TypesOrError infer_conv(const Node& node) {
  const auto& a = node.attrs_as<ConvAttrs>();
  const TensorType& x = in_type(node, 0);
  const TensorType& w = in_type(node, 1);
  if (!x.shape || !w.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3 || w.shape->size() != x.shape->size()) {
    return fail("Conv input and weights must have the same rank, at least 3");
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
      // A negative total (a larger output) halves rounding down, as ONNX's reference does.
      d.out = a.output_shape.empty() ? in * d.stride : a.output_shape[i];
      int64_t total = full - d.out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      d.pad_begin = a.auto_pad == AutoPad::kSameUpper ? half : total - half;
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
TypesOrError infer_pad(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> pads = node.attrs_as<PadAttrs>().pads;
  if (!pads && !node.input(3)) pads = constant_ints(node.input(1));
  if (!x.shape || !pads) return one({x.dtype, x.shape ? unknown_shape(x.shape->size()) : x.shape});
  size_t rank = x.shape->size();
  if (pads->size() != 2 * rank)
    return fail(fmt::format("pads has {} values for rank {}", pads->size(), rank));
  Shape out;
  for (size_t d = 0; d < rank; ++d) {
    const Dim& in = (*x.shape)[d];
    int64_t grow = (*pads)[d] + (*pads)[d + rank];
    if (!in.is_static()) {
      out.push_back(grow == 0 ? in : Dim::unknown());
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
  if (!x.has_static_shape() || !w.has_static_shape()) {
    out.resize(x.shape->size(), Dim::unknown());
    return one({x.dtype, out});
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<TransposedWindow> windows, conv_transpose_windows(node));
  for (const TransposedWindow& d : windows)
    out.push_back(d.out);
  return one({x.dtype, out});
}

TypesOrError infer_pool(const Node& node) {
  const auto& a = node.attrs_as<PoolAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() < 3) return fail("pooling input must have rank >= 3");
  WEFT_ASSIGN_OR_RETURN(Shape out, window_shape(*x.shape, (*x.shape)[1], a.kernel_shape, a.strides,
                                                a.dilations, a.pads, a.auto_pad, a.ceil_mode));
  std::vector<TensorType> types = {{x.dtype, out}};
  if (node.outputs.size() > 1) types.push_back({DType::kI64, out}); // MaxPool indices
  return types;
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

TypesOrError infer_concat(const Node& node) {
  const TensorType& first = in_type(node, 0);
  if (!first.shape) return one(first);
  int64_t rank = static_cast<int64_t>(first.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, rank));
  Shape out = *first.shape;
  int64_t total = 0;
  bool total_known = true;
  for (const Value* in : node.inputs) {
    if (!in->type.shape) return one({first.dtype, unknown_shape(first.shape->size())});
    if (static_cast<int64_t>(in->type.shape->size()) != rank) {
      return fail("Concat inputs must have the same rank");
    }
    const Dim& d = (*in->type.shape)[static_cast<size_t>(axis)];
    if (d.is_static()) {
      total += d.value();
    } else {
      total_known = false;
    }
  }
  out[static_cast<size_t>(axis)] = total_known ? Dim(total) : Dim::unknown();
  return one({first.dtype, out});
}

TypesOrError infer_gather(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  if (!data.shape || !idx.shape) return one({data.dtype, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis,
                                                     static_cast<int64_t>(data.shape->size())));
  Shape out(data.shape->begin(), data.shape->begin() + axis);
  out.insert(out.end(), idx.shape->begin(), idx.shape->end());
  out.insert(out.end(), data.shape->begin() + axis + 1, data.shape->end());
  return one({data.dtype, out});
}

// y: the indices' shape, which must not exceed the data's off the axis.
TypesOrError infer_gather_elements(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  if (data.shape && idx.shape) {
    int64_t rank = static_cast<int64_t>(data.shape->size());
    if (idx.shape->size() != data.shape->size()) return fail("indices must have the data's rank");
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis &&
          !fits((*idx.shape)[static_cast<size_t>(d)], (*data.shape)[static_cast<size_t>(d)]))
        return fail(fmt::format("indices dim {} exceeds the data's", d));
    }
  }
  return one({data.dtype, idx.shape});
}

// Sequence lengths: one per batch entry.
TypesOrError infer_reverse_sequence(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& lens = in_type(node, 1);
  if (x.shape && x.shape->size() < 2) return fail("the input must have rank 2 or more");
  if (x.shape && lens.shape) {
    const Dim& batch =
        (*x.shape)[static_cast<size_t>(node.attrs_as<ReverseSequenceAttrs>().batch_axis)];
    if (lens.shape->size() != 1 || !agree((*lens.shape)[0], batch))
      return fail("sequence_lens must hold one length per batch entry");
  }
  return one(x);
}

// RNN, GRU, LSTM (gates: 1, 3, 4). With D directions and H hidden units, W is [D, gates*H,
// input], R [D, gates*H, H], B [D, 2*gates*H], P [D, 3*H]; the states are [D, batch, H]
// and Y is [seq, D, batch, H], or batch-major [batch, D, H] and [batch, seq, D, H] at
// layout 1.
TypesOrError infer_recurrent(const Node& node) {
  const auto& a = node.attrs_as<RecurrentAttrs>();
  int64_t gates = node.op_type == "GRU" ? 3 : node.op_type == "LSTM" ? 4 : 1;
  Dim dirs = a.direction == RnnDirection::kBidirectional ? 2 : 1;
  const TensorType& x = in_type(node, 0);
  auto shape_of = [&](size_t i) -> const Shape* {
    const Value* v = node.input(i);
    return v && v->type.shape ? &*v->type.shape : nullptr;
  };
  Dim seq = Dim::unknown(), batch = Dim::unknown(), hidden = Dim::unknown();
  if (a.hidden_size) hidden = *a.hidden_size;
  if (const Shape* s = shape_of(0)) {
    if (s->size() != 3) return fail("X must have rank 3");
    seq = (*s)[a.layout == 0 ? 0 : 1];
    batch = (*s)[a.layout == 0 ? 1 : 0];
  }
  if (const Shape* r = shape_of(2); r && r->size() == 3 && !a.hidden_size) hidden = (*r)[2];
  Dim gate_rows = hidden.is_static() ? Dim(gates * hidden.value()) : Dim::unknown();
  Dim bias_rows = hidden.is_static() ? Dim(2 * gates * hidden.value()) : Dim::unknown();
  Dim peephole_rows = hidden.is_static() ? Dim(3 * hidden.value()) : Dim::unknown();
  Dim input = shape_of(0) ? (*shape_of(0))[2] : Dim::unknown();
  Shape state = a.layout == 0 ? Shape{dirs, batch, hidden} : Shape{batch, dirs, hidden};
  // The expected shape of each input, by position.
  const std::pair<size_t, Shape> expected[] = {{1, {dirs, gate_rows, input}},
                                               {2, {dirs, gate_rows, hidden}},
                                               {3, {dirs, bias_rows}},
                                               {4, {batch}},
                                               {5, state},
                                               {6, state},
                                               {7, {dirs, peephole_rows}}};
  static const char* const kNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                       "initial_h", "initial_c", "P"};
  for (const auto& [i, want] : expected) {
    const Shape* s = shape_of(i);
    if (!s) continue;
    bool ok = s->size() == want.size();
    for (size_t d = 0; ok && d < want.size(); ++d)
      ok = agree((*s)[d], want[d]);
    if (!ok)
      return fail(fmt::format("{} has shape {}, expected {}", kNames[i], shape_to_string(*s),
                              shape_to_string(want)));
  }
  std::vector<TensorType> out = {
      {x.dtype, a.layout == 0 ? Shape{seq, dirs, batch, hidden} : Shape{batch, seq, dirs, hidden}},
      {x.dtype, state},
      {x.dtype, state}};
  out.resize(std::min(out.size(), std::max<size_t>(node.outputs.size(), 1)));
  return out;
}

// Scale and bias: one per channel.
TypesOrError infer_instance_norm(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (x.shape && x.shape->size() < 3) return fail("the input must have rank 3 or more");
  if (x.shape) {
    for (size_t i = 1; i < 3; ++i) {
      const Value* v = node.input(i);
      if (v && v->type.shape &&
          (v->type.shape->size() != 1 || !agree((*v->type.shape)[0], (*x.shape)[1])))
        return fail(fmt::format("input {} must hold one value per channel", i));
    }
  }
  return one(x);
}

// ConvInteger's weight zero point: one, or one per output channel.
TypesOrError infer_conv_integer(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types, infer_conv(node));
  const TensorType& w = in_type(node, 1);
  if (w.shape)
    WEFT_RETURN_IF_ERROR(check_per_channel(node.input(3), (*w.shape)[0], "w_zero_point"));
  WEFT_RETURN_IF_ERROR(check_per_channel(node.input(2), Dim(1), "x_zero_point"));
  types[0].dtype = DType::kI32;
  return types;
}

// QLinearMatMul and QLinearConv: the float op's shapes on (A, B) or (X, W), with the type
// of the output zero point.
TypesOrError infer_qlinear(const Node& node) {
  Node plain = node;
  plain.inputs = {node.inputs[0], node.inputs[3]};
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types,
                        node.op_type == "QLinearConv" ? infer_conv(plain) : infer_matmul(plain));
  const Value* zero = node.input(7);
  types[0].dtype = zero ? zero->type.dtype : DType::kU8;
  return types;
}

// MatMulInteger's zero points: one, or one per row of A (per column of B).
TypesOrError infer_matmul_integer(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types, infer_matmul(node));
  const TensorType& a = in_type(node, 0);
  const TensorType& b = in_type(node, 1);
  if (a.shape && a.shape->size() >= 2)
    WEFT_RETURN_IF_ERROR(
        check_per_channel(node.input(2), (*a.shape)[a.shape->size() - 2], "a_zero_point"));
  if (b.shape && b.shape->size() >= 2)
    WEFT_RETURN_IF_ERROR(check_per_channel(node.input(3), b.shape->back(), "b_zero_point"));
  types[0].dtype = DType::kI32;
  return types;
}

Result<EinsumLabels> einsum_labels(const std::string& equation, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq += c;
  }
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return fail(fmt::format("the equation has {} terms for {} inputs", terms.size(), ranks.size()));
  // Expands "..." in "term" to the last "n" of the ellipsis labels.
  size_t ellipsis_rank = 0;
  auto expand = [&](const std::string& term, size_t n) -> Result<std::string> {
    size_t dots = term.find("...");
    std::string out = term.substr(0, dots);
    if (dots != std::string::npos) {
      for (size_t i = ellipsis_rank - n; i < ellipsis_rank; ++i)
        out += static_cast<char>('0' + i);
      out += term.substr(dots + 3);
    }
    for (char c : out) {
      if (!std::isalpha(static_cast<unsigned char>(c)) &&
          !std::isdigit(static_cast<unsigned char>(c)))
        return fail(fmt::format("the equation '{}' has an invalid term '{}'", equation, term));
    }
    return out;
  };
  std::vector<size_t> spans;
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t dots = terms[i].find("...");
    size_t letters = terms[i].size() - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos ? letters != ranks[i] : letters > ranks[i])
      return fail(
          fmt::format("term '{}' does not match input {} of rank {}", terms[i], i, ranks[i]));
    spans.push_back(dots == std::string::npos ? 0 : ranks[i] - letters);
    ellipsis_rank = std::max(ellipsis_rank, spans.back());
  }
  if (ellipsis_rank > 10) return fail("an ellipsis stands for more than 10 dims");
  EinsumLabels labels;
  for (size_t i = 0; i < terms.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(std::string l, expand(terms[i], spans[i]));
    labels.inputs.push_back(l);
  }
  if (arrow != std::string::npos) {
    WEFT_ASSIGN_OR_RETURN(labels.output, expand(eq.substr(arrow + 2), ellipsis_rank));
    return labels;
  }
  // Implicit output: the ellipsis dims, then the letters used once, in alphabetical order.
  for (size_t i = 0; i < ellipsis_rank; ++i)
    labels.output += static_cast<char>('0' + i);
  std::string letters;
  for (const std::string& l : labels.inputs)
    letters += l;
  std::sort(letters.begin(), letters.end());
  for (char c : letters) {
    if (std::isalpha(static_cast<unsigned char>(c)) &&
        std::count(letters.begin(), letters.end(), c) == 1)
      labels.output += c;
  }
  return labels;
}

// The input's shape with complex values (last dim 2); a one-sided transform keeps
// n / 2 + 1 frequencies along the axis. A dft_length input (constant) sets the length.
TypesOrError infer_dft(const Node& node) {
  const auto& a = node.attrs_as<DftAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  int64_t rank = static_cast<int64_t>(x.shape->size());
  if (rank < 3 || (!agree(x.shape->back(), Dim(1)) && !agree(x.shape->back(), Dim(2))))
    return fail("the input must be [batch, ..., 1 or 2] of rank 3 or more");
  if (a.axis == 0 || a.axis == -rank || a.axis >= rank - 1 || a.axis < -rank)
    return fail(fmt::format("axis {} is not a signal axis", a.axis));
  size_t axis = static_cast<size_t>(a.axis < 0 ? a.axis + rank : a.axis);
  Shape out = *x.shape;
  out.back() = 2;
  Dim length = out[axis];
  if (const Value* l = node.input(1)) {
    std::optional<Ints> given = constant_ints(l);
    length = given && given->size() == 1 ? Dim((*given)[0]) : Dim::unknown();
  }
  out[axis] = a.onesided && length.is_static() ? Dim(length.value() / 2 + 1)
              : a.onesided                     ? Dim::unknown()
                                               : length;
  return one({x.dtype, out});
}

TypesOrError infer_einsum(const Node& node) {
  std::vector<size_t> ranks;
  for (const Value* in : node.inputs) {
    if (!in->type.shape) return one({in_type(node, 0).dtype, std::nullopt});
    ranks.push_back(in->type.shape->size());
  }
  WEFT_ASSIGN_OR_RETURN(EinsumLabels labels,
                        einsum_labels(node.attrs_as<EinsumAttrs>().equation, ranks));
  // A label's dims agree (or broadcast from 1) across every input and within one.
  std::map<char, int64_t> extents;
  for (size_t i = 0; i < labels.inputs.size(); ++i) {
    for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
      const Dim& e = (*node.inputs[i]->type.shape)[d];
      if (!e.is_static() || e.value() == 1) continue;
      auto [it, fresh] = extents.emplace(labels.inputs[i][d], e.value());
      if (!fresh && it->second != e.value())
        return fail(
            fmt::format("label '{}' has extents {} and {}", it->first, it->second, e.value()));
    }
  }
  Shape out;
  for (char c : labels.output) {
    Dim extent = 1;
    bool found = false;
    for (size_t i = 0; i < labels.inputs.size(); ++i) {
      for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
        if (labels.inputs[i][d] != c) continue;
        const Dim& e = (*node.inputs[i]->type.shape)[d];
        if (!found || (extent.is_static() && extent.value() == 1)) extent = e;
        found = true;
      }
    }
    if (!found) return fail(fmt::format("output label '{}' is in no input", c));
    out.push_back(extent);
  }
  return one({in_type(node, 0).dtype, out});
}

namespace {

// Are the scale (input 1) and zero point (input 2) of a (de)quantization a scalar each, or
// vectors as long as the input's axis?
Status check_quantize_params(const Node& node) {
  const TensorType& x = in_type(node, 0);
  for (size_t i = 1; i < 3; ++i) {
    const Value* v = node.input(i);
    if (!v || !v->type.shape || !x.shape || v->type.shape->empty()) continue;
    int64_t rank = static_cast<int64_t>(x.shape->size());
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<QuantizeAttrs>().axis, rank));
    const Dim& along = (*x.shape)[static_cast<size_t>(axis)];
    if (v->type.shape->size() != 1 ||
        (along.is_static() && (*v->type.shape)[0].is_static() && along != (*v->type.shape)[0]))
      return fail(fmt::format("input {} must be a scalar or a vector of {} elements", i,
                              along.to_string()));
  }
  return Status();
}

} // namespace

// y: the zero point's type (u8 without one), the input's shape.
TypesOrError infer_quantize_linear(const Node& node) {
  WEFT_RETURN_IF_ERROR(check_quantize_params(node));
  const Value* zp = node.input(2);
  return one({zp ? zp->type.dtype : DType::kU8, in_type(node, 0).shape});
}

TypesOrError infer_dequantize_linear(const Node& node) {
  WEFT_RETURN_IF_ERROR(check_quantize_params(node));
  return one({DType::kF32, in_type(node, 0).shape});
}

// y (u8, the input's shape), y_scale (f32 scalar), y_zero_point (u8 scalar).
TypesOrError infer_dynamic_quantize_linear(const Node& node) {
  return std::vector<TensorType>{
      {DType::kU8, in_type(node, 0).shape}, {DType::kF32, Shape{}}, {DType::kU8, Shape{}}};
}

// [size], with size a constant input.
TypesOrError infer_window(const Node& node) {
  DType t = node.attrs_as<WindowAttrs>().output_datatype;
  std::optional<Ints> size = constant_ints(node.input(0));
  if (!size) return one({t, unknown_shape(1)});
  if (size->size() != 1 || (*size)[0] < 0) return fail("size must be one non-negative value");
  return one({t, Shape{(*size)[0]}});
}

// Values and i64 indices: the input's shape with K (a constant input) along the axis.
TypesOrError infer_top_k(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape)
    return std::vector<TensorType>{{x.dtype, std::nullopt}, {DType::kI64, std::nullopt}};
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<TopKAttrs>().axis,
                                                     static_cast<int64_t>(x.shape->size())));
  Shape out = *x.shape;
  Dim& d = out[static_cast<size_t>(axis)];
  std::optional<Ints> k = constant_ints(node.input(1));
  if (!k) {
    d = Dim::unknown();
  } else if (k->size() != 1 || (*k)[0] < 0 || (d.is_static() && (*k)[0] > d.value())) {
    return fail(fmt::format("K must be one value in [0, {}]", d.to_string()));
  } else {
    d = (*k)[0];
  }
  return std::vector<TensorType>{{x.dtype, out}, {DType::kI64, out}};
}

TypesOrError infer_eye_like(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (x.shape && x.shape->size() != 2)
    return fail(fmt::format("the input has rank {}, expected 2", x.shape->size()));
  return one({node.attrs_as<EyeLikeAttrs>().dtype.value_or(x.dtype), x.shape});
}

// The indices' shape with "depth" (a constant input) inserted at "axis".
TypesOrError infer_one_hot(const Node& node) {
  const TensorType& idx = in_type(node, 0);
  DType t = in_type(node, 2).dtype;
  const TensorType& values = in_type(node, 2);
  if (values.shape && (values.shape->size() != 1 || !agree((*values.shape)[0], Dim(2))))
    return fail("values must hold [off, on]");
  if (!idx.shape) return one({t, std::nullopt});
  int64_t rank = static_cast<int64_t>(idx.shape->size()) + 1;
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, rank));
  Shape out = *idx.shape;
  const Value* depth = node.input(1);
  Dim d = Dim::unknown();
  if (depth->is_constant()) {
    if (depth->constant->num_elements() != 1) return fail("depth must hold one element");
    double v = depth->constant->get_double(0);
    if (v < 1) return fail(fmt::format("depth is {}, expected at least 1", v));
    d = static_cast<int64_t>(v);
  }
  out.insert(out.begin() + axis, d);
  return one({t, out});
}

namespace {

// [N, C, H, W] of a DepthToSpace/SpaceToDepth input, checked to be of rank 4.
Result<Shape> block_input(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (x.shape && x.shape->size() != 4)
    return fail(fmt::format("the input has rank {}, expected 4", x.shape->size()));
  return x.shape ? *x.shape : unknown_shape(4);
}

Dim scaled(const Dim& d, int64_t mul, int64_t div) {
  return d.is_static() ? Dim(d.value() * mul / div) : Dim::unknown();
}

} // namespace

TypesOrError infer_depth_to_space(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(Shape s, block_input(node));
  int64_t b = node.attrs_as<BlockAttrs>().blocksize;
  if (s[1].is_static() && s[1].value() % (b * b) != 0)
    return fail(
        fmt::format("the depth {} is not a multiple of blocksize^2 = {}", s[1].value(), b * b));
  return one({in_type(node, 0).dtype,
              Shape{s[0], scaled(s[1], 1, b * b), scaled(s[2], b, 1), scaled(s[3], b, 1)}});
}

TypesOrError infer_space_to_depth(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(Shape s, block_input(node));
  int64_t b = node.attrs_as<BlockAttrs>().blocksize;
  for (size_t i = 2; i < 4; ++i) {
    if (s[i].is_static() && s[i].value() % b != 0)
      return fail(fmt::format("dim {} is {}, not a multiple of blocksize {}", i, s[i].value(), b));
  }
  return one({in_type(node, 0).dtype,
              Shape{s[0], scaled(s[1], b * b, 1), scaled(s[2], 1, b), scaled(s[3], 1, b)}});
}

namespace {

// A constant input of a Resize, none when absent, not constant or empty (opset 11 spells
// an absent input as an empty tensor).
const Value* resize_operand(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->is_constant() && v->constant->num_elements() > 0 ? v : nullptr;
}

const Value* resize_scales_operand(const Node& node) {
  return resize_operand(node, node.op_type == "Upsample" ? 1 : 2);
}

const Value* resize_sizes_operand(const Node& node) {
  return node.op_type == "Upsample" ? nullptr : resize_operand(node, 3);
}

} // namespace

std::optional<std::vector<double>> resize_scales(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::vector<double> scales;
  if (const Value* sizes = resize_sizes_operand(node)) {
    if (!x.has_static_shape() ||
        static_cast<size_t>(sizes->constant->num_elements()) != x.shape->size())
      return {};
    for (size_t d = 0; d < x.shape->size(); ++d) {
      scales.push_back(static_cast<double>(sizes->constant->get_int64(d)) /
                       static_cast<double>((*x.shape)[d].value()));
    }
    return scales;
  }
  const Value* s = resize_scales_operand(node);
  if (!s) return {};
  for (size_t d = 0; d < static_cast<size_t>(s->constant->num_elements()); ++d)
    scales.push_back(static_cast<float>(s->constant->get_double(d))); // ONNX scales are f32
  return scales;
}

std::optional<Ints> resize_extents(const Node& node) {
  if (const Value* sizes = resize_sizes_operand(node)) return constant_ints(sizes);
  const TensorType& x = in_type(node, 0);
  std::optional<std::vector<double>> scales = resize_scales(node);
  if (!scales || !x.has_static_shape() || scales->size() != x.shape->size()) return {};
  Ints out;
  for (size_t d = 0; d < scales->size(); ++d) {
    out.push_back(static_cast<int64_t>(
        std::floor(static_cast<double>((*x.shape)[d].value()) * (*scales)[d])));
  }
  return out;
}

TypesOrError infer_resize(const Node& node) {
  const TensorType& x = in_type(node, 0);
  bool sized = resize_sizes_operand(node) != nullptr;
  const Value* given = sized ? resize_sizes_operand(node) : resize_scales_operand(node);
  if (given && x.shape && static_cast<size_t>(given->constant->num_elements()) != x.shape->size()) {
    return fail(fmt::format("{} has {} elements for an input of rank {}",
                            sized ? "sizes" : "scales", given->constant->num_elements(),
                            x.shape->size()));
  }
  if (std::optional<std::vector<double>> scales = resize_scales(node)) {
    for (double s : *scales) {
      if (!(s > 0)) return fail(fmt::format("scale {} is not positive", s));
    }
  }
  std::optional<Ints> extents = resize_extents(node);
  if (!extents)
    return one({x.dtype, x.shape ? unknown_shape(x.shape->size()) : std::optional<Shape>()});
  return one({x.dtype, Shape(extents->begin(), extents->end())});
}

// [N, C, H_out, W_out] from X [N, C, H, W] and the grid [N, H_out, W_out, 2].
TypesOrError infer_grid_sample(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& grid = in_type(node, 1);
  if (!x.shape || !grid.shape) return one({x.dtype, unknown_shape(4)});
  if (x.shape->size() != 4 || grid.shape->size() != 4 ||
      ((*grid.shape)[3].is_static() && (*grid.shape)[3].value() != 2))
    return fail("GridSample takes a 4-D input and a grid [N, H_out, W_out, 2]");
  return one({x.dtype, Shape{(*x.shape)[0], (*x.shape)[1], (*grid.shape)[1], (*grid.shape)[2]}});
}

namespace {

// The loss of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input [N, C, d...],
// target [N, d...], weight [C]; per element without reduction, a scalar with.
Result<TensorType> loss_type(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& target = in_type(node, 1);
  const TensorType* weight = node.input(2) ? &in_type(node, 2) : nullptr;
  if (x.shape && x.shape->size() < 2) return fail("the input must have rank 2 or more");
  if (x.shape && target.shape) {
    Shape expected = *x.shape;
    expected.erase(expected.begin() + 1);
    if (target.shape->size() != expected.size())
      return fail(fmt::format("the target has rank {}, expected {}", target.shape->size(),
                              expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i].is_static() && (*target.shape)[i].is_static() &&
          expected[i] != (*target.shape)[i])
        return fail(fmt::format("the target has shape {}, expected {}",
                                shape_to_string(*target.shape), shape_to_string(expected)));
    }
  }
  if (x.shape && weight && weight->shape &&
      (weight->shape->size() != 1 ||
       ((*x.shape)[1].is_static() && (*weight->shape)[0].is_static() &&
        (*x.shape)[1] != (*weight->shape)[0])))
    return fail("the weight must be a vector with one element per class");
  if (node.attrs_as<LossAttrs>().reduction != LossReduction::kNone)
    return TensorType{x.dtype, Shape{}};
  return TensorType{x.dtype, target.shape};
}

} // namespace

TypesOrError infer_nll_loss(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(TensorType loss, loss_type(node));
  return one(loss);
}

// The loss, and the optional log-probabilities, shaped as the scores.
TypesOrError infer_softmax_cross_entropy(const Node& node) {
  WEFT_ASSIGN_OR_RETURN(TensorType loss, loss_type(node));
  std::vector<TensorType> out = {loss};
  if (node.outputs.size() > 1) out.push_back(in_type(node, 0));
  return out;
}

// y: the data's type; the indices and updates must agree with it.
TypesOrError infer_scatter(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  const TensorType& updates = in_type(node, 2);
  if (updates.dtype != data.dtype) return fail("updates and data have different types");
  if (data.shape && idx.shape && updates.shape) {
    if (node.op_type != "ScatterND") {
      if (idx.shape->size() != data.shape->size() || *idx.shape != *updates.shape)
        return fail("indices and updates must have the data's rank and one shape");
      int64_t axis = node.attrs_as<ScatterAttrs>().axis;
      if (axis < 0) axis += static_cast<int64_t>(data.shape->size());
      for (size_t d = 0; d < data.shape->size(); ++d) {
        if (static_cast<int64_t>(d) != axis && !fits((*idx.shape)[d], (*data.shape)[d]))
          return fail(fmt::format("indices dim {} exceeds the data's", d));
      }
    }
    if (node.op_type == "ScatterND") {
      if (idx.shape->empty() || !idx.shape->back().is_static() ||
          idx.shape->back().value() > static_cast<int64_t>(data.shape->size()))
        return fail("the index tuples are longer than the data's rank");
      size_t q = static_cast<size_t>(idx.shape->back().value());
      Shape expected(idx.shape->begin(), idx.shape->end() - 1);
      expected.insert(expected.end(), data.shape->begin() + static_cast<int64_t>(q),
                      data.shape->end());
      bool same = expected.size() == updates.shape->size();
      for (size_t d = 0; same && d < expected.size(); ++d)
        same = agree(expected[d], (*updates.shape)[d]);
      if (!same)
        return fail(fmt::format("updates have shape {}, expected {}",
                                shape_to_string(*updates.shape), shape_to_string(expected)));
    }
  }
  return one(data);
}

std::optional<Ints> compress_positions(const Node& node) {
  const Value* cond = node.input(1);
  if (!cond || !cond->is_constant()) return std::nullopt;
  Ints kept;
  for (int64_t i = 0; i < cond->constant->num_elements(); ++i) {
    if (cond->constant->get_int64(i) != 0) kept.push_back(i);
  }
  return kept;
}

// The kept positions along the axis (or of the flattened input).
TypesOrError infer_compress(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<int64_t> axis = node.attrs_as<CompressAttrs>().axis;
  std::optional<Ints> kept = compress_positions(node);
  Dim count = kept ? Dim(static_cast<int64_t>(kept->size())) : Dim::unknown();
  if (!axis) return one({x.dtype, Shape{count}});
  if (!x.shape) return one({x.dtype, std::nullopt});
  int64_t rank = static_cast<int64_t>(x.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(*axis, rank));
  Shape out = *x.shape;
  const Dim& extent = out[static_cast<size_t>(a)];
  if (kept && !kept->empty() && extent.is_static() && kept->back() >= extent.value())
    return fail(fmt::format("the condition keeps position {} of an axis of {}", kept->back(),
                            extent.value()));
  out[static_cast<size_t>(a)] = count;
  return one({x.dtype, out});
}

// y: the index tuples' dims, then the data dims the tuples do not index.
TypesOrError infer_gather_nd(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  int64_t batch = node.attrs_as<BatchDimsAttrs>().batch_dims;
  if (!data.shape || !idx.shape || idx.shape->empty() || !idx.shape->back().is_static())
    return one({data.dtype, std::nullopt});
  int64_t q = idx.shape->back().value();
  int64_t rank = static_cast<int64_t>(data.shape->size());
  int64_t idx_rank = static_cast<int64_t>(idx.shape->size());
  if (batch >= std::min(rank, idx_rank) || q < 1 || batch + q > rank) {
    return fail(fmt::format("GatherND: index tuples of length {} with {} batch dims do not fit "
                            "data of rank {}",
                            q, batch, rank));
  }
  for (int64_t d = 0; d < batch; ++d) {
    if (!agree((*idx.shape)[static_cast<size_t>(d)], (*data.shape)[static_cast<size_t>(d)]))
      return fail(fmt::format("batch dim {} of the indices and the data differ", d));
  }
  Shape out(idx.shape->begin(), idx.shape->end() - 1);
  out.insert(out.end(), data.shape->begin() + batch + q, data.shape->end());
  return one({data.dtype, out});
}

TypesOrError infer_flatten(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, unknown_shape(2)});
  int64_t rank = static_cast<int64_t>(x.shape->size());
  int64_t axis = node.attrs_as<AxisAttrs>().axis;
  if (axis < -rank || axis > rank) return fail(fmt::format("axis {} is out of range", axis));
  if (axis < 0) axis += rank;
  size_t split = static_cast<size_t>(axis);
  return one(
      {x.dtype, Shape{product(*x.shape, 0, split), product(*x.shape, split, x.shape->size())}});
}

TypesOrError infer_squeeze(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  std::optional<Ints> axes = attr_or_input_axes(node.attrs_as<AxesAttrs>().axes, node, 1);
  if (!axes && node.input(1)) return one({x.dtype, std::nullopt});
  Shape out;
  if (!axes) {
    for (const Dim& d : *x.shape) {
      if (!d.is_static()) return one({x.dtype, std::nullopt});
      if (d.value() != 1) out.push_back(d);
    }
    return one({x.dtype, out});
  }
  WEFT_ASSIGN_OR_RETURN(Ints norm, normalize_axes(*axes, static_cast<int64_t>(x.shape->size())));
  for (size_t i = 0; i < x.shape->size(); ++i) {
    bool squeezed = std::binary_search(norm.begin(), norm.end(), static_cast<int64_t>(i));
    const Dim& d = (*x.shape)[i];
    if (squeezed && d.is_static() && d.value() != 1) {
      return fail(fmt::format("cannot squeeze axis {} of extent {}", i, d.value()));
    }
    if (!squeezed) out.push_back(d);
  }
  return one({x.dtype, out});
}

TypesOrError infer_unsqueeze(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> axes = attr_or_input_axes(node.attrs_as<AxesAttrs>().axes, node, 1);
  if (!x.shape || !axes) return one({x.dtype, std::nullopt});
  int64_t out_rank = static_cast<int64_t>(x.shape->size() + axes->size());
  WEFT_ASSIGN_OR_RETURN(Ints norm, normalize_axes(*axes, out_rank));
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(norm.begin(), norm.end(), i)) {
      out.push_back(1);
    } else {
      out.push_back((*x.shape)[next++]);
    }
  }
  return one({x.dtype, out});
}

TypesOrError infer_split(const Node& node) {
  const auto& a = node.attrs_as<SplitAttrs>();
  const TensorType& x = in_type(node, 0);
  size_t n = node.outputs.size();
  if (!x.shape) return std::vector<TensorType>(n, x);
  WEFT_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(a.axis, static_cast<int64_t>(x.shape->size())));
  std::optional<Ints> sizes = attr_or_input_axes(a.split, node, 1);
  bool sizes_unknown = !sizes && node.input(1); // given, but only at run time
  const Dim& extent = (*x.shape)[static_cast<size_t>(axis)];
  std::vector<TensorType> out(n, x);
  for (size_t i = 0; i < n; ++i) {
    Dim d = Dim::unknown();
    if (sizes && sizes->size() == n) {
      d = (*sizes)[i];
    } else if (!sizes && !sizes_unknown && extent.is_static() &&
               extent.value() % static_cast<int64_t>(n) == 0) {
      d = extent.value() / static_cast<int64_t>(n);
    }
    (*out[i].shape)[static_cast<size_t>(axis)] = d;
  }
  return out;
}

TypesOrError infer_transpose(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  size_t rank = x.shape->size();
  Ints perm = node.attrs_as<TransposeAttrs>().perm.value_or(Ints{});
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) return fail("perm must list every axis once");
  Shape out;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
      return fail("perm must list every axis once");
    }
    seen[static_cast<size_t>(p)] = true;
    out.push_back((*x.shape)[static_cast<size_t>(p)]);
  }
  return one({x.dtype, out});
}

TypesOrError infer_reshape(const Node& node) {
  const auto& a = node.attrs_as<ReshapeAttrs>();
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> target = a.shape ? a.shape : constant_ints(node.input(1));
  if (!target) {
    const Value* s = node.input(1);
    bool rank_known =
        s && s->type.shape && s->type.shape->size() == 1 && (*s->type.shape)[0].is_static();
    if (!rank_known) return one({x.dtype, std::nullopt});
    return one({x.dtype, unknown_shape(static_cast<size_t>((*s->type.shape)[0].value()))});
  }
  Shape out;
  int infer_at = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t t = (*target)[i];
    if (t == -1) {
      if (infer_at >= 0) return fail("Reshape target has more than one -1");
      infer_at = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else if (t == 0 && !a.allowzero) {
      if (!x.shape || i >= x.shape->size()) return one({x.dtype, unknown_shape(target->size())});
      out.push_back((*x.shape)[i]);
    } else if (t < 0) {
      return fail(fmt::format("Reshape target has invalid extent {}", t));
    } else {
      out.push_back(t);
    }
  }
  if (infer_at >= 0 && x.shape) {
    std::optional<int64_t> total = shape_num_elements(*x.shape);
    int64_t known = 1;
    bool all_static = true;
    for (size_t i = 0; i < out.size(); ++i) {
      if (static_cast<int>(i) == infer_at) continue;
      if (out[i].is_static()) {
        known *= out[i].value();
      } else {
        all_static = false;
      }
    }
    if (total && all_static && known != 0) out[static_cast<size_t>(infer_at)] = *total / known;
  }
  return one({x.dtype, out});
}

TypesOrError infer_expand(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> target = constant_ints(node.input(1));
  if (!x.shape || !target) return one({x.dtype, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(Shape out, broadcast_shapes({*x.shape, shape_from_dims(*target)}));
  return one({x.dtype, out});
}

TypesOrError infer_tile(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> repeats = constant_ints(node.input(1));
  if (!x.shape) return one(x);
  if (!repeats) return one({x.dtype, unknown_shape(x.shape->size())});
  if (repeats->size() != x.shape->size()) return fail("Tile repeats must match the input rank");
  Shape out;
  for (size_t i = 0; i < repeats->size(); ++i) {
    const Dim& d = (*x.shape)[i];
    out.push_back(d.is_static() ? Dim(d.value() * (*repeats)[i]) : Dim::unknown());
  }
  return one({x.dtype, out});
}

TypesOrError infer_slice(const Node& node) {
  const auto& a = node.attrs_as<SliceAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  int64_t rank = static_cast<int64_t>(x.shape->size());
  bool from_inputs = node.opset >= 10 && !a.starts;
  std::optional<Ints> starts = from_inputs ? constant_ints(node.input(1)) : a.starts;
  std::optional<Ints> ends = from_inputs ? constant_ints(node.input(2)) : a.ends;
  std::optional<Ints> axes = from_inputs ? constant_ints(node.input(3)) : a.axes;
  std::optional<Ints> steps = from_inputs ? constant_ints(node.input(4)) : a.steps;
  if ((from_inputs && node.input(3) && !axes) || (from_inputs && node.input(4) && !steps) ||
      !starts || !ends) {
    // Bounds known only at run time: the sliced axes are unknown, the others unchanged.
    Shape out = unknown_shape(x.shape->size());
    if (axes) {
      out = *x.shape;
      for (int64_t sliced : *axes) {
        WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(sliced, rank));
        out[static_cast<size_t>(axis)] = Dim::unknown();
      }
    }
    return one({x.dtype, out});
  }
  if (!axes) {
    axes = Ints(starts->size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps = Ints(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps->size() != starts->size()) {
    return fail("Slice starts, ends, axes and steps must have the same length");
  }
  Shape out = *x.shape;
  for (size_t i = 0; i < starts->size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis((*axes)[i], rank));
    const Dim& d = (*x.shape)[static_cast<size_t>(axis)];
    int64_t step = (*steps)[i];
    if (step == 0) return fail("Slice step must not be 0");
    if (!d.is_static()) {
      out[static_cast<size_t>(axis)] = Dim::unknown();
      continue;
    }
    int64_t n = d.value();
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::clamp(v, lo, hi);
    };
    int64_t s = step > 0 ? clamp((*starts)[i], 0, n) : clamp((*starts)[i], -1, n - 1);
    int64_t e = step > 0 ? clamp((*ends)[i], 0, n) : clamp((*ends)[i], -1, n - 1);
    int64_t len = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    out[static_cast<size_t>(axis)] = std::max<int64_t>(len, 0);
  }
  return one({x.dtype, out});
}

TypesOrError infer_shape_op(const Node& node) {
  const auto& a = node.attrs_as<ShapeAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({DType::kI64, unknown_shape(1)});
  int64_t rank = static_cast<int64_t>(x.shape->size());
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(a.start);
  int64_t end = clamp(a.end.value_or(rank));
  return one({DType::kI64, Shape{std::max<int64_t>(end - start, 0)}});
}

TypesOrError infer_size(const Node&) { return one({DType::kI64, Shape{}}); }

TypesOrError infer_range(const Node& node) {
  DType t = in_type(node, 0).dtype;
  const Value* start = node.input(0);
  const Value* limit = node.input(1);
  const Value* delta = node.input(2);
  if (!start->is_constant() || !limit->is_constant() || !delta->is_constant()) {
    return one({t, unknown_shape(1)});
  }
  double s = start->constant->get_double(0), l = limit->constant->get_double(0),
         d = delta->constant->get_double(0);
  if (d == 0) return fail("Range delta must not be 0");
  double n = std::ceil((l - s) / d);
  return one({t, Shape{static_cast<int64_t>(std::max(n, 0.0))}});
}

TypesOrError infer_constant(const Node& node) {
  const TensorRef& v = node.attrs_as<ConstantAttrs>().value;
  if (!v) return fail("Constant has no value");
  return one(v->type());
}

TypesOrError infer_constant_of_shape(const Node& node) {
  const auto& a = node.attrs_as<ConstantOfShapeAttrs>();
  std::optional<Ints> dims = constant_ints(node.input(0));
  if (!dims) {
    const Value* s = node.input(0);
    if (s->type.shape && s->type.shape->size() == 1 && (*s->type.shape)[0].is_static()) {
      return one(
          {a.value->dtype(), unknown_shape(static_cast<size_t>((*s->type.shape)[0].value()))});
    }
    return one({a.value->dtype(), std::nullopt});
  }
  for (int64_t d : *dims) {
    if (d < 0) return fail(fmt::format("ConstantOfShape extent {} is negative", d));
  }
  return one({a.value->dtype(), shape_from_dims(*dims)});
}

TypesOrError infer_dropout(const Node& node) {
  std::vector<TensorType> out = {in_type(node, 0)};
  // The mask is bool from opset 10 on, and shares the data type before.
  DType mask = node.opset >= 10 ? DType::kBool : in_type(node, 0).dtype;
  if (node.outputs.size() > 1) out.push_back({mask, in_type(node, 0).shape});
  return out;
}

// MeanVarianceNormalization: the input's type; the axes must be in range.
TypesOrError infer_mvn(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (x.shape) {
    WEFT_RETURN_IF_ERROR(
        normalize_axes(*node.attrs_as<AxesAttrs>().axes, static_cast<int64_t>(x.shape->size()))
            .status());
  }
  return one(x);
}

// Det: [*, M, M] to [*].
TypesOrError infer_det(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one({x.dtype, std::nullopt});
  const Shape& s = *x.shape;
  if (s.size() < 2) return fail("the input must have rank 2 or more");
  if (!agree(s[s.size() - 2], s[s.size() - 1]))
    return fail(fmt::format("the input {} holds no square matrices", shape_to_string(s)));
  return one({x.dtype, Shape(s.begin(), s.end() - 2)});
}

// Adagrad (R, T, X..., G..., H...) -> (X_new..., H_new...); Adam (R, T, X..., G..., V...,
// H...) -> (X_new..., V_new..., H_new...); Momentum (R, T, X..., G..., V...) -> (X_new...,
// V_new...). R is a float scalar, T an i64 scalar; each tensor group matches X.
TypesOrError infer_optimizer(const Node& node) {
  size_t groups = node.op_type == kAdamOp ? 4 : 3;
  size_t n = node.inputs.size() < 2 ? 0 : (node.inputs.size() - 2) / groups;
  if (n == 0 || node.inputs.size() != 2 + n * groups)
    return fail(fmt::format("expects R, T and {} groups of as many tensors", groups));
  if (node.outputs.size() != n * (groups - 1))
    return fail(fmt::format("expects {} outputs for {} optimized tensors", n * (groups - 1), n));
  for (const Value* v : node.inputs) {
    if (!v) return fail("every input is required");
  }
  auto is_scalar = [](const TensorType& t) { return !t.shape || t.shape->empty(); };
  auto shapes_agree = [](const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (size_t d = 0; d < a.size(); ++d) {
      if (!agree(a[d], b[d])) return false;
    }
    return true;
  };
  if (!dtype_is_float(in_type(node, 0).dtype) || !is_scalar(in_type(node, 0)))
    return fail("R must be a float scalar");
  if (in_type(node, 1).dtype != DType::kI64 || !is_scalar(in_type(node, 1)))
    return fail("T must be an int64 scalar");
  std::vector<TensorType> out;
  for (size_t g = 0; g < groups; ++g) {
    for (size_t i = 0; i < n; ++i) {
      const TensorType& x = in_type(node, 2 + i);
      const TensorType& t = in_type(node, 2 + g * n + i);
      if (t.dtype != x.dtype || (t.shape && x.shape && !shapes_agree(*t.shape, *x.shape)))
        return fail(fmt::format("input {} must have the type of input {}", 2 + g * n + i, 2 + i));
      if (g != 1) out.push_back(t); // no output for the gradients
    }
  }
  return out;
}

} // namespace weft
