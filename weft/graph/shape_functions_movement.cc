// Shape functions of the data-movement and shape ops: scatter and gather by index, compress,
// flatten, squeeze, split, transpose, reshape, expand, tile, slice, and the ops that make
// shapes and constants (Shape, Size, Range, Constant, ConstantOfShape, Dropout).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"
#include "weft/graph/shape_functions.h"

namespace weft {

using namespace shape_detail;

// y: the data's type; the indices and updates must agree with it.
TypesOrError infer_scatter(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  const TensorType& updates = in_type(node, 2);
  if (updates.dtype != data.dtype) return fail("updates and data have different types");
  if (data.shape && idx.shape && updates.shape) {
    if (node.op_type != Op::kScatterND) {
      if (idx.shape->size() != data.shape->size() || *idx.shape != *updates.shape)
        return fail("indices and updates must have the data's rank and one shape");
      int64_t rank = static_cast<int64_t>(data.shape->size());
      int64_t axis = node.attrs_as<ScatterAttrs>().axis;
      if (axis < -rank || axis >= rank)
        return fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
      if (axis < 0) axis += rank;
      for (size_t d = 0; d < data.shape->size(); ++d) {
        if (static_cast<int64_t>(d) != axis && !fits((*idx.shape)[d], (*data.shape)[d]))
          return fail(fmt::format("indices dim {} exceeds the data's", d));
      }
      WEFT_RETURN_IF_ERROR(check_indexes_into((*data.shape)[static_cast<size_t>(axis)],
                                              idx.shape->begin(), idx.shape->end(),
                                              fmt::format("scatters along axis {}", axis)));
    }
    if (node.op_type == Op::kScatterND) {
      if (idx.shape->empty() || !idx.shape->back().is_static() ||
          idx.shape->back().value() > static_cast<int64_t>(data.shape->size()))
        return fail("the index tuples are longer than the data's rank");
      size_t q = static_cast<size_t>(idx.shape->back().value());
      for (size_t d = 0; d < q; ++d) {
        WEFT_RETURN_IF_ERROR(check_indexes_into((*data.shape)[d], idx.shape->begin(),
                                                idx.shape->end() - 1,
                                                fmt::format("scatters into dim {}", d)));
      }
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
  for (int64_t d = batch; d < batch + q; ++d) {
    WEFT_RETURN_IF_ERROR(check_indexes_into((*data.shape)[static_cast<size_t>(d)],
                                            idx.shape->begin(), idx.shape->end() - 1,
                                            fmt::format("gathers from dim {}", d)));
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
  return one({x.dtype, Shape{dims_product(*x.shape, 0, split), dims_product(*x.shape, split)}});
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

Ints split_sizes(int64_t extent, int64_t parts) {
  int64_t each = (extent + parts - 1) / parts;
  Ints sizes;
  for (int64_t i = 0, left = extent; i < parts; ++i, left -= each)
    sizes.push_back(std::max<int64_t>(std::min(each, left), 0));
  return sizes;
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
  if (a.num_outputs && static_cast<size_t>(*a.num_outputs) != n)
    return fail(fmt::format("num_outputs is {} but the node has {} outputs", *a.num_outputs, n));
  if (!sizes && !sizes_unknown && a.num_outputs && extent.is_static())
    sizes = split_sizes(extent.value(), *a.num_outputs);
  if (sizes) { // the parts must cover the axis exactly (more read past the input's end)
    if (sizes->size() != n)
      return fail(fmt::format("split has {} sizes for {} outputs", sizes->size(), n));
    int64_t total = 0;
    for (int64_t s : *sizes) {
      if (s < 0) return fail(fmt::format("split sizes must not be negative, got {}", s));
      total += s;
    }
    if (extent.is_static() && total != extent.value()) {
      return fail(fmt::format("split sizes add up to {}, but the axis has {}", total,
                              extent.value()));
    }
  }
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
  if (a.symbolic_shape) return one({x.dtype, *a.symbolic_shape});
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
      if (!x.shape) return one({x.dtype, unknown_shape(target->size())});
      if (i >= x.shape->size()) { // (ONNX Runtime refuses it too)
        return fail(fmt::format("Reshape target {} copies dim {} of the input (a 0), which has "
                                "rank {}",
                                fmt::join(*target, ","), i, x.shape->size()));
      }
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
    if (total && all_static && known != 0) {
      out[static_cast<size_t>(infer_at)] = *total / known;
    } else if (!total) { // symbolic: the product of x's dims over the others', when exact
      Dim all = 1, others = 1;
      bool unknown = false;
      for (const Dim& d : *x.shape) {
        all = dim_mul(all, d);
        unknown |= d.is_unknown();
      }
      for (size_t i = 0; i < out.size(); ++i) {
        if (static_cast<int>(i) == infer_at) continue;
        others = dim_mul(others, out[i]);
        unknown |= out[i].is_unknown();
      }
      std::optional<Dim> rest = dim_div(all, others);
      if (rest && !unknown) out[static_cast<size_t>(infer_at)] = *rest;
    }
  }
  return one({x.dtype, out});
}

TypesOrError infer_expand(const Node& node) {
  const TensorType& x = in_type(node, 0);
  // (Expands that decompositions build have no attributes.)
  const auto* attrs = std::get_if<ExpandAttrs>(&node.attrs);
  std::optional<Shape> symbolic = attrs ? attrs->symbolic_shape : std::nullopt;
  std::optional<Ints> target = constant_ints(node.input(1));
  if (!x.shape || (!target && !symbolic)) return one({x.dtype, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(
      Shape out, broadcast_shapes({*x.shape, symbolic ? *symbolic : shape_from_dims(*target)}));
  return one({x.dtype, out});
}

TypesOrError infer_tile(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> repeats = constant_ints(node.input(1));
  if (!x.shape) return one(x);
  const auto* attrs = std::get_if<TileAttrs>(&node.attrs); // (decompositions' have none)
  if (attrs && attrs->symbolic_repeats) {
    const Shape& r = *attrs->symbolic_repeats;
    if (r.size() != x.shape->size()) return fail("Tile repeats must match the input rank");
    Shape out;
    for (size_t i = 0; i < r.size(); ++i)
      out.push_back(dim_mul((*x.shape)[i], r[i]));
    return one({x.dtype, out});
  }
  if (!repeats) return one({x.dtype, unknown_shape(x.shape->size())});
  if (repeats->size() != x.shape->size()) return fail("Tile repeats must match the input rank");
  Shape out;
  for (size_t i = 0; i < repeats->size(); ++i) {
    const Dim& d = (*x.shape)[i];
    out.push_back(d.is_static() ? Dim(d.value() * (*repeats)[i]) : Dim::unknown());
  }
  return one({x.dtype, out});
}

// A Slice whose bounds are dims over symbols (fold_shape_values): each end E, with step 1
// and a start S >= 0, gives E - S elements; that S <= E <= the axis's extent is the compile's
// assumption, which each run checks (Graph::dim_limits).
TypesOrError slice_to_symbolic_ends(const TensorType& x, const SliceAttrs& a) {
  const Shape& ends = *a.symbolic_ends;
  Shape starts = a.symbolic_starts.value_or(Shape{});
  if (!a.symbolic_starts && a.starts) starts.assign(a.starts->begin(), a.starts->end());
  if (!a.axes || !a.steps || ends.size() != starts.size() || a.axes->size() != starts.size() ||
      a.steps->size() != starts.size())
    return fail("Slice starts, ends, axes and steps must have the same length");
  Shape out = *x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis,
                          normalize_axis((*a.axes)[i], static_cast<int64_t>(x.shape->size())));
    if ((starts[i].is_static() && starts[i].value() < 0) || (*a.steps)[i] != 1)
      return fail("a Slice over symbols takes steps of 1 and starts >= 0");
    std::optional<Dim> extent = dim_sub(ends[i], starts[i]);
    if (!extent) {
      return fail(fmt::format("a Slice from {} to {}: a difference dims cannot spell",
                              starts[i].to_string(), ends[i].to_string()));
    }
    out[static_cast<size_t>(axis)] = *extent;
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
  if (a.symbolic_ends) return slice_to_symbolic_ends(x, a);
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
  // (Ranges that decompositions build have no attributes.)
  if (const auto* attrs = std::get_if<RangeAttrs>(&node.attrs); attrs && attrs->symbolic_shape)
    return one({t, *attrs->symbolic_shape});
  const Value* start = node.input(0);
  const Value* limit = node.input(1);
  const Value* delta = node.input(2);
  WEFT_RETURN_IF_ERROR(check_one_element(start, "Range's start"));
  WEFT_RETURN_IF_ERROR(check_one_element(limit, "Range's limit"));
  WEFT_RETURN_IF_ERROR(check_one_element(delta, "Range's delta"));
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
  if (a.symbolic_shape) return one({a.value->dtype(), *a.symbolic_shape});
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

// RandomNormal and RandomUniform: the attributes' shape and type (f32 by default); their -Like
// forms and Bernoulli: the input's shape, and its type unless the attribute says another;
// Multinomial: [batch, sample_size] indices, i32 unless the attribute says i64.
TypesOrError infer_random(const Node& node) {
  const auto& a = node.attrs_as<RandomAttrs>();
  if (node.op_type == Op::kMultinomial) {
    const TensorType& x = in_type(node, 0);
    DType t = a.dtype.value_or(DType::kI32);
    if (t != DType::kI32 && t != DType::kI64)
      return fail(fmt::format("data type {} is not int32 or int64", dtype_name(t)));
    if (x.shape && x.shape->size() != 2)
      return fail(fmt::format("the input has rank {}, expected 2", x.shape->size()));
    if (a.sample_size < 1)
      return fail(fmt::format("sample_size {} is not positive", a.sample_size));
    Dim batch = x.shape ? (*x.shape)[0] : Dim::unknown();
    return one({t, Shape{batch, a.sample_size}});
  }
  DType t = a.dtype.value_or(node.inputs.empty() ? DType::kF32 : in_type(node, 0).dtype);
  auto floats = [](DType d) {
    return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64;
  };
  if (node.op_type != Op::kBernoulli && !floats(t))
    return fail(fmt::format("data type {} is not a float type", dtype_name(t)));
  if (node.op_type == Op::kBernoulli && !floats(in_type(node, 0).dtype))
    return fail(
        fmt::format("the probabilities are {}, not floats", dtype_name(in_type(node, 0).dtype)));
  if (!node.inputs.empty()) return one({t, in_type(node, 0).shape});
  for (int64_t d : a.shape) {
    if (d < 0) return fail("the shape has a negative dim");
  }
  return one({t, shape_from_dims(a.shape)});
}

TypesOrError infer_dropout(const Node& node) {
  std::vector<TensorType> out = {in_type(node, 0)};
  // The mask is bool from opset 10 on, and shares the data type before.
  DType mask = node.opset >= 10 ? DType::kBool : in_type(node, 0).dtype;
  if (node.outputs.size() > 1) out.push_back({mask, in_type(node, 0).shape});
  return out;
}

} // namespace weft
