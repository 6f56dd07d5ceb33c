#include "weft/graph/sequence_model_ops.h"

#include <fmt/format.h>

#include "weft/graph/shape_function_helpers.h"

namespace weft {

using namespace shape_detail;

OpAttrs parse_linear_attention(AttrParser& p) {
  LinearAttentionAttrs a;
  if (!p.has("q_num_heads") || !p.has("kv_num_heads"))
    p.fail("attributes 'q_num_heads' and 'kv_num_heads' are required");
  a.q_num_heads = p.int_or("q_num_heads", 1);
  a.kv_num_heads = p.int_or("kv_num_heads", 1);
  a.scale = p.float_or("scale", 0.0f);
  std::string rule = p.string_or("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    p.fail(fmt::format("attribute 'update_rule' has unknown value '{}' (expected linear, gated, "
                       "delta or gated_delta)",
                       rule));
  }
  a.gated = rule == "gated" || rule == "gated_delta";
  a.delta = rule == "delta" || rule == "gated_delta";
  if (a.q_num_heads < 1 || a.kv_num_heads < 1 || a.q_num_heads % a.kv_num_heads != 0) {
    p.fail(fmt::format("attribute 'q_num_heads' ({}) must be a positive multiple of "
                       "'kv_num_heads' ({})",
                       a.q_num_heads, a.kv_num_heads));
  }
  p.int_or("chunk_size", 64); // a tuning hint of chunked kernels; no effect on the values
  return a;
}

OpAttrs parse_causal_conv(AttrParser& p) {
  std::string activation = p.string_or("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish") {
    p.fail(fmt::format("attribute 'activation' has unknown value '{}' (expected silu, swish or "
                       "none)",
                       activation));
  }
  return CausalConvAttrs{activation != "none"};
}

// The modifier graphs are read by the importer, which knows graphs; this reads the rest.
OpAttrs parse_flex_attention(AttrParser& p) {
  FlexAttentionAttrs a;
  a.scale = p.optional_float("scale");
  if (p.has("softmax_precision")) {
    DType t = p.dtype("softmax_precision", DType::kF32);
    if (!dtype_is_float(t)) p.fail("attribute 'softmax_precision' must name a floating-point type");
    a.softmax_precision = t;
  }
  return a;
}

namespace {

// "hidden" / "heads", when "hidden" is static (and a multiple of it).
Result<Dim> per_head(const Dim& hidden, int64_t heads, const char* what) {
  if (!hidden.is_static()) return Dim::unknown();
  if (hidden.value() % heads != 0)
    return fail(
        fmt::format("{}'s last dim {} is not a multiple of {} heads", what, hidden.value(), heads));
  return Dim(hidden.value() / heads);
}

// Is the last dim of "v" (rank 3) one of "allowed" (where both are known)?
Status check_last_dim(const Value* v, const char* what, std::initializer_list<Dim> allowed) {
  if (!v->type.shape) return Status();
  if (v->type.shape->size() != 3) return fail(fmt::format("{} must be rank 3", what));
  const Dim& last = v->type.shape->back();
  if (!last.is_static()) return Status();
  std::vector<std::string> names;
  for (const Dim& d : allowed) {
    if (!d.is_static() || d == last) return Status();
    names.push_back(d.to_string());
  }
  return fail(fmt::format("{}'s last dim is {}, expected {}", what, last.to_string(),
                          fmt::join(names, " or ")));
}

} // namespace

// y [B, T, Hq * dv]; present_state [B, Hkv, dk, dv], in past_state's type (the query's
// without one). The decay and beta inputs are what the update rule needs, no more.
TypesOrError infer_linear_attention(const Node& node) {
  const auto& a = node.attrs_as<LinearAttentionAttrs>();
  const TensorType& q = in_type(node, 0);
  const Value* past = node.input(3);
  DType state_type = past ? past->type.dtype : q.dtype;
  const Value* decay = node.input(4);
  const Value* beta = node.input(5);
  if (a.gated != (decay != nullptr)) {
    return fail(a.gated ? "the gated update rules need the input 'decay'"
                        : "input 'decay' is only read by the gated update rules");
  }
  if (a.delta != (beta != nullptr)) {
    return fail(a.delta ? "the delta update rules need the input 'beta'"
                        : "input 'beta' is only read by the delta update rules");
  }
  for (size_t i = 0; i < 3; ++i) {
    const TensorType& t = in_type(node, i);
    if (t.shape && t.shape->size() != 3) return fail("query, key and value must be rank 3");
  }
  const TensorType& k = in_type(node, 1);
  const TensorType& v = in_type(node, 2);
  if (!q.shape || !k.shape || !v.shape)
    return std::vector<TensorType>{{q.dtype, std::nullopt}, {state_type, std::nullopt}};
  const Shape &qs = *q.shape, &ks = *k.shape, &vs = *v.shape;
  WEFT_ASSIGN_OR_RETURN(Dim dk, per_head(qs[2], a.q_num_heads, "query"));
  WEFT_ASSIGN_OR_RETURN(Dim dv, per_head(vs[2], a.kv_num_heads, "value"));
  Dim kv_dk = dk.is_static() ? Dim(dk.value() * a.kv_num_heads) : Dim::unknown();
  if (!agree(ks[2], kv_dk)) return fail("key's last dim must be kv_num_heads * d_k");
  for (size_t d = 0; d < 2; ++d) {
    if (!agree(qs[d], ks[d]) || !agree(qs[d], vs[d]))
      return fail("query, key and value must agree in batch and sequence length");
  }
  Dim y_last = dv.is_static() ? Dim(dv.value() * a.q_num_heads) : Dim::unknown();
  Shape state = {qs[0], Dim(a.kv_num_heads), dk, dv};
  if (past && past->type.shape) {
    const Shape& ps = *past->type.shape;
    if (ps.size() != 4) return fail("past_state must be rank 4 (B, Hkv, d_k, d_v)");
    for (size_t d = 0; d < 4; ++d) {
      if (!agree(ps[d], state[d])) return fail("past_state must be (B, kv_num_heads, d_k, d_v)");
    }
  }
  if (decay) {
    WEFT_RETURN_IF_ERROR(check_last_dim(decay, "decay", {Dim(a.kv_num_heads), kv_dk}));
  }
  if (beta) WEFT_RETURN_IF_ERROR(check_last_dim(beta, "beta", {Dim(a.kv_num_heads), Dim(1)}));
  return std::vector<TensorType>{{q.dtype, Shape{qs[0], qs[1], y_last}}, {state_type, state}};
}

// y [B, C, L]; present_state [B, C, k - 1] (the weight is [C, 1, k]).
TypesOrError infer_causal_conv(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& w = in_type(node, 1);
  if (x.shape && x.shape->size() != 3) return fail("input must be rank 3 (B, C, L)");
  if (w.shape && w.shape->size() != 3) return fail("weight must be rank 3 (C, 1, k)");
  if (!x.shape || !w.shape)
    return std::vector<TensorType>{{x.dtype, x.shape}, {x.dtype, std::nullopt}};
  const Shape &xs = *x.shape, &ws = *w.shape;
  if (!agree(ws[0], xs[1]) || !agree(ws[1], Dim(1)))
    return fail("weight must be (C, 1, k) for a depthwise convolution");
  Dim taps = ws[2].is_static() ? Dim(ws[2].value() - 1) : Dim::unknown();
  if (taps.is_static() && taps.value() < 0) return fail("weight's kernel size must be at least 1");
  WEFT_RETURN_IF_ERROR(check_per_channel(node.input(2), xs[1], "bias"));
  Shape state = {xs[0], xs[1], taps};
  if (const Value* past = node.input(3); past && past->type.shape) {
    const Shape& ps = *past->type.shape;
    if (ps.size() != 3 || !agree(ps[0], xs[0]) || !agree(ps[1], xs[1]) || !agree(ps[2], taps))
      return fail("past_state must be (B, C, k - 1)");
  }
  return std::vector<TensorType>{{x.dtype, xs}, {x.dtype, state}};
}

// Y [B, Hq, L, Ev] from Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev].
TypesOrError infer_flex_attention(const Node& node) {
  const TensorType& q = in_type(node, 0);
  const TensorType& k = in_type(node, 1);
  const TensorType& v = in_type(node, 2);
  if (!q.shape || !k.shape || !v.shape) return one({q.dtype, std::nullopt});
  if (q.shape->size() != 4 || k.shape->size() != 4 || v.shape->size() != 4)
    return fail("Q, K and V must be rank 4");
  const Shape &qs = *q.shape, &ks = *k.shape, &vs = *v.shape;
  if (!agree(qs[3], ks[3])) return fail("Q and K must have the same head size");
  if (!agree(ks[1], vs[1]) || !agree(ks[2], vs[2]))
    return fail("K and V must agree in heads and sequence length");
  if (qs[1].is_static() && ks[1].is_static() && qs[1].value() % ks[1].value() != 0)
    return fail("Q's heads must be a multiple of K's");
  return one({q.dtype, Shape{qs[0], qs[1], qs[2], vs[3]}});
}

} // namespace weft
