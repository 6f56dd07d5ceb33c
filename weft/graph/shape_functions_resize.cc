// Shape functions of Resize and Upsample, and what their lowerings and library calls read of
// them: the axes, scales and output extents that scales or sizes (constant, or dims over
// symbols) give.
#include <cmath>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"
#include "weft/graph/shape_functions.h"

namespace weft {

using namespace shape_detail;

namespace {

// A constant input of a Resize, none when absent, not constant or empty (opset 11 spells
// an absent input as an empty tensor).
const Value* resize_operand(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->is_constant() && v->constant->num_elements() > 0 ? v : nullptr;
}

const Value* resize_scales_operand(const Node& node) {
  return resize_operand(node, node.op_type == Op::kUpsample ? 1 : 2);
}

const Value* resize_sizes_operand(const Node& node) {
  return node.op_type == Op::kUpsample ? nullptr : resize_operand(node, 3);
}

} // namespace

std::optional<Ints> resize_axes(const Node& node, size_t rank) {
  std::optional<Ints> axes = node.attrs_as<ResizeAttrs>().axes;
  Ints out;
  for (size_t d = 0; d < rank; ++d)
    out.push_back(static_cast<int64_t>(d));
  if (!axes) return out;
  out.clear();
  for (int64_t a : *axes) {
    Result<int64_t> n = normalize_axis(a, static_cast<int64_t>(rank));
    if (!n.ok()) return std::nullopt;
    out.push_back(*n);
  }
  return out;
}

namespace {

// The sizes' common scale under keep_aspect_ratio_policy (over the axes they give), or none
// when they stretch each axis on its own.
std::optional<double> resize_aspect_scale(const Node& node, const Value* sizes, const Ints& axes,
                                          const Shape& shape) {
  int64_t policy = node.attrs_as<ResizeAttrs>().aspect_policy;
  if (policy == 0) return std::nullopt;
  std::optional<double> scale;
  for (size_t i = 0; i < axes.size(); ++i) {
    double r = static_cast<double>(sizes->constant->get_int64(static_cast<int64_t>(i))) /
               static_cast<double>(shape[static_cast<size_t>(axes[i])].value());
    if (!scale || (policy == 1 ? r < *scale : r > *scale)) scale = r;
  }
  return scale;
}

} // namespace

std::optional<std::vector<double>> resize_scales(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (node.op_type == Op::kResize && node.attrs_as<ResizeAttrs>().symbolic_sizes) {
    // Each axis's output extent over its input's, where both are static (a dynamic call's
    // graph at a run's extents).
    const Value* y = node.outputs.empty() ? nullptr : node.outputs[0];
    if (!x.has_static_shape() || !y || !y->type.has_static_shape() ||
        y->type.shape->size() != x.shape->size())
      return {};
    std::vector<double> scales(x.shape->size(), 1.0);
    for (size_t d = 0; d < scales.size(); ++d) {
      int64_t in = (*x.shape)[d].value(), out = (*y->type.shape)[d].value();
      if (in != out) scales[d] = in == 0 ? 1.0 : static_cast<double>(out) / static_cast<double>(in);
    }
    return scales;
  }
  const Value* sizes = resize_sizes_operand(node);
  const Value* given = sizes ? sizes : resize_scales_operand(node);
  if (!given || !x.shape) return {};
  std::optional<Ints> axes = resize_axes(node, x.shape->size());
  if (!axes || static_cast<size_t>(given->constant->num_elements()) != axes->size()) return {};
  std::vector<double> scales(x.shape->size(), 1.0);
  if (!sizes) {
    for (size_t i = 0; i < axes->size(); ++i) // ONNX scales are f32
      scales[static_cast<size_t>((*axes)[i])] =
          static_cast<float>(given->constant->get_double(static_cast<int64_t>(i)));
    return scales;
  }
  if (!x.has_static_shape()) return {};
  std::optional<double> common = resize_aspect_scale(node, sizes, *axes, *x.shape);
  for (size_t i = 0; i < axes->size(); ++i) {
    auto d = static_cast<size_t>((*axes)[i]);
    // (An empty dim stays empty at scale 1; infer_resize refuses one made non-empty.)
    int64_t extent = (*x.shape)[d].value();
    scales[d] = common ? *common
                : extent == 0
                    ? 1.0
                    : static_cast<double>(sizes->constant->get_int64(static_cast<int64_t>(i))) /
                          static_cast<double>(extent);
  }
  return scales;
}

std::optional<int64_t> resize_divisor(double scale) {
  for (int64_t k = 2; k <= 1024; k *= 2) {
    if (scale * static_cast<double>(k) == 1.0) return k;
  }
  return std::nullopt;
}

bool resize_stretched_to_sizes(const Node& node) {
  if (node.op_type != Op::kResize) return false;
  const auto& a = node.attrs_as<ResizeAttrs>();
  return a.aspect_policy == 0 && (a.symbolic_sizes || resize_sizes_operand(node));
}

std::optional<Shape> resize_extents(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const Value* sizes = resize_sizes_operand(node);
  const auto& a = node.attrs_as<ResizeAttrs>();
  if (a.symbolic_sizes) { // the given axes take them; the rest keep theirs
    if (!a.axes) return a.symbolic_sizes;
    std::optional<Ints> axes = x.shape ? resize_axes(node, x.shape->size()) : std::nullopt;
    if (!axes || axes->size() != a.symbolic_sizes->size()) return {};
    Shape out = *x.shape;
    for (size_t i = 0; i < axes->size(); ++i)
      out[static_cast<size_t>((*axes)[i])] = (*a.symbolic_sizes)[i];
    return out;
  }
  if (sizes && a.aspect_policy == 0 && !a.axes) { // any input shape
    std::optional<Ints> given = constant_ints(sizes);
    if (!given) return {};
    return Shape(given->begin(), given->end());
  }
  std::optional<std::vector<double>> scales = resize_scales(node);
  if (!scales || !x.shape) return {};
  Shape out = *x.shape;
  std::optional<Ints> axes = resize_axes(node, out.size());
  bool common = sizes && a.aspect_policy != 0;
  for (size_t i = 0; i < axes->size(); ++i) {
    auto d = static_cast<size_t>((*axes)[i]);
    if (!sizes && (*scales)[d] == 1) continue; // the extent, symbolic or not (a batch)
    double whole = std::floor((*scales)[d]);
    if (!out[d].is_static() && !sizes && whole == (*scales)[d] && whole <= 1024) {
      out[d] = dim_mul(out[d], static_cast<int64_t>(whole)); // upsampled by an integer factor
      continue;
    }
    if (std::optional<int64_t> k = resize_divisor((*scales)[d]);
        !out[d].is_static() && !sizes && k) {
      out[d] = dim_floor_div(out[d], 0, *k); // floor(X / k), as floor(X * scale) is exactly
      continue;
    }
    if (!out[d].is_static()) return {};
    double scaled = static_cast<double>(out[d].value()) * (*scales)[d];
    out[d] = !sizes   ? static_cast<int64_t>(std::floor(scaled))
             : common ? static_cast<int64_t>(scaled + 0.5) // rounded half up, as ONNX says
                      : sizes->constant->get_int64(static_cast<int64_t>(i));
  }
  return out;
}

TypesOrError infer_resize(const Node& node) {
  const TensorType& x = in_type(node, 0);
  bool sized = resize_sizes_operand(node) != nullptr;
  const Value* given = sized ? resize_sizes_operand(node) : resize_scales_operand(node);
  if (given && x.shape) {
    std::optional<Ints> axes = resize_axes(node, x.shape->size());
    if (!axes) return fail("an axis is out of range");
    if (static_cast<size_t>(given->constant->num_elements()) != axes->size()) {
      return fail(fmt::format("{} has {} elements for {} axes", sized ? "sizes" : "scales",
                              given->constant->num_elements(), axes->size()));
    }
  }
  // An empty dim resized to a non-empty one has nothing to sample (the kernel read past the
  // input; ONNX Runtime refuses it too).
  if (sized && given && x.shape) {
    std::optional<Ints> axes = resize_axes(node, x.shape->size());
    for (size_t i = 0; axes && i < axes->size(); ++i) {
      const Dim& in = (*x.shape)[static_cast<size_t>((*axes)[i])];
      int64_t size = given->constant->get_int64(static_cast<int64_t>(i));
      if (in.is_static() && in.value() == 0 && size > 0)
        return fail(fmt::format("dim {} is empty and cannot be resized to {}", (*axes)[i], size));
    }
  }
  if (std::optional<std::vector<double>> scales = resize_scales(node)) {
    for (double s : *scales) {
      if (!(s > 0)) return fail(fmt::format("scale {} is not positive", s));
    }
  }
  std::optional<Shape> extents = resize_extents(node);
  if (!extents)
    return one({x.dtype, x.shape ? unknown_shape(x.shape->size()) : std::optional<Shape>()});
  return one({x.dtype, *extents});
}

} // namespace weft
