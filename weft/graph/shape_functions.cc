#include "weft/graph/shape_functions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"

namespace weft {

using namespace shape_detail;

std::optional<Ints> constant_ints(const Value* v) {
  if (v == nullptr || !v->is_constant()) return std::nullopt;
  DType t = v->constant->dtype();
  if (!dtype_is_signed_int(t) && !dtype_is_unsigned_int(t)) return std::nullopt;
  return v->constant->to_int64_vector();
}

std::optional<Ints> transpose_perm(const Node& transpose) {
  const std::optional<Ints>& perm = transpose.attrs_as<TransposeAttrs>().perm;
  if (perm) return perm;
  const Value* x = transpose.inputs[0];
  if (!x || !x->type.shape) return std::nullopt;
  Ints reversed(x->type.shape->size());
  for (size_t i = 0; i < reversed.size(); ++i)
    reversed[i] = static_cast<int64_t>(reversed.size() - 1 - i);
  return reversed;
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

TypesOrError infer_clip(const Node& node) {
  WEFT_RETURN_IF_ERROR(check_one_element(node.input(1), "Clip's min"));
  WEFT_RETURN_IF_ERROR(check_one_element(node.input(2), "Clip's max"));
  return one(in_type(node, 0));
}

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

// BitCast (opset 26): the input's bytes read as "to", which must be as wide.
TypesOrError infer_bit_cast(const Node& node) {
  DType from = in_type(node, 0).dtype, to = node.attrs_as<CastAttrs>().to;
  if (dtype_packed_bits(from) != dtype_packed_bits(to)) {
    return Status::error(fmt::format("cannot reinterpret {} as {}: their widths differ",
                                     dtype_name(from), dtype_name(to)));
  }
  return one({to, in_type(node, 0).shape});
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
    WEFT_RETURN_IF_ERROR(check_normalized_inputs(node, *x.shape, 1, 3)); // scale, bias
  }
  out.resize(node.outputs.size(), TensorType{a.stash_type, stat_shape});
  return out;
}

namespace {
// Inputs [first, last) of a normalization hold one value per channel of input 0 (dim 1):
// fewer would be read past their end.
Status check_channel_inputs(const Node& node, size_t first, size_t last) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape || x.shape->size() < 2) return Status();
  for (size_t i = first; i < last; ++i) {
    const Value* v = node.input(i);
    if (v && v->type.shape &&
        (v->type.shape->size() != 1 || !agree((*v->type.shape)[0], (*x.shape)[1])))
      return fail(fmt::format("input {} must hold one value per channel", i));
  }
  return Status();
}
} // namespace

TypesOrError infer_batch_norm(const Node& node) {
  std::vector<TensorType> out = {in_type(node, 0)};
  WEFT_RETURN_IF_ERROR(check_channel_inputs(node, 1, 5)); // scale, bias, mean, variance
  // Training outputs: running mean and variance, shaped like the mean and var inputs.
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    out.push_back(node.input(2 + std::min<size_t>(i, 2)) ? in_type(node, 2 + std::min<size_t>(i, 2))
                                                         : in_type(node, 0));
  }
  return out;
}

TypesOrError infer_concat(const Node& node) {
  const TensorType& first = in_type(node, 0);
  if (!first.shape) return one(first);
  int64_t rank = static_cast<int64_t>(first.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis, rank));
  Shape out = *first.shape;
  int64_t total = 0;
  std::vector<Dim> symbolic; // the pieces' symbolic extents along the axis
  for (const Value* in : node.inputs) {
    if (!in->type.shape) return one({first.dtype, unknown_shape(first.shape->size())});
    if (static_cast<int64_t>(in->type.shape->size()) != rank) {
      return fail("Concat inputs must have the same rank");
    }
    // Off the axis every input has the first one's extents (a mismatch read or wrote past
    // an input's end: heap corruption on the CPU, found by the mutation fuzzer).
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& a = (*first.shape)[static_cast<size_t>(k)];
      const Dim& b = (*in->type.shape)[static_cast<size_t>(k)];
      if (k != axis && a.is_static() && b.is_static() && a.value() != b.value()) {
        return fail(fmt::format("Concat inputs must match off axis {}: dim {} is {} in '{}' "
                                "and {} in '{}'",
                                axis, k, a.value(), node.inputs[0]->name, b.value(), in->name));
      }
    }
    const Dim& d = (*in->type.shape)[static_cast<size_t>(axis)];
    if (d.is_static()) {
      total += d.value();
    } else {
      symbolic.push_back(d);
    }
  }
  // Symbolic pieces make a sum where the dims can spell it (dim_add: X + total, P + T).
  std::optional<Dim> extent = total;
  for (const Dim& d : symbolic) {
    if (extent) extent = d.is_unknown() ? std::nullopt : dim_add(*extent, d);
  }
  out[static_cast<size_t>(axis)] = extent.value_or(Dim::unknown());
  return one({first.dtype, out});
}

TypesOrError infer_gather(const Node& node) {
  const TensorType& data = in_type(node, 0);
  const TensorType& idx = in_type(node, 1);
  if (!data.shape || !idx.shape) return one({data.dtype, std::nullopt});
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<AxisAttrs>().axis,
                                                     static_cast<int64_t>(data.shape->size())));
  WEFT_RETURN_IF_ERROR(check_indexes_into((*data.shape)[static_cast<size_t>(axis)],
                                          idx.shape->begin(), idx.shape->end(),
                                          fmt::format("gathers along axis {}", axis)));
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
    WEFT_RETURN_IF_ERROR(check_indexes_into((*data.shape)[static_cast<size_t>(axis)],
                                            idx.shape->begin(), idx.shape->end(),
                                            fmt::format("gathers along axis {}", axis)));
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
  int64_t gates = node.op_type == Op::kGRU ? 3 : node.op_type == Op::kLSTM ? 4 : 1;
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
  WEFT_RETURN_IF_ERROR(check_channel_inputs(node, 1, 3)); // scale, bias
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

// QLinearMatMul (and Weft's QLinearMatMulBias, whose bias the library checks) and
// QLinearConv: the float op's shapes on (A, B) or (X, W), with the type
// of the output zero point. Scales and zero points are per tensor, but for QLinearConv's
// weights' per output channel and QLinearMatMul's A's per row and B's per column.
TypesOrError infer_qlinear(const Node& node) {
  Node plain = node;
  plain.inputs = {node.inputs[0], node.inputs[3]};
  bool conv = node.op_type == Op::kQLinearConv;
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types,
                        conv ? infer_conv(plain) : infer_matmul(plain));
  const TensorType& a = in_type(node, 0);
  const TensorType& b = in_type(node, 3);
  if (a.shape && b.shape && !b.shape->empty()) { // (1-D operands: one row, one column)
    Dim rows = conv || a.shape->size() < 2 ? Dim(1) : (*a.shape)[a.shape->size() - 2];
    Dim columns = conv ? (*b.shape)[0] : b.shape->size() < 2 ? Dim(1) : b.shape->back();
    const char* names[] = {"a_scale", "a_zero_point", "b_scale", "b_zero_point"};
    if (conv) {
      names[0] = "x_scale", names[1] = "x_zero_point", names[2] = "w_scale";
      names[3] = "w_zero_point";
    }
    for (size_t i : {1, 2})
      WEFT_RETURN_IF_ERROR(check_per_channel(node.input(i), rows, names[i - 1]));
    for (size_t i : {4, 5})
      WEFT_RETURN_IF_ERROR(check_per_channel(node.input(i), columns, names[i - 2]));
  }
  for (auto [i, what] : {std::pair{6, "y_scale"}, {7, "y_zero_point"}})
    WEFT_RETURN_IF_ERROR(check_per_channel(node.input(i), Dim(1), what));
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

std::optional<int64_t> dft_axis(const Node& node) {
  if (std::optional<int64_t> axis = node.attrs_as<DftAttrs>().axis) return axis;
  if (!node.input(2)) return -2; // opset 20's default
  std::optional<Ints> given = constant_ints(node.input(2));
  if (!given || given->size() != 1) return std::nullopt;
  return (*given)[0];
}

std::optional<int64_t> dft_length(const Node& node) {
  const auto& a = node.attrs_as<DftAttrs>();
  std::optional<int64_t> axis = dft_axis(node);
  if (!axis || !node.inputs[0]->type.shape) return std::nullopt;
  const Shape& x = *node.inputs[0]->type.shape;
  Result<int64_t> n = normalize_axis(*axis, static_cast<int64_t>(x.size()));
  if (!n.ok()) return std::nullopt;
  if (const Value* l = node.input(1)) {
    std::optional<Ints> given = constant_ints(l);
    if (!given || given->size() != 1) return std::nullopt;
    return (*given)[0];
  }
  const Dim& extent = x[static_cast<size_t>(*n)];
  if (!extent.is_static()) return std::nullopt;
  return a.inverse && a.onesided ? 2 * (extent.value() - 1) : extent.value();
}

// The input's shape with complex values (last dim 2), the signal axis holding the
// transform's length: n / 2 + 1 frequencies for a one-sided forward transform (rfft); n real
// values (last dim 1) for a one-sided inverse one (irfft), whose input holds n / 2 + 1.
TypesOrError infer_dft(const Node& node) {
  const auto& a = node.attrs_as<DftAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  int64_t rank = static_cast<int64_t>(x.shape->size());
  if (rank < 3 || (!agree(x.shape->back(), Dim(1)) && !agree(x.shape->back(), Dim(2))))
    return fail("the input must be [batch, ..., 1 or 2] of rank 3 or more");
  std::optional<int64_t> axis = dft_axis(node);
  if (!axis) return one({x.dtype, unknown_shape(x.shape->size())});
  Result<int64_t> normalized = normalize_axis(*axis, rank);
  if (!normalized.ok() || *normalized == 0 || *normalized == rank - 1)
    return fail(fmt::format("axis {} is not a signal axis", *axis));
  bool irfft = a.inverse && a.onesided;
  Shape out = *x.shape;
  out.back() = irfft ? 1 : 2;
  std::optional<int64_t> length = dft_length(node);
  if (length && *length < 1) return fail(fmt::format("dft_length {} is not positive", *length));
  Dim& extent = out[static_cast<size_t>(*normalized)];
  extent = !length                    ? Dim::unknown()
           : a.onesided && !a.inverse ? Dim(*length / 2 + 1)
                                      : Dim(*length);
  return one({x.dtype, out});
}

Result<StftFrames> stft_frames(const Node& node) {
  const Shape& signal = *node.inputs[0]->type.shape;
  std::optional<Ints> step = constant_ints(node.input(1));
  if (!step || step->size() != 1 || (*step)[0] < 1)
    return Status::error("frame_step must be a positive constant");
  StftFrames f;
  f.step = (*step)[0];
  if (const Value* length = node.input(3)) {
    std::optional<Ints> given = constant_ints(length);
    if (!given || given->size() != 1) return Status::error("frame_length must be a constant");
    f.length = (*given)[0];
  } else if (const Value* window = node.input(2)) {
    f.length = (*window->type.shape)[0].value();
  } else {
    f.length = signal[1].value();
  }
  const Value* window = node.input(2);
  if (window && (*window->type.shape)[0].value() != f.length)
    return Status::error(fmt::format("the window has {} elements, the frames {}",
                                     (*window->type.shape)[0].value(), f.length));
  if (f.length < 1 || f.length > signal[1].value())
    return Status::error(fmt::format("frame_length {} does not fit the signal's {} samples",
                                     f.length, signal[1].value()));
  f.count = (signal[1].value() - f.length) / f.step + 1;
  return f;
}

// [batch, frames, bins, 2] from the signal [batch, length, 1 or 2]: n / 2 + 1 bins of each
// frame of n samples when one-sided, n otherwise.
TypesOrError infer_stft(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const Value* window = node.input(2);
  if (!x.shape) return one({x.dtype, unknown_shape(4)});
  if (x.shape->size() != 3 || (!agree(x.shape->back(), Dim(1)) && !agree(x.shape->back(), Dim(2))))
    return fail("the signal must be [batch, length, 1 or 2]");
  if (window && (!window->type.shape || window->type.shape->size() != 1))
    return fail("the window must be a vector");
  bool known = x.has_static_shape() && (!window || window->type.has_static_shape()) &&
               constant_ints(node.input(1)) && (!node.input(3) || constant_ints(node.input(3)));
  if (!known) return one({x.dtype, unknown_shape(4)});
  WEFT_ASSIGN_OR_RETURN(StftFrames f, stft_frames(node));
  int64_t bins = node.attrs_as<DftAttrs>().onesided ? f.length / 2 + 1 : f.length;
  return one({x.dtype, Shape{(*x.shape)[0], Dim(f.count), Dim(bins), Dim(2)}});
}

// [dft_length / 2 + 1, num_mel_bins].
TypesOrError infer_mel_weight_matrix(const Node& node) {
  DType t = node.attrs_as<CastAttrs>().to;
  std::optional<Ints> mels = constant_ints(node.inputs[0]);
  std::optional<Ints> length = constant_ints(node.inputs[1]);
  if (!mels || !length) return one({t, unknown_shape(2)});
  if (mels->size() != 1 || length->size() != 1 || (*mels)[0] < 1 || (*length)[0] < 1)
    return fail("num_mel_bins and dft_length must be positive scalars");
  return one({t, Shape{Dim((*length)[0] / 2 + 1), Dim((*mels)[0])}});
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

// Are the scale (input 1) and zero point (input 2) of a (de)quantization a scalar (or one
// element) each, vectors as long as the input's axis, or (blocked) the input's shape with ceil(D /
// block) along the axis?
Status check_quantize_params(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const auto& a = node.attrs_as<QuantizeAttrs>();
  for (size_t i = 1; i < 3; ++i) {
    const Value* v = node.input(i);
    // A scalar or a one-element tensor applies to every element (as ONNX's reference reads it).
    if (!v || !v->type.shape || !x.shape || shape_num_elements(*v->type.shape) == 1) continue;
    int64_t rank = static_cast<int64_t>(x.shape->size());
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
    const Shape& p = *v->type.shape;
    if (a.block_size > 0) {
      bool ok = static_cast<int64_t>(p.size()) == rank;
      for (int64_t d = 0; ok && d < rank; ++d) {
        const Dim& want = (*x.shape)[static_cast<size_t>(d)];
        const Dim& got = p[static_cast<size_t>(d)];
        if (!want.is_static() || !got.is_static()) continue;
        int64_t n = d == axis ? (want.value() + a.block_size - 1) / a.block_size : want.value();
        ok = got.value() == n;
      }
      if (!ok)
        return fail(fmt::format("input {} must have the input's shape with ceil({} / {}) along "
                                "axis {} (blocked quantization)",
                                i, (*x.shape)[static_cast<size_t>(axis)].to_string(), a.block_size,
                                axis));
      continue;
    }
    const Dim& along = (*x.shape)[static_cast<size_t>(axis)];
    if (p.size() != 1 || (along.is_static() && p[0].is_static() && along != p[0]))
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
  std::optional<DType> out = node.attrs_as<QuantizeAttrs>().output_dtype;
  if (zp && out && *out != zp->type.dtype)
    return fail("output_dtype differs from the zero point's type");
  return one({zp ? zp->type.dtype : out.value_or(DType::kU8), in_type(node, 0).shape});
}

TypesOrError infer_dequantize_linear(const Node& node) {
  WEFT_RETURN_IF_ERROR(check_quantize_params(node));
  // The scale's type from opset 19 on (f32 before), or output_dtype (opset 23).
  DType out = node.opset >= 19 ? in_type(node, 1).dtype : DType::kF32;
  return one({node.attrs_as<QuantizeAttrs>().output_dtype.value_or(out), in_type(node, 0).shape});
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
  if (const std::optional<Dim>& symbolic = node.attrs_as<TopKAttrs>().symbolic_k) {
    d = *symbolic;
  } else if (!k) {
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

// d * mul / div: symbolic too where the quotient is exact (2*h / 2 is h).
Dim scaled(const Dim& d, int64_t mul, int64_t div) {
  if (d.is_static()) return d.value() * mul / div;
  return dim_div(dim_mul(d, mul), div).value_or(Dim::unknown());
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

// [N, C, H_out, W_out] from X [N, C, H, W] and the grid [N, H_out, W_out, 2]; likewise with
// r spatial dims, the grid [N, D1_out, ..., Dr_out, r] (opset 20's N-D form).
TypesOrError infer_grid_sample(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& grid = in_type(node, 1);
  if (!x.shape || !grid.shape) {
    const auto& known = x.shape ? x.shape : grid.shape;
    return one({x.dtype, known ? std::optional(unknown_shape(known->size())) : std::nullopt});
  }
  size_t rank = x.shape->size();
  if (rank < 3 || grid.shape->size() != rank ||
      ((*grid.shape)[rank - 1].is_static() &&
       (*grid.shape)[rank - 1].value() != static_cast<int64_t>(rank - 2)))
    return fail("GridSample takes an input [N, C, d1..dr] and a grid [N, D1_out..Dr_out, r]");
  if (!agree((*x.shape)[0], (*grid.shape)[0])) // (the kernel reads grid n for image n)
    return fail(fmt::format("the input {} and the grid {} must have the same N",
                            shape_to_string(*x.shape), shape_to_string(*grid.shape)));
  Shape out = {(*x.shape)[0], (*x.shape)[1]};
  out.insert(out.end(), grid.shape->begin() + 1, grid.shape->end() - 1);
  return one({x.dtype, out});
}

// [num_rois, C, output_height, output_width] from X [N, C, H, W], rois [num_rois, 4] and
// batch_indices [num_rois].
TypesOrError infer_roi_align(const Node& node) {
  const auto& a = node.attrs_as<RoiAlignAttrs>();
  const TensorType& x = in_type(node, 0);
  const TensorType& rois = in_type(node, 1);
  if (x.shape && x.shape->size() != 4) return fail("the input must be [N, C, H, W]");
  if (rois.shape && (rois.shape->size() != 2 || !agree((*rois.shape)[1], Dim(4))))
    return fail("rois must be [num_rois, 4]");
  Dim c = x.shape ? (*x.shape)[1] : Dim::unknown();
  Dim r = rois.shape ? (*rois.shape)[0] : Dim::unknown();
  return one({x.dtype, Shape{r, c, Dim(a.output_height), Dim(a.output_width)}});
}

// [N, M, oh, ow] from X [N, C, H, W], W [M, C / group, kh, kw] and the offsets
// [N, offset_group * kh * kw * 2, oh, ow] (2-D; the offsets give the output's extents, which
// must be the convolution's).
TypesOrError infer_deform_conv(const Node& node) {
  const auto& a = node.attrs_as<DeformConvAttrs>();
  const TensorType& x = in_type(node, 0);
  const TensorType& w = in_type(node, 1);
  const TensorType& offset = in_type(node, 2);
  if (!x.has_static_shape() || !w.has_static_shape() || !offset.has_static_shape())
    return one({x.dtype, x.shape ? std::optional(unknown_shape(x.shape->size())) : std::nullopt});
  std::vector<int64_t> dx = shape_static_dims(*x.shape), dw = shape_static_dims(*w.shape),
                       doff = shape_static_dims(*offset.shape);
  if (dx.size() != 4 || dw.size() != 4 || doff.size() != 4)
    return fail("DeformConv is implemented for 2-D inputs [N, C, H, W]");
  if (dx[1] != dw[1] * a.group || dw[0] % a.group != 0 || dx[1] % a.offset_group != 0)
    return fail("the channels do not split into 'group' and 'offset_group' groups");
  Ints kernel = a.kernel_shape.empty() ? Ints{dw[2], dw[3]} : a.kernel_shape;
  if (kernel.size() != 2 || kernel[0] != dw[2] || kernel[1] != dw[3])
    return fail("kernel_shape must be the weights' spatial extents");
  if (doff[0] != dx[0] || doff[1] != a.offset_group * kernel[0] * kernel[1] * 2)
    return fail("the offsets must be [N, offset_group * kh * kw * 2, oh, ow]");
  for (size_t i = 0; i < 2; ++i) {
    int64_t dilation = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t stride = a.strides.empty() ? 1 : a.strides[i];
    int64_t pads = a.pads.empty() ? 0 : a.pads[i] + a.pads[i + 2];
    int64_t out = (dx[2 + i] + pads - ((kernel[i] - 1) * dilation + 1)) / stride + 1;
    if (out != doff[2 + i])
      return fail(fmt::format("the offsets have {} positions along spatial axis {}, the "
                              "convolution {}",
                              doff[2 + i], i, out));
  }
  return one({x.dtype, Shape{dx[0], dw[0], doff[2], doff[3]}});
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
    WEFT_RETURN_IF_ERROR(check_indexes_into((*x.shape)[1], target.shape->begin(),
                                            target.shape->end(),
                                            "the target indexes the classes, dim 1 of the input"));
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
  size_t groups = node.op_type == Op::kAdam ? 4 : 3;
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
