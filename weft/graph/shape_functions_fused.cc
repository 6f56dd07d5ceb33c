// Shape functions of the ops that passes/decompose.h turns into primitives:
// RMSNormalization, Attention, RotaryEmbedding, GroupNormalization, LpNormalization,
// CenterCropPad, SwiGLU, AffineGrid, TensorScatter, Col2Im (LpPool's is with the other pools').
#include <algorithm>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"
#include "weft/graph/shape_functions.h"

namespace weft {

using namespace shape_detail;

namespace {

// y like x, whose axes include "axis".
TypesOrError same_along_axis(const Node& node, int64_t axis) {
  const TensorType& x = in_type(node, 0);
  if (x.shape)
    WEFT_RETURN_IF_ERROR(normalize_axis(axis, static_cast<int64_t>(x.shape->size())).status());
  return one(x);
}

} // namespace

// The scale broadcasts to the input.
TypesOrError infer_rms_norm(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  WEFT_RETURN_IF_ERROR(
      normalize_axis(node.attrs_as<LayerNormAttrs>().axis, static_cast<int64_t>(x.shape->size()))
          .status());
  WEFT_RETURN_IF_ERROR(check_normalized_inputs(node, *x.shape, 1, 2));
  return one(x);
}

// Attention: Y [B, q_heads, S_q, v_head] (4-D) or [B, S_q, q_heads * v_head] (3-D); the
// present key and value [B, kv_heads, past + S_kv, head]; the scores [B, q_heads, S_q, past +
// S_kv]. Dims not known here stay unknown.
TypesOrError infer_attention(const Node& node) {
  const auto& a = node.attrs_as<AttentionAttrs>();
  const TensorType& q = in_type(node, 0);
  const TensorType& k = in_type(node, 1);
  const TensorType& v = in_type(node, 2);
  if (node.input(6) && node.input(4))
    return fail("nonpad_kv_seqlen cannot be combined with past_key and past_value");
  if (!q.shape || !k.shape || !v.shape) {
    return std::vector<TensorType>(node.outputs.size(), TensorType{q.dtype, std::nullopt});
  }
  size_t rank = q.shape->size();
  if ((rank != 3 && rank != 4) || k.shape->size() != rank || v.shape->size() != rank)
    return fail("Q, K and V must all be 3-D or all 4-D");
  if (rank == 3 && (!a.q_num_heads || !a.kv_num_heads))
    return fail("3-D inputs need the attributes q_num_heads and kv_num_heads");
  const Shape &qs = *q.shape, &ks = *k.shape, &vs = *v.shape;
  if (rank == 3) { // hidden sizes split into heads of at least one element
    for (auto [hidden, heads, name] :
         {std::tuple{qs[2], *a.q_num_heads, "Q"}, std::tuple{ks[2], *a.kv_num_heads, "K"},
          std::tuple{vs[2], *a.kv_num_heads, "V"}}) {
      if (heads <= 0 || (hidden.is_static() && (hidden.value() <= 0 || hidden.value() % heads)))
        return fail(fmt::format("{}'s hidden size {} is not a positive multiple of its {} heads",
                                name, hidden.to_string(), heads));
    }
  }
  auto per_head = [](const Dim& hidden, int64_t heads) {
    return hidden.is_static() ? Dim(hidden.value() / heads) : Dim::unknown();
  };
  Dim batch = qs[0];
  Dim q_heads = rank == 4 ? qs[1] : Dim(*a.q_num_heads);
  Dim kv_heads = rank == 4 ? ks[1] : Dim(*a.kv_num_heads);
  Dim q_len = rank == 4 ? qs[2] : qs[1];
  Dim kv_len = rank == 4 ? ks[2] : ks[1];
  Dim k_head = rank == 4 ? ks[3] : per_head(ks[2], *a.kv_num_heads);
  Dim v_head = rank == 4 ? vs[3] : per_head(vs[2], *a.kv_num_heads);
  if (q_heads.is_static() && kv_heads.is_static() &&
      (kv_heads.value() <= 0 || q_heads.value() % kv_heads.value() != 0))
    return fail("q heads must be a multiple of kv heads");
  // Extents that must agree, where both are known.
  auto differ = [](const Dim& x, const Dim& y) {
    return x.is_static() && y.is_static() && x.value() != y.value();
  };
  Dim v_heads = rank == 4 ? vs[1] : Dim(*a.kv_num_heads), v_len = rank == 4 ? vs[2] : vs[1];
  if (differ(ks[0], batch) || differ(vs[0], batch) || differ(v_heads, kv_heads) ||
      differ(v_len, kv_len))
    return fail("K and V must have Q's batch, and the same heads and sequence length");
  Dim total = kv_len;
  for (int i : {4, 5}) { // past_key [B, kv_heads, past, k_head], past_value [..., v_head]
    const Value* past = node.input(static_cast<size_t>(i));
    if (!past) continue;
    const TensorType& p = past->type;
    const char* name = i == 4 ? "past_key" : "past_value";
    if (!p.shape || p.shape->size() != 4) return fail(fmt::format("{} must be 4-D", name));
    const Shape& ps = *p.shape;
    if (differ(ps[0], batch) || differ(ps[1], kv_heads) || differ(ps[3], i == 4 ? k_head : v_head))
      return fail(fmt::format("{} {} must be [batch, kv heads, past length, head size] of K and V",
                              name, shape_to_string(ps)));
    if (i == 5 && node.input(4) && differ(ps[2], (*node.input(4)->type.shape)[2]))
      return fail("past_key and past_value must have the same past length");
    if (i == 4)
      total = ps[2].is_static() && kv_len.is_static() ? Dim(ps[2].value() + kv_len.value())
                                                      : Dim::unknown();
  }
  if (const Value* mask = node.input(3); mask && mask->type.shape && !mask->type.shape->empty() &&
                                         differ(mask->type.shape->back(), total) &&
                                         mask->type.shape->back().value() > total.value())
    return fail(fmt::format("attn_mask's last dim {} exceeds the total sequence length {}",
                            mask->type.shape->back().value(), total.value()));
  Dim y_last = q_heads.is_static() && v_head.is_static() ? Dim(q_heads.value() * v_head.value())
                                                         : Dim::unknown();
  std::vector<TensorType> out = {
      {q.dtype, rank == 4 ? Shape{batch, q_heads, q_len, v_head} : Shape{batch, q_len, y_last}},
      {k.dtype, Shape{batch, kv_heads, total, k_head}},
      {v.dtype, Shape{batch, kv_heads, total, v_head}},
      {q.dtype, Shape{batch, q_heads, q_len, total}}};
  out.resize(std::min(out.size(), std::max<size_t>(node.outputs.size(), 1)));
  return out;
}

// RotaryEmbedding: y like x, [B, heads, S, head] or [B, S, heads * head]; the caches hold
// half the rotated dims.
TypesOrError infer_rotary(const Node& node) {
  const auto& a = node.attrs_as<RotaryAttrs>();
  const TensorType& x = in_type(node, 0);
  if (!x.shape) return one(x);
  size_t rank = x.shape->size();
  if (rank != 3 && rank != 4) return fail("the input must be 3-D or 4-D");
  if (rank == 3 && !a.num_heads) return fail("a 3-D input needs the attribute num_heads");
  const Dim& last = x.shape->back();
  if (rank == 3 && last.is_static() && last.value() % *a.num_heads != 0)
    return fail("the hidden size is not a multiple of num_heads");
  Dim head = rank == 4          ? last
             : last.is_static() ? Dim(last.value() / *a.num_heads)
                                : Dim::unknown();
  if (head.is_static() && a.rotary_dim > head.value())
    return fail("rotary_embedding_dim exceeds the head size");
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& c = in_type(node, i);
    if (c.shape && head.is_static() && c.shape->back().is_static() &&
        c.shape->back().value() * 2 != (a.rotary_dim ? a.rotary_dim : head.value()))
      return fail(fmt::format("input {} must hold half the rotated dims in its last axis", i));
  }
  return one(x);
}

// GroupNormalization: y like x [N, C, ...], C a multiple of num_groups; scale and bias hold
// one value per group (opset 18) or per channel (opset 21).
TypesOrError infer_group_norm(const Node& node) {
  const TensorType& x = in_type(node, 0);
  int64_t groups = node.attrs_as<GroupNormAttrs>().num_groups;
  if (!x.shape) return one(x);
  if (x.shape->size() < 2) return fail("the input must have rank 2 or more");
  const Dim& channels = (*x.shape)[1];
  if (channels.is_static() && channels.value() % groups != 0)
    return fail(fmt::format("{} channels do not divide into {} groups", channels.value(), groups));
  Dim per = node.opset >= 21 ? channels : Dim(groups);
  for (size_t i = 1; i < 3; ++i) {
    const Value* v = node.input(i);
    if (!v) return fail(fmt::format("input {} is required", i));
    if (v->type.shape && (v->type.shape->size() != 1 || !agree((*v->type.shape)[0], per)))
      return fail(fmt::format("input {} must hold one value per {}", i,
                              node.opset >= 21 ? "channel" : "group"));
  }
  return one(x);
}

TypesOrError infer_lp_norm(const Node& node) {
  return same_along_axis(node, node.attrs_as<LpNormAttrs>().axis);
}

// CenterCropPad: x with the dims at "axes" (all by default) set to the constant input shape.
TypesOrError infer_center_crop_pad(const Node& node) {
  const TensorType& x = in_type(node, 0);
  std::optional<Ints> sizes = constant_ints(node.input(1));
  if (!x.shape || !sizes) {
    return one({x.dtype, x.shape ? unknown_shape(x.shape->size()) : std::optional<Shape>()});
  }
  int64_t rank = static_cast<int64_t>(x.shape->size());
  Ints axes = node.attrs_as<AxesAttrs>().axes.value_or(Ints{});
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (sizes->size() != axes.size())
    return fail(fmt::format("shape has {} values for {} axes", sizes->size(), axes.size()));
  Shape out = *x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank));
    if ((*sizes)[i] < 0) return fail("shape values must not be negative");
    out[static_cast<size_t>(axis)] = (*sizes)[i];
  }
  return one({x.dtype, out});
}

// SwiGLU: y like the gate A, which B matches (no broadcasting).
TypesOrError infer_swiglu(const Node& node) {
  const TensorType& a = in_type(node, 0);
  const TensorType& b = in_type(node, 1);
  if (a.dtype != b.dtype) return fail("A and B have different types");
  if (a.shape && b.shape) {
    bool same = a.shape->size() == b.shape->size();
    for (size_t d = 0; same && d < a.shape->size(); ++d)
      same = agree((*a.shape)[d], (*b.shape)[d]);
    if (!same) return fail("A and B must have one shape");
  }
  return one(a);
}

// weft.MoE (attrs.h, MoEAttrs): y like x [T, H]; logits [T, E], fc1 [E, F, H], fc2 [E, H, I],
// F = 2 I for swiglu and I otherwise, biases [E, F] and [E, H], k at most E; each checked where
// the dims are known.
TypesOrError infer_moe(const Node& node) {
  const auto& a = node.attrs_as<MoEAttrs>();
  const TensorType &x = in_type(node, 0), &logits = in_type(node, 1);
  const TensorType &fc1 = in_type(node, 2), &fc2 = in_type(node, 4);
  auto wrong_rank = [](const TensorType& t, size_t rank) {
    return t.shape && t.shape->size() != rank;
  };
  if (wrong_rank(x, 2) || wrong_rank(logits, 2) || wrong_rank(fc1, 3) || wrong_rank(fc2, 3))
    return fail("needs the rows [T, H], the router's logits [T, E] and the experts' weights "
                "[E, F, H] and [E, H, I]");
  if (!x.shape || !logits.shape || !fc1.shape || !fc2.shape) return one(x);
  const Shape &xs = *x.shape, &ls = *logits.shape, &w1 = *fc1.shape, &w2 = *fc2.shape;
  Dim inner = w2[2], fused = a.activation == "swiglu" && inner.is_static() ? Dim(2 * inner.value())
                             : a.activation == "swiglu"                    ? Dim::unknown()
                                                                           : inner;
  if (!agree(xs[0], ls[0])) return fail("the rows and the router's logits differ in their count");
  if (!agree(ls[1], w1[0]) || !agree(ls[1], w2[0]))
    return fail("the router's logits and the experts' weights differ in their count of experts");
  if (!agree(xs[1], w1[2]) || !agree(xs[1], w2[1]))
    return fail("fc1 [E, F, H] and fc2 [E, H, I] must read and write the rows' H");
  if (!agree(w1[1], fused))
    return fail(a.activation == "swiglu" ? "fc1's F must be twice fc2's I (SwiGLU's two halves)"
                                         : "fc1's F must be fc2's I");
  if (ls[1].is_static() && a.k > ls[1].value())
    return fail(fmt::format("k={} of {} experts", a.k, ls[1].value()));
  for (auto [i, n] : {std::pair{3, w1[1]}, std::pair{5, w2[1]}}) {
    const TensorType& bias = in_type(node, static_cast<size_t>(i));
    if (node.input(static_cast<size_t>(i)) && bias.shape &&
        (bias.shape->size() != 2 || !agree((*bias.shape)[0], w1[0]) || !agree((*bias.shape)[1], n)))
      return fail(fmt::format("input {} must be a bias [E, {}]", i, i == 3 ? "F" : "H"));
  }
  return one(x);
}

// OptionalHasElement (15, 18): a bool scalar. Only a tensor input (true) or none (false) is
// supported: Weft has no optional values.
TypesOrError infer_optional_has_element(const Node&) { return one({DType::kBool, Shape{}}); }

// OptionalGetElement (15, 18) of a tensor: the tensor.
TypesOrError infer_optional_get_element(const Node& node) { return one(in_type(node, 0)); }

// AffineGrid: theta [N, 2, 3] and size [N, C, H, W] give [N, H, W, 2]; theta [N, 3, 4] and
// size [N, C, D, H, W] give [N, D, H, W, 3]. The spatial dims are known once size is constant.
TypesOrError infer_affine_grid(const Node& node) {
  const TensorType& theta = in_type(node, 0);
  const TensorType& size = in_type(node, 1);
  if (!size.shape || size.shape->size() != 1 || !(*size.shape)[0].is_static())
    return one({theta.dtype, std::nullopt});
  int64_t rank = (*size.shape)[0].value();
  if (rank != 4 && rank != 5) return fail("size must hold 4 or 5 values");
  int64_t spatial = rank - 2;
  if (theta.shape) {
    const Shape& t = *theta.shape;
    if (t.size() != 3 || !agree(t[1], Dim(spatial)) || !agree(t[2], Dim(spatial + 1)))
      return fail(fmt::format("theta must be [N, {}, {}] for size of {} values", spatial,
                              spatial + 1, rank));
  }
  Shape out = unknown_shape(static_cast<size_t>(rank));
  out.back() = spatial;
  if (theta.shape) out[0] = (*theta.shape)[0];
  if (std::optional<Ints> dims = constant_ints(node.input(1))) {
    for (size_t d = 2; d < dims->size(); ++d) {
      if ((*dims)[d] < 1) return fail("size values must be positive");
      out[d - 1] = (*dims)[d];
    }
  }
  return one({theta.dtype, out});
}

// Col2Im: input [N, C * prod(block_shape), L] gives [N, C, image_shape...]; the spatial
// rank is image_shape's length, and C and the extents are known once image_shape and
// block_shape are constant.
TypesOrError infer_col2im(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& image = in_type(node, 1);
  if (!image.shape || image.shape->size() != 1 || !(*image.shape)[0].is_static())
    return one({x.dtype, std::nullopt});
  int64_t spatial = (*image.shape)[0].value();
  if (x.shape && x.shape->size() != 3) return fail("input must be [N, C * block size, L]");
  Shape out = unknown_shape(static_cast<size_t>(spatial + 2));
  if (x.shape) out[0] = (*x.shape)[0];
  std::optional<Ints> block = constant_ints(node.input(2));
  if (block && x.shape && (*x.shape)[1].is_static()) {
    int64_t k = 1;
    for (int64_t b : *block)
      k *= b;
    if (k < 1 || (*x.shape)[1].value() % k != 0)
      return fail("input's dim 1 must be a multiple of the block size");
    out[1] = (*x.shape)[1].value() / k;
  }
  if (std::optional<Ints> dims = constant_ints(node.input(1))) {
    if (static_cast<int64_t>(dims->size()) != spatial) return fail("image_shape's length");
    for (size_t d = 0; d < dims->size(); ++d)
      out[d + 2] = (*dims)[d];
  }
  return one({x.dtype, out});
}

// TensorScatter: the present cache like the past one, which the update matches but along
// "axis".
TypesOrError infer_tensor_scatter(const Node& node) {
  const TensorType& past = in_type(node, 0);
  const TensorType& update = in_type(node, 1);
  if (update.dtype != past.dtype) return fail("the update and the cache have different types");
  if (!past.shape || !update.shape) return one(past);
  int64_t rank = static_cast<int64_t>(past.shape->size());
  WEFT_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(node.attrs_as<TensorScatterAttrs>().axis, rank));
  if (update.shape->size() != past.shape->size())
    return fail("the update and the cache must have one rank");
  for (int64_t d = 0; d < rank; ++d) {
    const Dim& u = (*update.shape)[static_cast<size_t>(d)];
    const Dim& p = (*past.shape)[static_cast<size_t>(d)];
    if (d == axis ? !fits(u, p) : !agree(u, p))
      return fail(fmt::format("the update's dim {} does not match the cache", d));
  }
  return one(past);
}

} // namespace weft
