#include "weft/graph/passes/canonicalize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include "weft/graph/op_table.h"
#include "weft/graph/passes/canonicalize_rewrites.h"
#include "weft/graph/passes/conv_taps.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

using namespace canonicalize_rewrites; // NOLINT(google-build-using-namespace)

std::optional<int64_t> rank_of(const Value* v) {
  if (!v || !v->type.shape) return std::nullopt;
  return static_cast<int64_t>(v->type.shape->size());
}

// "axes" made non-negative and sorted for "rank", or none when one is out of range.
std::optional<Ints> normalized(const Ints& axes, int64_t rank) {
  Ints out;
  for (int64_t a : axes) {
    Result<int64_t> n = normalize_axis(a, rank);
    if (!n.ok()) return std::nullopt;
    out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void normalize_axis_in_place(int64_t& axis, std::optional<int64_t> rank) {
  if (!rank) return;
  Result<int64_t> n = normalize_axis(axis, *rank);
  if (n.ok()) axis = *n;
}

// Are the inputs from "first" on all absent or constant?
bool trailing_inputs_constant(const Node& node, size_t first) {
  for (size_t i = first; i < node.inputs.size(); ++i) {
    if (node.inputs[i] && !node.inputs[i]->is_constant()) return false;
  }
  return true;
}

void drop_inputs_from(Node& node, size_t first) {
  if (node.inputs.size() > first) node.inputs.resize(first);
}

void turn_into_identity(Node& node) {
  node.op_type = Op::kIdentity;
  node.def = find_op(Op::kIdentity, node.opset);
  node.attrs = NoAttrs{};
  node.inputs.resize(1);
}

void canonicalize_legacy_broadcast(Graph& graph, Node& node) {
  auto axis = node.attrs_as<LegacyBroadcastAttrs>().axis;
  Value* b = node.inputs[1];
  std::optional<int64_t> rank_a = rank_of(node.inputs[0]);
  std::optional<int64_t> rank_b = rank_of(b);
  if (axis) {
    if (!rank_a || !rank_b) return; // cannot align yet; leave the legacy form
    int64_t trailing = *rank_a - (*axis < 0 ? *axis + *rank_a : *axis) - *rank_b;
    if (trailing > 0) {
      Ints new_axes(static_cast<size_t>(trailing));
      std::iota(new_axes.begin(), new_axes.end(), *rank_b);
      Shape shape = *b->type.shape;
      shape.resize(shape.size() + static_cast<size_t>(trailing), Dim(1));
      if (b->is_constant()) { // align the data itself; no node needed
        Tensor t(b->constant->dtype(), shape_static_dims(shape));
        std::memcpy(t.data(), b->constant->data(), t.num_bytes());
        node.inputs[1] = graph.add_constant(graph.unique_name(b->name + "_aligned"), std::move(t));
        node.attrs = NoAttrs{};
        return;
      }
      node.inputs[1] = insert_op(graph, node, Op::kUnsqueeze, {b}, {b->type.dtype, shape},
                                 AxesAttrs{new_axes}, b->name + "_aligned", node.name + "_align");
    }
  }
  node.attrs = NoAttrs{};
}

void canonicalize_reduce(Node& node) {
  auto& a = node.attrs_as<ReduceAttrs>();
  if (!a.axes && node.input(1)) {
    std::optional<Ints> axes = constant_ints(node.input(1));
    if (!axes) return; // axes known only at run time
    a.axes = *axes;
  }
  drop_inputs_from(node, 1);
  if (!a.axes || a.axes->empty()) {
    if (a.noop_with_empty_axes) {
      turn_into_identity(node);
      return;
    }
    std::optional<int64_t> rank = rank_of(node.inputs[0]);
    if (!rank) return;
    a.axes = Ints(static_cast<size_t>(*rank));
    std::iota(a.axes->begin(), a.axes->end(), 0);
  }
  if (auto rank = rank_of(node.inputs[0])) {
    if (auto n = normalized(*a.axes, *rank)) a.axes = n;
  }
  a.noop_with_empty_axes = false;
}

void canonicalize_squeeze(Node& node, bool unsqueeze) {
  auto& a = node.attrs_as<AxesAttrs>();
  if (!a.axes && node.input(1)) {
    std::optional<Ints> axes = constant_ints(node.input(1));
    if (!axes) return;
    a.axes = *axes;
  }
  drop_inputs_from(node, 1);
  // Unsqueeze axes index the output; Squeeze axes index the input.
  if (auto rank = rank_of(unsqueeze ? node.outputs[0] : node.inputs[0]); rank && a.axes) {
    if (auto n = normalized(*a.axes, *rank)) a.axes = n;
  }
}

void canonicalize_split(Node& node) {
  auto& a = node.attrs_as<SplitAttrs>();
  if (!a.split && node.input(1)) {
    std::optional<Ints> split = constant_ints(node.input(1));
    if (!split) return;
    a.split = *split;
  }
  drop_inputs_from(node, 1);
  normalize_axis_in_place(a.axis, rank_of(node.inputs[0]));
  const Value* x = node.inputs[0];
  if (!a.split && a.num_outputs && x->type.shape && a.axis >= 0 &&
      static_cast<size_t>(a.axis) < x->type.shape->size()) {
    const Dim& extent = (*x->type.shape)[static_cast<size_t>(a.axis)];
    if (extent.is_static()) a.split = split_sizes(extent.value(), *a.num_outputs);
  }
}

void canonicalize_clip(Node& node) {
  if (node.inputs.size() < 2 || !trailing_inputs_constant(node, 1)) return;
  for (size_t i = 1; i < node.inputs.size(); ++i) {
    if (node.input(i) && node.input(i)->constant->num_elements() != 1) return; // infer_clip's error
  }
  auto& a = node.attrs_as<ClipAttrs>();
  if (const Value* lo = node.input(1)) a.min = static_cast<float>(lo->constant->get_double(0));
  if (const Value* hi = node.input(2)) a.max = static_cast<float>(hi->constant->get_double(0));
  drop_inputs_from(node, 1);
}

void canonicalize_slice(Node& node) {
  auto& a = node.attrs_as<SliceAttrs>();
  if (!a.starts) {
    if (node.inputs.size() < 3 || !trailing_inputs_constant(node, 1)) return;
    a.starts = constant_ints(node.input(1));
    a.ends = constant_ints(node.input(2));
    a.axes = constant_ints(node.input(3));
    a.steps = constant_ints(node.input(4));
    if (!a.starts || !a.ends) return;
    drop_inputs_from(node, 1);
  }
  if (!a.axes) {
    a.axes = Ints(a.starts->size());
    std::iota(a.axes->begin(), a.axes->end(), 0);
  }
  if (!a.steps) a.steps = Ints(a.starts->size(), 1);
  if (auto rank = rank_of(node.inputs[0])) {
    for (int64_t& axis : *a.axes)
      normalize_axis_in_place(axis, rank);
  }
}

void canonicalize_pad(Node& node) {
  auto& a = node.attrs_as<PadAttrs>();
  std::optional<int64_t> rank = rank_of(node.inputs[0]);
  if (a.pads || !rank) return;
  Result<std::optional<Ints>> pads = constant_pads(node, *rank);
  if (!pads.ok() || !*pads) return;
  a.pads = *pads;
  node.inputs[1] = nullptr;
  if (node.inputs.size() > 3) node.inputs[3] = nullptr; // opset 18's axes, now spread out
  // The fill value moves too when it is constant; otherwise it stays an input.
  if (const Value* v = node.input(2); v && v->is_constant() && v->constant->num_elements() == 1) {
    a.value = static_cast<float>(v->constant->get_double(0));
    node.inputs[2] = nullptr;
  }
  while (node.inputs.size() > 1 && !node.inputs.back())
    node.inputs.pop_back();
}

// DFT-20's axis input (absent: -2) into the attribute, normalized.
void canonicalize_dft(Node& node) {
  auto& a = node.attrs_as<DftAttrs>();
  if (!a.axis) {
    if (node.input(2)) {
      std::optional<Ints> axis = constant_ints(node.input(2));
      if (!axis || axis->size() != 1) return;
      a.axis = (*axis)[0];
    } else {
      a.axis = -2;
    }
    drop_inputs_from(node, 2);
    while (node.inputs.size() > 1 && !node.inputs.back())
      node.inputs.pop_back();
  }
  normalize_axis_in_place(*a.axis, rank_of(node.inputs[0]));
}

void canonicalize_cum_sum(Node& node) {
  auto& a = node.attrs_as<CumSumAttrs>();
  std::optional<Ints> axis = constant_ints(node.input(1));
  if (a.axis || !axis || axis->size() != 1) return;
  a.axis = (*axis)[0];
  normalize_axis_in_place(*a.axis, rank_of(node.inputs[0]));
  drop_inputs_from(node, 1);
}

// Compress with a constant condition is a Gather of the kept positions (of the flattened
// input, through a Reshape, when there is no axis).
void canonicalize_compress(Graph& graph, Node& node) {
  std::optional<Ints> kept = compress_positions(node);
  Value* x = node.inputs[0];
  std::optional<int64_t> axis = node.attrs_as<CompressAttrs>().axis;
  if (!kept || (!axis && !x->type.has_static_shape())) return;
  if (!axis) {
    int64_t count = shape_num_elements(*x->type.shape).value_or(0);
    x = insert_op(graph, node, Op::kReshape, {x}, {x->type.dtype, Shape{count}},
                  reshape_to(Ints{count}), x->name + "_flat", node.name + "_flatten");
  }
  Tensor positions = Tensor::vector_i64(*kept);
  node.op_type = Op::kGather;
  node.def = find_op(Op::kGather, node.opset);
  node.attrs = AxisAttrs{axis.value_or(0)};
  normalize_axis_in_place(node.attrs_as<AxisAttrs>().axis, rank_of(x));
  node.inputs = {x,
                 graph.add_constant(graph.unique_name(node.name + "_kept"), std::move(positions))};
}

// A Gather from an axis of extent 1 reads position 0 whatever its index says (0 and -1 are
// the valid ones): with one index it is a Reshape. torch's unfold over a [k, 1] window
// (ConvBERT's span convolution) gathers its unit axis through a [1, 1] index table, whose
// indirect read kept the transposing reader of the result off its tiles (0.36 ms, 18% of the
// read bandwidth).
void gather_from_unit_axis(Node& node) {
  const Value *x = node.inputs[0], *index = node.input(1), *y = node.outputs[0];
  if (!x || !index || !y || !x->type.has_static_shape() || !index->type.has_static_shape() ||
      !y->type.has_static_shape() || shape_num_elements(*index->type.shape) != 1)
    return;
  Result<int64_t> axis = normalize_axis(node.attrs_as<AxisAttrs>().axis, *rank_of(x));
  if (!axis.ok() || (*x->type.shape)[static_cast<size_t>(*axis)].value() != 1) return;
  node.op_type = Op::kReshape;
  node.def = find_op(Op::kReshape, node.opset);
  node.attrs = reshape_to(shape_static_dims(*y->type.shape));
  node.inputs = {node.inputs[0]};
}

// Transpose(Transpose(x, p), q) is Transpose(x, r) with r[i] = p[q[i]]; an identity
// permutation makes it an Identity. (torch.onnx's exports of slice assignments leave such
// pairs, and the ScatterND rewrite below more.)
void compose_transposes(Node& node) {
  const Node* inner = node.inputs[0]->producer;
  if (!inner || inner->op_type != Op::kTranspose) return;
  std::optional<Ints> p = transpose_perm(*inner), q = transpose_perm(node);
  if (!p || !q || p->size() != q->size()) return;
  Ints r;
  for (int64_t i : *q)
    r.push_back((*p)[static_cast<size_t>(i)]);
  node.inputs[0] = inner->inputs[0];
  node.attrs = TransposeAttrs{r};
  if (is_identity_perm(r)) turn_into_identity(node);
}

// A reshape from dims "from" to dims "to" that only splits and merges whole dims, as the
// pieces ("atoms") both are made of: each atom's dim of "from" and which piece of it (0 the
// outermost), and the atoms of each dim of "to", in order. Dims of extent 1 have none. None
// when the reshape cuts across a dim.
struct Atoms {
  std::vector<std::pair<size_t, int>> atoms;
  std::vector<std::vector<size_t>> of_to;
};
std::optional<Atoms> reshape_atoms(const Ints& from, const Ints& to) {
  Atoms a;
  a.of_to.resize(to.size());
  size_t i = 0, j = 0;            // the next dims of "from" and "to" to take
  int64_t left_f = 1, left_t = 1; // what remains of the dims taken (1: nothing)
  int piece = 0;
  for (;;) {
    if (left_f == 1) {
      piece = 0;
      while (left_f == 1 && i < from.size())
        left_f = from[i++];
    }
    while (left_t == 1 && j < to.size())
      left_t = to[j++];
    if (left_f == 1 || left_t == 1) break;
    int64_t atom = std::min(left_f, left_t);
    if (atom == 0 || std::max(left_f, left_t) % atom != 0) return std::nullopt;
    a.atoms.push_back({i - 1, piece++});
    a.of_to[j - 1].push_back(a.atoms.size() - 1);
    left_f /= atom;
    left_t /= atom;
  }
  if (left_f != 1 || left_t != 1) return std::nullopt;
  return a;
}

// Transpose(Reshape(Transpose(x, p)), q) that leaves x's elements in their row-major order is
// Reshape(x). SegFormer's and PVT's tokens [B, N, C] go to [B, C, H, W] for a convolution and
// back (transpose, view, conv, flatten, transpose); with the convolution channels-last that
// is the same bytes, which the three nodes had copied through strided loops at 4-8 GB/s.
// The shapes must be static and the reshape must split and merge whole dims: the dims
// between the Transposes are then groups of common "atoms", each a piece of one dim of x.
void transpose_reshape_transpose(Node& node) {
  const Node* reshape = node.inputs[0]->producer;
  if (!reshape || reshape->op_type != Op::kReshape) return;
  const Node* inner = reshape->inputs[0]->producer;
  if (!inner || inner->op_type != Op::kTranspose) return;
  Value* x = inner->inputs[0];
  std::optional<Ints> p = transpose_perm(*inner), q = transpose_perm(node);
  for (const Value* v : {x, reshape->inputs[0], node.inputs[0], node.outputs[0]}) {
    if (!v->type.has_static_shape()) return;
  }
  Ints s1 = shape_static_dims(*reshape->inputs[0]->type.shape);
  Ints s2 = shape_static_dims(*node.inputs[0]->type.shape);
  if (!p || !q || p->size() != s1.size() || q->size() != s2.size()) return;
  std::optional<Atoms> a = reshape_atoms(s1, s2);
  if (!a) return;
  // In q's order, the atoms (as pieces of x's dims, through p) must come in x's row-major
  // order.
  std::pair<int64_t, int> last = {-1, 0};
  for (int64_t d : *q) {
    for (size_t i : a->of_to[static_cast<size_t>(d)]) {
      std::pair<int64_t, int> atom = {(*p)[a->atoms[i].first], a->atoms[i].second};
      if (!(last < atom)) return;
      last = atom;
    }
  }
  node.op_type = Op::kReshape;
  node.def = find_op(Op::kReshape, node.opset);
  node.attrs = reshape_to(shape_static_dims(*node.outputs[0]->type.shape));
  node.inputs = {x};
}

// Reshape(Transpose(Reshape(x), p)) whose Reshapes only merge and split dims that the
// Transpose moves whole, and give back x's dims, is Transpose(x). PyTorch's
// scaled_dot_product_attention exports the key's transpose so: [B, H, S, D] merged to
// [B*H, S, D], transposed to [B*H, D, S], split to [B, H, D, S]; as x transposed by
// [0, 1, 3, 2] it composes with the Transpose that made x, and a MatMul's oneDNN call reads
// it through strides instead of a kernel writing it. Static shapes; dims of extent 1 go
// wherever the output has them.
void reshape_transpose_reshape(Node& node) {
  const Node* t = node.inputs[0]->producer;
  if (!t || t->op_type != Op::kTranspose) return;
  const Node* r = t->inputs[0]->producer;
  if (!r || r->op_type != Op::kReshape) return;
  Value* x = r->inputs[0];
  for (const Value* v : {x, r->outputs[0], node.outputs[0]})
    if (!v->type.has_static_shape()) return;
  Ints xs = shape_static_dims(*x->type.shape), s1 = shape_static_dims(*r->outputs[0]->type.shape),
       s2 = shape_static_dims(*node.outputs[0]->type.shape);
  std::optional<Ints> p = transpose_perm(*t);
  if (!p || p->size() != s1.size() || xs.size() != s2.size()) return;
  std::optional<Atoms> a = reshape_atoms(xs, s1);
  if (!a) return;
  std::vector<int> pieces(xs.size(), 0);
  for (const auto& [dim, piece] : a->atoms)
    pieces[dim] = piece + 1;
  std::vector<size_t> moved; // the atoms in the Transpose's order
  for (int64_t d : *p)
    moved.insert(moved.end(), a->of_to[static_cast<size_t>(d)].begin(),
                 a->of_to[static_cast<size_t>(d)].end());
  // Each dim of s2 past extent 1 must be one whole dim of x, its pieces in order.
  Ints perm(s2.size(), -1);
  std::vector<bool> used(xs.size(), false);
  size_t next = 0;
  for (size_t k = 0; k < s2.size(); ++k) {
    if (s2[k] == 1) continue;
    if (next == moved.size()) return;
    size_t dim = a->atoms[moved[next]].first;
    if (xs[dim] != s2[k]) return;
    for (int piece = 0; piece < pieces[dim]; ++piece, ++next)
      if (next == moved.size() || a->atoms[moved[next]] != std::make_pair(dim, piece)) return;
    perm[k] = static_cast<int64_t>(dim);
    used[dim] = true;
  }
  if (next != moved.size()) return;
  size_t one = 0; // x's dims of extent 1, in order, where s2 has its own
  for (size_t k = 0; k < s2.size(); ++k) {
    if (perm[k] >= 0) continue;
    while (one < xs.size() && (used[one] || xs[one] != 1))
      ++one;
    if (one == xs.size()) return;
    used[one] = true;
    perm[k] = static_cast<int64_t>(one);
  }
  node.op_type = Op::kTranspose;
  node.def = find_op(Op::kTranspose, node.opset);
  node.attrs = TransposeAttrs{perm};
  node.inputs = {x};
  compose_transposes(node);
}

// A Transpose that moves only dims of extent 1, the others keeping their order, leaves every
// element where it was: a Reshape, which copies nothing. (torch.onnx's LSTM and GRU exports
// transpose Y's [steps, 1, batch, H] to [steps, batch, 1, H]: a copy of the whole sequence's
// states, 0.3 ms of an LSTM 256 wide at batch 32.)
void transpose_of_unit_dims(Node& node) {
  const Value *x = node.inputs[0], *y = node.outputs[0];
  std::optional<Ints> perm = transpose_perm(node);
  if (!perm || !x->type.shape || !y || !y->type.shape) return;
  int64_t last = -1;
  for (int64_t i : *perm) {
    const Dim& d = (*x->type.shape)[static_cast<size_t>(i)];
    if (d.is_static() && d.value() == 1) continue;
    if (i < last) return;
    last = i;
  }
  ReshapeAttrs to;
  if (y->type.has_static_shape())
    to = reshape_to(shape_static_dims(*y->type.shape));
  else
    to.symbolic_shape = *y->type.shape;
  node.op_type = Op::kReshape;
  node.def = find_op(Op::kReshape, node.opset);
  node.attrs = std::move(to);
}

Ints inverse(const Ints& perm) {
  Ints inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

// ScatterND writing whole slices along the first axis at a constant run of consecutive
// indices is a Concat of the updates between the slices of the data before and after the
// run. torch.onnx's dynamo exporter writes a slice assignment (x[:, a:b] = u) so, between
// Transposes that bring the sliced axis first: when the data is such a Transpose's output,
// the Concat runs in the frame before it, along the sliced axis, and a Transpose of the
// result takes its place (which the Transpose after it then composes with). As a Concat it
// is elementwise code that fusion inlines, where the scatter stored through its indices
// (MViT-v2's attention with relative positions ran at 1 GB/s).
void canonicalize_scatter_nd(Graph& graph, Node& node) {
  if (node.attrs_as<ScatterAttrs>().reduction != ScatterReduction::kNone) return;
  Value *data = node.inputs[0], *updates = node.inputs[2];
  const Value* indices = node.inputs[1];
  std::optional<Ints> at = constant_ints(indices);
  if (!at || at->empty() || !data->type.has_static_shape() || !updates->type.has_static_shape() ||
      indices->constant->dims() != Ints{static_cast<int64_t>(at->size()), 1})
    return;
  Ints dims = shape_static_dims(*data->type.shape);
  int64_t first = (*at)[0], count = static_cast<int64_t>(at->size());
  Ints slices = dims;
  slices[0] = count;
  if (dims.empty() || first < 0 || first + count > dims[0] ||
      shape_static_dims(*updates->type.shape) != slices)
    return;
  for (int64_t i = 0; i < count; ++i) {
    if ((*at)[static_cast<size_t>(i)] != first + i) return;
  }
  // The frame: before the data's Transpose, if there is one.
  Ints perm(dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (const Node* t = data->producer; t && t->op_type == Op::kTranspose) {
    if (std::optional<Ints> p = transpose_perm(*t)) {
      perm = *p;
      data = t->inputs[0];
      updates = transposed(graph, node, updates, inverse(perm));
    }
  }
  int64_t axis = perm[0];
  Ints frame = shape_static_dims(*data->type.shape);
  auto slice = [&](int64_t from, int64_t to) {
    Ints part = frame;
    part[static_cast<size_t>(axis)] = to - from;
    return insert_op(graph, node, Op::kSlice, {data}, {data->type.dtype, shape_from_dims(part)},
                     SliceAttrs{Ints{from}, Ints{to}, Ints{axis}, Ints{1}});
  };
  std::vector<Value*> parts;
  if (first > 0) parts.push_back(slice(0, first));
  parts.push_back(updates);
  if (first + count < dims[0]) parts.push_back(slice(first + count, dims[0]));
  if (is_identity_perm(perm)) {
    node.op_type = Op::kConcat;
    node.def = find_op(Op::kConcat, node.opset);
    node.attrs = AxisAttrs{axis};
    node.inputs = std::move(parts);
    return;
  }
  Value* joined = insert_op(graph, node, Op::kConcat, std::move(parts),
                            {data->type.dtype, shape_from_dims(frame)}, AxisAttrs{axis});
  node.op_type = Op::kTranspose;
  node.def = find_op(Op::kTranspose, node.opset);
  node.attrs = TransposeAttrs{perm};
  node.inputs = {joined};
}

// Div(x, c) with c a float constant is Mul(x, 1 / c), as PyTorch's and ONNX Runtime's GELU
// multiply by 1/sqrt(2): a vector divide costs about 8 multiplies' throughput (bias + GELU
// 7% faster). The product is within 1.5 ulp of the quotient; c stays a divisor where 1 / c
// is not a normal number (c denormal, zero, huge or not finite).
void canonicalize_div(Graph& graph, Node& node) {
  const Value* c = node.input(1);
  if (!c || !c->is_constant()) return;
  DType t = c->constant->dtype();
  if (t != DType::kF32 && t != DType::kF64) return;
  const double smallest =
      t == DType::kF32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  Tensor reciprocal(t, c->constant->dims());
  for (int64_t i = 0; i < reciprocal.num_elements(); ++i) {
    reciprocal.set_double(i, 1.0 / c->constant->get_double(i));
    double r = reciprocal.get_double(i);
    if (!std::isfinite(r) || std::abs(r) < smallest) return;
  }
  node.inputs[1] =
      graph.add_constant(graph.unique_name(c->name + "_reciprocal"), std::move(reciprocal));
  node.op_type = Op::kMul;
  node.def = find_op(Op::kMul, node.opset);
}

// Pow(x, n) with n a constant 2, 3 or 4 and x f32 or f64 is a product of x's: libm's pow is a
// scalar call that keeps the loop around it from vectorizing (GPT-2's tanh GELU, whose
// x ^ 3 made its kernel run at 1 GB/s). The product is within 2 ulp of the power.
void canonicalize_pow(Graph& graph, Node& node) {
  const Value* x = node.inputs[0];
  const Value* e = node.inputs[1];
  if (!e->is_constant() || e->constant->num_elements() != 1) return;
  if (x->type.dtype != DType::kF32 && x->type.dtype != DType::kF64) return;
  // A constant of higher rank than x would broadcast x to more dims.
  auto rank = rank_of(x);
  if (!rank || static_cast<int64_t>(e->constant->dims().size()) > *rank) return;
  double n = e->constant->get_double(0);
  if (n != 2 && n != 3 && n != 4) return;
  Value* square = node.inputs[0];
  if (n != 2) square = insert_op(graph, node, Op::kMul, {square, square}, node.outputs[0]->type);
  node.op_type = Op::kMul;
  node.def = find_op(Op::kMul, node.opset);
  node.inputs = {square, n == 4 ? square : node.inputs[0]};
}

void canonicalize_reshape(Node& node) {
  auto& a = node.attrs_as<ReshapeAttrs>();
  if (!a.shape) {
    a.shape = constant_ints(node.input(1));
    if (!a.shape) return;
    drop_inputs_from(node, 1);
  }
  // With a static output, the target spells out every extent (no 0 or -1).
  if (node.outputs[0]->type.has_static_shape()) {
    // (reshape_to's allowzero and target; the symbolic target stays.)
    ReshapeAttrs spelled = reshape_to(shape_static_dims(*node.outputs[0]->type.shape));
    a.allowzero = spelled.allowzero;
    a.shape = std::move(spelled.shape);
  }
}

// GroupNorm as PyTorch exports it: a Reshape to [N, G, -1], InstanceNormalization over the
// groups (constant scale and bias), a Reshape back, then the per-channel Mul and Add. The
// InstanceNormalization whose output only Reshapes read becomes its primitives (mean,
// centred square, mean, normalize, scale, shift), so that fusion inlines the normalization
// through the Reshape into the per-channel affine: the whole GroupNorm is one kernel
// (docs/fusion.md). So does one that a convolution or a ConvTranspose feeds (wav2vec2's
// GroupNorm of one channel a group, as InstanceNormalization; a GAN's upsampling): its
// primitives let the channels_last pass keep the convolution's channels-last layout through
// it, a column reduction per channel; on its own lowering, it read the Transposes around it
// strided (16.5 ms for 13 MB, against 1.5 ms).
// Elsewhere InstanceNormalization keeps its own lowering.
void expand_grouped_instance_norm(Graph& graph, Node& node) {
  Value *x = node.inputs[0], *scale = node.input(1), *bias = node.input(2), *y = node.outputs[0];
  if (node.opset < 7 || !x->type.has_static_shape() || x->type.dtype != DType::kF32 || !scale ||
      !bias || !scale->is_constant() || !bias->is_constant() || graph.is_graph_output(y))
    return;
  const Shape& shape = *x->type.shape;
  if (shape.size() < 3 || shape_num_elements(shape).value_or(0) == 0) return;
  bool reshaped = false, others = false;
  for (const auto& n : graph.nodes()) {
    if (std::find(n->inputs.begin(), n->inputs.end(), y) == n->inputs.end()) continue;
    bool reshape = n->op_type == Op::kReshape && n->inputs[0] == y;
    reshaped |= reshape;
    others |= !reshape;
  }
  bool after_conv = x->producer && (x->producer->op_type == Op::kConv ||
                                    x->producer->op_type == Op::kConvTranspose);
  if (!(reshaped && !others) && !after_conv) return;
  Ints axes(shape.size() - 2);
  std::iota(axes.begin(), axes.end(), 2);
  Shape stats = shape;
  std::fill(stats.begin() + 2, stats.end(), Dim(1));
  TensorType full{DType::kF32, shape}, per_row{DType::kF32, stats};
  auto per_channel = [&](const Value* v) { // [C] as [C, 1, ..., 1]
    std::vector<int64_t> dims(shape.size() - 1, 1);
    dims[0] = shape[1].value();
    Tensor t(DType::kF32, dims);
    std::memcpy(t.data(), v->constant->data(), t.num_bytes());
    return graph.add_constant(graph.unique_name(v->name + "_per_channel"), std::move(t));
  };
  if (scale->constant->num_bytes() != static_cast<size_t>(shape[1].value()) * 4 ||
      bias->constant->num_bytes() != scale->constant->num_bytes())
    return;
  Tensor eps(DType::kF32, {});
  eps.set_double(0, node.attrs_as<EpsilonAttrs>().epsilon);
  Value* mean =
      insert_op(graph, node, Op::kReduceMean, {x}, per_row, ReduceAttrs{axes, true, false});
  Value* dev = insert_op(graph, node, Op::kSub, {x, mean}, full);
  Value* square = insert_op(graph, node, Op::kMul, {dev, dev}, full);
  Value* var =
      insert_op(graph, node, Op::kReduceMean, {square}, per_row, ReduceAttrs{axes, true, false});
  Value* shifted = insert_op(
      graph, node, Op::kAdd,
      {var, graph.add_constant(graph.unique_name(node.name + "_epsilon"), std::move(eps))},
      per_row);
  Value* sd = insert_op(graph, node, Op::kSqrt, {shifted}, per_row);
  Value* normalized = insert_op(graph, node, Op::kDiv, {dev, sd}, full);
  Value* scaled = insert_op(graph, node, Op::kMul, {normalized, per_channel(scale)}, full);
  node.op_type = Op::kAdd; // y = scaled + bias, in place of the InstanceNormalization
  node.def = find_op(Op::kAdd, node.opset);
  node.attrs = NoAttrs{};
  node.inputs = {scaled, per_channel(bias)};
}

void canonicalize_node(Graph& graph, Node& node) {
  Op op = node.op_type.id();
  if (std::holds_alternative<LegacyBroadcastAttrs>(node.attrs)) {
    canonicalize_legacy_broadcast(graph, node);
  } else if (std::holds_alternative<ReduceAttrs>(node.attrs)) {
    canonicalize_reduce(node);
  } else if (op == Op::kSqueeze || op == Op::kUnsqueeze) {
    canonicalize_squeeze(node, op == Op::kUnsqueeze);
  } else if (op == Op::kMeanVarianceNormalization) {
    auto& axes = node.attrs_as<AxesAttrs>().axes;
    if (auto rank = rank_of(node.inputs[0])) {
      if (auto n = normalized(*axes, *rank)) axes = n;
    }
  } else if (op == Op::kSplit) {
    canonicalize_split(node);
  } else if (op == Op::kClip) {
    canonicalize_clip(node);
  } else if (op == Op::kSlice) {
    canonicalize_slice(node);
  } else if (op == Op::kPad) {
    canonicalize_pad(node);
  } else if (op == Op::kReshape) {
    canonicalize_reshape(node);
    reshape_transpose_reshape(node);
  } else if (op == Op::kDiv) {
    canonicalize_div(graph, node);
  } else if (op == Op::kPow) {
    canonicalize_pow(graph, node);
  } else if (op == Op::kCumSum || op == Op::kCumProd) {
    canonicalize_cum_sum(node);
  } else if (op == Op::kDFT) {
    canonicalize_dft(node);
  } else if (op == Op::kScatterND) {
    canonicalize_scatter_nd(graph, node);
  } else if (op == Op::kTranspose) {
    compose_transposes(node);
    if (node.op_type == Op::kTranspose) transpose_reshape_transpose(node);
    if (node.op_type == Op::kTranspose) transpose_of_unit_dims(node);
  } else if (op == Op::kEinsum) {
    einsum_as_matmul(graph, node);
  } else if (op == Op::kCompress) {
    canonicalize_compress(graph, node);
  } else if (op == Op::kGather && std::holds_alternative<AxisAttrs>(node.attrs)) {
    gather_from_unit_axis(node);
    if (auto* ax = std::get_if<AxisAttrs>(&node.attrs))
      normalize_axis_in_place(ax->axis, rank_of(node.inputs[0]));
  } else if (op == Op::kInstanceNormalization) {
    expand_grouped_instance_norm(graph, node);
  } else if (op == Op::kConv) {
    absorb_pad(node);
    drop_padding_taps(graph, node);
    split_padded_conv(graph, node);
  } else if (auto* arg = std::get_if<ArgReduceAttrs>(&node.attrs)) {
    normalize_axis_in_place(arg->axis, rank_of(node.inputs[0]));
  } else if (auto* sm = std::get_if<SoftmaxAttrs>(&node.attrs)) {
    normalize_axis_in_place(sm->axis, rank_of(node.inputs[0]));
  } else if (auto* ln = std::get_if<LayerNormAttrs>(&node.attrs)) {
    normalize_axis_in_place(ln->axis, rank_of(node.inputs[0]));
  } else if (auto* ax = std::get_if<AxisAttrs>(&node.attrs);
             ax && op != Op::kFlatten && op != Op::kOneHot) { // their axes count output dims
    normalize_axis_in_place(ax->axis, rank_of(node.inputs[0]));
  }
}

} // namespace

Status canonicalize(Graph& graph) {
  // Collect first: legacy broadcasting inserts nodes.
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes())
    nodes.push_back(n.get());
  for (Node* node : nodes) {
    canonicalize_node(graph, *node);
    // A Reshape's spelled-out target comes from its output's type, which the model may have
    // declared wrongly: the element counts must agree.
    if (node->op_type == Op::kReshape && node->inputs[0]->type.has_static_shape() &&
        node->outputs[0]->type.has_static_shape()) {
      int64_t in = shape_num_elements(*node->inputs[0]->type.shape).value_or(0);
      int64_t out = shape_num_elements(*node->outputs[0]->type.shape).value_or(0);
      if (in != out)
        return Status::error(fmt::format("Reshape of {} elements into '{}', declared {} ({} "
                                         "elements)",
                                         in, node->outputs[0]->name,
                                         node->outputs[0]->type.to_string(), out))
            .with_location(location_of(graph, *node));
    }
  }
  std::unordered_map<const Value*, int> uses = graph.use_counts();
  for (Node* node : nodes) {
    if (node->op_type == Op::kMatMul) scale_after_matmul(graph, *node, uses);
    if (node->op_type == Op::kTanh) tanh_of_softplus(graph, *node, uses);
    if (node->op_type == Op::kAdd) one_plus_tanh(graph, *node, uses);
    if (node->op_type == Op::kAdd) parallel_convs_summed(graph, *node, uses);
    if (node->op_type == Op::kAdd) bias_into_conv(graph, *node, uses);
  }
  // Inputs dropped above may leave constants and nodes unused; they go with the next
  // dead-code pass.
  return Status();
}

} // namespace weft
