// Helpers shared by the shape functions (shape_functions.cc, shape_functions_movement.cc);
// internal to weft/graph.
#pragma once

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"

namespace weft::shape_detail {

inline TypesOrError one(TensorType t) { return std::vector<TensorType>{std::move(t)}; }

inline Status fail(std::string message) { return Status::error(std::move(message)); }

inline const TensorType& in_type(const Node& node, size_t i) { return node.inputs[i]->type; }

// A shape of "rank" unknown dims.
inline Shape unknown_shape(size_t rank) { return Shape(rank, Dim::unknown()); }

// Does dim "inner" fit in dim "outer" (or is either unknown)?
inline bool fits(const Dim& inner, const Dim& outer) {
  return !inner.is_static() || !outer.is_static() || inner.value() <= outer.value();
}

// Are "a" and "b" equal where both are static?
inline bool agree(const Dim& a, const Dim& b) {
  return !a.is_static() || !b.is_static() || a.value() == b.value();
}

// Does "s" broadcast to "to" alone (each of its dims, aligned at the end, equal or 1)?
inline bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!(s[d].is_static() && s[d].value() == 1) && !agree(s[d], to[to.size() - s.size() + d]))
      return false;
  }
  return true;
}

// Inputs [first, last) of "node", where given, broadcast to the input x (each dim equal, or
// 1), as the ops' function bodies multiply and add them: LayerNormalization's and
// RMSNormalization's scale and bias (most often one value per element of the normalized dims,
// as PyTorch exports them; ONNX Runtime takes any that broadcast).
inline Status check_normalized_inputs(const Node& node, const Shape& x, size_t first, size_t last) {
  for (size_t i = first; i < last; ++i) {
    const Value* v = node.input(i);
    if (!v || !v->type.shape) continue;
    const Shape& s = *v->type.shape;
    if (!broadcasts_to(s, x)) {
      return fail(fmt::format("input {} is {}, which does not broadcast to the input's {}", i,
                              shape_to_string(s), shape_to_string(x)));
    }
  }
  return Status();
}

// An op that indexes into an axis of "extent" with "indices" (their dims, up to those
// spelling one index): where the axis is empty and an index is given, every index is out of
// range (ONNX Runtime fails at run time) and the kernel would read or write past the data.
inline Status check_indexes_into(const Dim& extent, Shape::const_iterator indices_begin,
                                 Shape::const_iterator indices_end, const std::string& what) {
  bool no_index = std::any_of(indices_begin, indices_end,
                              [](const Dim& d) { return d.is_static() && d.value() == 0; });
  if (extent.is_static() && extent.value() == 0 && !no_index)
    return fail(fmt::format("{}, which is empty", what));
  return Status();
}

// Does "v" (when present, with a known shape) hold one element? A scalar input that is
// empty was read past its end (Range's start at [0]: a segfault).
inline Status check_one_element(const Value* v, const char* what) {
  if (!v || !v->type.shape) return Status();
  std::optional<int64_t> count = shape_num_elements(*v->type.shape);
  if (count && *count != 1)
    return fail(fmt::format("{} must hold one element, not {}", what, *count));
  return Status();
}

// Is "v" (when present, with a known shape) a vector of "n" elements, or of one?
inline Status check_per_channel(const Value* v, const Dim& n, const char* what) {
  if (!v || !v->type.shape) return Status();
  std::optional<int64_t> count = shape_num_elements(*v->type.shape);
  if (count && *count == 1) return Status();
  if (v->type.shape->size() != 1 || !agree((*v->type.shape)[0], n))
    return fail(fmt::format("{} must have one element or {}", what, n.to_string()));
  return Status();
}

inline Result<Ints> normalize_axes(const Ints& axes, int64_t rank) {
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
inline std::optional<Ints> attr_or_input_axes(const std::optional<Ints>& attr, const Node& node,
                                              size_t input_index) {
  if (attr) return attr;
  return constant_ints(node.input(input_index));
}

} // namespace weft::shape_detail
