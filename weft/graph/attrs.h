// Typed attributes of graph nodes, one struct per op family.
//
// They are filled once by the op table's parsers (op_table.cc), with the ONNX defaults of the
// node's opset. No attribute travels through the IR as a string key. Each struct lists its
// fields once, in fields(), which the printer and the JSON writer share.
//
// An optional field is one whose absence has its own meaning in ONNX (e.g. Reduce with no
// axes reduces all axes). After canonicalize, attributes that older opsets took as attributes
// and newer ones as constant inputs (axes, Clip bounds, Slice ranges) are here, and axes are
// non-negative and sorted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "weft/graph/dtype.h"
#include "weft/graph/tensor.h"

namespace weft {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;
using TensorRef = std::shared_ptr<const Tensor>;

#define WEFT_FIELDS(...)                                                                           \
  template <typename F> void fields(F&& f) const { __VA_ARGS__; }

struct NoAttrs {
  template <typename F> void fields(F&&) const {}
};

// Add, Mul, ... before opset 7 with broadcast=1: "B" is broadcast onto "A" with its dims
// aligned at "axis" (at the trailing dims when absent). Canonicalize removes this form.
struct LegacyBroadcastAttrs {
  std::optional<int64_t> axis;
  WEFT_FIELDS(f("legacy_broadcast_axis", axis))
};

// Cast, CastLike (whose "to" is unused: input 1's type is the target). "saturate" (opset
// 19) clamps to the largest finite value of a float8 target instead of overflowing to
// infinity or NaN.
struct CastAttrs {
  DType to = DType::kF32;
  bool saturate = true;
  WEFT_FIELDS(f("to", to); f("saturate", saturate))
};

// Elu, Celu, LeakyRelu, ThresholdedRelu: one coefficient, default set per op.
struct AlphaAttrs {
  float alpha = 1.0f;
  WEFT_FIELDS(f("alpha", alpha))
};

struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
  WEFT_FIELDS(f("alpha", alpha); f("beta", beta))
};

struct SeluAttrs {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  WEFT_FIELDS(f("alpha", alpha); f("gamma", gamma))
};

struct ClipAttrs {
  std::optional<float> min; // none: unbounded
  std::optional<float> max;
  WEFT_FIELDS(f("min", min); f("max", max))
};

struct ModAttrs {
  bool fmod = false;
  WEFT_FIELDS(f("fmod", fmod))
};

struct IsInfAttrs {
  bool detect_negative = true;
  bool detect_positive = true;
  WEFT_FIELDS(f("detect_negative", detect_negative); f("detect_positive", detect_positive))
};

// ReduceSum, ReduceMean, ... Without axes, all axes are reduced, unless
// noop_with_empty_axes, in which case the node is an identity.
struct ReduceAttrs {
  std::optional<Ints> axes;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  WEFT_FIELDS(f("axes", axes); f("keepdims", keepdims);
              f("noop_with_empty_axes", noop_with_empty_axes))
};

struct ArgReduceAttrs { // ArgMax, ArgMin
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
  WEFT_FIELDS(f("axis", axis); f("keepdims", keepdims); f("select_last_index", select_last_index))
};

// Softmax, LogSoftmax, Hardmax: before opset 13 the input is coerced to 2-D at "axis"
// (default 1); from 13 on the op works along "axis" alone (default -1).
struct SoftmaxAttrs {
  int64_t axis = -1;
  WEFT_FIELDS(f("axis", axis))
};

// Concat, Gather, GatherElements, Flatten, CumSum-like single-axis ops.
struct AxisAttrs {
  int64_t axis = 0;
  WEFT_FIELDS(f("axis", axis))
};

struct BatchDimsAttrs { // GatherND
  int64_t batch_dims = 0;
  WEFT_FIELDS(f("batch_dims", batch_dims))
};

// ScatterElements (and Scatter), ScatterND: how updates that meet at one element combine
// with it.
enum class ScatterReduction : uint8_t { kNone, kAdd, kMul, kMax, kMin }; // max, min: opset 18
struct ScatterAttrs {
  int64_t axis = 0; // ScatterElements
  ScatterReduction reduction = ScatterReduction::kNone;
  WEFT_FIELDS(f("axis", axis); f("reduction", reduction))
};

// TensorScatter (opset 24): where along "axis" the update is written, and whether the write
// wraps around the cache.
struct TensorScatterAttrs {
  int64_t axis = -2;
  bool circular = false; // mode = "circular"; "linear" otherwise
  WEFT_FIELDS(f("axis", axis); f("circular", circular))
};

struct CompressAttrs {
  std::optional<int64_t> axis; // none: the input is flattened first
  WEFT_FIELDS(f("axis", axis))
};

struct UniqueAttrs {
  std::optional<int64_t> axis; // none: the input is flattened first
  bool sorted = true;          // false: in the order of first occurrence
  WEFT_FIELDS(f("axis", axis); f("sorted", sorted))
};

struct NonMaxSuppressionAttrs {
  bool center_point_box = false; // boxes as [y1, x1, y2, x2]; true: [x_center, y_center, w, h]
  WEFT_FIELDS(f("center_point_box", center_point_box))
};

class Graph;

// Loop, as Weft's graph holds it: inputs [M, cond, carried..., captured..., then the scan
// values of the iterations already unrolled]. The body is a graph of its own whose inputs are
// the iteration number, the condition, the carried values and the outer values it reads.
struct LoopAttrs {
  std::shared_ptr<const Graph> body;
  int64_t carried = 0;   // N
  int64_t iteration = 0; // iterations unrolled into the graph so far
  WEFT_FIELDS(f("carried", carried); f("iteration", iteration))
};

// Scan (opset 9 on): inputs [states..., scan inputs..., captured...]. The body's inputs are
// the states, one slice of each scan input, then the outer values it reads.
struct ScanAttrs {
  std::shared_ptr<const Graph> body;
  int64_t states = 0;                                                // N
  int64_t scan_inputs = 0;                                           // M
  Ints input_axes, input_directions, output_axes, output_directions; // empty: all 0
  WEFT_FIELDS(f("states", states); f("num_scan_inputs", scan_inputs);
              f("scan_input_axes", input_axes); f("scan_input_directions", input_directions);
              f("scan_output_axes", output_axes); f("scan_output_directions", output_directions))
};

struct AxesAttrs {          // Squeeze, Unsqueeze, MeanVarianceNormalization
  std::optional<Ints> axes; // Squeeze without axes removes every dim of extent 1
  WEFT_FIELDS(f("axes", axes))
};

struct SplitAttrs {
  int64_t axis = 0;
  std::optional<Ints> split; // none: equal parts
  // Opset 18: parts of ceil(extent / num_outputs), the last one smaller.
  std::optional<int64_t> num_outputs;
  WEFT_FIELDS(f("axis", axis); f("split", split); f("num_outputs", num_outputs))
};

struct TransposeAttrs {
  std::optional<Ints> perm; // none: reverse the dims
  WEFT_FIELDS(f("perm", perm))
};

struct ReshapeAttrs {
  bool allowzero = false;
  std::optional<Ints> shape; // set by canonicalize once the target is a known constant
  // The target over symbols, from the shapes the graph computes (fold_shape_values, in a
  // dynamic-shape compile); the shape input is then gone.
  std::optional<Shape> symbolic_shape;
  WEFT_FIELDS(f("allowzero", allowzero); f("shape", shape); f("symbolic_shape", symbolic_shape))
};

// A Reshape to the static "dims", as a pass spells them out: a 0 among them is an empty dim
// (allowzero), not "the input's dim" (an empty batch's RNN state was read as [1, H]).
inline ReshapeAttrs reshape_to(Ints dims) {
  bool zero = false;
  for (int64_t d : dims)
    zero = zero || d == 0;
  return ReshapeAttrs{zero, std::move(dims), {}};
}

struct ShapeAttrs {
  int64_t start = 0;
  std::optional<int64_t> end;
  WEFT_FIELDS(f("start", start); f("end", end))
};

struct SliceAttrs { // attributes before opset 10; constant inputs after canonicalize
  std::optional<Ints> starts;
  std::optional<Ints> ends;
  std::optional<Ints> axes;
  std::optional<Ints> steps;
  // Ends over symbols, one per axis, in place of "ends": from the shapes the graph computes
  // (fold_shape_values, in a dynamic-shape compile; `position_ids[:, :T]`); the bounds
  // inputs are then gone.
  std::optional<Shape> symbolic_ends = std::nullopt;
  // Starts over symbols, in place of "starts", with "symbolic_ends" (OPT's positions
  // `cumsum(mask)[:, P:]` from the past length P).
  std::optional<Shape> symbolic_starts = std::nullopt;
  WEFT_FIELDS(f("starts", starts); f("ends", ends); f("axes", axes); f("steps", steps);
              f("symbolic_ends", symbolic_ends); f("symbolic_starts", symbolic_starts))
};

enum class PadMode : uint8_t { kConstant, kReflect, kEdge, kWrap }; // wrap: opset 19
struct PadAttrs {
  PadMode mode = PadMode::kConstant;
  std::optional<Ints> pads; // before opset 11
  float value = 0.0f;       // before opset 11
  WEFT_FIELDS(f("mode", mode); f("pads", pads); f("value", value))
};

enum class AutoPad : uint8_t { kNotSet, kSameUpper, kSameLower, kValid };

struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  Ints dilations; // empty: 1 per spatial dim
  int64_t group = 1;
  Ints kernel_shape; // empty: from the weights
  Ints pads;         // empty: 0; [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
  Ints strides;      // empty: 1 per spatial dim
  WEFT_FIELDS(f("auto_pad", auto_pad); f("dilations", dilations); f("group", group);
              f("kernel_shape", kernel_shape); f("pads", pads); f("strides", strides))
};

// DeformConv (19): a Conv whose taps move by per-position offsets; the input channels share
// offsets in offset_group groups.
struct DeformConvAttrs {
  Ints dilations; // empty: 1 per spatial dim
  int64_t group = 1;
  Ints kernel_shape; // empty: from the weights
  int64_t offset_group = 1;
  Ints pads;    // empty: 0; [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
  Ints strides; // empty: 1 per spatial dim
  WEFT_FIELDS(f("dilations", dilations); f("group", group); f("kernel_shape", kernel_shape);
              f("offset_group", offset_group); f("pads", pads); f("strides", strides))
};

struct ConvTransposeAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  Ints dilations; // empty: 1 per spatial dim
  int64_t group = 1;
  Ints kernel_shape;   // empty: from the weights
  Ints output_padding; // empty: 0
  Ints output_shape;   // empty: computed from the pads; set: the pads are computed from it
  Ints pads;           // empty: 0
  Ints strides;        // empty: 1 per spatial dim
  WEFT_FIELDS(f("auto_pad", auto_pad); f("dilations", dilations); f("group", group);
              f("kernel_shape", kernel_shape); f("output_padding", output_padding);
              f("output_shape", output_shape); f("pads", pads); f("strides", strides))
};

struct PoolAttrs { // MaxPool, AveragePool
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  bool count_include_pad = false; // AveragePool
  Ints dilations;
  Ints kernel_shape;
  Ints pads;
  int64_t storage_order = 0; // MaxPool indices output
  Ints strides;
  WEFT_FIELDS(f("auto_pad", auto_pad); f("ceil_mode", ceil_mode);
              f("count_include_pad", count_include_pad); f("dilations", dilations);
              f("kernel_shape", kernel_shape); f("pads", pads); f("storage_order", storage_order);
              f("strides", strides))
};

// LpPool: the window of the other pools (count_include_pad and storage_order unused), and
// the order of the norm.
struct LpPoolAttrs {
  PoolAttrs window;
  int64_t p = 2;
  WEFT_FIELDS(window.fields(f); f("p", p))
};

// Col2Im (opset 18): the sliding blocks' geometry, per spatial dim (empty: 1s, or 0 pads).
struct Col2ImAttrs {
  Ints dilations;
  Ints pads; // [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
  Ints strides;
  WEFT_FIELDS(f("dilations", dilations); f("pads", pads); f("strides", strides))
};

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  WEFT_FIELDS(f("alpha", alpha); f("beta", beta); f("transA", trans_a); f("transB", trans_b))
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  float momentum = 0.9f;
  bool training_mode = false;
  WEFT_FIELDS(f("epsilon", epsilon); f("momentum", momentum); f("training_mode", training_mode))
};

struct EpsilonAttrs { // InstanceNormalization
  float epsilon = 1e-5f;
  WEFT_FIELDS(f("epsilon", epsilon))
};

struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  DType stash_type = DType::kF32;
  WEFT_FIELDS(f("axis", axis); f("epsilon", epsilon); f("stash_type", stash_type))
};

// Binarizer (ai.onnx.ml): 1 where x > threshold, else 0.
struct BinarizerAttrs {
  float threshold = 0;
  WEFT_FIELDS(f("threshold", threshold))
};

// TfIdfVectorizer (opset 9): the counts of the pool's n-grams in each row, weighted by
// "mode". The pool holds the n-grams of length n from ngram_counts[n - 1] on; the i-th
// n-gram of the pool lands in output column ngram_indexes[i]. Only integer pools
// (pool_int64s) are supported.
enum class TfIdfMode : uint8_t { kTf, kIdf, kTfIdf };
struct TfIdfAttrs {
  TfIdfMode mode = TfIdfMode::kTf;
  int64_t min_gram_length = 1;
  int64_t max_gram_length = 1;
  int64_t max_skip_count = 0;
  Ints ngram_counts;
  Ints ngram_indexes;
  Ints pool_int64s;
  Floats weights; // per output column; empty: all ones
  WEFT_FIELDS(f("mode", mode); f("min_gram_length", min_gram_length);
              f("max_gram_length", max_gram_length); f("max_skip_count", max_skip_count);
              f("ngram_counts", ngram_counts); f("ngram_indexes", ngram_indexes);
              f("pool_int64s", pool_int64s); f("weights", weights))
};

// TreeEnsemble (ai.onnx.ml 5): interior nodes (the nodes_* lists, one entry per node) and
// leaves (leaf_*). A node's true and false branches are a node or, where nodes_trueleafs /
// nodes_falseleafs say so, a leaf. Only post_transform NONE is supported.
enum class TreeAggregate : uint8_t { kAverage, kSum, kMin, kMax };              // ONNX's codes 0-3
enum class TreeNodeMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember }; // codes 0-6
struct TreeEnsembleAttrs {
  TreeAggregate aggregate = TreeAggregate::kSum;
  int64_t n_targets = 1;
  Ints tree_roots;
  Ints nodes_modes; // TreeNodeMode codes
  Ints nodes_featureids;
  TensorRef nodes_splits; // in X's type
  Ints nodes_truenodeids;
  Ints nodes_falsenodeids;
  Ints nodes_trueleafs;
  Ints nodes_falseleafs;
  Ints nodes_missing_value_tracks_true; // empty: none does
  TensorRef membership_values;          // the MEMBER nodes' sets in order, each ended by NaN
  Ints leaf_targetids;
  TensorRef leaf_weights;
  WEFT_FIELDS(f("aggregate_function", aggregate); f("n_targets", n_targets);
              f("tree_roots", tree_roots); f("nodes_modes", nodes_modes);
              f("nodes_featureids", nodes_featureids); f("nodes_splits", nodes_splits);
              f("nodes_truenodeids", nodes_truenodeids);
              f("nodes_falsenodeids", nodes_falsenodeids); f("nodes_trueleafs", nodes_trueleafs);
              f("nodes_falseleafs", nodes_falseleafs);
              f("nodes_missing_value_tracks_true", nodes_missing_value_tracks_true);
              f("membership_values", membership_values); f("leaf_targetids", leaf_targetids);
              f("leaf_weights", leaf_weights))
};

// Gelu (opset 20): the exact form with erf, or the tanh approximation.
struct GeluAttrs {
  bool tanh = false;
  WEFT_FIELDS(f("tanh_approximation", tanh))
};

// GroupNormalization (opsets 18 and 21): statistics over groups of channels.
struct GroupNormAttrs {
  int64_t num_groups = 1;
  float epsilon = 1e-5f;
  DType stash_type = DType::kF32;
  WEFT_FIELDS(f("num_groups", num_groups); f("epsilon", epsilon); f("stash_type", stash_type))
};

// Attention (opsets 23-25): scaled dot-product attention with masks, causality, sliding
// windows (25), grouped KV heads and a KV cache.
struct AttentionAttrs {
  bool is_causal = false;
  std::optional<int64_t> q_num_heads; // 3-D inputs only
  std::optional<int64_t> kv_num_heads;
  int64_t qk_matmul_output_mode = 0; // 0, 1: scores (softcapped); 2: + bias; 3: softmax
  std::optional<float> scale;        // none: 1 / sqrt(head size)
  float softcap = 0.0f;              // 0: none
  std::optional<DType> softmax_precision;
  int64_t left_window = -1; // -1: unbounded
  int64_t right_window = -1;
  WEFT_FIELDS(f("is_causal", is_causal); f("q_num_heads", q_num_heads);
              f("kv_num_heads", kv_num_heads); f("qk_matmul_output_mode", qk_matmul_output_mode);
              f("scale", scale); f("softcap", softcap); f("softmax_precision", softmax_precision);
              f("left_window_size", left_window); f("right_window_size", right_window))
};

// LinearAttention (opset 27): the recurrence's update_rule is "linear" (neither flag),
// "gated" (the state decays by exp(decay)), "delta" (the write is beta * (v - S^T k)) or
// "gated_delta" (both).
struct LinearAttentionAttrs {
  int64_t q_num_heads = 0;
  int64_t kv_num_heads = 0;
  float scale = 0.0f; // 0: 1 / sqrt(d_k)
  bool gated = true;
  bool delta = true;
  WEFT_FIELDS(f("q_num_heads", q_num_heads); f("kv_num_heads", kv_num_heads); f("scale", scale);
              f("gated", gated); f("delta", delta))
};

// CausalConvWithState (opset 27): activation "silu" (or its alias "swish"), else none.
struct CausalConvAttrs {
  bool silu = false;
  WEFT_FIELDS(f("silu", silu))
};

// FlexAttention (ai.onnx.preview, opset 1): inputs [Q, K, V, the outer values score_mod
// reads..., those prob_mod reads...]. Each modifier is a graph of its own whose inputs are
// the scores (or probabilities), then the outer values it reads.
struct FlexAttentionAttrs {
  std::optional<float> scale; // none: 1 / sqrt(head size)
  std::optional<DType> softmax_precision;
  std::shared_ptr<const Graph> score_mod; // null: none
  std::shared_ptr<const Graph> prob_mod;
  int64_t score_mod_captured = 0; // how many of the extra inputs score_mod reads
  WEFT_FIELDS(f("scale", scale); f("softmax_precision", softmax_precision);
              f("score_mod_captured", score_mod_captured))
};

// LpNormalization: x / (the L1 or L2 norm along "axis").
struct LpNormAttrs {
  int64_t axis = -1;
  int64_t p = 2;
  WEFT_FIELDS(f("axis", axis); f("p", p))
};

// RotaryEmbedding (opset 23).
struct RotaryAttrs {
  bool interleaved = false;
  std::optional<int64_t> num_heads; // 3-D inputs
  int64_t rotary_dim = 0;           // 0: the whole head
  WEFT_FIELDS(f("interleaved", interleaved); f("num_heads", num_heads);
              f("rotary_embedding_dim", rotary_dim))
};

struct DropoutAttrs {
  std::optional<float> ratio;  // before opset 12; an input after
  bool is_test = false;        // before opset 7
  std::optional<int64_t> seed; // opset 12 on: of the training mode's draws
  WEFT_FIELDS(f("ratio", ratio); f("is_test", is_test); f("seed", seed))
};

// Adagrad, Adam and Momentum (domain ai.onnx.preview.training): each op reads the fields
// its ONNX definition has, with that definition's defaults.
struct OptimizerAttrs {
  float alpha = 0.9f;                 // Adam, Momentum
  float beta = 0.999f;                // Adam, Momentum
  float decay_factor = 0.0f;          // Adagrad
  float epsilon = 1e-6f;              // Adagrad, Adam
  float norm_coefficient = 0.0f;      // all
  float norm_coefficient_post = 0.0f; // Adam
  bool nesterov = false;              // Momentum: mode "nesterov" (else "standard")
  WEFT_FIELDS(f("alpha", alpha); f("beta", beta); f("decay_factor", decay_factor);
              f("epsilon", epsilon); f("norm_coefficient", norm_coefficient);
              f("norm_coefficient_post", norm_coefficient_post); f("nesterov", nesterov))
};

// QuantizeLinear, DequantizeLinear: a scale and zero point per tensor, per slice along
// "axis" when they are vectors, or per block of "block_size" elements along "axis" (opset
// 21) when they have the input's rank.
struct QuantizeAttrs {
  int64_t axis = 1;
  std::optional<DType> output_dtype; // opsets 21 (Quantize) and 23 (Dequantize)
  int64_t block_size = 0;
  bool saturate = true; // float8 outputs clamp to their largest finite value (opset 19)
  // Not ONNX's: the accuracy_level of the com.microsoft MatMulNBits whose weights this
  // DequantizeLinear holds (contrib_ops.cc); 4 lets the weight-only call quantize the
  // activations to int8, as ONNX Runtime does (weight_only_matmul.h).
  int64_t accuracy_level = 0;
  WEFT_FIELDS(f("axis", axis); f("output_dtype", output_dtype); f("block_size", block_size);
              f("saturate", saturate); f("accuracy_level", accuracy_level))
};

// HannWindow, HammingWindow, BlackmanWindow.
struct WindowAttrs {
  DType output_datatype = DType::kF32;
  bool periodic = true;
  WEFT_FIELDS(f("output_datatype", output_datatype); f("periodic", periodic))
};

struct ReverseSequenceAttrs {
  int64_t batch_axis = 1;
  int64_t time_axis = 0;
  WEFT_FIELDS(f("batch_axis", batch_axis); f("time_axis", time_axis))
};

struct LrnAttrs {
  float alpha = 0.0001f;
  float beta = 0.75f;
  float bias = 1.0f;
  int64_t size = 1;
  WEFT_FIELDS(f("alpha", alpha); f("beta", beta); f("bias", bias); f("size", size))
};

// DFT. From opset 20 the axis is an input (default -2); canonicalize moves a constant one
// here, and it stays none while unknown.
struct DftAttrs {
  std::optional<int64_t> axis = 1;
  bool inverse = false;
  bool onesided = false;
  WEFT_FIELDS(f("axis", axis); f("inverse", inverse); f("onesided", onesided))
};

struct EinsumAttrs {
  std::string equation; // as given; spaces are ignored
  WEFT_FIELDS(f("equation", equation))
};

struct TopKAttrs {
  int64_t axis = -1;
  bool largest = true;
  bool sorted = true; // Weft always returns sorted results
  // K over symbols (torchvision's min(300, N)), from the shapes the graph computes
  // (fold_shape_values, in a dynamic-shape compile); the K input is then gone.
  std::optional<Dim> symbolic_k = std::nullopt;
  WEFT_FIELDS(f("axis", axis); f("largest", largest); f("sorted", sorted);
              f("symbolic_k", symbolic_k))
};

struct TriluAttrs {
  bool upper = true;
  WEFT_FIELDS(f("upper", upper))
};

// RandomNormal, RandomUniform, their -Like forms, Bernoulli and Multinomial: values drawn at
// each run (library/random_call.h).
struct RandomAttrs {
  std::optional<DType> dtype; // none: the input's (-Like, Bernoulli), i32 (Multinomial), f32
  float mean = 0, scale = 1;  // RandomNormal's
  float low = 0, high = 1;    // RandomUniform's
  std::optional<float> seed;  // none: the generator starts from a seed of its own
  Ints shape;                 // RandomNormal's and RandomUniform's
  int64_t sample_size = 1;    // Multinomial's draws per row
  WEFT_FIELDS(f("dtype", dtype); f("mean", mean); f("scale", scale); f("low", low); f("high", high);
              f("seed", seed); f("shape", shape); f("sample_size", sample_size))
};

struct EyeLikeAttrs {
  std::optional<DType> dtype; // none: the input's
  int64_t k = 0;              // the diagonal: 0 main, > 0 above, < 0 below
  WEFT_FIELDS(f("dtype", dtype); f("k", k))
};

struct CumSumAttrs {
  std::optional<int64_t> axis; // an input in ONNX; here once canonicalize finds it constant
  bool exclusive = false;
  bool reverse = false;
  WEFT_FIELDS(f("axis", axis); f("exclusive", exclusive); f("reverse", reverse))
};

// DepthToSpace, SpaceToDepth. DCR: the depth splits as (block row, block column, channel);
// CRD: as (channel, block row, block column).
enum class DepthToSpaceMode : uint8_t { kDCR, kCRD };
struct BlockAttrs {
  int64_t blocksize = 1;
  DepthToSpaceMode mode = DepthToSpaceMode::kDCR;
  WEFT_FIELDS(f("blocksize", blocksize); f("mode", mode))
};

struct BitShiftAttrs {
  bool left = true; // direction "LEFT"; false: "RIGHT"
  WEFT_FIELDS(f("left", left))
};

struct ShrinkAttrs {
  float lambd = 0.5f;
  float bias = 0.0f;
  WEFT_FIELDS(f("lambd", lambd); f("bias", bias))
};

// Resize (and Upsample, read as Resize with asymmetric coordinates and floor rounding). The
// scales, sizes and roi are inputs, constant once shapes are specialized.
enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
enum class ResizeCoordinates : uint8_t {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
  kHalfPixelSymmetric, // opset 19
};
enum class NearestMode : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinates coordinate_transformation_mode = ResizeCoordinates::kHalfPixel;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  std::optional<Ints> axes; // opset 18: the axes that scales or sizes give; the rest keep theirs
  // Opset 18, with sizes: 0 stretches each axis; 1 (not_larger) and 2 (not_smaller) scale the
  // listed axes alike, by the smallest or largest of their ratios.
  int64_t aspect_policy = 0;
  // Opset 18: linear and cubic stretch their filter by 1 / scale when downsampling (nearest
  // ignores it).
  bool antialias = false;
  // The sizes over symbols, one per axis they give (fold_shape_values, in a dynamic-shape
  // compile: `interpolate(x, size=y.shape[-2:])`); the sizes input is then gone. Only with
  // aspect_policy 0, so that each such axis's scale is its output extent over its input's.
  std::optional<Shape> symbolic_sizes;
  WEFT_FIELDS(f("mode", mode); f("coordinate_transformation_mode", coordinate_transformation_mode);
              f("nearest_mode", nearest_mode); f("cubic_coeff_a", cubic_coeff_a);
              f("exclude_outside", exclude_outside); f("extrapolation_value", extrapolation_value);
              f("axes", axes); f("keep_aspect_ratio_policy", aspect_policy);
              f("antialias", antialias); f("symbolic_sizes", symbolic_sizes))
};

// GridSample: how the grid's normalized coordinates map to the input, how samples
// interpolate, and what a sample outside the input reads.
enum class GridSampleMode : uint8_t { kBilinear, kNearest, kBicubic };
enum class GridPadding : uint8_t { kZeros, kBorder, kReflection };
// AffineGrid (opset 20).
struct AffineGridAttrs {
  bool align_corners = false;
  WEFT_FIELDS(f("align_corners", align_corners))
};

struct GridSampleAttrs {
  bool align_corners = false;
  GridSampleMode mode = GridSampleMode::kBilinear;
  GridPadding padding_mode = GridPadding::kZeros;
  WEFT_FIELDS(f("align_corners", align_corners); f("mode", mode); f("padding_mode", padding_mode))
};

// RoiAlign. output_half_pixel (opset 10's only mode, 16's legacy one) does not shift the rois
// by half a pixel and stretches them to at least one pixel.
struct RoiAlignAttrs {
  bool half_pixel = true;
  bool max = false; // mode max, else avg
  int64_t output_height = 1;
  int64_t output_width = 1;
  int64_t sampling_ratio = 0; // samples per bin and axis
  float spatial_scale = 1.0f;
  WEFT_FIELDS(f("half_pixel", half_pixel); f("max", max); f("output_height", output_height);
              f("output_width", output_width); f("sampling_ratio", sampling_ratio);
              f("spatial_scale", spatial_scale))
};

enum class LossReduction : uint8_t { kNone, kSum, kMean };
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index; // targets equal to it contribute nothing
  WEFT_FIELDS(f("reduction", reduction); f("ignore_index", ignore_index))
};

// RNN, GRU, LSTM. "activations" lists the op's functions (f; f, g; f, g, h) for each
// direction, forward first, with the ONNX defaults filled in.
enum class RnnDirection : uint8_t { kForward, kReverse, kBidirectional };
// The functions Weft supports, named as the ONNX ops that compute them. ONNX also lists
// functions with parameters (LeakyRelu, HardSigmoid, Affine, ...), which the parser refuses.
enum class RnnActivation : uint8_t { kSigmoid, kTanh, kRelu, kSoftsign, kSoftplus };
using RnnActivations = std::vector<RnnActivation>;
struct RecurrentAttrs {
  std::optional<int64_t> hidden_size; // none: from R's shape
  RnnDirection direction = RnnDirection::kForward;
  int64_t layout = 0; // 1: X, Y and the states are batch-major
  RnnActivations activations;
  std::optional<float> clip;        // none: no clipping of the gates' inputs
  bool linear_before_reset = false; // GRU
  bool input_forget = false;        // LSTM
  WEFT_FIELDS(f("hidden_size", hidden_size); f("direction", direction); f("layout", layout);
              f("activations", activations); f("clip", clip);
              f("linear_before_reset", linear_before_reset); f("input_forget", input_forget))
};

struct ConstantAttrs {
  TensorRef value;
  WEFT_FIELDS(f("value", value))
};

struct ExpandAttrs {
  // The target over symbols, as ReshapeAttrs::symbolic_shape (fold_shape_values); the shape
  // input is then gone.
  std::optional<Shape> symbolic_shape;
  WEFT_FIELDS(f("symbolic_shape", symbolic_shape))
};

struct TileAttrs {
  // The repeats over symbols (fold_shape_values: BLOOM's bias tiled by the batch); the
  // repeats input is then gone.
  std::optional<Shape> symbolic_repeats;
  WEFT_FIELDS(f("symbolic_repeats", symbolic_repeats))
};

struct RangeAttrs {
  // The output's extent over symbols (fold_shape_values: `arange(T)` for a dynamic T); the
  // limit input then only orders the node after it.
  std::optional<Shape> symbolic_shape;
  WEFT_FIELDS(f("symbolic_shape", symbolic_shape))
};

struct ConstantOfShapeAttrs {
  TensorRef value; // a one-element tensor; f32 0 when absent
  // The shape over symbols, as ReshapeAttrs::symbolic_shape (fold_shape_values); the shape
  // input is then gone.
  std::optional<Shape> symbolic_shape = std::nullopt;
  WEFT_FIELDS(f("value", value); f("symbolic_shape", symbolic_shape))
};

// weft.MoE(x [T, H], router logits [T, E], fc1 [E, F, H], fc1 bias [E, F], fc2 [E, H, I],
// fc2 bias [E, H]) -> [T, H]: com.microsoft's MoE and QMoE, as contrib_decoder_ops.cc imports
// them (the attributes keep their names). Each token goes to the k experts of its largest
// logits (the lower index first among equal ones), weighted by the softmax of those k logits
// ("normalize_routing_weights") or of all E; an expert is fc2(activation(fc1(x))).
// Activations: relu, gelu (tanh's approximation), silu, and swiglu over F = 2 I interleaved
// gate and linear halves: min(g, limit) sigmoid(alpha min(g, limit)) (clip(l, -limit, limit)
// + beta), without the bounds when there is no limit.
struct MoEAttrs {
  int64_t k = 1;
  std::string activation = "relu";
  bool normalize = false;
  std::optional<float> limit;
  float alpha = 1.0f, beta = 0.0f;
  WEFT_FIELDS(f("k", k); f("activation_type", activation);
              f("normalize_routing_weights", normalize); f("swiglu_limit", limit);
              f("activation_alpha", alpha); f("activation_beta", beta))
};

using OpAttrs = std::variant<
    NoAttrs, LegacyBroadcastAttrs, CastAttrs, AlphaAttrs, HardSigmoidAttrs, SeluAttrs, ClipAttrs,
    ModAttrs, IsInfAttrs, ReduceAttrs, ArgReduceAttrs, SoftmaxAttrs, AxisAttrs, BatchDimsAttrs,
    ScatterAttrs, CompressAttrs, UniqueAttrs, NonMaxSuppressionAttrs, AxesAttrs, SplitAttrs,
    TransposeAttrs, ReshapeAttrs, ShapeAttrs, SliceAttrs, PadAttrs, ConvAttrs, ConvTransposeAttrs,
    PoolAttrs, GemmAttrs, BatchNormAttrs, EpsilonAttrs, LayerNormAttrs, DropoutAttrs, QuantizeAttrs,
    WindowAttrs, ReverseSequenceAttrs, LrnAttrs, DftAttrs, EinsumAttrs, TopKAttrs, TriluAttrs,
    EyeLikeAttrs, RandomAttrs, CumSumAttrs, BlockAttrs, BitShiftAttrs, ShrinkAttrs, ResizeAttrs,
    GridSampleAttrs, LossAttrs, RecurrentAttrs, ConstantAttrs, ConstantOfShapeAttrs, OptimizerAttrs,
    LoopAttrs, ScanAttrs, GeluAttrs, GroupNormAttrs, AttentionAttrs, RotaryAttrs, LpNormAttrs,
    LpPoolAttrs, TensorScatterAttrs, AffineGridAttrs, Col2ImAttrs, LinearAttentionAttrs,
    CausalConvAttrs, FlexAttentionAttrs, RoiAlignAttrs, DeformConvAttrs, BinarizerAttrs,
    ExpandAttrs, TfIdfAttrs, TreeEnsembleAttrs, RangeAttrs, TileAttrs, MoEAttrs>;

#undef WEFT_FIELDS

std::string_view auto_pad_name(AutoPad p);
std::string_view pad_mode_name(PadMode m);
std::string_view loss_reduction_name(LossReduction r);
std::string_view scatter_reduction_name(ScatterReduction r);
std::string_view depth_to_space_mode_name(DepthToSpaceMode m);
std::string_view resize_mode_name(ResizeMode m);
std::string_view resize_coordinates_name(ResizeCoordinates c);
std::string_view nearest_mode_name(NearestMode m);
std::string_view grid_sample_mode_name(GridSampleMode m);
std::string_view grid_padding_name(GridPadding p);
std::string_view rnn_direction_name(RnnDirection d);
std::string_view rnn_activation_name(RnnActivation a); // the ONNX op computing it
std::string_view tf_idf_mode_name(TfIdfMode m);
std::string_view tree_aggregate_name(TreeAggregate a);

} // namespace weft
