#include "weft/onnx/contrib_decoder_ops.h"

#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace weft::contrib {

namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

// "x" [B, heads, S, head] rotated at positions "pos" [B, S] (or [1, S]) by cos_cache and
// sin_cache [max positions, R / 2]: its first R channels of each head, as halves (x1, x2) ->
// (x1 cos - x2 sin, x2 cos + x1 sin), or, "interleaved", as pairs of neighbours; the rest
// unchanged.
std::string rotate(Expansion& e, const std::string& x, const std::string& pos,
                   const std::string& cos_cache, const std::string& sin_cache, bool interleaved) {
  std::string half = e.dim(cos_cache, 1), width = e.op(Op::kAdd, {half, half});
  auto at_positions = [&](const std::string& cache, int64_t axis) { // [B, 1, S, R / 2 (, 1)]
    std::string c = e.op(Op::kUnsqueeze, {e.op(Op::kGather, {cache, pos}), e.ints({1})});
    return axis == 3 ? c : e.op(Op::kUnsqueeze, {c, e.ints({4})});
  };
  auto slice = [&](const std::string& t, const std::string& from, const std::string& to,
                   int64_t axis) {
    return e.op(Op::kSlice, {t, from, to, e.ints({axis})});
  };
  // The two rotated parts a and b of "axis", concatenated.
  auto rotated = [&](const std::string& a, const std::string& b, int64_t axis) {
    std::string c = at_positions(cos_cache, axis), s = at_positions(sin_cache, axis);
    std::string ra = e.op(Op::kSub, {e.op(Op::kMul, {a, c}), e.op(Op::kMul, {b, s})});
    std::string rb = e.op(Op::kAdd, {e.op(Op::kMul, {b, c}), e.op(Op::kMul, {a, s})});
    return e.op(Op::kConcat, {ra, rb}, {int_attr("axis", axis)});
  };
  std::string turned;
  if (interleaved) { // pairs along a new last axis: [B, heads, S, R / 2, 2]
    std::string pairs =
        e.op(Op::kReshape, {slice(x, e.ints({0}), width, 3), e.ints({0, 0, 0, -1, 2})});
    turned = rotated(slice(pairs, e.ints({0}), e.ints({1}), 4),
                     slice(pairs, e.ints({1}), e.ints({2}), 4), 4);
    turned = e.op(Op::kReshape, {turned, e.ints({0, 0, 0, -1})});
  } else {
    turned = rotated(slice(x, e.ints({0}), half, 3), slice(x, half, width, 3), 3);
  }
  std::string rest = slice(x, width, e.ints({kToEnd}), 3);
  return e.op(Op::kConcat, {turned, rest}, {int_attr("axis", 3)});
}

// "t" [B, S, n * head] as [B, n, S, head].
std::string heads_of(Expansion& e, const std::string& t, int64_t n) {
  std::string parts = e.op(Op::kReshape, {t, e.ints({0, 0, n, -1})});
  return e.op(Op::kTranspose, {parts}, {ints_attr("perm", {0, 2, 1, 3})});
}

// A shape [B, middle..., S, last] with B and S those of "q" [B, S, ...].
std::string shape_like(Expansion& e, const std::string& q, const std::vector<int64_t>& middle,
                       int64_t last) {
  return e.op(Op::kConcat, {e.dim(q, 0), e.ints(middle), e.dim(q, 1), e.ints({last})},
              {int_attr("axis", 0)});
}

// GroupQueryAttention(query, key, value, past_key, past_value, seqlens_k,
// total_sequence_length, cos_cache, sin_cache, position_ids, attention_bias, head_sink):
// causal attention of num_heads query heads over kv_num_heads key and value heads (query head h
// reads kv head h / (num_heads / kv_num_heads)), with a KV cache. Batch b holds seqlens_k[b] + 1
// tokens after this step; its S new ones (query [B, S, num_heads * head], or Q, K and V packed
// in query, key and value absent) are at positions past_b = max(seqlens_k[b] + 1 - S, 0) on.
// Present key and value [B, kv_num_heads, past length + S, head] are the past ones, then the new
// ones, which are also written at those positions: ONNX Runtime's growing cache, and its buffer
// of a maximum length works too (ONNX Runtime's present keeps the buffer's length; here it
// grows by S, the tokens past each batch's count masked). total_sequence_length is not read.
// Query s of batch b sees the keys at positions past_b + s and before it, under
// seqlens_k[b] + 1, and with local_window_size w > 0 the last w of those only. The scores:
// (Q K^T) * scale (1 / sqrt(head) by default), softcap * tanh(x / softcap) where softcap > 0,
// plus attention_bias; softmax with one more logit of head_sink[h] (or 0 with smooth_softmax).
// do_rotary rotates the new Q and K at position_ids, or at their positions. With
// sliding_window_cache (Gemma 3's and GPT-OSS's local layers) the past is a buffer of a local
// window's length w holding the last min(past_b, w) tokens from its start; the new ones are
// written after those, the keys' positions shift by what the buffer dropped, and present keeps
// the buffer's length, the last min(total, w) tokens from its start, zeros after. Checked against
// ONNX Runtime 1.32's CPU kernel, which it matches also on padded queries (docs/onnx-versions.md).
Status expand_group_query_attention(Expansion& e) {
  int64_t heads = e.int_attr_or("num_heads", 0), kv = e.int_attr_or("kv_num_heads", 0);
  if (heads <= 0 || kv <= 0 || heads % kv != 0)
    return Status::error("attributes 'num_heads' and 'kv_num_heads' are required, positive, "
                         "and num_heads a multiple of kv_num_heads");
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  if (e.in(5).empty() || e.in(6).empty())
    return Status::error("inputs 'seqlens_k' and 'total_sequence_length' are required");
  if (e.in(1).empty() != e.in(2).empty() || e.in(3).empty() != e.in(4).empty() ||
      e.in(7).empty() != e.in(8).empty())
    return Status::error("key and value, past_key and past_value, cos_cache and sin_cache each "
                         "go together");
  bool do_rotary = e.int_attr_or("do_rotary", 0) != 0;
  if (do_rotary && e.in(7).empty()) return Status::error("do_rotary needs cos_cache and sin_cache");
  if (!e.out(3).empty() || e.int_attr_or("qk_output", 0) != 0)
    return Status::error("output_qk is not supported");
  int64_t window = e.int_attr_or("local_window_size", -1);
  bool sliding = e.int_attr_or("sliding_window_cache", 0) != 0;
  if (sliding && (window <= 0 || e.in(3).empty()))
    return Status::error("sliding_window_cache needs local_window_size > 0 and past_key");
  std::string q = e.in(0), qh, kh, vh;
  if (e.in(1).empty()) { // packed: [B, S, (heads + 2 kv) * head]
    std::string all = heads_of(e, q, heads + 2 * kv);
    auto part = [&](int64_t from, int64_t to) {
      return e.op(Op::kSlice, {all, e.ints({from}), e.ints({to}), e.ints({1})});
    };
    qh = part(0, heads), kh = part(heads, heads + kv), vh = part(heads + kv, heads + 2 * kv);
  } else {
    qh = heads_of(e, q, heads), kh = heads_of(e, e.in(1), kv), vh = heads_of(e, e.in(2), kv);
  }
  // Each batch's token count, its first new position, and each query's own position [B, S].
  std::string total =
      e.op(Op::kAdd,
           {e.op(Op::kCast, {e.in(5)}, {int_attr("to", onnx::TensorProto::INT64)}), e.ints({1})});
  std::string past = e.op(Op::kMax, {e.op(Op::kSub, {total, e.dim(q, 1)}), e.ints({0})});
  std::string news = e.op(Op::kUnsqueeze, {e.positions(q, 1), e.ints({0})});
  std::string own = e.op(Op::kAdd, {e.op(Op::kUnsqueeze, {past, e.ints({1})}), news});
  // Where the past's tokens end in the cache and the new ones go: past_b, or in a sliding
  // window's buffer min(past_b, w).
  std::string slot = sliding ? e.op(Op::kMin, {past, e.ints({window})}) : past;
  std::string slot_own =
      sliding ? e.op(Op::kAdd, {e.op(Op::kUnsqueeze, {slot, e.ints({1})}), news}) : own;
  if (do_rotary) {
    std::string at = e.in(9).empty() ? own : e.in(9);
    bool interleaved = e.int_attr_or("rotary_interleaved", 0) != 0;
    qh = rotate(e, qh, at, e.in(7), e.in(8), interleaved);
    kh = rotate(e, kh, at, e.in(7), e.in(8), interleaved);
  }
  // The cache attention reads: the past one and the new keys (values) after it, which are also
  // scattered to [b, head, slot_b + s] for a batch whose past is shorter; it is the present
  // one but for a sliding window's.
  auto present = [&](const std::string& past_cache, const std::string& fresh, int out) {
    if (past_cache.empty()) {
      return e.out(out).empty() ? fresh : e.op(Op::kIdentity, {fresh}, {}, e.out(out));
    }
    std::string base = e.op(Op::kConcat, {past_cache, fresh}, {int_attr("axis", 2)});
    std::string shape = shape_like(e, q, {kv}, 1); // [B, kv, S, 1]
    std::string batch = e.op(Op::kReshape, {e.positions(q, 0), e.ints({-1, 1, 1, 1})});
    std::vector<int64_t> kv_heads(kv);
    std::iota(kv_heads.begin(), kv_heads.end(), 0);
    std::string head = e.constant_of(Tensor::from_vector(DType::kI64, {1, kv, 1, 1}, kv_heads));
    std::string at = e.op(Op::kReshape, {slot_own, e.ints({0, 1, -1, 1})});
    std::string index = e.op(Op::kConcat,
                             {e.op(Op::kExpand, {batch, shape}), e.op(Op::kExpand, {head, shape}),
                              e.op(Op::kExpand, {at, shape})},
                             {int_attr("axis", 3)});
    return e.op(Op::kScatterND, {base, index, fresh}, {}, sliding ? "" : e.out(out));
  };
  std::string keys = present(e.in(3), kh, 1), values = present(e.in(4), vh, 2);
  if (sliding) { // present[b, :, j] = cache[b, :, end_b - kept_b + j] for j < kept_b, else 0
    std::string kept = e.op(Op::kMin, {total, e.ints({window})});
    std::string end = e.op(Op::kSub, {e.op(Op::kAdd, {slot, total}), past});
    std::string first = e.op(Op::kReshape, {e.op(Op::kSub, {end, kept}), e.ints({-1, 1, 1, 1})});
    std::string j = e.op(Op::kReshape, {e.positions(e.in(3), 2), e.ints({1, 1, -1, 1})});
    std::string index =
        e.op(Op::kExpand, {e.op(Op::kAdd, {first, j}), e.op(Op::kShape, {e.in(3)})});
    std::string keep = e.op(Op::kLess, {j, e.op(Op::kReshape, {kept, e.ints({-1, 1, 1, 1})})});
    for (auto [cache, out] : {std::pair{keys, 1}, std::pair{values, 2}}) {
      std::string window_of = e.op(Op::kGatherElements, {cache, index}, {int_attr("axis", 2)});
      e.op(Op::kWhere, {keep, window_of, e.scalar(0.0, q)}, {}, e.out(out));
    }
  }
  // Query heads grouped by their kv head: Q [B, kv, G, S, head] against K [B, kv, 1, L, head],
  // the scores [B, kv, G, S, L] through to the product with V, with the mask added: the form
  // of Weft's attention call on the CPU (library/attention_call.h), which leaves out the keys
  // a causal mask hides.
  int64_t group = heads / kv;
  std::string grouped = e.op(Op::kReshape, {qh, shape_like(e, q, {kv, group}, -1)});
  std::string kt = e.op(Op::kTranspose, {e.op(Op::kUnsqueeze, {keys, e.ints({2})})},
                        {ints_attr("perm", {0, 1, 2, 4, 3})});
  std::string scores = e.op(Op::kMatMul, {grouped, kt});
  std::string scale;
  if (float s = e.float_attr_or("scale", 0.0f); s != 0.0f) {
    scale = e.scalar(s, q);
  } else { // 1 / sqrt(head size)
    std::string size = e.op(Op::kCast, {e.dim(qh, 3)}, {int_attr("to", onnx::TensorProto::FLOAT)});
    scale = e.op(Op::kCastLike, {e.op(Op::kReciprocal, {e.op(Op::kSqrt, {size})}), q});
  }
  scores = e.op(Op::kMul, {scores, scale});
  if (float cap = e.float_attr_or("softcap", 0.0f); cap > 0.0f) {
    std::string c = e.scalar(cap, q);
    scores = e.op(Op::kMul, {e.op(Op::kTanh, {e.op(Op::kDiv, {scores, c})}), c});
  }
  // Keys after the query's own position, or from the batch's token count on, or (a local
  // window of w) w or more before it, are left out: -inf in the addend, which is otherwise
  // attention_bias [B or 1, heads, S, L] (grouped as the scores) or 0.
  std::string key_at = e.positions(keys, 2);
  if (sliding) { // the buffer dropped past_b - slot_b tokens before its first
    key_at = e.op(Op::kAdd,
                  {key_at, e.op(Op::kReshape, {e.op(Op::kSub, {past, slot}), e.ints({-1, 1, 1})})});
  }
  std::string own_at = e.op(Op::kUnsqueeze, {own, e.ints({2})});
  std::string hidden =
      e.op(Op::kOr,
           {e.op(Op::kGreater, {key_at, own_at}),
            e.op(Op::kGreaterOrEqual, {key_at, e.op(Op::kReshape, {total, e.ints({-1, 1, 1})})})});
  if (window > 0) {
    std::string first = e.op(Op::kSub, {own_at, e.ints({window})});
    hidden = e.op(Op::kOr, {hidden, e.op(Op::kLessOrEqual, {key_at, first})});
  }
  std::string kept = e.scalar(0.0, q);
  if (!e.in(10).empty()) {
    std::string bias = e.in(10);
    kept = e.op(Op::kReshape,
                {bias, e.op(Op::kConcat,
                            {e.dim(bias, 0), e.ints({kv, group}), e.dim(bias, 2), e.dim(bias, 3)},
                            {int_attr("axis", 0)})});
  }
  std::string addend =
      e.op(Op::kWhere, {e.op(Op::kUnsqueeze, {hidden, e.ints({1, 2})}),
                        e.scalar(-std::numeric_limits<double>::infinity(), q), kept});
  scores = e.op(Op::kAdd, {scores, addend});
  std::string probs;
  bool smooth = e.int_attr_or("smooth_softmax", 0) != 0;
  if (!e.in(11).empty() || smooth) { // one more logit per row, dropped after the softmax
    std::string flat = e.op(Op::kReshape, {scores, shape_like(e, q, {heads}, -1)});
    std::string sink = e.in(11).empty()
                           ? e.op(Op::kReshape, {e.scalar(0.0, q), e.ints({1, 1, 1, 1})})
                           : e.op(Op::kReshape, {e.in(11), e.ints({1, -1, 1, 1})});
    std::string column = e.op(Op::kExpand, {sink, shape_like(e, q, {heads}, 1)});
    std::string widened = e.op(Op::kConcat, {flat, column}, {int_attr("axis", -1)});
    // (Ending at the scores' length, not at -1, which leaves the length unknown over symbols.)
    probs = e.op(Op::kSlice, {e.op(Op::kSoftmax, {widened}, {int_attr("axis", -1)}), e.ints({0}),
                              e.dim(flat, 3), e.ints({-1})});
    probs = e.op(Op::kReshape, {probs, shape_like(e, q, {kv, group}, -1)});
  } else {
    probs = e.op(Op::kSoftmax, {scores}, {int_attr("axis", -1)});
  }
  std::string mixed = e.op(Op::kMatMul, {probs, e.op(Op::kUnsqueeze, {values, e.ints({2})})});
  std::string merged =
      e.op(Op::kTranspose, {e.op(Op::kReshape, {mixed, shape_like(e, q, {heads}, -1)})},
           {ints_attr("perm", {0, 2, 1, 3})});
  e.op(Op::kReshape, {merged, e.ints({0, 0, -1})}, {}, e.out(0));
  return Status();
}

// RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input [B, S, num_heads * head]
// or [B, num_heads, S, head] rotated (rotate()) at position_ids [B, S], or at position_ids[0] + s
// where position_ids is [1]. Without num_heads, the head is 2 * cos_cache's dim 1 wide.
// Refused: is_packed_batching.
Status expand_rotary_embedding(Expansion& e) {
  if (e.int_attr_or("is_packed_batching", 0) != 0)
    return Status::error("is_packed_batching is not supported");
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  std::optional<int> rank = e.rank(e.in(0)), pos_rank = e.rank(e.in(1));
  if (!rank || (*rank != 3 && *rank != 4) || !pos_rank || (*pos_rank != 1 && *pos_rank != 2))
    return Status::error("needs the ranks of input (3 or 4) and position_ids (1 or 2) in the "
                         "graph (a graph input, an initializer or a value_info says them)");
  int64_t heads = e.int_attr_or("num_heads", 0);
  std::string x = e.in(0);
  if (*rank == 3) {
    std::string head = e.op(Op::kAdd, {e.dim(e.in(2), 1), e.dim(e.in(2), 1)});
    std::string shape = heads > 0
                            ? e.ints({0, 0, heads, -1})
                            : e.op(Op::kConcat, {e.ints({0, 0, -1}), head}, {int_attr("axis", 0)});
    x = e.op(Op::kTranspose, {e.op(Op::kReshape, {x, shape})}, {ints_attr("perm", {0, 2, 1, 3})});
  }
  std::string pos = e.in(1);
  if (*pos_rank == 1) {
    std::string steps = e.op(Op::kUnsqueeze, {e.positions(x, 2), e.ints({0})});
    pos = e.op(Op::kAdd, {pos, steps});
  }
  std::string y = rotate(e, x, pos, e.in(2), e.in(3), e.int_attr_or("interleaved", 0) != 0);
  if (*rank == 4) {
    e.op(Op::kIdentity, {y}, {}, e.out(0));
  } else {
    std::string back = e.op(Op::kTranspose, {y}, {ints_attr("perm", {0, 2, 1, 3})});
    e.op(Op::kReshape, {back, e.ints({0, 0, -1})}, {}, e.out(0));
  }
  return Status();
}

// CausalConvWithState(input, weight, bias, past_state): LFM2's and Qwen 3.5's short
// convolutions with their state. input [B, C, S] convolved per channel (weight [C, 1, K]) over
// past_state [B, C, K - 1] (zeros when absent) then the input, no padding; plus bias [C], then
// activation "none" or "silu". present_state: the last K - 1 columns of past_state and input.
// Refused: ndim other than 1, state_window (ONNX Runtime's CPU refuses it too), other
// activations.
Status expand_causal_conv_with_state(Expansion& e) {
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  if (e.int_attr_or("ndim", 1) != 1) return Status::error("only ndim=1 is supported");
  if (e.int_attr_or("state_window", 0) != 0) return Status::error("state_window is not supported");
  std::string activation = e.string_attr_or("activation", "none");
  if (activation != "none" && activation != "silu")
    return Status::error(
        fmt::format("activation '{}' is not supported (none or silu)", activation));
  std::string x = e.in(0), w = e.in(1);
  // Conv's group is an attribute: the channels and K are the weight's dims, a constant here.
  const onnx::TensorProto* weight = e.constant(w);
  if (!weight || weight->dims_size() != 3 || weight->dims(1) != 1 || weight->dims(2) < 1)
    return Status::error("weight must be a constant [C, 1, K]");
  int64_t channels = weight->dims(0), state = weight->dims(2) - 1;
  std::string joined = e.in(3).empty() // K - 1 zeros before the input
                           ? e.op(Op::kPad, {x, e.ints({0, 0, state, 0, 0, 0})})
                           : e.op(Op::kConcat, {e.in(3), x}, {int_attr("axis", 2)});
  std::string y = e.op(Op::kConv, {joined, w, e.in(2)}, {int_attr("group", channels)});
  if (activation == "silu") y = e.op(Op::kMul, {y, e.op(Op::kSigmoid, {y})});
  e.op(Op::kIdentity, {y}, {}, e.out(0));
  if (!e.out(1).empty()) {
    std::string from = e.op(Op::kSub, {e.dim(joined, 2), e.ints({state})});
    e.op(Op::kSlice, {joined, from, e.dim(joined, 2), e.ints({2})}, {}, e.out(1));
  }
  return Status();
}

// MoE(input, router_probs, fc1_experts_weights, fc1_experts_bias, fc2_experts_weights,
// fc2_experts_bias): a mixture of experts (GPT-OSS from GenAI's builder). input [T, H] or
// [B, S, H]; router_probs the logits [T, E]; fc1 [E, F, H] (F = 2 I for SwiGLU, its gate and
// linear halves interleaved), fc2 [E, H, I], biases [E, F] and [E, H]. It becomes Weft's
// weft.MoE over the rows of the input (attrs.h, MoEAttrs, has the semantics): on the CPU a
// library call that runs each expert on its tokens only (library/moe_call.h), elsewhere the
// dense form of graph/passes/expand_moe.h. Refused: fc3 (ONNX Runtime's CPU refuses it too),
// swiglu_fusion other than 1, use_sparse_mixer.
// The experts' weights: fc1, its bias, fc2, its bias (names; biases may be empty).
struct Experts {
  std::string fc1, fc1_bias, fc2, fc2_bias;
};

Status mixture_of_experts(Expansion& e, const Experts& experts) {
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  int64_t k = e.int_attr_or("k", 1);
  std::string activation = e.string_attr_or("activation_type", "relu");
  bool swiglu = activation == "swiglu";
  if (activation != "relu" && activation != "gelu" && activation != "silu" && !swiglu)
    return Status::error(fmt::format("activation_type '{}' is not supported", activation));
  if (swiglu && e.int_attr_or("swiglu_fusion", 0) != 1)
    return Status::error("only swiglu_fusion=1 (gate and linear interleaved) is supported");
  if (e.int_attr_or("use_sparse_mixer", 0) != 0)
    return Status::error("use_sparse_mixer is not supported");
  if (k < 1) return Status::error("attribute 'k' must be positive");
  auto rows_of = [&](const std::string& v) { // v as [rows, its last dim]
    std::string last = e.op(Op::kSlice, {e.op(Op::kShape, {v}), e.ints({-1}),
                                         e.ints({std::numeric_limits<int64_t>::max()})});
    return e.op(Op::kReshape, {v, e.op(Op::kConcat, {e.ints({-1}), last}, {int_attr("axis", 0)})});
  };
  std::vector<onnx::AttributeProto> attrs;
  for (const char* name : {"k", "activation_type", "normalize_routing_weights", "swiglu_limit",
                           "activation_alpha", "activation_beta"}) {
    if (const onnx::AttributeProto* a = find_attr(e.node(), name)) attrs.push_back(*a);
  }
  std::string y = e.op(Op::kMoE,
                       {rows_of(e.in(0)), rows_of(e.in(1)), experts.fc1, experts.fc1_bias,
                        experts.fc2, experts.fc2_bias},
                       std::move(attrs));
  e.op(Op::kReshape, {y, e.op(Op::kShape, {e.in(0)})}, {}, e.out(0));
  return Status();
}

Status expand_moe(Expansion& e) {
  if (!e.in(6).empty() || !e.in(7).empty()) return Status::error("fc3 is not supported");
  if (e.in(4).empty()) return Status::error("input 'fc2_experts_weights' is required");
  return mixture_of_experts(e, {e.in(2), e.in(3), e.in(4), e.in(5)});
}

// QMoE(input, router_probs, fc1_experts_weights, fc1_scales, fc1_experts_bias,
// fc2_experts_weights, fc2_scales, fc2_experts_bias, ...): MoE with weights of
// expert_weight_bits 4 or 8, symmetric (zero 8 or 128), packed low bits first along K, scales
// per block of block_size along K ([E, N, K / block_size]) or per row ([E, N]). The weights
// stay quantized: DequantizeLinear of q [E, N, K] (u4 or u8, a byte per weight in Weft's
// memory) in blocks along K (a row's length without block_size), at any opset (Weft's graph
// takes a blocked DequantizeLinear and u4 whatever the model's opset), which the CPU's call
// multiplies as weight_only_matmul.h does, with ONNX Runtime's arithmetic: its CPU kernels
// multiply 8-bit weights by activations quantized to int8 per block, as MatMulNBits' accuracy
// level 4 (the DequantizeLinear carries that level; Weft's outputs then agree with its within
// 6e-7 where the CPU has VNNI; about 0.3% from the dequantized product), and 4-bit ones in f32.
// Refused: fc3, zero points, weights or scales given at run time.
Status expand_qmoe(Expansion& e) {
  for (int i = 8; i < 15; ++i) {
    if (!e.in(i).empty())
      return Status::error("fc3, zero points and router weights are not supported");
  }
  if (e.in(5).empty() || e.in(6).empty())
    return Status::error("inputs 'fc2_experts_weights' and 'fc2_scales' are required");
  int64_t bits = e.int_attr_or("expert_weight_bits", 4), block = e.int_attr_or("block_size", 0);
  if (bits != 4 && bits != 8) return Status::error("expert_weight_bits must be 4 or 8");
  auto dequantized = [&](int weights, int scales) -> Result<std::string> {
    const onnx::TensorProto *qp = e.constant(e.in(weights)), *sp = e.constant(e.in(scales));
    if (!qp || !sp)
      return Status::error("expert weights and scales given at run time are not supported");
    WEFT_ASSIGN_OR_RETURN(const Tensor q, e.tensor(*qp));
    WEFT_ASSIGN_OR_RETURN(const Tensor scale, e.tensor(*sp));
    const std::vector<int64_t>& qd = q.dims();
    if (q.dtype() != DType::kU8 || qd.size() != 3 || !dtype_is_float(scale.dtype()))
      return Status::error("expert weights must be uint8 [E, N, K * bits / 8] with float scales");
    int64_t experts = qd[0], n = qd[1], k = qd[2] * 8 / bits;
    int64_t blocks = block > 0 ? (k + block - 1) / block : 1;
    int64_t elements = 0;
    if (scale.num_elements() != experts * n * blocks ||
        !dims_are_allocatable(DType::kU8, {experts, n, k}, &elements)) // a byte a weight
      return Status::error(fmt::format("scales must hold {} x {} x {} values", experts, n, blocks));
    DType type = bits == 4 ? DType::kU4 : DType::kU8;
    // qd[2] bytes a row: ONNX's packing of u4 (low bits first) or u8.
    std::string packed = e.packed_constant(type, {experts, n, k}, q.data(), q.num_bytes(), *qp);
    Tensor s(scale.dtype(), {experts, n, blocks}), zero(type, {experts, n, blocks});
    std::copy_n(scale.data(), s.num_bytes(), s.data());
    for (int64_t i = 0; i < zero.num_elements(); ++i)
      zero.set_int64(i, 1 << (bits - 1));
    return e.op(Op::kDequantizeLinear, {packed, e.constant_of(s), e.constant_of(zero)},
                {int_attr("axis", 2), int_attr("block_size", block > 0 ? block : k),
                 int_attr("accuracy_level", bits == 8 ? 4 : 0)});
  };
  WEFT_ASSIGN_OR_RETURN(std::string fc1, dequantized(2, 3));
  WEFT_ASSIGN_OR_RETURN(std::string fc2, dequantized(5, 6));
  return mixture_of_experts(e, {fc1, e.in(4), fc2, e.in(7)});
}

} // namespace

std::map<std::string, ContribOp> decoder_ops() {
  return {
      {"com.microsoft.GroupQueryAttention",
       {{"query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
         "cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink"},
        1,
        expand_group_query_attention}},
      {"com.microsoft.RotaryEmbedding",
       {{"input", "position_ids", "cos_cache", "sin_cache"}, 4, expand_rotary_embedding}},
      {"com.microsoft.CausalConvWithState",
       {{"input", "weight", "bias", "past_state"}, 2, expand_causal_conv_with_state}},
      {"com.microsoft.MoE",
       {{"input", "router_probs", "fc1_experts_weights", "fc1_experts_bias", "fc2_experts_weights",
         "fc2_experts_bias", "fc3_experts_weights", "fc3_experts_bias"},
        3,
        expand_moe}},
      {"com.microsoft.QMoE",
       {{"input", "router_probs", "fc1_experts_weights", "fc1_scales", "fc1_experts_bias",
         "fc2_experts_weights", "fc2_scales", "fc2_experts_bias", "fc3_experts_weights",
         "fc3_scales", "fc3_experts_bias", "fc1_zero_points", "fc2_zero_points", "fc3_zero_points",
         "router_weights"},
        4,
        expand_qmoe}},
  };
}

} // namespace weft::contrib
