// Data movement as affine copies, and inference batch normalization.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"
#include "weft/kernel/kernel_builder.h"
#include "weft/kernel/lower_ops.h"

namespace weft::kernel {

namespace {

// A copy statement: out[iterators] = in[index].
void add_copy(KernelBuilder& k, const char* name, const Shape& domain, int in,
              std::vector<AffineExpr> in_index, int out, std::vector<AffineExpr> out_index) {
  StatementBuilder b(name, domain);
  k.add(b.store(b.load(in, std::move(in_index), k.buffer_at(in).dtype), out, std::move(out_index)));
}

int64_t rank_of(const Value* v) { return static_cast<int64_t>(v->type.shape->size()); }

} // namespace

Result<LoweredNode> lower_transpose(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  Ints perm = n.attrs_as<TransposeAttrs>().perm.value_or(Ints{});
  if (perm.empty()) {
    for (int64_t i = rank_of(x); i-- > 0;)
      perm.push_back(i);
  }
  // Output dim p reads input dim perm[p].
  std::vector<AffineExpr> in_index(perm.size());
  for (size_t p = 0; p < perm.size(); ++p)
    in_index[static_cast<size_t>(perm[p])] = AffineExpr::iterator(static_cast<int>(p));
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  add_copy(k, "transpose", *y->type.shape, in, in_index, out, iterators(perm.size()));
  return k.lowered();
}

namespace {

// A Slice whose starts are dims over symbols (steps of 1, each start within its end:
// fold_shape_values): a symbolic start is an indirect index, the position plus the run's
// start (`positions[:, P:]` from the past length P).
Result<LoweredNode> lower_slice_from_symbolic_starts(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<SliceAttrs>();
  const Value* y = n.outputs[0];
  const Shape& ys = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("slice", ys);
  std::vector<AffineExpr> index = iterators(ys.size());
  std::vector<IndirectIndex> indirect;
  for (size_t i = 0; i < a.symbolic_starts->size(); ++i) {
    auto axis = static_cast<int>((*a.axes)[i]);
    const Dim& start = (*a.symbolic_starts)[i];
    if (start.is_static()) { // bound by specialize_shapes
      index[static_cast<size_t>(axis)].constant = start.value();
      continue;
    }
    index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
    int at = b.op(ExprOp::kAdd, DType::kI64, {b.iterator(axis), b.extent(start, DType::kI64)});
    indirect.push_back({axis, at, IndexWrap::kClamp});
  }
  int v = b.gather(k.buffer(n.inputs[0], BufferRole::kInput), index, indirect, y->type.dtype);
  k.add(b.store(v, k.buffer(y, BufferRole::kOutput), iterators(ys.size())));
  return k.lowered();
}

} // namespace

Result<LoweredNode> lower_slice(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<SliceAttrs>();
  if (a.symbolic_starts) return lower_slice_from_symbolic_starts(n, name);
  if (!a.starts || (!a.ends && !a.symbolic_ends) || !a.axes || !a.steps)
    return Status::error("Slice bounds known only at run time are not supported yet");
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  std::vector<AffineExpr> in_index = iterators(x->type.shape->size());
  for (size_t i = 0; i < a.starts->size(); ++i) {
    int64_t axis = (*a.axes)[i];
    const Dim& d = (*x->type.shape)[static_cast<size_t>(axis)];
    int64_t step = (*a.steps)[i];
    int64_t start = (*a.starts)[i]; // >= 0 on a symbolic axis (admits_symbolic_shapes)
    if (d.is_static()) {
      int64_t extent = d.value();
      if (start < 0) start += extent;
      start = step > 0 ? std::clamp<int64_t>(start, 0, extent)
                       : std::clamp<int64_t>(start, -1, extent - 1);
    }
    in_index[static_cast<size_t>(axis)] = {start, {{static_cast<int>(axis), step}}};
  }
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  const Shape& ys = *y->type.shape;
  // A symbolic axis reversed whole (torch.flip: admits_symbolic_shapes) reads position
  // X - 1 - i, an indirect index over the run's extent X.
  StatementBuilder b("slice", ys);
  std::vector<IndirectIndex> reversed;
  for (size_t i = 0; i < a.starts->size(); ++i) {
    auto axis = static_cast<int>((*a.axes)[i]);
    const Dim& d = (*x->type.shape)[static_cast<size_t>(axis)];
    if (d.is_static() || (*a.steps)[i] > 0) continue;
    int last =
        b.op(ExprOp::kSub, DType::kI64, {b.extent(d, DType::kI64), b.constant(1, DType::kI64)});
    reversed.push_back(
        {axis, b.op(ExprOp::kSub, DType::kI64, {last, b.iterator(axis)}), IndexWrap::kClamp});
    in_index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
  }
  if (reversed.empty()) {
    add_copy(k, "slice", ys, in, in_index, out, iterators(ys.size()));
  } else {
    int v = b.gather(in, in_index, reversed, y->type.dtype);
    k.add(b.store(v, out, iterators(ys.size())));
  }
  return k.lowered();
}

// A Concat whose pieces start at offsets known only at run time (a KV cache's past and new
// keys along the length): each output element reads the piece its position falls in, at the
// position less that piece's offset, one select per boundary. Every piece is read at every
// position, clamped into it (IndexWrap::kClamp), so that no read leaves a piece.
Result<LoweredNode> lower_concat_at_symbolic_offsets(const Node& n, const std::string& name,
                                                     int axis) {
  const Value* y = n.outputs[0];
  const Shape& ys = *y->type.shape;
  KernelBuilder k(name);
  StatementBuilder b("concat", ys);
  std::vector<AffineExpr> index = iterators(ys.size());
  index[static_cast<size_t>(axis)] = AffineExpr::constant_of(0);
  DType t = y->type.dtype;
  int position = b.iterator(axis);
  int value = -1;
  Dim offset = 0;
  for (const Value* x : n.inputs) {
    int start = b.extent(offset, DType::kI64);
    int at = b.op(ExprOp::kSub, DType::kI64, {position, start});
    int v = b.gather(k.buffer(x, BufferRole::kInput), index, {{axis, at, IndexWrap::kClamp}}, t);
    if (value < 0) {
      value = v;
    } else {
      int past = b.op(ExprOp::kGe, DType::kBool, {position, start});
      value = b.op(ExprOp::kSelect, t, {past, v, value});
    }
    std::optional<Dim> next = dim_add(offset, (*x->type.shape)[static_cast<size_t>(axis)]);
    if (!next) return Status::error("Concat offsets that are not sums the dims can spell");
    offset = *next;
  }
  k.add(b.store(value, k.buffer(y, BufferRole::kOutput), iterators(ys.size())));
  return k.lowered();
}

Result<LoweredNode> lower_concat(const Node& n, const std::string& name) {
  const Value* y = n.outputs[0];
  int64_t axis = n.attrs_as<AxisAttrs>().axis;
  if (axis < 0) axis += rank_of(y);
  for (size_t i = 0; i + 1 < n.inputs.size(); ++i) {
    if (!(*n.inputs[i]->type.shape)[static_cast<size_t>(axis)].is_static())
      return lower_concat_at_symbolic_offsets(n, name, static_cast<int>(axis));
  }
  KernelBuilder k(name);
  int out = k.buffer(y, BufferRole::kOutput);
  int64_t offset = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* x = n.inputs[i];
    int in = k.buffer(x, BufferRole::kInput);
    std::vector<AffineExpr> out_index = iterators(x->type.shape->size());
    out_index[static_cast<size_t>(axis)].constant = offset;
    add_copy(k, "concat", *x->type.shape, in, iterators(x->type.shape->size()), out, out_index);
    // (Only the last piece may be symbolic along the axis here; see above.)
    if (i + 1 < n.inputs.size()) offset += (*x->type.shape)[static_cast<size_t>(axis)].value();
  }
  return k.lowered();
}

Result<LoweredNode> lower_split(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  int64_t axis = n.attrs_as<SplitAttrs>().axis;
  if (axis < 0) axis += rank_of(x);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int64_t offset = 0;
  for (const Value* y : n.outputs) {
    if (!y) continue;
    int out = k.buffer(y, BufferRole::kOutput);
    std::vector<AffineExpr> in_index = iterators(y->type.shape->size());
    in_index[static_cast<size_t>(axis)].constant = offset;
    add_copy(k, "split", *y->type.shape, in, in_index, out, iterators(y->type.shape->size()));
    offset += (*y->type.shape)[static_cast<size_t>(axis)].value();
  }
  return k.lowered();
}

// y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c], c the axis-1 index.
Result<LoweredNode> lower_batch_norm(const Node& n, const std::string& name) {
  if (n.attrs_as<BatchNormAttrs>().training_mode) return lower_batch_norm_training(n, name);
  if (n.outputs.size() > 1) { // before opset 14: the statistics outputs of training
    return Status::error("BatchNormalization with statistics outputs before opset 14 (training) "
                         "is not supported");
  }
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& shape = *y->type.shape;
  DType t = accumulator_type(x->type.dtype);
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  std::vector<int> params;
  for (size_t i = 1; i <= 4; ++i)
    params.push_back(k.buffer(n.inputs[i], BufferRole::kInput));
  int out = k.buffer(y, BufferRole::kOutput);
  StatementBuilder b("batch_norm", shape);
  std::vector<AffineExpr> channel = {AffineExpr::iterator(1)};
  auto param = [&](int i) {
    int v = b.load(params[static_cast<size_t>(i)], channel,
                   n.inputs[static_cast<size_t>(i + 1)]->type.dtype);
    return b.dtype_of(v) == t ? v : b.op(ExprOp::kCast, t, {v});
  };
  int xv = b.load(in, iterators(shape.size()), x->type.dtype);
  if (b.dtype_of(xv) != t) xv = b.op(ExprOp::kCast, t, {xv});
  int inv = b.op(
      ExprOp::kRsqrt, t,
      {b.op(ExprOp::kAdd, t, {param(3), b.constant(n.attrs_as<BatchNormAttrs>().epsilon, t)})});
  int r = b.op(ExprOp::kMul, t,
               {b.op(ExprOp::kSub, t, {xv, param(2)}), b.op(ExprOp::kMul, t, {inv, param(0)})});
  r = b.op(ExprOp::kAdd, t, {r, param(1)});
  if (t != y->type.dtype) r = b.op(ExprOp::kCast, y->type.dtype, {r});
  k.add(b.store(r, out, iterators(shape.size())));
  return k.lowered();
}

} // namespace weft::kernel

namespace weft::kernel {

// out[r * d + i] = in[i] for each axis: a copy over a domain of (repeat, extent) pairs.
Result<LoweredNode> lower_tile(const Node& n, const std::string& name) {
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  const Shape& in_shape = *x->type.shape;
  Shape domain;
  std::vector<AffineExpr> in_index, out_index;
  for (size_t d = 0; d < in_shape.size(); ++d) {
    const Dim& out_extent = (*y->type.shape)[d];
    if (out_extent == in_shape[d] && !in_shape[d].is_static()) { // not repeated
      in_index.push_back(AffineExpr::iterator(static_cast<int>(domain.size())));
      out_index.push_back(in_index.back());
      domain.push_back(out_extent);
      continue;
    }
    int64_t extent = in_shape[d].value(); // static where repeated (admits_symbolic_shapes)
    Dim repeats = out_extent.is_static() ? Dim(out_extent.value() / std::max<int64_t>(extent, 1))
                                         : *dim_div(out_extent, extent);
    int r = static_cast<int>(domain.size());
    domain.push_back(repeats);
    domain.push_back(extent);
    in_index.push_back(AffineExpr::iterator(r + 1));
    out_index.push_back({0, {{r, extent}, {r + 1, 1}}});
  }
  KernelBuilder k(name);
  int in = k.buffer(x, BufferRole::kInput);
  int out = k.buffer(y, BufferRole::kOutput);
  StatementBuilder b("tile", domain);
  k.add(b.store(b.load(in, in_index, x->type.dtype), out, out_index));
  return k.lowered();
}

} // namespace weft::kernel

namespace weft::kernel {

// DepthToSpace and SpaceToDepth: affine copies over the domain [N, C, H, bi, W, bj] of the
// space side, C the channels there and b the block size. The depth side's channel is
// (bi * b + bj) * C + c in DCR order, c * b * b + bi * b + bj in CRD order.
Result<LoweredNode> lower_depth_space(const Node& n, const std::string& name) {
  const auto& a = n.attrs_as<BlockAttrs>();
  bool to_space = n.op_type == Op::kDepthToSpace;
  const Value* space = to_space ? n.outputs[0] : n.inputs[0];
  const Shape& s = *space->type.shape;
  int64_t b = a.blocksize;
  int64_t c = s[1].value(); // symbolic plane dims divide by b (admits_symbolic_shapes)
  Dim h = dim_div(s[2], b).value_or(Dim::unknown()), w = dim_div(s[3], b).value_or(Dim::unknown());
  Shape domain = {s[0], c, h, b, w, b};
  std::vector<AffineExpr> space_index = {AffineExpr::iterator(0),
                                         AffineExpr::iterator(1),
                                         {0, {{2, b}, {3, 1}}},
                                         {0, {{4, b}, {5, 1}}}};
  AffineExpr channel = a.mode == DepthToSpaceMode::kDCR
                           ? AffineExpr{0, {{3, b * c}, {5, c}, {1, 1}}}
                           : AffineExpr{0, {{1, b * b}, {3, b}, {5, 1}}};
  std::vector<AffineExpr> depth_index = {AffineExpr::iterator(0), channel, AffineExpr::iterator(2),
                                         AffineExpr::iterator(4)};
  KernelBuilder k(name);
  int in = k.buffer(n.inputs[0], BufferRole::kInput);
  int out = k.buffer(n.outputs[0], BufferRole::kOutput);
  add_copy(k, to_space ? "depth_to_space" : "space_to_depth", domain, in,
           to_space ? depth_index : space_index, out, to_space ? space_index : depth_index);
  return k.lowered();
}

} // namespace weft::kernel
