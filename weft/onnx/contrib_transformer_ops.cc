#include "weft/onnx/contrib_transformer_ops.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weft::contrib {

namespace {

// Gelu as erf: x / 2 * (1 + erf(x / sqrt(2))), into output 0.
std::string gelu(Expansion& e, const std::string& x) {
  std::string erf = e.op(Op::kErf, {e.op(Op::kMul, {x, e.scalar(M_SQRT1_2, x)})});
  std::string half = e.op(Op::kMul, {x, e.scalar(0.5, x)});
  return e.op(Op::kMul, {half, e.op(Op::kAdd, {erf, e.scalar(1.0, x)})}, {}, e.out(0));
}

// FastGelu(X, bias): Gelu's tanh form of X + bias,
// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).
Status expand_fast_gelu(Expansion& e) {
  std::string x = e.in(1).empty() ? e.in(0) : e.op(Op::kAdd, {e.in(0), e.in(1)});
  std::string cube = e.op(Op::kMul, {x, e.op(Op::kMul, {x, x})});
  std::string inner = e.op(Op::kAdd, {x, e.op(Op::kMul, {cube, e.scalar(0.044715, x)})});
  std::string t = e.op(Op::kTanh, {e.op(Op::kMul, {inner, e.scalar(std::sqrt(2 / M_PI), x)})});
  std::string half = e.op(Op::kMul, {x, e.scalar(0.5, x)});
  e.op(Op::kMul, {half, e.op(Op::kAdd, {t, e.scalar(1.0, x)})}, {}, e.out(0));
  return Status();
}

// FusedMatMul(A, B): alpha * A' B', A' and B' A and B with their last two axes swapped
// where transA and transB say.
Status expand_fused_matmul(Expansion& e) {
  if (e.int_attr_or("transBatchA", 0) || e.int_attr_or("transBatchB", 0))
    return Status::error("transBatchA and transBatchB are not supported");
  if (e.opset() < 12 && (e.int_attr_or("transA", 0) || e.int_attr_or("transB", 0)))
    return Status::error("transA and transB need ai.onnx opset 12 or later (Einsum)");
  auto operand = [&](int i, const char* trans) {
    if (!e.int_attr_or(trans, 0)) return e.in(i);
    // The rank is not known here, which a Transpose's permutation needs; Einsum's is not.
    onnx::AttributeProto eq;
    eq.set_name("equation");
    eq.set_type(onnx::AttributeProto::STRING);
    eq.set_s("...ij->...ji");
    return e.op(Op::kEinsum, {e.in(i)}, {eq});
  };
  std::string a = operand(0, "transA"), b = operand(1, "transB");
  float alpha = e.float_attr_or("alpha", 1.0f);
  if (alpha == 1.0f) {
    e.op(Op::kMatMul, {a, b}, {}, e.out(0));
  } else {
    e.op(Op::kMul, {e.op(Op::kMatMul, {a, b}), e.scalar(alpha, e.in(0))}, {}, e.out(0));
  }
  return Status();
}

// Normalizes "x" over its last axis: (x - mean) / sqrt(var + epsilon), or, for RMSNorm
// ("rms"), x / sqrt(mean(x^2) + epsilon); times gamma, plus beta when given, into output 0.
void normalize(Expansion& e, std::string x, float epsilon, bool rms, const std::string& gamma,
               const std::string& beta) {
  if (!rms) x = e.op(Op::kSub, {x, e.mean(x, {-1})});
  std::string var = e.mean(e.op(Op::kMul, {x, x}), {-1});
  std::string sd = e.op(Op::kSqrt, {e.op(Op::kAdd, {var, e.scalar(epsilon, gamma)})});
  std::string scaled =
      e.op(Op::kMul, {e.op(Op::kDiv, {x, sd}), gamma}, {}, beta.empty() ? e.out(0) : std::string());
  if (!beta.empty()) e.op(Op::kAdd, {scaled, beta}, {}, e.out(0));
}

// SkipLayerNormalization(input, skip, gamma, beta, bias) and
// SkipSimplifiedLayerNormalization(input, skip, gamma, bias): LayerNorm (RMSNorm) over the
// last axis of input + skip + bias; that sum is output 3. Outputs 1 and 2 (the mean and the
// inverse standard deviation) are refused.
Status expand_skip_norm(Expansion& e, bool rms) {
  if (!e.out(1).empty() || !e.out(2).empty())
    return Status::error("outputs 1 and 2 (mean, inv_std_var) are not supported");
  std::string bias = e.in(rms ? 3 : 4);
  std::string sum = e.op(Op::kAdd, {e.in(0), e.in(1)}, {}, bias.empty() ? e.out(3) : "");
  if (!bias.empty()) sum = e.op(Op::kAdd, {sum, bias}, {}, e.out(3));
  normalize(e, sum, e.float_attr_or("epsilon", 1e-12f), rms, e.in(2), rms ? "" : e.in(3));
  return Status();
}

// What ONNX Runtime's Attention and MultiHeadAttention share (its CPU kernels' attention):
// softmax(Q K^T * scale + attention_bias + mask) V of q [B, S, D], k [B, L, D] and v [B, L,
// Dv], each split into "heads" heads, the heads merged into output 0, [B, S, Dv]. "scale"
// defaults to 1 / sqrt(D / heads). Masked scores get mask_filter_value (-10000 by default)
// added: the mask (input "mask_input") [B] (each batch's keys from that position on), [2B]
// (those and the keys before the second B positions), [B, L] or [B, S, L] (0 or less masks
// a key), its rank from the graph; unidirectional leaves the keys after each query but the
// last out of its softmax (ONNX Runtime's kernel stops there, even for a query the mask masks
// whole).
Status attend(Expansion& e, const std::string& q, const std::string& k, const std::string& v,
              int64_t heads, int mask_input, int bias_input) {
  // As [B, heads, S, D / heads], K as [B, heads, D / heads, L].
  auto split = [&](const std::string& t, const std::vector<int64_t>& perm) {
    std::string parts = e.op(Op::kReshape, {t, e.ints({0, 0, heads, -1})});
    return e.op(Op::kTranspose, {parts}, {ints_attr("perm", perm)});
  };
  std::string qh = split(q, {0, 2, 1, 3}), kh = split(k, {0, 2, 3, 1}), vh = split(v, {0, 2, 1, 3});
  std::string scale;
  if (find_attr(e.node(), "scale")) {
    scale = e.scalar(e.float_attr_or("scale", 1.0f), q);
  } else { // 1 / sqrt(head size), from Q's shape
    std::string size = e.op(Op::kCast, {e.dim(qh, 3)}, {int_attr("to", onnx::TensorProto::FLOAT)});
    scale = e.op(Op::kReciprocal, {e.op(Op::kSqrt, {size})});
    if (e.opset() >= 15) scale = e.op(Op::kCastLike, {scale, q});
  }
  std::string scores = e.op(Op::kMul, {e.op(Op::kMatMul, {qh, kh}), scale});
  if (!e.in(bias_input).empty()) scores = e.op(Op::kAdd, {scores, e.in(bias_input)});
  // The keys the mask masks for each query, as bools broadcasting to [B, heads, S, L].
  std::string masked;
  if (std::string mask = e.in(mask_input); !mask.empty()) {
    std::optional<int> rank = e.rank(mask);
    if (!rank) {
      return Status::error(fmt::format("mask '{}' has no rank in the graph (a graph input, an "
                                       "initializer or a value_info says it)",
                                       mask));
    }
    if (*rank == 1) { // [B] ends, or [2B] ends then starts: keys outside [start, end) masked
      std::string b = e.dim(q, 0);
      std::string zeros =
          e.op(Op::kConstantOfShape, {b}, {tensor_attr("value", Tensor(DType::kI32, {1}))});
      std::string both = e.op(Op::kConcat, {mask, zeros}, {int_attr("axis", 0)}); // starts 0
      auto column = [&](const std::string& from, const std::string& to) {
        std::string piece = e.op(Op::kSlice, {both, from, to, e.ints({0})});
        return e.op(
            Op::kUnsqueeze,
            {e.op(Op::kCast, {piece}, {int_attr("to", onnx::TensorProto::INT64)}), e.ints({1})});
      };
      std::string keys = e.positions(k, 1);
      std::string outside =
          e.op(Op::kOr, {e.op(Op::kGreaterOrEqual, {keys, column(e.ints({0}), b)}),
                         e.op(Op::kLess, {keys, column(b, e.op(Op::kAdd, {b, b}))})});
      masked = e.op(Op::kUnsqueeze, {outside, e.ints({1, 2})});
    } else if (*rank == 2 || *rank == 3) {                       // 0 or less masks a key
      std::string zero = e.constant_of(Tensor(DType::kI32, {})); // (the masks are int32)
      masked = e.op(Op::kUnsqueeze,
                    {e.op(Op::kNot, {e.op(Op::kGreater, {mask, zero})}),
                     e.ints(*rank == 2 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1})});
    } else {
      return Status::error(fmt::format("a mask of rank {} is not supported (only [B], [2B], [B, "
                                       "L] and [B, S, L])",
                                       *rank));
    }
  }
  auto add_where = [&](const std::string& where, double value) {
    std::string added = e.op(Op::kWhere, {where, e.scalar(value, q), e.scalar(0.0, q)});
    scores = e.op(Op::kAdd, {scores, added});
  };
  if (!masked.empty()) add_where(masked, e.float_attr_or("mask_filter_value", -10000.0f));
  // unidirectional: query s < S - 1 sees keys 0 .. s, the last query every key (as ONNX
  // Runtime's CPU kernel computes it, also where L > S).
  if (e.int_attr_or("unidirectional", 0)) {
    std::string rows = e.op(Op::kUnsqueeze, {e.positions(q, 1), e.ints({1})});
    std::string last = e.op(Op::kSub, {e.dim(q, 1), e.ints({1})});
    add_where(e.op(Op::kAnd,
                   {e.op(Op::kGreater, {e.positions(k, 1), rows}), e.op(Op::kLess, {rows, last})}),
              -std::numeric_limits<double>::infinity());
  }
  std::string probs = e.op(Op::kSoftmax, {scores}, {int_attr("axis", -1)});
  std::string merged =
      e.op(Op::kTranspose, {e.op(Op::kMatMul, {probs, vh})}, {ints_attr("perm", {0, 2, 1, 3})});
  e.op(Op::kReshape, {merged, e.ints({0, 0, -1})}, {}, e.out(0));
  return Status();
}

// The num_heads attribute, which must be positive.
Result<int64_t> num_heads(const Expansion& e) {
  int64_t heads = e.int_attr_or("num_heads", 0);
  if (heads <= 0) return Status::error("attribute 'num_heads' is required and must be positive");
  return heads;
}

// Attention(input, weights, bias, mask_index, past, attention_bias, past_sequence_length),
// ONNX Runtime's fused self-attention (its transformer optimizer on BERT-style exports):
// input x weights + bias, split into Q, K and V by qkv_hidden_sizes (three equal parts by
// default), then attend(). Refused: past, present and past_sequence_length (a KV cache),
// do_rotary, and the 4-D mask form.
Status expand_attention(Expansion& e) {
  if (!e.in(4).empty() || !e.out(1).empty() || !e.in(6).empty())
    return Status::error("past, present and past_sequence_length (a KV cache) are not supported");
  if (e.int_attr_or("do_rotary", 0)) return Status::error("do_rotary is not supported");
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  WEFT_ASSIGN_OR_RETURN(int64_t heads, num_heads(e));
  std::vector<int64_t> sizes;
  if (const onnx::AttributeProto* a = find_attr(e.node(), "qkv_hidden_sizes")) {
    sizes.assign(a->ints().begin(), a->ints().end());
  } else if (const onnx::TensorProto* w = e.constant(e.in(1)); w && w->dims_size() == 2) {
    sizes.assign(3, w->dims(1) / 3);
    if (w->dims(1) % 3 != 0) return Status::error("the weights' last dim is not divisible by 3");
  } else {
    return Status::error("weights that are not a 2-D constant need 'qkv_hidden_sizes'");
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0 ||
      sizes[0] % heads != 0 || sizes[2] % heads != 0)
    return Status::error(fmt::format("qkv_hidden_sizes {} do not split into {} heads with Q's "
                                     "and K's equal",
                                     sizes, heads));
  std::string x = e.op(Op::kMatMul, {e.in(0), e.in(1)});
  if (!e.in(2).empty()) x = e.op(Op::kAdd, {x, e.in(2)});
  auto part = [&](int64_t start, int64_t size) {
    return e.op(Op::kSlice, {x, e.ints({start}), e.ints({start + size}), e.ints({-1})});
  };
  return attend(e, part(0, sizes[0]), part(sizes[0], sizes[1]), part(sizes[0] + sizes[1], sizes[2]),
                heads, 3, 5);
}

// MultiHeadAttention(query, key, value, bias, key_padding_mask, attention_bias, past_key,
// past_value, ...), ONNX Runtime's attention on separate Q, K and V (its optimizer's on
// CLIP, ViT and encoder-decoder models): query [B, S, D], key [B, L, D] and value [B, L, Dv],
// plus bias [D + D + Dv] split among them, then attend(). Refused: packed QKV or KV (key or
// value absent), key and value as [B, heads, L, D / heads], past_key and past_value, and
// outputs 1 and 2 (a KV cache).
Status expand_multi_head_attention(Expansion& e) {
  if (e.in(1).empty() || e.in(2).empty())
    return Status::error("packed Q, K and V (key or value absent) are not supported");
  for (int i = 6; i < e.node().input_size(); ++i) {
    if (!e.in(i).empty())
      return Status::error("past_key, past_value and the inputs after them (a KV cache) are not "
                           "supported");
  }
  if (!e.out(1).empty() || !e.out(2).empty())
    return Status::error("present_key and present_value (a KV cache) are not supported");
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  for (int i : {0, 1, 2}) {
    if (std::optional<int> rank = e.rank(e.in(i)); rank && *rank != 3)
      return Status::error(fmt::format("input {} has rank {}; only [B, S, D] query, key and "
                                       "value are supported",
                                       i, *rank));
  }
  WEFT_ASSIGN_OR_RETURN(int64_t heads, num_heads(e));
  std::string q = e.in(0), k = e.in(1), v = e.in(2);
  if (std::string bias = e.in(3); !bias.empty()) { // [D, D, Dv], D from the query
    std::string d = e.dim(q, 2);
    std::string twice = e.op(Op::kAdd, {d, d});
    auto piece = [&](const std::string& from, const std::string& to) {
      return e.op(Op::kSlice, {bias, from, to, e.ints({0})});
    };
    q = e.op(Op::kAdd, {q, piece(e.ints({0}), d)});
    k = e.op(Op::kAdd, {k, piece(d, twice)});
    v = e.op(Op::kAdd, {v, piece(twice, e.ints({std::numeric_limits<int64_t>::max()}))});
  }
  return attend(e, q, k, v, heads, 4, 5);
}

// EmbedLayerNormalization(input_ids, segment_ids, word_embedding, position_embedding,
// segment_embedding, gamma, beta, mask, position_ids): LayerNorm over the last axis
// (epsilon, 1e-12 by default) of the word, position (at position_ids, or 0 .. S - 1) and
// segment embeddings gathered and summed; that sum is output 2. Output 1, mask_index, is
// each batch's sum of mask (its count of ones; zeros without a mask), int32 [B]: the [B] form
// of Attention's mask_index, as ONNX Runtime computes it.
Status expand_embed_layer_norm(Expansion& e) {
  if (e.opset() < 13) return Status::error("needs ai.onnx opset 13 or later");
  for (int i : {2, 3, 5, 6}) {
    if (e.in(i).empty())
      return Status::error(
          "inputs word_embedding, position_embedding, gamma and beta are required");
  }
  if (e.in(1).empty() != e.in(4).empty())
    return Status::error("segment_ids and segment_embedding go together");
  std::string ids = e.in(0), at = e.in(8).empty() ? e.positions(ids, 1) : e.in(8);
  std::string sum =
      e.op(Op::kAdd, {e.op(Op::kGather, {e.in(2), ids}), e.op(Op::kGather, {e.in(3), at})}, {},
           e.in(1).empty() ? e.out(2) : "");
  if (!e.in(1).empty())
    sum = e.op(Op::kAdd, {sum, e.op(Op::kGather, {e.in(4), e.in(1)})}, {}, e.out(2));
  normalize(e, sum, e.float_attr_or("epsilon", 1e-12f), false, e.in(5), e.in(6));
  if (e.out(1).empty()) return Status();
  e.set_rank(e.out(1), 1);
  if (e.in(7).empty()) {
    e.op(Op::kConstantOfShape, {e.dim(ids, 0)}, {tensor_attr("value", Tensor(DType::kI32, {1}))},
         e.out(1));
  } else {
    std::string mask = e.op(Op::kCast, {e.in(7)}, {int_attr("to", onnx::TensorProto::INT32)});
    e.op(Op::kReduceSum, {mask, e.ints({1})}, {int_attr("keepdims", 0)}, e.out(1));
  }
  return Status();
}

} // namespace

// (ONNX Runtime's RMSNorm, without its output 1, the inverse standard deviation.)
Status expand_simplified_layer_norm(Expansion& e) {
  if (e.in(0).empty() || e.in(1).empty()) return Status::error("inputs X and scale are required");
  if (e.int_attr_or("axis", -1) != -1) return Status::error("only axis -1 is supported");
  if (!e.out(1).empty()) return Status::error("output 1 (inv_std_var) is not supported");
  normalize(e, e.in(0), e.float_attr_or("epsilon", 1e-5f), true, e.in(1), "");
  return Status();
}

std::map<std::string, ContribOp> transformer_ops() {
  return {
      {"com.microsoft.Attention",
       {{"input", "weights", "bias", "mask_index", "past", "attention_bias",
         "past_sequence_length"},
        2,
        expand_attention}},
      {"com.microsoft.BiasAdd",
       {{"X", "bias", "skip"},
        3,
        [](Expansion& e) {
          e.op(Op::kAdd, {e.op(Op::kAdd, {e.in(0), e.in(1)}), e.in(2)}, {}, e.out(0));
          return Status();
        }}},
      {"com.microsoft.BiasGelu",
       {{"A", "B"},
        2,
        [](Expansion& e) {
          gelu(e, e.op(Op::kAdd, {e.in(0), e.in(1)}));
          return Status();
        }}},
      {"com.microsoft.EmbedLayerNormalization",
       {{"input_ids", "segment_ids", "word_embedding", "position_embedding", "segment_embedding",
         "gamma", "beta", "mask", "position_ids"},
        1,
        expand_embed_layer_norm}},
      {"com.microsoft.FastGelu", {{"X", "bias"}, 1, expand_fast_gelu}},
      {"com.microsoft.MultiHeadAttention",
       {{"query", "key", "value", "bias", "key_padding_mask", "attention_bias", "past_key",
         "past_value", "past_sequence_length", "cache_indirection"},
        1,
        expand_multi_head_attention}},
      {"com.microsoft.FusedMatMul", {{"A", "B"}, 2, expand_fused_matmul}},
      {"com.microsoft.Gelu",
       {{"X"},
        1,
        [](Expansion& e) {
          gelu(e, e.in(0));
          return Status();
        }}},
      {"com.microsoft.QuickGelu",
       {{"X"},
        1,
        [](Expansion& e) {
          std::string x = e.in(0);
          std::string alpha = e.scalar(e.float_attr_or("alpha", 1.702f), x);
          e.op(Op::kMul, {x, e.op(Op::kSigmoid, {e.op(Op::kMul, {x, alpha})})}, {}, e.out(0));
          return Status();
        }}},
      {"com.microsoft.SkipLayerNormalization",
       {{"input", "skip", "gamma", "beta", "bias"},
        3,
        [](Expansion& e) { return expand_skip_norm(e, false); }}},
      {"com.microsoft.SkipSimplifiedLayerNormalization",
       {{"input", "skip", "gamma", "bias"},
        3,
        [](Expansion& e) { return expand_skip_norm(e, true); }}},
  };
}

} // namespace weft::contrib
