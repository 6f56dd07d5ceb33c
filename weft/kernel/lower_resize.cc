// Resize, Upsample, GridSample and RoiAlign: each output element reads input elements around
// its source coordinate, through indirect loads whose indices are computed (from the output
// position, or from the grid's or the rois' values).
//
// Along each resized axis, the source coordinate x (in f64, as ONNX's reference computes it)
// splits as x = base + r with base = ceil(x) - 1 and r in (0, 1]; the taps are base,
// base + 1 (nearest, linear) or base - 1 ... base + 2 (cubic), clamped into the input, as the
// reference's edge padding does. Nearest loads the chosen tap; linear and cubic sum
// coefficient * element over a domain extended by one tap iterator per resized axis, in f64.
// With antialias, a downsampling axis (scale < 1) stretches the linear or cubic filter by
// 1 / scale: its taps widen to base + 1 - n / 2 ... base + n / 2 and their coefficients, the
// filter at (tap - x) * scale, are normalized to sum to 1.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

constexpr DType kF64 = DType::kF64;
constexpr DType kI64 = DType::kI64;

// Linear and cubic Resize spell out up to this many taps (over all resized axes) in one
// statement; more (trilinear cubic, antialias's wide filters) sum over tap iterators.
constexpr int64_t kMaxUnrolledTaps = 16;

// A resized axis: its scale, or none where it is the output's extent over the input's and
// either one is symbolic (sizes that stretch the axis: a run's extents give the scale).
struct ResizedAxis {
  int dim = 0;
  std::optional<double> scale = 1;
  Dim in_extent = 1;
  Dim out_extent = 1;
  double roi_start = 0, roi_end = 1; // tf_crop_and_resize only
};

// Builds the arithmetic of one statement, in f64 unless "t" says otherwise.
struct Arith {
  StatementBuilder& b;
  DType t = kF64; // the arithmetic's type
  int c(double v) const { return b.constant(v, t); }
  int add(int x, int y) const { return b.op(ExprOp::kAdd, t, {x, y}); }
  int sub(int x, int y) const { return b.op(ExprOp::kSub, t, {x, y}); }
  int mul(int x, int y) const { return b.op(ExprOp::kMul, t, {x, y}); }
  int div(int x, int y) const { return b.op(ExprOp::kDiv, t, {x, y}); }
  int cmp(ExprOp op, int x, int y) const { return b.op(op, DType::kBool, {x, y}); }
  int select(int cond, int x, int y) const { return b.op(ExprOp::kSelect, t, {cond, x, y}); }
  int unary(ExprOp op, int x) const { return b.op(op, t, {x}); }
  int binary(ExprOp op, int x, int y) const { return b.op(op, t, {x, y}); }
};

// The source coordinate of output iterator "it" along "ax" (the reference's x_ori).
int source_coordinate(Arith& f, const ResizeAttrs& a, const ResizedAxis& ax, int it) {
  int o = f.b.op(ExprOp::kCast, kF64, {f.b.iterator(it)});
  if (!ax.scale || !ax.in_extent.is_static()) { // as below, over ExprOp::kExtent values
    int in = f.b.extent(ax.in_extent, kF64), out = f.b.extent(ax.out_extent, kF64);
    int scale = ax.scale ? f.c(*ax.scale) : f.div(out, in), out_width = f.mul(scale, in);
    int half_pixel = f.sub(f.div(f.add(o, f.c(0.5)), scale), f.c(0.5));
    int single = f.cmp(ExprOp::kEq, out_width, f.c(1));
    switch (a.coordinate_transformation_mode) {
      case ResizeCoordinates::kHalfPixel: return half_pixel;
      case ResizeCoordinates::kPytorchHalfPixel: return f.select(single, f.c(-0.5), half_pixel);
      case ResizeCoordinates::kAlignCorners:
        return f.select(single, f.c(0),
                        f.div(f.mul(o, f.sub(in, f.c(1))), f.sub(out_width, f.c(1))));
      case ResizeCoordinates::kAsymmetric: return f.div(o, scale);
      case ResizeCoordinates::kTfHalfPixelForNn: // (an axis of scale 1 is left as it is)
        return f.select(f.cmp(ExprOp::kEq, scale, f.c(1)), o, f.div(f.add(o, f.c(0.5)), scale));
      case ResizeCoordinates::kHalfPixelSymmetric:
        return f.add(f.mul(f.div(in, f.c(2)), f.sub(f.c(1), f.div(out, out_width))), half_pixel);
      case ResizeCoordinates::kTfCropAndResize: break; // (not admitted: admits_symbolic_shapes)
    }
    return o;
  }
  double scale = *ax.scale, in = static_cast<double>(ax.in_extent.value());
  double out_width = scale * in;
  auto half_pixel = [&] { return f.sub(f.div(f.add(o, f.c(0.5)), f.c(scale)), f.c(0.5)); };
  switch (a.coordinate_transformation_mode) {
    case ResizeCoordinates::kHalfPixel: return half_pixel();
    case ResizeCoordinates::kPytorchHalfPixel: return out_width == 1 ? f.c(-0.5) : half_pixel();
    case ResizeCoordinates::kAlignCorners:
      return out_width == 1 ? f.c(0) : f.div(f.mul(o, f.c(in - 1)), f.c(out_width - 1));
    case ResizeCoordinates::kAsymmetric: return f.div(o, f.c(scale));
    case ResizeCoordinates::kTfHalfPixelForNn: return f.div(f.add(o, f.c(0.5)), f.c(scale));
    case ResizeCoordinates::kHalfPixelSymmetric: {
      // half_pixel, shifted so that the output's center maps to the input's when the output
      // extent was rounded down from scale * in.
      double adjustment = static_cast<double>(ax.out_extent.value()) / out_width;
      return f.add(f.c(in / 2 * (1 - adjustment)), half_pixel());
    }
    case ResizeCoordinates::kTfCropAndResize: {
      double extent = ax.roi_end - ax.roi_start;
      int x = out_width == 1 ? f.c(extent * (in - 1) / 2)
                             : f.div(f.mul(f.mul(o, f.c(extent)), f.c(in - 1)), f.c(out_width - 1));
      return f.add(x, f.c(ax.roi_start * (in - 1)));
    }
  }
  return o;
}

// Is the source coordinate of any resized axis outside the input (tf_crop_and_resize's
// extrapolation)? -1 when the mode never extrapolates.
int outside_input(Arith& f, const ResizeAttrs& a, const std::vector<ResizedAxis>& axes) {
  if (a.coordinate_transformation_mode != ResizeCoordinates::kTfCropAndResize) return -1;
  int any = f.b.constant(0, DType::kBool);
  for (const ResizedAxis& ax : axes) {
    int x = source_coordinate(f, a, ax, ax.dim);
    int out = f.b.op(ExprOp::kOr, DType::kBool,
                     {f.cmp(ExprOp::kLt, x, f.c(0)),
                      f.cmp(ExprOp::kGt, x, f.c(static_cast<double>(ax.in_extent.value() - 1)))});
    any = f.b.op(ExprOp::kOr, DType::kBool, {any, out});
  }
  return any;
}

// The cubic convolution coefficients of the four taps at ratio "r" (the reference's).
std::vector<int> cubic_coefficients(Arith& f, int r, double a) {
  auto outer = [&](int t) { // ((A t - 5A) t + 8A) t - 4A, t in [1, 2]
    return f.sub(f.mul(f.add(f.mul(f.sub(f.mul(f.c(a), t), f.c(5 * a)), t), f.c(8 * a)), t),
                 f.c(4 * a));
  };
  auto inner = [&](int t) { // ((A + 2) t - (A + 3)) t t + 1, t in [0, 1]
    return f.add(f.mul(f.mul(f.sub(f.mul(f.c(a + 2), t), f.c(a + 3)), t), t), f.c(1));
  };
  int s = f.sub(f.c(1), r);
  return {outer(f.add(r, f.c(1))), inner(r), inner(s), outer(f.add(s, f.c(1)))};
}

// The taps of a linear or cubic filter along one axis: "count" of them, the first at
// base + "first" (base = ceil(x) - 1). "stretch" (antialias while downsampling: the scale,
// below 1) widens the filter by 1 / stretch; 1 leaves it.
struct AxisFilter {
  int first = 0;
  int count = 2;
  double stretch = 1;
};

AxisFilter axis_filter(const ResizeAttrs& a, const ResizedAxis& ax) {
  double support = a.mode == ResizeMode::kLinear ? 1 : 2; // the filter's half width
  // (A scale known only at run time comes without antialias: admits_symbolic_shapes.)
  double stretch = a.antialias && ax.scale && *ax.scale < 1 ? *ax.scale : 1;
  int first = static_cast<int>(std::floor(-support / stretch)) + 1;
  return {first, 2 - 2 * first, stretch};
}

// The coefficients of the taps of "filter" at ratio "r": the filter at (tap - x) * stretch,
// normalized to sum to 1 (the reference's _linear_coeffs_antialias and
// _cubic_coeffs_antialias).
std::vector<int> stretched_coefficients(Arith& f, const ResizeAttrs& a, const AxisFilter& filter,
                                        int r) {
  double ca = a.cubic_coeff_a;
  std::vector<int> coeffs;
  int sum = f.c(0);
  for (int j = 0; j < filter.count; ++j) {
    int d =
        f.b.op(ExprOp::kAbs, kF64, {f.mul(f.sub(f.c(filter.first + j), r), f.c(filter.stretch))});
    int w;
    if (a.mode == ResizeMode::kLinear) { // max(0, 1 - |d|)
      w = f.b.op(ExprOp::kMax, kF64, {f.sub(f.c(1), d), f.c(0)});
    } else { // the cubic convolution kernel, 0 from |d| = 2 on
      int d2 = f.mul(d, d), d3 = f.mul(d2, d);
      int inner = f.add(f.sub(f.mul(f.c(ca + 2), d3), f.mul(f.c(ca + 3), d2)), f.c(1));
      int outer =
          f.sub(f.add(f.sub(f.mul(f.c(ca), d3), f.mul(f.c(5 * ca), d2)), f.mul(f.c(8 * ca), d)),
                f.c(4 * ca));
      w = f.select(f.cmp(ExprOp::kLe, d, f.c(1)), inner,
                   f.select(f.cmp(ExprOp::kLt, d, f.c(2)), outer, f.c(0)));
    }
    coeffs.push_back(w);
    sum = f.add(sum, w);
  }
  for (int& w : coeffs)
    w = f.div(w, sum);
  return coeffs;
}

// "values"[tap], for an i64 node "tap" in [0, values.size()).
int pick(Arith& f, int tap, const std::vector<int>& values) {
  int v = values.back();
  for (size_t j = values.size() - 1; j-- > 0;) {
    v = f.select(
        f.b.op(ExprOp::kEq, DType::kBool, {tap, f.b.constant(static_cast<double>(j), kI64)}),
        values[j], v);
  }
  return v;
}

// The taps of one resized axis: each one's coefficient (f64) and input position (i64,
// clamped where it is read).
struct Tap {
  int base; // f64: ceil(x) - 1
  std::vector<int> weights, positions;
};

Tap axis_taps(Arith& f, const ResizeAttrs& a, const ResizedAxis& ax, const AxisFilter& filter) {
  StatementBuilder& b = f.b;
  int xo = source_coordinate(f, a, ax, ax.dim);
  int base = f.sub(b.op(ExprOp::kCeil, kF64, {xo}), f.c(1));
  int r = f.sub(xo, base);
  Tap tap;
  tap.base = base;
  tap.weights = filter.stretch != 1             ? stretched_coefficients(f, a, filter, r)
                : a.mode == ResizeMode::kLinear ? std::vector<int>{f.sub(f.c(1), r), r}
                                                : cubic_coefficients(f, r, a.cubic_coeff_a);
  int sum = f.c(0);
  for (int j = 0; j < filter.count; ++j) {
    int pos = f.add(base, f.c(filter.first + j));
    tap.positions.push_back(b.op(ExprOp::kCast, kI64, {pos}));
    if (a.exclude_outside) { // taps outside the input weigh 0; the rest are renormalized
      int inside =
          b.op(ExprOp::kAnd, DType::kBool,
               {f.cmp(ExprOp::kGe, pos, f.c(0)),
                f.cmp(ExprOp::kLe, pos,
                      ax.in_extent.is_static() ? f.c(static_cast<double>(ax.in_extent.value() - 1))
                                               : f.sub(b.extent(ax.in_extent, kF64), f.c(1)))});
      int& w = tap.weights[static_cast<size_t>(j)];
      w = f.select(inside, w, f.c(0));
      sum = f.add(sum, w);
    }
  }
  if (a.exclude_outside) {
    for (int& w : tap.weights)
      w = f.div(w, sum);
  }
  return tap;
}

Result<std::vector<ResizedAxis>> resized_axes(const Node& n) {
  const auto& a = n.attrs_as<ResizeAttrs>();
  const Shape& in = *n.inputs[0]->type.shape;
  std::optional<std::vector<double>> scales = resize_scales(n);
  bool stretched = resize_stretched_to_sizes(n);
  if (!scales && !stretched) return Status::error("Resize scales or sizes known only at run time");
  const Shape& out = *n.outputs[0]->type.shape;
  bool crop = a.coordinate_transformation_mode == ResizeCoordinates::kTfCropAndResize;
  const Value* roi = n.op_type == Op::kResize ? n.input(1) : nullptr;
  // The roi gives [starts, ends] of the axes that the scales or sizes give.
  Ints given = n.op_type == Op::kResize ? resize_axes(n, in.size()).value_or(Ints{}) : Ints{};
  auto num_given = static_cast<int64_t>(given.size());
  if (crop && (!roi || !roi->is_constant() || roi->constant->num_elements() != 2 * num_given))
    return Status::error("tf_crop_and_resize needs a constant roi of 2 * len(axes) elements");
  std::vector<ResizedAxis> axes;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!scales) { // stretched to sizes, some over symbols: the extents' ratio at run time
      if (in[d] == out[d]) continue;
      std::optional<double> scale;
      if (in[d].is_static() && out[d].is_static() && in[d].value() > 0)
        scale = static_cast<double>(out[d].value()) / static_cast<double>(in[d].value());
      axes.push_back({static_cast<int>(d), scale, in[d], out[d]});
      continue;
    }
    if ((*scales)[d] == 1 && in[d] == out[d] && !in[d].is_static()) continue; // (a batch)
    // A symbolic axis is scaled by an integer factor or its inverse (scaled_over_symbols).
    ResizedAxis ax{static_cast<int>(d), (*scales)[d], in[d], out[d]};
    auto at = std::find(given.begin(), given.end(), static_cast<int64_t>(d));
    if (crop && at != given.end()) {
      int64_t i = at - given.begin();
      ax.roi_start = roi->constant->get_double(i);
      ax.roi_end = roi->constant->get_double(i + num_given);
    }
    if (ax.scale != 1 || ax.roi_start != 0 || ax.roi_end != 1) axes.push_back(ax);
  }
  return axes;
}

} // namespace

Result<LoweredNode> lower_resize(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<ResizeAttrs>();
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  size_t rank = shape.size();
  WEFT_ASSIGN_OR_RETURN(std::vector<ResizedAxis> axes, resized_axes(n));
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  DType t = y->type.dtype;
  if (a.mode == ResizeMode::kNearest) {
    StatementBuilder b("resize_nearest", shape);
    Arith f{b};
    std::vector<AffineExpr> index = iterators(rank);
    std::vector<IndirectIndex> indirect;
    for (const ResizedAxis& ax : axes) {
      int xo = source_coordinate(f, a, ax, ax.dim);
      int base = f.sub(b.op(ExprOp::kCeil, kF64, {xo}), f.c(1));
      int r = f.sub(xo, base);
      int up = a.nearest_mode == NearestMode::kRoundPreferFloor  ? f.cmp(ExprOp::kGt, r, f.c(0.5))
               : a.nearest_mode == NearestMode::kRoundPreferCeil ? f.cmp(ExprOp::kGe, r, f.c(0.5))
               : a.nearest_mode == NearestMode::kFloor           ? f.cmp(ExprOp::kEq, r, f.c(1))
                                                                 : b.constant(1, DType::kBool);
      int idx = b.op(ExprOp::kCast, kI64, {f.add(base, f.select(up, f.c(1), f.c(0)))});
      index[static_cast<size_t>(ax.dim)] = AffineExpr::constant_of(0);
      indirect.push_back({ax.dim, idx, IndexWrap::kClamp});
    }
    int v = b.gather(in, index, indirect, x->type.dtype);
    int outside = outside_input(f, a, axes);
    if (outside >= 0)
      v = b.op(ExprOp::kSelect, t, {outside, b.constant(a.extrapolation_value, t), v});
    k.add(b.store(v, out, iterators(rank)));
    return k.lowered();
  }
  // Linear and cubic: y[p] = sum over taps of prod(coefficients) * x[taps], in f64.
  std::vector<AxisFilter> filters;
  int64_t taps = 1;
  for (const ResizedAxis& ax : axes) {
    filters.push_back(axis_filter(a, ax));
    taps *= filters.back().count;
  }
  if (taps <= kMaxUnrolledTaps) {
    // The taps spelled out in one elementwise statement: its vector loop runs along the
    // output's last axis, where a reduction over tap iterators ran innermost, two taps wide,
    // through an f64 buffer of the output's size (bilinear [21, 32, 32] -> [21, 256, 256]:
    // 3.1 ms, against ONNX Runtime's 0.8).
    StatementBuilder b("resize_taps", shape);
    Arith f{b};
    std::vector<std::vector<int>> weights, positions; // per axis, per tap
    for (size_t i = 0; i < axes.size(); ++i) {
      Tap tap = axis_taps(f, a, axes[i], filters[i]);
      weights.push_back(std::move(tap.weights));
      positions.push_back(std::move(tap.positions));
    }
    int sum = f.c(0);
    std::vector<int> j(axes.size(), 0); // the tap of each axis, as an odometer
    for (int64_t combination = 0; combination < taps; ++combination) {
      int weight = f.c(1);
      std::vector<AffineExpr> index = iterators(rank);
      std::vector<IndirectIndex> indirect;
      for (size_t i = 0; i < axes.size(); ++i) {
        weight = f.mul(weight, weights[i][static_cast<size_t>(j[i])]);
        index[static_cast<size_t>(axes[i].dim)] = AffineExpr::constant_of(0);
        indirect.push_back(
            {axes[i].dim, positions[i][static_cast<size_t>(j[i])], IndexWrap::kClamp});
      }
      int v = b.gather(in, index, indirect, x->type.dtype);
      if (x->type.dtype != kF64) v = b.op(ExprOp::kCast, kF64, {v});
      sum = f.add(sum, f.mul(weight, v));
      for (size_t i = axes.size(); i-- > 0;) {
        if (++j[i] < filters[i].count) break;
        j[i] = 0;
      }
    }
    int outside = outside_input(f, a, axes);
    if (outside >= 0) sum = f.select(outside, f.c(a.extrapolation_value), sum);
    if (t != kF64) sum = b.op(ExprOp::kCast, t, {sum});
    k.add(b.store(sum, out, iterators(rank)));
    return k.lowered();
  }
  int acc = k.temp(kF64, shape);
  StatementBuilder init("init", shape);
  k.add(init.store(init.constant(0, kF64), acc, iterators(rank)));
  Shape domain = shape;
  for (const AxisFilter& filter : filters)
    domain.push_back(filter.count);
  StatementBuilder b("resize_taps", domain);
  Arith f{b};
  std::vector<AffineExpr> index = iterators(rank);
  std::vector<IndirectIndex> indirect;
  int weight = f.c(1);
  for (size_t i = 0; i < axes.size(); ++i) {
    const ResizedAxis& ax = axes[i];
    Tap taps_of_axis = axis_taps(f, a, ax, filters[i]);
    int tap = b.iterator(static_cast<int>(rank + i));
    weight = f.mul(weight, pick(f, tap, taps_of_axis.weights));
    int idx = b.op(ExprOp::kAdd, kI64,
                   {b.op(ExprOp::kCast, kI64, {taps_of_axis.base}),
                    b.op(ExprOp::kAdd, kI64, {tap, b.constant(filters[i].first, kI64)})});
    index[static_cast<size_t>(ax.dim)] = AffineExpr::constant_of(0);
    indirect.push_back({ax.dim, idx, IndexWrap::kClamp});
  }
  int v = b.gather(in, index, indirect, x->type.dtype);
  if (x->type.dtype != kF64) v = b.op(ExprOp::kCast, kF64, {v});
  k.add(b.store(f.mul(weight, v), acc, iterators(rank), Combine::kSum));
  StatementBuilder fin("finish", shape);
  Arith ff{fin};
  int r = fin.load(acc, iterators(rank), kF64);
  int outside = outside_input(ff, a, axes);
  if (outside >= 0) r = ff.select(outside, ff.c(a.extrapolation_value), r);
  if (t != kF64) r = fin.op(ExprOp::kCast, t, {r});
  k.add(fin.store(r, out, iterators(rank)));
  return k.lowered();
}

namespace {

// One spatial axis of a GridSample: its input extent and the grid component (0: x, 1: y)
// that addresses it.
struct GridAxis {
  int64_t extent;
  int component;
};

// The source coordinate of a grid value "g" in [-1, 1] (PyTorch's grid_sample, which ONNX
// follows): the corners' centers with align_corners, the corners' edges without.
int unnormalize(Arith& f, int g, int64_t extent, bool align_corners) {
  double n = static_cast<double>(extent);
  if (align_corners) return f.mul(f.div(f.add(g, f.c(1)), f.c(2)), f.c(n - 1));
  return f.div(f.sub(f.mul(f.add(g, f.c(1)), f.c(n)), f.c(1)), f.c(2));
}

// "x" reflected about the borders until it lies in [low/2, high/2] (PyTorch's
// reflect_coordinates, with twice the bounds as arguments).
int reflect(Arith& f, int x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return f.c(0);
  double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  int v = f.unary(ExprOp::kAbs, f.sub(x, f.c(low)));
  int extra = f.binary(ExprOp::kFmod, v, f.c(span));
  int flips = f.unary(ExprOp::kFloor, f.div(v, f.c(span)));
  int even = f.cmp(ExprOp::kEq, f.binary(ExprOp::kFmod, flips, f.c(2)), f.c(0));
  return f.select(even, f.add(extra, f.c(low)), f.add(f.sub(f.c(span), extra), f.c(low)));
}

// A coordinate under the padding mode: clipped to the input (border), reflected then
// clipped (reflection), or left (zeros, where reads outside give 0).
int pad_coordinate(Arith& f, int x, int64_t extent, const GridSampleAttrs& a) {
  double last = static_cast<double>(extent - 1);
  if (a.padding_mode == GridPadding::kZeros) return x;
  if (a.padding_mode == GridPadding::kReflection) {
    x = a.align_corners ? reflect(f, x, 0, 2 * last) : reflect(f, x, -1, 2 * last + 1);
  }
  return f.binary(ExprOp::kMin, f.binary(ExprOp::kMax, x, f.c(0)), f.c(last));
}

} // namespace

// y[n, c, h, w] = sum over taps of weight * x[n, c, tap_y, tap_x], the taps around the grid's
// point (grid[n, h, w] = (x, y)); a tap outside the input reads 0. Over the domain
// [N, C, H_out, W_out, tap_y, tap_x], accumulated in f64. A 5-D input reads the same with
// depth: grid[n, d, h, w] = (x, y, z) and one more tap iterator.
Result<LoweredNode> lower_grid_sample(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<GridSampleAttrs>();
  const Value* x = n.inputs[0];
  const Value* grid = n.inputs[1];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  const Shape& xs = *x->type.shape;
  size_t rank = xs.size();
  int spatial = static_cast<int>(rank) - 2;
  std::vector<GridAxis> axes; // the grid's last component addresses the first spatial axis
  for (int i = 0; i < spatial; ++i)
    axes.push_back({xs[static_cast<size_t>(2 + i)].value(), spatial - 1 - i});
  int taps = a.mode == GridSampleMode::kNearest ? 1 : a.mode == GridSampleMode::kBilinear ? 2 : 4;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int bg = k.buffer(grid, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = k.temp(kF64, shape);
  StatementBuilder init("init", shape);
  k.add(init.store(init.constant(0, kF64), acc, iterators(rank)));
  Shape domain = shape;
  for (int i = 0; i < spatial; ++i)
    domain.push_back(taps);
  StatementBuilder b("grid_sample", domain);
  Arith f{b};
  // The source coordinates as PyTorch and ONNX Runtime compute them, in the grid's type (f32
  // for f16 and bf16): in f64 a nearest tap on a tie of f32 arithmetic (g = 0.3 over 11
  // points, align_corners: 6.5 in f64, 6.4999998 in f32) went the other way.
  Arith fc{b, grid->type.dtype == kF64 ? kF64 : DType::kF32};
  std::vector<IndirectIndex> indirect;
  int weight = f.c(1);
  int inside = b.constant(1, DType::kBool);
  for (size_t i = 0; i < axes.size(); ++i) {
    const GridAxis& ax = axes[i];
    std::vector<AffineExpr> at = {AffineExpr::iterator(0)}; // grid[n, spatial..., component]
    for (int d = 0; d < spatial; ++d)
      at.push_back(AffineExpr::iterator(2 + d));
    at.push_back(AffineExpr::constant_of(ax.component));
    int g = load_as(b, bg, at, grid->type.dtype, fc.t);
    int tap_iterator = static_cast<int>(rank + i);
    int coord = unnormalize(fc, g, ax.extent, a.align_corners);
    auto as_f64 = [&](int v) { return fc.t == kF64 ? v : b.op(ExprOp::kCast, kF64, {v}); };
    int tap = b.op(ExprOp::kCast, kF64, {b.iterator(tap_iterator)});
    int pos; // the tap's coordinate, before the bounds check
    if (a.mode == GridSampleMode::kNearest) {
      pos = b.op(ExprOp::kRound, kF64, {as_f64(pad_coordinate(fc, coord, ax.extent, a))});
    } else if (a.mode == GridSampleMode::kBilinear) {
      coord = as_f64(pad_coordinate(fc, coord, ax.extent, a));
      int base = b.op(ExprOp::kFloor, kF64, {coord});
      int r = f.sub(coord, base);
      pos = f.add(base, tap);
      weight = f.mul(weight, pick(f, b.iterator(tap_iterator), {f.sub(f.c(1), r), r}));
    } else { // bicubic: each tap's coordinate is padded on its own
      coord = as_f64(coord);
      int base = b.op(ExprOp::kFloor, kF64, {coord});
      int r = f.sub(coord, base);
      pos = pad_coordinate(f, f.add(f.sub(base, f.c(1)), tap), ax.extent, a);
      weight = f.mul(weight, pick(f, b.iterator(tap_iterator), cubic_coefficients(f, r, -0.75)));
    }
    int idx = b.op(ExprOp::kCast, kI64, {pos});
    int within = b.op(ExprOp::kAnd, DType::kBool,
                      {f.cmp(ExprOp::kGe, pos, f.c(0)),
                       f.cmp(ExprOp::kLe, pos, f.c(static_cast<double>(ax.extent - 1)))});
    inside = b.op(ExprOp::kAnd, DType::kBool, {inside, within});
    indirect.push_back({static_cast<int>(2 + i), idx, IndexWrap::kClamp});
  }
  std::vector<AffineExpr> x_index = {AffineExpr::iterator(0), AffineExpr::iterator(1)};
  x_index.resize(rank, AffineExpr::constant_of(0)); // the spatial indices are indirect
  int v = b.gather(in, x_index, indirect, x->type.dtype);
  if (x->type.dtype != kF64) v = b.op(ExprOp::kCast, kF64, {v});
  v = f.select(inside, v, f.c(0));
  k.add(b.store(f.mul(weight, v), acc, iterators(rank), Combine::kSum));
  StatementBuilder fin("finish", shape);
  int r = fin.load(acc, iterators(rank), kF64);
  if (y->type.dtype != kF64) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(fin.store(r, out, iterators(rank)));
  return k.lowered();
}

// y[r, c, ph, pw] = the average (max) over a sampling_ratio^2 grid of points in bin (ph, pw) of
// roi r of the bilinear interpolation at each point (of the largest of its four weighted
// taps, as the reference computes max mode), reading x[batch_indices[r], c]. Over the domain
// [R, ph, pw, iy, ix, tap_y, tap_x, C], in f64: the channels innermost, so that each point's
// position and weights are computed once for all channels (hoisted out of the channel loop),
// as ONNX Runtime's pre-computed taps are (with C second, a Faster R-CNN's box pooling took
// two thirds of its run). A point more than a pixel outside the input weighs 0; one within it
// reads the clamped border.
Result<LoweredNode> lower_roi_align(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<RoiAlignAttrs>();
  const Value* x = n.inputs[0];
  const Value* rois = n.inputs[1];
  const Value* batch = n.inputs[2];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  const Shape& xs = *x->type.shape;
  int64_t samples = a.sampling_ratio;
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int br = k.buffer(rois, BufferRole::kInput);
  int bb = k.buffer(batch, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  int acc = k.temp(kF64, shape);
  StatementBuilder init("init", shape);
  double none = a.max ? -std::numeric_limits<double>::infinity() : 0;
  k.add(init.store(init.constant(none, kF64), acc, iterators(4)));
  Shape domain = {shape[0], shape[2], shape[3], samples, samples, 2, 2, shape[1]};
  const int channel = 7;
  std::vector<AffineExpr> at_acc = {AffineExpr::iterator(0), AffineExpr::iterator(channel),
                                    AffineExpr::iterator(1), AffineExpr::iterator(2)};
  StatementBuilder b("roi_align", domain);
  Arith f{b};
  auto roi = [&](int i) {
    return load_as(b, br, {AffineExpr::iterator(0), AffineExpr::constant_of(i)}, rois->type.dtype,
                   kF64);
  };
  auto as_f64 = [&](int it) { return b.op(ExprOp::kCast, kF64, {b.iterator(it)}); };
  std::vector<IndirectIndex> indirect = {
      {0, load_as(b, bb, {AffineExpr::iterator(0)}, batch->type.dtype, kI64), IndexWrap::kClamp}};
  int weight = f.c(1);
  for (int axis = 0; axis < 2; ++axis) { // y from the rois' entries 1 and 3, x from 0 and 2
    double extent = static_cast<double>(xs[static_cast<size_t>(2 + axis)].value());
    double offset = a.half_pixel ? 0.5 : 0;
    int start = f.sub(f.mul(roi(1 - axis), f.c(a.spatial_scale)), f.c(offset));
    int size = f.sub(f.sub(f.mul(roi(3 - axis), f.c(a.spatial_scale)), f.c(offset)), start);
    if (!a.half_pixel) size = b.op(ExprOp::kMax, kF64, {size, f.c(1)});
    int bin = f.div(size, f.c(static_cast<double>(axis == 0 ? a.output_height : a.output_width)));
    int pos = f.add(
        f.add(start, f.mul(as_f64(1 + axis), bin)),
        f.div(f.mul(f.add(as_f64(3 + axis), f.c(0.5)), bin), f.c(static_cast<double>(samples))));
    int outside = b.op(ExprOp::kOr, DType::kBool,
                       {f.cmp(ExprOp::kLt, pos, f.c(-1)), f.cmp(ExprOp::kGt, pos, f.c(extent))});
    pos = b.op(ExprOp::kMax, kF64, {pos, f.c(0)});
    int low = b.op(ExprOp::kFloor, kF64, {pos});
    int at_end = f.cmp(ExprOp::kGe, low, f.c(extent - 1)); // both taps on the last row
    low = f.select(at_end, f.c(extent - 1), low);
    pos = f.select(at_end, f.c(extent - 1), pos);
    int high = f.select(at_end, low, f.add(low, f.c(1)));
    int r = f.sub(pos, low);
    int tap = b.iterator(5 + axis);
    weight = f.mul(weight, f.select(outside, f.c(0), pick(f, tap, {f.sub(f.c(1), r), r})));
    int first = b.op(ExprOp::kEq, DType::kBool, {tap, b.constant(0, kI64)});
    indirect.push_back(
        {2 + axis, b.op(ExprOp::kCast, kI64, {f.select(first, low, high)}), IndexWrap::kClamp});
  }
  int v = b.gather(in,
                   {AffineExpr::constant_of(0), AffineExpr::iterator(channel),
                    AffineExpr::constant_of(0), AffineExpr::constant_of(0)},
                   indirect, x->type.dtype);
  if (x->type.dtype != kF64) v = b.op(ExprOp::kCast, kF64, {v});
  int term = f.mul(weight, v);
  if (!a.max) term = f.div(term, f.c(static_cast<double>(samples * samples)));
  k.add(b.store(term, acc, at_acc, a.max ? Combine::kMax : Combine::kSum));
  StatementBuilder fin("finish", shape);
  int r = fin.load(acc, iterators(4), kF64);
  if (y->type.dtype != kF64) r = fin.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(fin.store(r, out, iterators(4)));
  return k.lowered();
}

} // namespace weft::kernel
