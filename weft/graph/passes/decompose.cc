#include "weft/graph/passes/decompose.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/decompose_builders.h"
#include "weft/graph/passes/decompose_ml.h"
#include "weft/graph/passes/decompose_sequence_models.h"
#include "weft/graph/passes/decompose_signal.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

using namespace decompose_builders; // NOLINT(google-build-using-namespace)

// (x - mean) / sqrt(var + eps) over "axes" (x already in the statistics' type).
Value* standardize(NodeBuilder& b, Value* x, const Ints& axes, float epsilon) {
  Value* mean = b.op(Op::kReduceMean, {x}, ReduceAttrs{axes, true, false});
  Value* dev = b.op(Op::kSub, {x, mean});
  Value* var = b.op(Op::kReduceMean, {b.op(Op::kMul, {dev, dev})}, ReduceAttrs{axes, true, false});
  Value* eps = scalar(b, "epsilon", x->type.dtype, epsilon);
  return b.op(Op::kDiv, {dev, b.op(Op::kSqrt, {b.op(Op::kAdd, {var, eps})})});
}

// x's shape as a value: a constant when static, else a Shape node.
Value* shape_of(NodeBuilder& b, Value* x) {
  if (shape_is_static(*x->type.shape)) {
    std::vector<int64_t> dims = shape_static_dims(*x->type.shape);
    return shape_constant(b, "shape", Ints(dims.begin(), dims.end()));
  }
  return b.op(Op::kShape, {x}, ShapeAttrs{0, std::nullopt});
}

Status rms_norm(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<LayerNormAttrs>();
  Value* x = node.inputs[0];
  int64_t rank = static_cast<int64_t>(x->type.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  Ints axes(static_cast<size_t>(rank - axis));
  std::iota(axes.begin(), axes.end(), axis);
  DType stash = statistics_type(a.stash_type, x);
  Value* xs = cast_to(b, x, stash);
  Value* mean_square =
      b.op(Op::kReduceMean, {b.op(Op::kMul, {xs, xs})}, ReduceAttrs{axes, true, false});
  Value* eps = scalar(b, "epsilon", stash, a.epsilon);
  Value* normalized = b.op(Op::kDiv, {xs, b.op(Op::kSqrt, {b.op(Op::kAdd, {mean_square, eps})})});
  normalized = cast_to(b, normalized, x->type.dtype);
  // The scale broadcasts to the input (the Mul would broadcast the input to it): shape
  // inference checks static dims, each run symbolic ones.
  const Shape& dims = *x->type.shape;
  if (const std::optional<Shape>& scale = node.inputs[1]->type.shape;
      scale && scale->size() <= dims.size()) {
    for (size_t d = 0; d < scale->size(); ++d) {
      const Dim& s = (*scale)[d];
      const Dim& n = dims[dims.size() - scale->size() + d];
      if (s != n && !s.is_unknown() && !n.is_unknown() && !(s.is_static() && s.value() == 1)) {
        graph.dim_limits.push_back(
            {s, n, node.name, DimLimit::Kind::kOneOrEqual, "a scale that broadcasts to the input"});
      }
    }
  }
  b.op(Op::kMul, {normalized, node.inputs[1]}, NoAttrs{}, y);
  return b.status();
}

Status group_norm(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<GroupNormAttrs>();
  Value* x = node.inputs[0];
  size_t rank = x->type.shape->size();
  // Channels in equal groups, a scale and a bias per channel (opset 21) or group: shape
  // inference checks static dims, each run symbolic ones (the Mul and Add below would
  // broadcast a scale of one).
  const Dim& c = (*x->type.shape)[1];
  if (!c.is_static() && !c.is_unknown()) {
    graph.dim_limits.push_back(
        {c, Dim(a.num_groups), node.name, DimLimit::Kind::kMultipleOf, "channels in equal groups"});
  }
  Dim per = node.opset >= 21 ? c : Dim(a.num_groups);
  for (size_t i : {1, 2}) {
    const std::optional<Shape>& s = node.inputs[i]->type.shape;
    if (s && s->size() == 1 && (*s)[0] != per && !(*s)[0].is_unknown() && !per.is_unknown()) {
      graph.dim_limits.push_back({(*s)[0], per, node.name, DimLimit::Kind::kEqual,
                                  node.opset >= 21 ? "one per channel" : "one per group"});
    }
  }
  // [N, G, C/G * spatial]: spelled out where x's dims are static, over their symbols where
  // none is unknown, else N copied and the rest inferred ([0, G, -1]). Not -1 where it can be
  // helped: an empty batch leaves it nothing to infer from, also once a compile for symbolic
  // dims specializes to one. (C is a multiple of G: checked each run, dim_limits above.)
  const Shape& xs = *x->type.shape;
  Dim all_but_n = dims_product(xs, 1);
  std::optional<Dim> group_size;
  if (!all_but_n.is_unknown() && !xs[0].is_unknown()) {
    group_size = dim_div(all_but_n, Dim(a.num_groups));
    if (!group_size) group_size = dim_floor_div(all_but_n, 0, a.num_groups);
  }
  Value* groups;
  if (x->type.has_static_shape()) {
    Ints d = shape_static_dims(xs);
    groups = constant_shape(b, x, {d[0], a.num_groups, group_size->value()}, "grouped");
  } else if (group_size) {
    groups = b.op(Op::kReshape, {x},
                  ReshapeAttrs{false, std::nullopt, Shape{xs[0], Dim(a.num_groups), *group_size}});
  } else {
    groups = b.op(Op::kReshape, {x, shape_constant(b, "grouped", {0, a.num_groups, -1})},
                  ReshapeAttrs{});
  }
  Value* n = standardize(b, cast_to(b, groups, statistics_type(a.stash_type, x)), {2}, a.epsilon);
  n = cast_to(b, n, x->type.dtype);
  Value* scale = node.inputs[1];
  Value* bias = node.inputs[2];
  if (node.opset < 21) { // per group: [G, 1] against [N, G, C/G * spatial]
    Value* per_group = shape_constant(b, "per_group", {a.num_groups, 1});
    n = b.op(Op::kMul, {n, b.op(Op::kReshape, {scale, per_group}, ReshapeAttrs{})});
    n = b.op(Op::kAdd, {n, b.op(Op::kReshape, {bias, per_group}, ReshapeAttrs{})});
    b.op(Op::kReshape, {n, shape_of(b, x)}, ReshapeAttrs{true, {}, {}}, y); // x's own dims
    return b.status();
  }
  n = b.op(Op::kReshape, {n, shape_of(b, x)}, ReshapeAttrs{true, {}, {}}); // x's own dims
  Ints per_channel(rank - 1, 1); // [C, 1, ..., 1] against [N, C, spatial...]
  per_channel[0] = -1;
  Value* channels = shape_constant(b, "per_channel", per_channel);
  n = b.op(Op::kMul, {n, b.op(Op::kReshape, {scale, channels}, ReshapeAttrs{})});
  b.op(Op::kAdd, {n, b.op(Op::kReshape, {bias, channels}, ReshapeAttrs{})}, NoAttrs{}, y);
  return b.status();
}

// Attention's bias [B, 1, q_len, total] for an external cache (nonpad_kv_seqlen, opset 24):
// keys at or past a batch's nonpad_kv_seqlen are masked, and the causal and window frontiers
// sit at nonpad_kv_seqlen - q_len, per batch.
Value* padded_cache_bias(NodeBuilder& b, const AttentionAttrs& a, Value* nonpad, int64_t q_len,
                         int64_t total, DType t) {
  auto range = [&](const std::string& what, std::vector<int64_t> dims) {
    Tensor r(DType::kI64, std::move(dims));
    for (int64_t i = 0; i < r.num_elements(); ++i)
      r.set_int64(i, i);
    return b.constant(what, std::move(r));
  };
  Value* query = range("query", {q_len, 1});
  Value* key = range("key", {1, total});
  Value* lengths =
      b.op(Op::kReshape, {nonpad, shape_constant(b, "per_batch", {-1, 1, 1})}, ReshapeAttrs{});
  Value* allowed = b.op(Op::kLess, {key, lengths}); // [B, 1, total]
  // The query's position minus the key's: [B, q_len, total].
  Value* offset = b.op(Op::kSub, {lengths, b.constant("q_len", Tensor::scalar_i64(q_len))});
  Value* diff = b.op(Op::kSub, {b.op(Op::kAdd, {query, offset}), key});
  Value* zero = b.constant("zero", Tensor::scalar_i64(0));
  if (a.is_causal) allowed = b.op(Op::kAnd, {allowed, b.op(Op::kGreaterOrEqual, {diff, zero})});
  if (a.left_window >= 0) {
    Value* left = b.constant("left", Tensor::scalar_i64(a.left_window));
    allowed = b.op(Op::kAnd, {allowed, b.op(Op::kLessOrEqual, {diff, left})});
  }
  if (a.right_window >= 0) {
    Value* right = b.constant("right", Tensor::scalar_i64(-a.right_window));
    allowed = b.op(Op::kAnd, {allowed, b.op(Op::kGreaterOrEqual, {diff, right})});
  }
  allowed = b.op(Op::kUnsqueeze, {allowed}, AxesAttrs{Ints{1}}); // [B, 1, q_len or 1, total]
  return b.op(Op::kWhere, {allowed, scalar(b, "zero", t, 0),
                           scalar(b, "neg_inf", t, -std::numeric_limits<double>::infinity())});
}

// Attention, as the reference implementation of onnx 1.23.2 computes it: heads split (3-D
// inputs), the cache concatenated, KV heads repeated for grouped queries, scores scaled and
// softcapped, the bias of the mask, causality and windows added, softmax (in
// softmax_precision), rows whose bias is all -inf set to 0, then the weighted sum of V.
// Needs static shapes; nodes without them wait for specialization.
Status attention(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<AttentionAttrs>();
  Value* q = node.inputs[0];
  Value* k = node.inputs[1];
  Value* v = node.inputs[2];
  DType t = q->type.dtype;
  auto dims = [](const Value* x) { return shape_static_dims(*x->type.shape); };
  std::vector<int64_t> qd = dims(q), kd = dims(k), vd = dims(v);
  bool three_d = qd.size() == 3;
  int64_t batch = qd[0];
  int64_t q_heads = three_d ? *a.q_num_heads : qd[1];
  int64_t kv_heads = three_d ? *a.kv_num_heads : kd[1];
  auto split_heads = [&](Value* x, const std::vector<int64_t>& d, int64_t heads) {
    Value* r = constant_shape(b, x, {d[0], d[1], heads, d[2] / heads}, "heads");
    return b.op(Op::kTranspose, {r}, TransposeAttrs{Ints{0, 2, 1, 3}});
  };
  if (three_d) {
    q = split_heads(q, qd, q_heads);
    k = split_heads(k, kd, kv_heads);
    v = split_heads(v, vd, kv_heads);
  }
  int64_t q_len = dims(q)[2], head = dims(q)[3];
  int64_t past = 0;
  if (Value* past_key = node.input(4)) {
    past = dims(past_key)[2];
    k = b.op(Op::kConcat, {past_key, k}, AxisAttrs{2});
  }
  if (Value* past_value = node.input(5)) v = b.op(Op::kConcat, {past_value, v}, AxisAttrs{2});
  WEFT_RETURN_IF_ERROR(b.status()); // the shapes below are read from these values
  define(b, k, outs.size() > 1 ? outs[1] : nullptr);
  define(b, v, outs.size() > 2 ? outs[2] : nullptr);
  int64_t total = dims(k)[2];
  if (q_heads != kv_heads) { // each KV head serves q_heads / kv_heads query heads in a row
    int64_t group = q_heads / kv_heads;
    auto repeat = [&](Value* x) {
      std::vector<int64_t> d = dims(x);
      Value* u = b.op(Op::kUnsqueeze, {x}, AxesAttrs{Ints{2}});
      Value* e =
          b.op(Op::kExpand, {u, shape_constant(b, "groups", {d[0], d[1], group, d[2], d[3]})});
      return constant_shape(b, e, {d[0], q_heads, d[2], d[3]}, "grouped");
    };
    k = repeat(k);
    v = repeat(v);
  }

  // Q and K each scaled by sqrt(scale), as the reference does (its rounding in f16 and bf16).
  double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(head));
  Value* root = scalar(b, "scale", t, std::sqrt(scale));
  Value* kt = b.op(Op::kTranspose, {k}, TransposeAttrs{Ints{0, 1, 3, 2}});
  Value* scores = b.op(Op::kMatMul, {b.op(Op::kMul, {q, root}), b.op(Op::kMul, {kt, root})});
  if (a.softcap > 0) {
    Value* cap = scalar(b, "softcap", t, a.softcap);
    scores = b.op(Op::kMul, {b.op(Op::kTanh, {b.op(Op::kDiv, {scores, cap})}), cap});
  }
  Value* qk_out = outs.size() > 3 ? outs[3] : nullptr;
  if (qk_out && a.qk_matmul_output_mode <= 1) define(b, scores, qk_out);

  // The bias: the mask's (bool: 0 or -inf; shorter than the keys: padded with -inf), plus a
  // constant [q_len, total] of 0 and -inf for causality and windows.
  double neg_inf = -std::numeric_limits<double>::infinity();
  Value* bias = nullptr;
  if (Value* mask = node.input(3)) {
    if (mask->type.dtype == DType::kBool) {
      mask = b.op(Op::kWhere, {mask, scalar(b, "zero", t, 0), scalar(b, "neg_inf", t, neg_inf)});
    }
    std::vector<int64_t> md = dims(mask);
    if (!md.empty() && md.back() < total) { // (a scalar mask broadcasts as it is)
      Ints pads(2 * md.size(), 0);
      pads.back() = total - md.back();
      mask =
          b.op(Op::kPad, {mask}, PadAttrs{PadMode::kConstant, pads, static_cast<float>(neg_inf)});
    }
    bias = mask;
  }
  bool windowed = a.left_window >= 0 || a.right_window >= 0;
  bool all_masked_row = false;
  if (Value* nonpad = node.input(6)) {
    Value* c = padded_cache_bias(b, a, nonpad, q_len, total, t);
    bias = bias ? b.op(Op::kAdd, {bias, c}) : c;
    all_masked_row = true; // known only at run time
  } else if (a.is_causal || windowed) {
    Tensor allowed(t, {q_len, total});
    for (int64_t i = 0; i < q_len; ++i) {
      bool any = false;
      for (int64_t j = 0; j < total; ++j) {
        int64_t diff = i + past - j; // the query's position minus the key's
        bool ok = (!a.is_causal || diff >= 0) && (a.left_window < 0 || diff <= a.left_window) &&
                  (a.right_window < 0 || -diff <= a.right_window);
        allowed.set_double(i * total + j, ok ? 0.0 : neg_inf);
        any |= ok;
      }
      all_masked_row |= !any;
    }
    Value* c = b.constant("causal", std::move(allowed));
    bias = bias ? b.op(Op::kAdd, {bias, c}) : c;
  }
  if (bias) scores = b.op(Op::kAdd, {scores, bias});
  if (qk_out && a.qk_matmul_output_mode == 2) define(b, scores, qk_out);

  DType precision = a.softmax_precision.value_or(t);
  Value* probs = b.op(Op::kSoftmax, {cast_to(b, scores, precision)}, SoftmaxAttrs{-1});
  if (node.input(3) || all_masked_row) { // rows with nothing to attend to give 0, not NaN
    Value* row_max = b.op(Op::kReduceMax, {bias}, ReduceAttrs{Ints{-1}, true, false});
    Value* none = b.op(Op::kEqual, {row_max, scalar(b, "neg_inf", t, neg_inf)});
    probs = b.op(Op::kWhere, {none, scalar(b, "zero", precision, 0), probs});
  }
  probs = cast_to(b, probs, t);
  if (qk_out && a.qk_matmul_output_mode == 3) define(b, probs, qk_out);

  Value* y = b.op(Op::kMatMul, {probs, v});
  if (three_d) {
    y = b.op(Op::kTranspose, {y}, TransposeAttrs{Ints{0, 2, 1, 3}});
    y = constant_shape(b, y, {batch, q_len, -1}, "merged");
  }
  define(b, y, outs[0]);
  return b.status();
}

// RotaryEmbedding: x as [B, S, heads, head] (3-D input) or as given ([B, heads, S, head]),
// the caches gathered at the positions (when given) and broadcast over the heads, the first
// rotary_embedding_dim dims of each head rotated in halves (or in interleaved pairs). A 4-D
// input is not transposed as the reference implementation does: the caches broadcast along
// axis 1 instead, so the fused kernel reads and writes in x's own order.
Status rotary(Graph& graph, Node& node, Value* into) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<RotaryAttrs>();
  Value* x = node.inputs[0];
  std::vector<int64_t> xd = shape_static_dims(*x->type.shape);
  bool three_d = xd.size() == 3;
  int64_t heads = three_d ? *a.num_heads : xd[1];
  int64_t head = three_d ? xd[2] / heads : xd[3];
  int64_t rd = a.rotary_dim ? a.rotary_dim : head, half = rd / 2;
  Ints hd = three_d ? Ints{xd[0], xd[1], heads, head} : Ints(xd.begin(), xd.end());
  Value* h = three_d ? constant_shape(b, x, hd, "heads") : x;
  int64_t heads_axis = three_d ? 2 : 1;
  Value* cos = node.inputs[1];
  Value* sin = node.inputs[2];
  if (Value* positions = node.input(3)) {
    cos = b.op(Op::kGather, {cos, positions}, AxisAttrs{0});
    sin = b.op(Op::kGather, {sin, positions}, AxisAttrs{0});
  }
  cos = b.op(Op::kUnsqueeze, {cos}, AxesAttrs{Ints{heads_axis}});
  sin = b.op(Op::kUnsqueeze, {sin}, AxesAttrs{Ints{heads_axis}});
  auto slice = [&](Value* v, int64_t start, int64_t end, int64_t step) {
    return b.op(Op::kSlice, {v}, SliceAttrs{Ints{start}, Ints{end}, Ints{3}, Ints{step}});
  };
  Value* x1 = a.interleaved ? slice(h, 0, rd, 2) : slice(h, 0, half, 1);
  Value* x2 = a.interleaved ? slice(h, 1, rd, 2) : slice(h, half, rd, 1);
  Value* real = b.op(Op::kSub, {b.op(Op::kMul, {cos, x1}), b.op(Op::kMul, {sin, x2})});
  Value* imag = b.op(Op::kAdd, {b.op(Op::kMul, {sin, x1}), b.op(Op::kMul, {cos, x2})});
  Value* rotated;
  if (a.interleaved) {
    Value* pairs = b.op(Op::kConcat,
                        {b.op(Op::kUnsqueeze, {real}, AxesAttrs{Ints{4}}),
                         b.op(Op::kUnsqueeze, {imag}, AxesAttrs{Ints{4}})},
                        AxisAttrs{4});
    rotated = constant_shape(b, pairs, {hd[0], hd[1], hd[2], rd}, "pairs");
  } else {
    rotated = b.op(Op::kConcat, {real, imag}, AxisAttrs{3});
  }
  if (rd < head) rotated = b.op(Op::kConcat, {rotated, slice(h, rd, head, 1)}, AxisAttrs{3});
  if (three_d) {
    b.op(Op::kReshape, {rotated, shape_constant(b, "merged", Ints(xd.begin(), xd.end()))},
         ReshapeAttrs{}, into);
  } else {
    b.op(Op::kIdentity, {rotated}, NoAttrs{}, into);
  }
  return b.status();
}

// LpNormalization: x / ReduceL1 or ReduceL2 along the axis, 0 where the norm is 0.
Status lp_norm(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<LpNormAttrs>();
  Value* x = node.inputs[0];
  WEFT_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(a.axis, static_cast<int64_t>(x->type.shape->size())));
  Value* norm =
      b.op(a.p == 1 ? Op::kReduceL1 : Op::kReduceL2, {x}, ReduceAttrs{Ints{axis}, true, false});
  Value* zero = scalar(b, "zero", x->type.dtype, 0);
  b.op(Op::kWhere, {b.op(Op::kEqual, {norm, zero}), zero, b.op(Op::kDiv, {x, norm})}, NoAttrs{}, y);
  return b.status();
}

// CenterCropPad: per listed axis, the centred slice of the target size, or zeros padded
// around (the extra one after, as ONNX places it).
Status center_crop_pad(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* x = node.inputs[0];
  std::vector<int64_t> in = shape_static_dims(*x->type.shape);
  std::vector<int64_t> out = shape_static_dims(*y->type.shape);
  Ints starts, ends, axes, pads(2 * in.size(), 0);
  bool padded = false;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] < in[d]) {
      int64_t start = (in[d] - out[d]) / 2;
      starts.push_back(start);
      ends.push_back(start + out[d]);
      axes.push_back(static_cast<int64_t>(d));
    } else if (out[d] > in[d]) {
      pads[d] = (out[d] - in[d]) / 2;
      pads[d + in.size()] = out[d] - in[d] - pads[d];
      padded = true;
    }
  }
  Value* v = x;
  if (!axes.empty()) v = b.op(Op::kSlice, {v}, SliceAttrs{starts, ends, axes, std::nullopt});
  if (padded) v = b.op(Op::kPad, {v}, PadAttrs{PadMode::kConstant, pads, 0.0f});
  b.op(Op::kIdentity, {v}, NoAttrs{}, y);
  return b.status();
}

// The pads (begins, then ends) with which floor mode gives the extents "y" that ceil mode
// gave: each end grows to where the last window reaches.
Ints ceil_mode_pads(const PoolAttrs& a, const std::vector<int64_t>& x,
                    const std::vector<int64_t>& y) {
  size_t spatial = a.kernel_shape.size();
  Ints pads(2 * spatial, 0);
  if (a.auto_pad != AutoPad::kValid && !a.pads.empty()) pads = a.pads;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t stride = a.strides.empty() ? 1 : a.strides[i];
    int64_t dilation = a.dilations.empty() ? 1 : a.dilations[i];
    int64_t extent = (a.kernel_shape[i] - 1) * dilation + 1;
    int64_t reach = (y[i + 2] - 1) * stride + extent - x[i + 2] - pads[i];
    pads[i + spatial] = std::max(pads[i + spatial], reach);
  }
  return pads;
}

// LpPool: (the sum over the window of |x|^p)^(1/p). The sum is an AveragePool that counts the
// padding, times the window's size; ceil mode becomes the end padding its last windows reach
// (zeros add nothing), so that every window counts the whole kernel. p = 1 and 2 keep to Abs,
// Mul and Sqrt.
Status lp_pool(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<LpPoolAttrs>();
  Value* x = node.inputs[0];
  DType t = x->type.dtype;
  PoolAttrs window = a.window;
  window.count_include_pad = true;
  if (window.auto_pad == AutoPad::kSameUpper || window.auto_pad == AutoPad::kSameLower) {
    window.ceil_mode = false; // SAME's extents do not depend on it
  } else if (window.ceil_mode) {
    window.pads = ceil_mode_pads(a.window, shape_static_dims(*x->type.shape),
                                 shape_static_dims(*y->type.shape));
    window.auto_pad = AutoPad::kNotSet;
    window.ceil_mode = false;
  }
  Value* powered = a.p == 1   ? b.op(Op::kAbs, {x})
                   : a.p == 2 ? b.op(Op::kMul, {x, x})
                              : b.op(Op::kPow, {b.op(Op::kAbs, {x}), scalar(b, "p", t, a.p)});
  int64_t count = std::accumulate(window.kernel_shape.begin(), window.kernel_shape.end(),
                                  int64_t{1}, std::multiplies<>());
  Value* sum =
      b.op(Op::kMul, {b.op(Op::kAveragePool, {powered}, window), scalar(b, "count", t, count)});
  if (a.p == 1) b.op(Op::kIdentity, {sum}, NoAttrs{}, y);
  if (a.p == 2) b.op(Op::kSqrt, {sum}, NoAttrs{}, y);
  if (a.p > 2) b.op(Op::kPow, {sum, scalar(b, "inverse_p", t, 1.0 / a.p)}, NoAttrs{}, y);
  return b.status();
}

// SwiGLU: Swish(A) * B.
Status swiglu(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* gate = b.op(Op::kSwish, {node.inputs[0]}, node.attrs_as<AlphaAttrs>());
  b.op(Op::kMul, {gate, node.inputs[1]}, NoAttrs{}, y);
  return b.status();
}

// OptionalHasElement: true for a tensor input, false for none (an optional value is refused
// at import). OptionalGetElement of a tensor: the tensor.
Status optional_element(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* x = node.input(0);
  if (node.op_type == Op::kOptionalGetElement) {
    define(b, x, y);
  } else {
    define(b, scalar(b, "has_element", DType::kBool, x ? 1 : 0), y);
  }
  return b.status();
}

// AffineGrid: the base grid (x, y[, z] evenly spaced in [-1, 1], then 1, per position of
// size's spatial dims) times theta transposed. The base grid is computed from size's values
// by ops that fold to a constant once size is constant; while size is a graph input, they
// make it an input whose value specialization freezes (it bounds a Range and an Expand).
Status affine_grid(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  bool align = node.attrs_as<AffineGridAttrs>().align_corners;
  Value* theta = node.inputs[0];
  Value* size = node.inputs[1];
  DType t = theta->type.dtype;
  int64_t spatial = (*size->type.shape)[0].value() - 2;
  auto part = [&](int64_t begin, int64_t end) {
    return b.op(Op::kSlice, {size}, SliceAttrs{Ints{begin}, Ints{end}, Ints{0}, std::nullopt});
  };
  Value* extents = part(2, 2 + spatial);
  Value* one = scalar(b, "one", t, 1);
  Value* two = scalar(b, "two", t, 2);
  std::vector<Value*> coords(static_cast<size_t>(spatial + 1));
  for (int64_t d = 0; d < spatial; ++d) {
    Value* n = b.take(size, 2 + d, 0);
    Value* step = b.constant("step", Tensor::scalar_i64(1));
    Value* i =
        cast_to(b, b.op(Op::kRange, {b.constant("start", Tensor::scalar_i64(0)), n, step}), t);
    Value* len = cast_to(b, n, t);
    // Pixel centres: (2i + 1) / len - 1; corners aligned: 2i / (len - 1) - 1, -1 alone for 1.
    Value* twice = b.op(Op::kMul, {i, two});
    Value* c = align ? b.op(Op::kDiv, {twice, b.op(Op::kMax, {b.op(Op::kSub, {len, one}), one})})
                     : b.op(Op::kDiv, {b.op(Op::kAdd, {twice, one}), len});
    Ints along(static_cast<size_t>(spatial), 1);
    along[static_cast<size_t>(d)] = -1;
    c = constant_shape(b, b.op(Op::kSub, {c, one}), along, "along");
    coords[static_cast<size_t>(spatial - 1 - d)] =
        b.op(Op::kExpand, {c, extents}); // x: the last dim
  }
  coords.back() = b.op(Op::kExpand, {one, extents});
  Value* base = constant_shape(b, b.stack(coords, spatial), {-1, spatial + 1}, "points");
  Value* grid =
      b.op(Op::kMatMul, {base, b.op(Op::kTranspose, {theta}, TransposeAttrs{Ints{0, 2, 1}})});
  Value* shape = b.op(Op::kConcat, {part(0, 1), extents, shape_constant(b, "coords", {spatial})},
                      AxisAttrs{0});
  b.op(Op::kReshape, {grid, shape}, ReshapeAttrs{}, y);
  return b.status();
}

// TensorScatter: a ScatterElements along the axis, the update's positions there shifted by
// each batch's write index (wrapped around the cache in circular mode).
Status tensor_scatter(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<TensorScatterAttrs>();
  Value* past = node.inputs[0];
  Value* update = node.inputs[1];
  std::vector<int64_t> ud = shape_static_dims(*update->type.shape);
  int64_t rank = static_cast<int64_t>(ud.size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  std::vector<int64_t> along(ud.size(), 1);
  along[static_cast<size_t>(axis)] = ud[static_cast<size_t>(axis)];
  Tensor steps(DType::kI64, along);
  for (int64_t i = 0; i < steps.num_elements(); ++i)
    steps.set_int64(i, i);
  Value* index = b.constant("positions", std::move(steps));
  if (Value* writes = node.input(2)) {
    Ints per_batch(ud.size(), 1);
    per_batch[0] = -1;
    index = b.op(Op::kAdd, {constant_shape(b, writes, per_batch, "per_batch"), index});
  }
  if (a.circular) {
    int64_t length = shape_static_dims(*past->type.shape)[static_cast<size_t>(axis)];
    index = b.op(Op::kMod, {index, b.constant("length", Tensor::scalar_i64(length))}, ModAttrs{});
  }
  index = b.op(Op::kExpand, {index, shape_constant(b, "update", Ints(ud.begin(), ud.end()))});
  b.op(Op::kScatterElements, {past, index, update}, ScatterAttrs{axis, ScatterReduction::kNone}, y);
  return b.status();
}

// Col2Im: the columns are the taps of a ConvTranspose with one-hot weights, one group per
// channel: tap p of channel c lands at its place in the block. output_padding makes the
// extents image_shape's (ConvTranspose's own arithmetic leaves off a last partial stride).
Status col2im(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<Col2ImAttrs>();
  Value* x = node.inputs[0];
  Ints image = *constant_ints(node.input(1));
  Ints block = *constant_ints(node.input(2));
  std::vector<int64_t> dx = shape_static_dims(*x->type.shape);
  size_t s = block.size();
  // One extent per spatial dim in each (a shorter image_shape was read past its end).
  if (s < 1 || image.size() != s || (!a.dilations.empty() && a.dilations.size() != s) ||
      (!a.strides.empty() && a.strides.size() != s) || (!a.pads.empty() && a.pads.size() != 2 * s))
    return Status::error(fmt::format("image_shape [{}], block_shape [{}], dilations, strides and "
                                     "pads do not give the same spatial dims",
                                     fmt::join(image, ", "), fmt::join(block, ", ")));
  int64_t taps = std::accumulate(block.begin(), block.end(), int64_t{1}, std::multiplies<>());
  // (None of them may be 0: a group of 0, a division by it.)
  if (taps < 1 || dx[1] < taps)
    return Status::error(
        fmt::format("input [{}] has no channel of block size {}", fmt::join(dx, ", "), taps));
  for (const Ints* v : {&a.strides, &a.dilations}) {
    if (std::any_of(v->begin(), v->end(), [](int64_t e) { return e < 1; }))
      return Status::error("strides and dilations must be at least 1");
  }
  int64_t channels = dx[1] / taps;
  ConvTransposeAttrs t;
  t.group = channels;
  t.kernel_shape = block;
  t.dilations = a.dilations.empty() ? Ints(s, 1) : a.dilations;
  t.strides = a.strides.empty() ? Ints(s, 1) : a.strides;
  t.pads = a.pads.empty() ? Ints(2 * s, 0) : a.pads;
  Ints blocks = {dx[0], dx[1]};
  int64_t count = 1;
  for (size_t i = 0; i < s; ++i) {
    int64_t extent = t.dilations[i] * (block[i] - 1) + 1;
    int64_t padded = image[i] + t.pads[i] + t.pads[i + s];
    blocks.push_back((padded - extent) / t.strides[i] + 1);
    count *= blocks.back();
    int64_t reach = t.strides[i] * (blocks.back() - 1) + extent - t.pads[i] - t.pads[i + s];
    t.output_padding.push_back(image[i] - reach);
  }
  if (count != dx[2]) {
    return Status::error(
        fmt::format("input has {} blocks, image_shape and the attributes give {}", dx[2], count));
  }
  std::vector<int64_t> wd = {dx[1], 1};
  wd.insert(wd.end(), block.begin(), block.end());
  Tensor w(x->type.dtype, wd);
  for (int64_t c = 0; c < dx[1]; ++c)
    w.set_double(c * taps + c % taps, 1.0);
  Value* grid = constant_shape(b, x, blocks, "blocks");
  b.op(Op::kConvTranspose, {grid, b.constant("one_hot", std::move(w))}, t, y);
  return b.status();
}

// The ratio of a Dropout in training mode (its flag a constant true, opset 12 on) that
// decomposes: a constant in (0, 1). (0 keeps every element: Dropout stays the identity it is
// at inference; other ratios are refused at lowering.)
std::optional<double> training_dropout_ratio(const Node& n) {
  const Value* training = n.input(2);
  if (!training || !training->is_constant() || training->constant->num_elements() != 1 ||
      training->constant->get_double(0) == 0)
    return std::nullopt;
  const Value* ratio = n.input(1); // absent: 0.5
  double r = 0.5;
  if (ratio) {
    if (!ratio->is_constant() || ratio->constant->num_elements() != 1) return std::nullopt;
    r = ratio->constant->get_double(0);
  }
  if (!(r > 0 && r < 1) || !dtype_is_float(n.inputs[0]->type.dtype)) return std::nullopt;
  return r;
}

// Dropout in training mode as onnx's reference computes it: mask = a uniform draw in [0, 1)
// >= ratio, output = x * mask / (1 - ratio). The draws are a RandomUniformLike (Weft's random
// call on the CPU, library/random_call.h): new every run, repeatable with the node's seed.
Status training_dropout(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  NodeBuilder b(graph, node);
  Value* x = node.inputs[0];
  DType t = x->type.dtype;
  double r = *training_dropout_ratio(node);
  RandomAttrs uniform;
  uniform.dtype = t;
  if (auto seed = node.attrs_as<DropoutAttrs>().seed) uniform.seed = static_cast<float>(*seed);
  Value* draws = b.op(Op::kRandomUniformLike, {x}, uniform);
  Value* kept = b.op(Op::kGreaterOrEqual, {draws, scalar(b, "ratio", t, r)});
  Value* masked = b.op(Op::kMul, {x, b.op(Op::kCast, {kept}, CastAttrs{t})});
  b.op(Op::kMul, {masked, scalar(b, "scale", t, 1.0 / (1.0 - r))}, NoAttrs{}, outs[0]);
  if (outs.size() > 1) define(b, kept, outs[1]);
  return b.status();
}

bool static_inputs(const Node& n) {
  for (const Value* v : n.inputs) {
    if (v && (!v->type.shape || !shape_is_static(*v->type.shape))) return false;
  }
  return true;
}

// Can "n" be decomposed now? Some need static shapes or constant inputs, which
// specialization may give later.
bool ready(const Node& n) {
  Op op = n.op_type.id();
  auto has_rank = [&] { return n.inputs[0]->type.shape.has_value(); };
  if (op == Op::kRMSNormalization || op == Op::kGroupNormalization || op == Op::kLpNormalization)
    return has_rank();
  if (op == Op::kAttention || op == Op::kRotaryEmbedding || op == Op::kTensorScatter ||
      is_sequence_model_op(n))
    return static_inputs(n);
  if (op == Op::kCenterCropPad)
    return n.outputs[0] && n.outputs[0]->type.has_static_shape() && static_inputs(n);
  if (op == Op::kLpPool) {
    const PoolAttrs& w = n.attrs_as<LpPoolAttrs>().window;
    bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
    if (!w.ceil_mode || same) return has_rank();
    return static_inputs(n) && n.outputs[0] && n.outputs[0]->type.has_static_shape();
  }
  if (op == Op::kCol2Im)
    return static_inputs(n) && constant_ints(n.input(1)) && constant_ints(n.input(2));
  if (op == Op::kAffineGrid) {
    const auto& size = n.inputs[1]->type.shape;
    return size && size->size() == 1 && (*size)[0].is_static();
  }
  if (op == Op::kOptionalHasElement || op == Op::kOptionalGetElement) return true;
  if (op == Op::kDropout) return training_dropout_ratio(n).has_value();
  if (is_ml_op(n)) return ml_op_ready(n);
  if (op == Op::kSTFT) return stft_ready(n);
  if (op == Op::kMelWeightMatrix) return mel_weight_matrix_ready(n);
  return op == Op::kSwiGLU;
}

Status decompose_node(Graph& graph, Node& node, const std::vector<Value*>& outs) {
  Op op = node.op_type.id();
  if (op == Op::kAttention) return attention(graph, node, outs);
  if (op == Op::kRotaryEmbedding) return rotary(graph, node, outs[0]);
  if (op == Op::kRMSNormalization) return rms_norm(graph, node, outs[0]);
  if (op == Op::kLpNormalization) return lp_norm(graph, node, outs[0]);
  if (op == Op::kCenterCropPad) return center_crop_pad(graph, node, outs[0]);
  if (op == Op::kLpPool) return lp_pool(graph, node, outs[0]);
  if (op == Op::kSwiGLU) return swiglu(graph, node, outs[0]);
  if (op == Op::kDropout) return training_dropout(graph, node, outs);
  if (op == Op::kAffineGrid) return affine_grid(graph, node, outs[0]);
  if (op == Op::kTensorScatter) return tensor_scatter(graph, node, outs[0]);
  if (op == Op::kCol2Im) return col2im(graph, node, outs[0]);
  if (is_sequence_model_op(node)) return decompose_sequence_model(graph, node, outs);
  if (op == Op::kSTFT) return decompose_stft(graph, node, outs[0]);
  if (op == Op::kMelWeightMatrix) return decompose_mel_weight_matrix(graph, node, outs[0]);
  if (op == Op::kOptionalHasElement || op == Op::kOptionalGetElement)
    return optional_element(graph, node, outs[0]);
  if (is_ml_op(node)) return decompose_ml_op(graph, node, outs[0]);
  return group_norm(graph, node, outs[0]);
}

} // namespace

Status decompose(Graph& graph) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    if (ready(*n)) nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    Location where = location_of(graph, *node);
    // The new nodes define the node's output values, so that their names stay.
    std::vector<Value*> outs = node->outputs;
    for (Value*& out : node->outputs) {
      if (out) out->producer = nullptr;
      out = nullptr;
    }
    WEFT_RETURN_IF_ERROR(decompose_node(graph, *node, outs).with_location(where));
    graph.remove_nodes_if([&](const Node& n) { return &n == node; });
  }
  return Status();
}

} // namespace weft
