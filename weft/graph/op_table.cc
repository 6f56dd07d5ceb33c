#include "weft/graph/op_table.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "weft/graph/control_flow.h"
#include "weft/graph/data_dependent.h"
#include "weft/graph/ml_ops.h"
#include "weft/graph/sequence_model_ops.h"
#include "weft/graph/shape_functions.h"

namespace weft {

// ---- AttrParser -------------------------------------------------------------------------

bool AttrParser::has(std::string_view name) const {
  return reader_.kind(name) != AttrReader::Kind::kMissing;
}

void AttrParser::fail(std::string message) {
  if (status_.ok()) status_ = Status::error(std::move(message));
}

bool AttrParser::expect(std::string_view name, AttrReader::Kind kind) {
  AttrReader::Kind actual = reader_.kind(name);
  if (actual == AttrReader::Kind::kMissing) return false;
  if (actual != kind) {
    fail(fmt::format("attribute '{}' has the wrong type", name));
    return false;
  }
  return true;
}

int64_t AttrParser::int_or(std::string_view name, int64_t fallback) {
  return expect(name, AttrReader::Kind::kInt) ? reader_.get_int(name) : fallback;
}

bool AttrParser::bool_or(std::string_view name, bool fallback) {
  int64_t v = int_or(name, fallback ? 1 : 0);
  if (v != 0 && v != 1) fail(fmt::format("attribute '{}' must be 0 or 1, not {}", name, v));
  return v != 0;
}

std::optional<int64_t> AttrParser::optional_int(std::string_view name) {
  if (!expect(name, AttrReader::Kind::kInt)) return std::nullopt;
  return reader_.get_int(name);
}

float AttrParser::float_or(std::string_view name, float fallback) {
  return expect(name, AttrReader::Kind::kFloat) ? reader_.get_float(name) : fallback;
}

std::optional<float> AttrParser::optional_float(std::string_view name) {
  if (!expect(name, AttrReader::Kind::kFloat)) return std::nullopt;
  return reader_.get_float(name);
}

std::string AttrParser::string_or(std::string_view name, std::string fallback) {
  return expect(name, AttrReader::Kind::kString) ? reader_.get_string(name) : fallback;
}

Ints AttrParser::ints_or_empty(std::string_view name) {
  return expect(name, AttrReader::Kind::kInts) ? reader_.get_ints(name) : Ints{};
}

std::vector<float> AttrParser::floats(std::string_view name) {
  return expect(name, AttrReader::Kind::kFloats) ? reader_.get_floats(name) : std::vector<float>{};
}

std::vector<std::string> AttrParser::strings(std::string_view name) {
  return expect(name, AttrReader::Kind::kStrings) ? reader_.get_strings(name)
                                                  : std::vector<std::string>{};
}

std::optional<Ints> AttrParser::optional_ints(std::string_view name) {
  if (!expect(name, AttrReader::Kind::kInts)) return std::nullopt;
  return reader_.get_ints(name);
}

TensorRef AttrParser::tensor(std::string_view name) {
  if (!expect(name, AttrReader::Kind::kTensor)) return nullptr;
  Result<Tensor> t = reader_.get_tensor(name);
  if (!t.ok()) {
    fail(fmt::format("attribute '{}': {}", name, t.status().message()));
    return nullptr;
  }
  return std::make_shared<const Tensor>(std::move(t).value());
}

AutoPad AttrParser::auto_pad() {
  std::string s = string_or("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  fail(fmt::format("attribute 'auto_pad' has unknown value '{}'", s));
  return AutoPad::kNotSet;
}

std::string_view auto_pad_name(AutoPad p) {
  switch (p) {
    case AutoPad::kNotSet: return "NOTSET";
    case AutoPad::kSameUpper: return "SAME_UPPER";
    case AutoPad::kSameLower: return "SAME_LOWER";
    case AutoPad::kValid: return "VALID";
  }
  return "?";
}

std::string_view pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::kConstant: return "constant";
    case PadMode::kReflect: return "reflect";
    case PadMode::kEdge: return "edge";
    case PadMode::kWrap: return "wrap";
  }
  return "?";
}

std::string_view loss_reduction_name(LossReduction r) {
  switch (r) {
    case LossReduction::kNone: return "none";
    case LossReduction::kSum: return "sum";
    case LossReduction::kMean: return "mean";
  }
  return "?";
}

std::string_view depth_to_space_mode_name(DepthToSpaceMode m) {
  return m == DepthToSpaceMode::kDCR ? "DCR" : "CRD";
}

namespace {

// The ONNX spellings of the Resize enums, in enum order.
constexpr std::string_view kResizeModes[] = {"nearest", "linear", "cubic"};
constexpr std::string_view kResizeCoordinates[] = {
    "half_pixel",           "pytorch_half_pixel", "align_corners",       "asymmetric",
    "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
constexpr std::string_view kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                              "ceil"};

// The enum value spelled "name" in "names", or a parse failure naming the attribute.
template <typename E, size_t N>
E enum_attr(AttrParser& p, std::string_view attr, const std::string_view (&names)[N],
            std::string_view fallback) {
  std::string name = p.string_or(attr, std::string(fallback));
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  p.fail(fmt::format("attribute '{}' has unknown value '{}'", attr, name));
  return static_cast<E>(0);
}

} // namespace

constexpr std::string_view kScatterReductions[] = {"none", "add", "mul", "max", "min"};

std::string_view scatter_reduction_name(ScatterReduction r) {
  return kScatterReductions[static_cast<size_t>(r)];
}

constexpr std::string_view kGridSampleModes[] = {"bilinear", "nearest", "bicubic"};
constexpr std::string_view kGridPaddings[] = {"zeros", "border", "reflection"};

std::string_view grid_sample_mode_name(GridSampleMode m) {
  return kGridSampleModes[static_cast<size_t>(m)];
}
std::string_view grid_padding_name(GridPadding p) { return kGridPaddings[static_cast<size_t>(p)]; }

constexpr std::string_view kRnnDirections[] = {"forward", "reverse", "bidirectional"};
constexpr std::string_view kRnnActivations[] = {"Sigmoid", "Tanh", "Relu", "Softsign", "Softplus"};

std::string_view rnn_direction_name(RnnDirection d) {
  return kRnnDirections[static_cast<size_t>(d)];
}
std::string_view rnn_activation_name(RnnActivation a) {
  return kRnnActivations[static_cast<size_t>(a)];
}

std::string_view resize_mode_name(ResizeMode m) { return kResizeModes[static_cast<size_t>(m)]; }
std::string_view resize_coordinates_name(ResizeCoordinates c) {
  return kResizeCoordinates[static_cast<size_t>(c)];
}
std::string_view nearest_mode_name(NearestMode m) { return kNearestModes[static_cast<size_t>(m)]; }

// ---- Parsers, one per attribute struct (and per default where ops differ) -----------------

namespace {

OpAttrs parse_none(AttrParser&) { return NoAttrs{}; }

OpAttrs parse_binary(AttrParser& p) {
  // Before opset 7, broadcasting was opt-in ("broadcast") and aligned at "axis";
  // canonicalize rewrites it into numpy broadcasting.
  if (p.opset() < 7 && p.int_or("broadcast", 0) != 0) {
    return LegacyBroadcastAttrs{p.optional_int("axis")};
  }
  return NoAttrs{};
}

OpAttrs parse_prelu(AttrParser& p) {
  // Before opset 7 the slope is per channel: it aligns with the input at axis 1.
  if (p.opset() < 7) return LegacyBroadcastAttrs{1};
  return NoAttrs{};
}

// Cast to float8 e8m0 rounds up (opset 24's round_mode default) and saturates; the other
// rounding modes are not implemented.
OpAttrs parse_cast_like(AttrParser& p) {
  std::string round_mode = p.string_or("round_mode", "up");
  if (round_mode != "up")
    p.fail(fmt::format("attribute 'round_mode' = '{}' is not supported yet", round_mode));
  return CastAttrs{DType::kF32, p.bool_or("saturate", true)};
}

OpAttrs parse_cast(AttrParser& p) {
  if (!p.has("to")) p.fail("attribute 'to' is required");
  CastAttrs a = std::get<CastAttrs>(parse_cast_like(p));
  a.to = p.dtype("to", DType::kF32);
  return a;
}

// BitCast (opset 26): "to" is required; CastAttrs carries it.
OpAttrs parse_bit_cast(AttrParser& p) {
  if (!p.has("to")) p.fail("attribute 'to' is required");
  return CastAttrs{p.dtype("to", DType::kF32)};
}

template <int kAlphaMillis> OpAttrs parse_alpha(AttrParser& p) {
  return AlphaAttrs{p.float_or("alpha", static_cast<float>(kAlphaMillis) / 1000.0f)};
}

OpAttrs parse_hard_sigmoid(AttrParser& p) {
  return HardSigmoidAttrs{p.float_or("alpha", 0.2f), p.float_or("beta", 0.5f)};
}

OpAttrs parse_selu(AttrParser& p) {
  SeluAttrs a;
  a.alpha = p.float_or("alpha", a.alpha);
  a.gamma = p.float_or("gamma", a.gamma);
  return a;
}

OpAttrs parse_clip(AttrParser& p) {
  if (p.opset() >= 11) return ClipAttrs{}; // bounds are inputs
  return ClipAttrs{p.optional_float("min"), p.optional_float("max")};
}

OpAttrs parse_moe(AttrParser& p) {
  return MoEAttrs{p.int_or("k", 1),
                  p.string_or("activation_type", "relu"),
                  p.bool_or("normalize_routing_weights", false),
                  p.optional_float("swiglu_limit"),
                  p.float_or("activation_alpha", 1.0f),
                  p.float_or("activation_beta", 0.0f)};
}

OpAttrs parse_mod(AttrParser& p) { return ModAttrs{p.bool_or("fmod", false)}; }

OpAttrs parse_is_inf(AttrParser& p) {
  return IsInfAttrs{p.bool_or("detect_negative", true), p.bool_or("detect_positive", true)};
}

OpAttrs parse_reduce(AttrParser& p) {
  return ReduceAttrs{p.optional_ints("axes"), p.bool_or("keepdims", true),
                     p.bool_or("noop_with_empty_axes", false)};
}

OpAttrs parse_arg_reduce(AttrParser& p) {
  return ArgReduceAttrs{p.int_or("axis", 0), p.bool_or("keepdims", true),
                        p.bool_or("select_last_index", false)};
}

OpAttrs parse_softmax(AttrParser& p) {
  return SoftmaxAttrs{p.int_or("axis", p.opset() >= 13 ? -1 : 1)};
}

template <int kDefaultAxis> OpAttrs parse_axis(AttrParser& p) {
  return AxisAttrs{p.int_or("axis", kDefaultAxis)};
}

OpAttrs parse_concat(AttrParser& p) {
  if (!p.has("axis")) p.fail("attribute 'axis' is required");
  return AxisAttrs{p.int_or("axis", 0)};
}

OpAttrs parse_batch_dims(AttrParser& p) {
  BatchDimsAttrs a{p.int_or("batch_dims", 0)};
  if (a.batch_dims < 0) p.fail("attribute 'batch_dims' must not be negative");
  return a;
}

OpAttrs parse_scatter(AttrParser& p) {
  ScatterAttrs a{p.int_or("axis", 0),
                 enum_attr<ScatterReduction>(p, "reduction", kScatterReductions, "none")};
  if (p.opset() < 18 &&
      (a.reduction == ScatterReduction::kMax || a.reduction == ScatterReduction::kMin))
    p.fail("attribute 'reduction' = max or min needs opset 18");
  return a;
}

OpAttrs parse_compress(AttrParser& p) { return CompressAttrs{p.optional_int("axis")}; }

OpAttrs parse_unique(AttrParser& p) {
  return UniqueAttrs{p.optional_int("axis"), p.bool_or("sorted", true)};
}

OpAttrs parse_non_max_suppression(AttrParser& p) {
  return NonMaxSuppressionAttrs{p.bool_or("center_point_box", false)};
}

OpAttrs parse_axes(AttrParser& p) { return AxesAttrs{p.optional_ints("axes")}; }

OpAttrs parse_split(AttrParser& p) {
  SplitAttrs a{p.int_or("axis", 0), p.optional_ints("split"), p.optional_int("num_outputs")};
  if (a.num_outputs && *a.num_outputs < 1) p.fail("attribute 'num_outputs' must be positive");
  return a;
}

OpAttrs parse_transpose(AttrParser& p) { return TransposeAttrs{p.optional_ints("perm")}; }

OpAttrs parse_reshape(AttrParser& p) { return ReshapeAttrs{p.bool_or("allowzero", false), {}, {}}; }

OpAttrs parse_shape(AttrParser& p) {
  return ShapeAttrs{p.int_or("start", 0), p.optional_int("end")};
}

OpAttrs parse_slice(AttrParser& p) {
  return SliceAttrs{p.optional_ints("starts"), p.optional_ints("ends"), p.optional_ints("axes"),
                    std::nullopt};
}

OpAttrs parse_pad(AttrParser& p) {
  PadAttrs a;
  std::string mode = p.string_or("mode", "constant");
  if (mode == "reflect") {
    a.mode = PadMode::kReflect;
  } else if (mode == "edge") {
    a.mode = PadMode::kEdge;
  } else if (mode == "wrap" && p.opset() >= 19) {
    a.mode = PadMode::kWrap;
  } else if (mode != "constant") {
    p.fail(fmt::format("attribute 'mode' has unknown value '{}'", mode));
  }
  a.pads = p.optional_ints("pads");
  a.value = p.float_or("value", 0.0f);
  return a;
}

OpAttrs parse_loss(AttrParser& p) {
  LossAttrs a;
  std::string reduction = p.string_or("reduction", "mean");
  if (reduction == "none") {
    a.reduction = LossReduction::kNone;
  } else if (reduction == "sum") {
    a.reduction = LossReduction::kSum;
  } else if (reduction != "mean") {
    p.fail(fmt::format("attribute 'reduction' has unknown value '{}'", reduction));
  }
  a.ignore_index = p.optional_int("ignore_index");
  return a;
}

// A precision other than the scale's (opset 23) is not implemented; output_dtype (21 for
// QuantizeLinear, 23 for DequantizeLinear) sets the output type where no zero point does.
OpAttrs parse_quantize(AttrParser& p) {
  QuantizeAttrs a{p.int_or("axis", 1), std::nullopt, p.int_or("block_size", 0),
                  p.bool_or("saturate", true), p.int_or("accuracy_level", 0)};
  if (a.block_size < 0) p.fail("attribute 'block_size' must not be negative");
  if (p.int_or("precision", 0) != 0) p.fail("attribute 'precision' is not supported yet");
  if (p.int_or("output_dtype", 0) != 0) a.output_dtype = p.dtype("output_dtype", DType::kU8);
  return a;
}

OpAttrs parse_window(AttrParser& p) {
  return WindowAttrs{p.dtype("output_datatype", DType::kF32), p.bool_or("periodic", true)};
}

OpAttrs parse_reverse_sequence(AttrParser& p) {
  ReverseSequenceAttrs a{p.int_or("batch_axis", 1), p.int_or("time_axis", 0)};
  if (!((a.batch_axis == 0 && a.time_axis == 1) || (a.batch_axis == 1 && a.time_axis == 0)))
    p.fail("attributes 'batch_axis' and 'time_axis' must be 0 and 1, in either order");
  return a;
}

OpAttrs parse_lrn(AttrParser& p) {
  LrnAttrs a{p.float_or("alpha", 0.0001f), p.float_or("beta", 0.75f), p.float_or("bias", 1.0f),
             p.int_or("size", 0)};
  if (a.size < 1) p.fail("attribute 'size' is required and must be positive");
  return a;
}

// Opset 20 made the axis an input (canonicalize reads a constant one), defaulting to -2.
OpAttrs parse_dft(AttrParser& p) {
  std::optional<int64_t> axis = p.opset() >= 20 ? std::nullopt : std::optional(p.int_or("axis", 1));
  return DftAttrs{axis, p.bool_or("inverse", false), p.bool_or("onesided", false)};
}

// STFT reads only onesided (default 1).
OpAttrs parse_stft(AttrParser& p) {
  return DftAttrs{std::nullopt, false, p.bool_or("onesided", true)};
}

// MelWeightMatrix: the output type (CastAttrs' "to").
OpAttrs parse_mel_weight_matrix(AttrParser& p) {
  return CastAttrs{p.dtype("output_datatype", DType::kF32)};
}

OpAttrs parse_einsum(AttrParser& p) {
  if (!p.has("equation")) p.fail("attribute 'equation' is required");
  return EinsumAttrs{p.string_or("equation", "")};
}

OpAttrs parse_top_k(AttrParser& p) {
  return TopKAttrs{p.int_or("axis", -1), p.bool_or("largest", true), p.bool_or("sorted", true)};
}

OpAttrs parse_trilu(AttrParser& p) { return TriluAttrs{p.bool_or("upper", true)}; }

OpAttrs parse_eye_like(AttrParser& p) {
  EyeLikeAttrs a;
  if (p.has("dtype")) a.dtype = p.dtype("dtype", DType::kF32);
  a.k = p.int_or("k", 0);
  return a;
}

// RandomNormal's mean and scale, or RandomUniform's low and high.
template <bool kNormal> OpAttrs parse_random(AttrParser& p) {
  RandomAttrs a;
  if (p.has("dtype")) a.dtype = p.dtype("dtype", DType::kF32);
  if (kNormal) {
    a.mean = p.float_or("mean", 0.0f);
    a.scale = p.float_or("scale", 1.0f);
  } else {
    a.low = p.float_or("low", 0.0f);
    a.high = p.float_or("high", 1.0f);
  }
  a.seed = p.optional_float("seed");
  a.shape = p.ints_or_empty("shape");
  a.sample_size = p.int_or("sample_size", 1);
  return a;
}

OpAttrs parse_cum_sum(AttrParser& p) {
  return CumSumAttrs{std::nullopt, p.bool_or("exclusive", false), p.bool_or("reverse", false)};
}

template <bool kHasMode> OpAttrs parse_block(AttrParser& p) {
  BlockAttrs a;
  if (!p.has("blocksize")) p.fail("attribute 'blocksize' is required");
  a.blocksize = p.int_or("blocksize", 1);
  if (a.blocksize < 1) p.fail("attribute 'blocksize' must be positive");
  std::string mode = kHasMode ? p.string_or("mode", "DCR") : "DCR";
  if (mode == "CRD") {
    a.mode = DepthToSpaceMode::kCRD;
  } else if (mode != "DCR") {
    p.fail(fmt::format("attribute 'mode' has unknown value '{}'", mode));
  }
  return a;
}

OpAttrs parse_bit_shift(AttrParser& p) {
  std::string direction = p.string_or("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    p.fail("attribute 'direction' must be \"LEFT\" or \"RIGHT\"");
  return BitShiftAttrs{direction == "LEFT"};
}

// The activation spelled "name" (ONNX Runtime reads them case-insensitively, and so does
// Weft), or a parse failure naming the supported ones.
RnnActivation rnn_activation(AttrParser& p, const std::string& name) {
  for (size_t i = 0; i < std::size(kRnnActivations); ++i) {
    if (std::equal(
            name.begin(), name.end(), kRnnActivations[i].begin(), kRnnActivations[i].end(),
            [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); }))
      return static_cast<RnnActivation>(i);
  }
  p.fail(fmt::format("activation '{}' is not supported (Weft supports {})", name,
                     fmt::join(kRnnActivations, ", ")));
  return RnnActivation::kTanh;
}

// RNN, GRU and LSTM, whose cells apply "kFunctions" activations (1, 2 or 3) per direction,
// from opset 7 (layout from opset 14).
template <int kFunctions> OpAttrs parse_recurrent(AttrParser& p) {
  RecurrentAttrs a;
  a.hidden_size = p.optional_int("hidden_size");
  if (a.hidden_size && *a.hidden_size < 1) p.fail("attribute 'hidden_size' must be positive");
  a.direction = enum_attr<RnnDirection>(p, "direction", kRnnDirections, "forward");
  a.layout = p.int_or("layout", 0);
  if (a.layout != 0 && a.layout != 1) p.fail("attribute 'layout' must be 0 or 1");
  size_t directions = a.direction == RnnDirection::kBidirectional ? 2 : 1;
  std::vector<std::string> names = p.strings("activations");
  if (names.empty()) {
    static const std::vector<std::string> defaults[] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    names = defaults[kFunctions - 1];
  }
  // One set may serve both directions.
  if (names.size() == kFunctions && directions == 2) {
    std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != kFunctions * directions) {
    p.fail(fmt::format("attribute 'activations' has {} functions, expected {}", names.size(),
                       kFunctions * directions));
  }
  for (const std::string& name : names)
    a.activations.push_back(rnn_activation(p, name));
  a.clip = p.optional_float("clip");
  if (a.clip && !(*a.clip > 0)) p.fail("attribute 'clip' must be positive");
  a.linear_before_reset = p.bool_or("linear_before_reset", false);
  a.input_forget = p.bool_or("input_forget", false);
  return a;
}

OpAttrs parse_shrink(AttrParser& p) {
  return ShrinkAttrs{p.float_or("lambd", 0.5f), p.float_or("bias", 0.0f)};
}

OpAttrs parse_resize(AttrParser& p) {
  ResizeAttrs a;
  // Opset 18's additions.
  a.antialias = p.bool_or("antialias", false);
  constexpr std::string_view kPolicies[] = {"stretch", "not_larger", "not_smaller"};
  a.aspect_policy =
      static_cast<int64_t>(enum_attr<int>(p, "keep_aspect_ratio_policy", kPolicies, "stretch"));
  a.axes = p.optional_ints("axes");
  a.mode = enum_attr<ResizeMode>(p, "mode", kResizeModes, "nearest");
  a.coordinate_transformation_mode = enum_attr<ResizeCoordinates>(
      p, "coordinate_transformation_mode", kResizeCoordinates, "half_pixel");
  a.nearest_mode = enum_attr<NearestMode>(p, "nearest_mode", kNearestModes, "round_prefer_floor");
  a.cubic_coeff_a = p.float_or("cubic_coeff_a", -0.75f);
  a.exclude_outside = p.bool_or("exclude_outside", false);
  a.extrapolation_value = p.float_or("extrapolation_value", 0.0f);
  if (p.opset() < 19 && a.coordinate_transformation_mode == ResizeCoordinates::kHalfPixelSymmetric)
    p.fail("attribute 'coordinate_transformation_mode' = half_pixel_symmetric needs opset 19");
  return a;
}

// Opset 20 renamed the modes bilinear and bicubic to linear and cubic (and allows N-D
// inputs).
OpAttrs parse_grid_sample(AttrParser& p) {
  GridSampleAttrs a;
  a.align_corners = p.bool_or("align_corners", false);
  if (p.opset() >= 20) {
    constexpr std::string_view kModes[] = {"linear", "nearest", "cubic"};
    a.mode = enum_attr<GridSampleMode>(p, "mode", kModes, "linear");
  } else {
    a.mode = enum_attr<GridSampleMode>(p, "mode", kGridSampleModes, "bilinear");
  }
  a.padding_mode = enum_attr<GridPadding>(p, "padding_mode", kGridPaddings, "zeros");
  return a;
}

// RoiAlign: opset 16 added coordinate_transformation_mode, defaulting to half_pixel; opset 10
// behaves as output_half_pixel. An adaptive sample count (sampling_ratio 0: ceil of each
// roi's bin size, known only from the rois' values) is not implemented.
OpAttrs parse_roi_align(AttrParser& p) {
  RoiAlignAttrs a;
  constexpr std::string_view kCoordinates[] = {"half_pixel", "output_half_pixel"};
  constexpr std::string_view kModes[] = {"avg", "max"};
  a.half_pixel = p.opset() >= 16 && enum_attr<int>(p, "coordinate_transformation_mode",
                                                   kCoordinates, "half_pixel") == 0;
  a.max = enum_attr<int>(p, "mode", kModes, "avg") == 1;
  a.output_height = p.int_or("output_height", 1);
  a.output_width = p.int_or("output_width", 1);
  a.sampling_ratio = p.int_or("sampling_ratio", 0);
  a.spatial_scale = p.float_or("spatial_scale", 1.0f);
  if (a.output_height < 1 || a.output_width < 1)
    p.fail("attributes 'output_height' and 'output_width' must be positive");
  if (a.sampling_ratio < 0) p.fail("attribute 'sampling_ratio' must not be negative");
  if (a.sampling_ratio == 0)
    p.fail("attribute 'sampling_ratio' = 0 (a sample count per roi) is not supported yet");
  return a;
}

// Upsample (opset 9): nearest or linear, at asymmetric coordinates, nearest rounding down.
OpAttrs parse_upsample(AttrParser& p) {
  ResizeAttrs a;
  a.mode = enum_attr<ResizeMode>(p, "mode", kResizeModes, "nearest");
  if (a.mode == ResizeMode::kCubic) p.fail("attribute 'mode' has unknown value 'cubic'");
  a.coordinate_transformation_mode = ResizeCoordinates::kAsymmetric;
  a.nearest_mode = NearestMode::kFloor;
  return a;
}

OpAttrs parse_conv(AttrParser& p) {
  ConvAttrs a;
  a.auto_pad = p.auto_pad();
  a.dilations = p.ints_or_empty("dilations");
  a.group = p.int_or("group", 1);
  a.kernel_shape = p.ints_or_empty("kernel_shape");
  a.pads = p.ints_or_empty("pads");
  a.strides = p.ints_or_empty("strides");
  if (a.group < 1) p.fail("attribute 'group' must be positive");
  return a;
}

OpAttrs parse_deform_conv(AttrParser& p) {
  DeformConvAttrs a;
  a.dilations = p.ints_or_empty("dilations");
  a.group = p.int_or("group", 1);
  a.kernel_shape = p.ints_or_empty("kernel_shape");
  a.offset_group = p.int_or("offset_group", 1);
  a.pads = p.ints_or_empty("pads");
  a.strides = p.ints_or_empty("strides");
  if (a.group < 1 || a.offset_group < 1)
    p.fail("attributes 'group' and 'offset_group' must be positive");
  return a;
}

OpAttrs parse_conv_transpose(AttrParser& p) {
  ConvTransposeAttrs a;
  a.auto_pad = p.auto_pad();
  a.dilations = p.ints_or_empty("dilations");
  a.group = p.int_or("group", 1);
  a.kernel_shape = p.ints_or_empty("kernel_shape");
  a.output_padding = p.ints_or_empty("output_padding");
  a.output_shape = p.ints_or_empty("output_shape");
  a.pads = p.ints_or_empty("pads");
  a.strides = p.ints_or_empty("strides");
  if (a.group < 1) p.fail("attribute 'group' must be positive");
  return a;
}

OpAttrs parse_col2im(AttrParser& p) {
  return Col2ImAttrs{p.ints_or_empty("dilations"), p.ints_or_empty("pads"),
                     p.ints_or_empty("strides")};
}

OpAttrs parse_pool(AttrParser& p) {
  PoolAttrs a;
  a.auto_pad = p.auto_pad();
  a.ceil_mode = p.bool_or("ceil_mode", false);
  a.count_include_pad = p.bool_or("count_include_pad", false);
  a.dilations = p.ints_or_empty("dilations");
  a.kernel_shape = p.ints_or_empty("kernel_shape");
  a.pads = p.ints_or_empty("pads");
  a.storage_order = p.int_or("storage_order", 0);
  a.strides = p.ints_or_empty("strides");
  if (a.kernel_shape.empty()) p.fail("attribute 'kernel_shape' is required");
  return a;
}

// LpPool: p was a float before opset 2.
OpAttrs parse_lp_pool(AttrParser& p) {
  LpPoolAttrs a{std::get<PoolAttrs>(parse_pool(p)), 2};
  if (p.opset() < 2) {
    float given = p.float_or("p", 2.0f);
    a.p = static_cast<int64_t>(given);
    if (given != static_cast<float>(a.p)) p.fail("attribute 'p' must be an integer");
  } else {
    a.p = p.int_or("p", 2);
  }
  if (a.p < 1) p.fail("attribute 'p' must be positive");
  return a;
}

OpAttrs parse_tensor_scatter(AttrParser& p) {
  std::string mode = p.string_or("mode", "linear");
  if (mode != "linear" && mode != "circular")
    p.fail(fmt::format("attribute 'mode' has unknown value '{}'", mode));
  return TensorScatterAttrs{p.int_or("axis", -2), mode == "circular"};
}

OpAttrs parse_affine_grid(AttrParser& p) {
  return AffineGridAttrs{p.bool_or("align_corners", false)};
}

OpAttrs parse_gemm(AttrParser& p) {
  return GemmAttrs{p.float_or("alpha", 1.0f), p.float_or("beta", 1.0f), p.bool_or("transA", false),
                   p.bool_or("transB", false)};
}

OpAttrs parse_batch_norm(AttrParser& p) {
  if (p.opset() < 9 && p.int_or("spatial", 1) == 0) {
    p.fail("attribute 'spatial' = 0 (per-activation statistics) is not supported");
  }
  return BatchNormAttrs{p.float_or("epsilon", 1e-5f), p.float_or("momentum", 0.9f),
                        p.bool_or("training_mode", false)};
}

OpAttrs parse_epsilon(AttrParser& p) { return EpsilonAttrs{p.float_or("epsilon", 1e-5f)}; }

OpAttrs parse_gelu(AttrParser& p) {
  std::string approximate = p.string_or("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    p.fail(fmt::format("attribute 'approximate' has unknown value '{}'", approximate));
  return GeluAttrs{approximate == "tanh"};
}

OpAttrs parse_group_norm(AttrParser& p) {
  if (!p.has("num_groups")) p.fail("attribute 'num_groups' is required");
  GroupNormAttrs a{p.int_or("num_groups", 1), p.float_or("epsilon", 1e-5f),
                   p.dtype("stash_type", DType::kF32)};
  if (a.num_groups < 1) p.fail("attribute 'num_groups' must be positive");
  return a;
}

OpAttrs parse_attention(AttrParser& p) {
  AttentionAttrs a;
  a.is_causal = p.bool_or("is_causal", false);
  a.q_num_heads = p.optional_int("q_num_heads");
  a.kv_num_heads = p.optional_int("kv_num_heads");
  a.qk_matmul_output_mode = p.int_or("qk_matmul_output_mode", 0);
  a.scale = p.optional_float("scale");
  a.softcap = p.float_or("softcap", 0.0f);
  if (p.has("softmax_precision")) {
    DType t = p.dtype("softmax_precision", DType::kF32);
    if (t != DType::kF32 && t != DType::kF16 && t != DType::kF64 && t != DType::kBF16)
      p.fail("attribute 'softmax_precision' must be 1 (FLOAT), 10 (FLOAT16), 11 (DOUBLE) or 16 "
             "(BFLOAT16)");
    a.softmax_precision = t;
  }
  a.left_window = p.int_or("left_window_size", -1);
  a.right_window = p.int_or("right_window_size", -1);
  if (a.qk_matmul_output_mode < 0 || a.qk_matmul_output_mode > 3)
    p.fail("attribute 'qk_matmul_output_mode' must be 0, 1, 2 or 3");
  if (a.left_window < -1 || a.right_window < -1) p.fail("window sizes must be -1 or non-negative");
  if ((a.q_num_heads && *a.q_num_heads < 1) || (a.kv_num_heads && *a.kv_num_heads < 1))
    p.fail("head counts must be positive");
  return a;
}

OpAttrs parse_lp_norm(AttrParser& p) {
  LpNormAttrs a{p.int_or("axis", -1), p.int_or("p", 2)};
  if (a.p != 1 && a.p != 2) p.fail("attribute 'p' must be 1 or 2");
  return a;
}

OpAttrs parse_rotary(AttrParser& p) {
  RotaryAttrs a{p.bool_or("interleaved", false), p.optional_int("num_heads"),
                p.int_or("rotary_embedding_dim", 0)};
  if (a.rotary_dim < 0 || a.rotary_dim % 2 != 0)
    p.fail("attribute 'rotary_embedding_dim' must be even and not negative");
  if (a.num_heads && *a.num_heads < 1) p.fail("attribute 'num_heads' must be positive");
  return a;
}

OpAttrs parse_layer_norm(AttrParser& p) {
  return LayerNormAttrs{p.int_or("axis", -1), p.float_or("epsilon", 1e-5f),
                        p.dtype("stash_type", DType::kF32)};
}

OpAttrs parse_dropout(AttrParser& p) {
  return DropoutAttrs{p.optional_float("ratio"), p.bool_or("is_test", false),
                      p.optional_int("seed")};
}

OpAttrs parse_mvn(AttrParser& p) {
  return AxesAttrs{p.optional_ints("axes").value_or(Ints{0, 2, 3})};
}

OpAttrs parse_adagrad(AttrParser& p) {
  OptimizerAttrs a;
  a.decay_factor = p.float_or("decay_factor", a.decay_factor);
  a.epsilon = p.float_or("epsilon", a.epsilon);
  a.norm_coefficient = p.float_or("norm_coefficient", a.norm_coefficient);
  return a;
}

OpAttrs parse_adam(AttrParser& p) {
  OptimizerAttrs a;
  a.alpha = p.float_or("alpha", a.alpha);
  a.beta = p.float_or("beta", a.beta);
  a.epsilon = p.float_or("epsilon", a.epsilon);
  a.norm_coefficient = p.float_or("norm_coefficient", a.norm_coefficient);
  a.norm_coefficient_post = p.float_or("norm_coefficient_post", a.norm_coefficient_post);
  return a;
}

OpAttrs parse_momentum(AttrParser& p) {
  for (std::string_view required : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!p.has(required)) p.fail(fmt::format("attribute '{}' is required", required));
  }
  OptimizerAttrs a;
  a.alpha = p.float_or("alpha", a.alpha);
  a.beta = p.float_or("beta", a.beta);
  a.norm_coefficient = p.float_or("norm_coefficient", a.norm_coefficient);
  std::string mode = p.string_or("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    p.fail(fmt::format("attribute 'mode' has unknown value '{}'", mode));
  a.nesterov = mode == "nesterov";
  return a;
}

OpAttrs parse_constant(AttrParser& p) {
  // Exactly one of the value attributes is set (the ONNX checker ensures it).
  if (TensorRef t = p.tensor("value")) return ConstantAttrs{t};
  if (auto f = p.optional_float("value_float")) {
    return ConstantAttrs{
        std::make_shared<const Tensor>(Tensor::from_vector<float>(DType::kF32, {}, {*f}))};
  }
  if (auto i = p.optional_int("value_int")) {
    return ConstantAttrs{std::make_shared<const Tensor>(Tensor::scalar_i64(*i))};
  }
  if (auto is = p.optional_ints("value_ints")) {
    return ConstantAttrs{std::make_shared<const Tensor>(Tensor::vector_i64(*is))};
  }
  if (p.has("value_floats")) {
    std::vector<float> fs = p.floats("value_floats");
    return ConstantAttrs{std::make_shared<const Tensor>(
        Tensor::from_vector<float>(DType::kF32, {static_cast<int64_t>(fs.size())}, fs))};
  }
  p.fail("Constant without a numeric tensor value (sparse and string values are not supported)");
  return ConstantAttrs{};
}

OpAttrs parse_constant_of_shape(AttrParser& p) {
  TensorRef value = p.tensor("value");
  if (!value) value = std::make_shared<const Tensor>(DType::kF32, std::vector<int64_t>{1});
  if (value->num_elements() != 1) p.fail("attribute 'value' must hold one element");
  return ConstantOfShapeAttrs{value};
}

constexpr int kAll = kMaxOpset;

// The table. Ranges start where Weft's reading of the op starts to hold; a model whose
// opset falls outside every range of an op gets a clear refusal naming the ranges. Ranges
// end at kAll unless a later ONNX version changed the op in a way Weft does not implement;
// versions that only widened an op's types keep its range, and the parsers refuse new
// attributes and attribute values they do not implement (docs/onnx-versions.md has the
// review of every op version past opset 17).
const std::vector<OpDef>& build_table() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> t;
    // Unary ops, from the opset that introduced them. Before opset 6 some carried a legacy
    // "consumed_inputs" attribute, which has no effect and is ignored.
    struct Unary {
      Op op;
      int since;
    };
    for (Unary u :
         {Unary{Op::kAbs, 1}, {Op::kCeil, 1},       {Op::kExp, 1},        {Op::kFloor, 1},
          {Op::kLog, 1},      {Op::kNeg, 1},        {Op::kReciprocal, 1}, {Op::kRelu, 1},
          {Op::kSigmoid, 1},  {Op::kSqrt, 1},       {Op::kTanh, 1},       {Op::kSoftplus, 1},
          {Op::kSoftsign, 1}, {Op::kAcos, 7},       {Op::kAsin, 7},       {Op::kAtan, 7},
          {Op::kCos, 7},      {Op::kSin, 7},        {Op::kTan, 7},        {Op::kAcosh, 9},
          {Op::kAsinh, 9},    {Op::kAtanh, 9},      {Op::kCosh, 9},       {Op::kSinh, 9},
          {Op::kErf, 9},      {Op::kSign, 9},       {Op::kRound, 11},     {Op::kHardSwish, 14},
          {Op::kMish, 18},    {Op::kBitwiseNot, 18}}) {
      t.push_back({u.op, u.since, kAll, parse_none, infer_same});
    }
    t.push_back({Op::kIdentity, 1, kAll, parse_none, infer_same});
    t.push_back({Op::kNot, 1, kAll, parse_none, infer_same});
    t.push_back({Op::kIsNaN, 9, kAll, parse_none, infer_same_bool});
    t.push_back({Op::kIsInf, 10, kAll, parse_is_inf, infer_same_bool});
    t.push_back({Op::kPRelu, 1, kAll, parse_prelu, infer_broadcast});
    for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kPow}) {
      t.push_back({op, 1, kAll, parse_binary, infer_broadcast});
    }
    for (Op op : {Op::kBitwiseAnd, Op::kBitwiseOr, Op::kBitwiseXor})
      t.push_back({op, 18, kAll, parse_none, infer_broadcast});
    t.push_back({Op::kGelu, 20, kAll, parse_gelu, infer_same});
    t.push_back({Op::kSwish, 24, kAll, parse_alpha<1000>, infer_same});
    for (Op op : {Op::kAnd, Op::kOr, Op::kXor, Op::kEqual, Op::kGreater, Op::kLess}) {
      t.push_back({op, 1, kAll, parse_binary, infer_broadcast_bool});
    }
    t.push_back({Op::kGreaterOrEqual, 12, kAll, parse_none, infer_broadcast_bool});
    t.push_back({Op::kLessOrEqual, 12, kAll, parse_none, infer_broadcast_bool});
    t.push_back({Op::kMod, 10, kAll, parse_mod, infer_broadcast});
    for (Op op : {Op::kMax, Op::kMin, Op::kSum, Op::kMean}) {
      t.push_back({op, 6, kAll, parse_none, infer_broadcast});
    }
    t.push_back({Op::kWhere, 9, kAll, parse_none, infer_where});
    t.push_back({Op::kCast, 6, kAll, parse_cast, infer_cast});
    t.push_back({Op::kCastLike, 15, kAll, parse_cast_like, infer_cast_like});
    t.push_back({Op::kBitCast, 26, kAll, parse_bit_cast, infer_bit_cast});
    t.push_back({Op::kClip, 6, kAll, parse_clip, infer_clip});
    t.push_back({Op::kElu, 6, kAll, parse_alpha<1000>, infer_same});
    t.push_back({Op::kCelu, 12, kAll, parse_alpha<1000>, infer_same});
    t.push_back({Op::kLeakyRelu, 6, kAll, parse_alpha<10>, infer_same});
    t.push_back({Op::kThresholdedRelu, 10, kAll, parse_alpha<1000>, infer_same});
    t.push_back({Op::kHardSigmoid, 6, kAll, parse_hard_sigmoid, infer_same});
    t.push_back({Op::kSelu, 6, kAll, parse_selu, infer_same});
    for (Op op : {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceMin, Op::kReduceProd,
                  Op::kReduceL1, Op::kReduceL2, Op::kReduceLogSum, Op::kReduceLogSumExp,
                  Op::kReduceSumSquare}) {
      t.push_back({op, 1, kAll, parse_reduce, infer_reduce});
    }
    t.push_back({Op::kArgMax, 1, kAll, parse_arg_reduce, infer_arg_reduce});
    t.push_back({Op::kArgMin, 1, kAll, parse_arg_reduce, infer_arg_reduce});
    for (Op op : {Op::kSoftmax, Op::kLogSoftmax, Op::kHardmax}) {
      t.push_back({op, 1, kAll, parse_softmax, infer_same});
    }
    t.push_back({Op::kLayerNormalization, 17, kAll, parse_layer_norm, infer_layer_norm});
    // Decomposed into primitives before lowering (passes/decompose.h).
    t.push_back({Op::kRMSNormalization, 23, kAll, parse_layer_norm, infer_rms_norm});
    t.push_back({Op::kGroupNormalization, 18, kAll, parse_group_norm, infer_group_norm});
    t.push_back({Op::kAttention, 23, kAll, parse_attention, infer_attention});
    t.push_back({Op::kRotaryEmbedding, 23, kAll, parse_rotary, infer_rotary});
    t.push_back({Op::kLpNormalization, 1, kAll, parse_lp_norm, infer_lp_norm});
    t.push_back({Op::kCenterCropPad, 18, kAll, parse_axes, infer_center_crop_pad});
    t.push_back({Op::kLpPool, 1, kAll, parse_lp_pool, infer_lp_pool});
    t.push_back({Op::kSwiGLU, 28, kAll, parse_alpha<1000>, infer_swiglu});
    t.push_back({Op::kAffineGrid, 20, kAll, parse_affine_grid, infer_affine_grid});
    t.push_back({Op::kCol2Im, 18, kAll, parse_col2im, infer_col2im});
    t.push_back({Op::kTensorScatter, 24, kAll, parse_tensor_scatter, infer_tensor_scatter});
    t.push_back({Op::kLinearAttention, 27, kAll, parse_linear_attention, infer_linear_attention});
    t.push_back({Op::kCausalConvWithState, 27, kAll, parse_causal_conv, infer_causal_conv});
    t.push_back({Op::kBatchNormalization, 6, kAll, parse_batch_norm, infer_batch_norm});
    t.push_back({Op::kInstanceNormalization, 6, kAll, parse_epsilon, infer_instance_norm});
    t.push_back({Op::kMeanVarianceNormalization, 9, kAll, parse_mvn, infer_mvn});
    t.push_back({Op::kDet, 11, kAll, parse_none, infer_det});
    t.push_back({Op::kTopK, 10, kAll, parse_top_k, infer_top_k});
    t.push_back({Op::kEinsum, 12, kAll, parse_einsum, infer_einsum});
    t.push_back({Op::kDFT, 17, kAll, parse_dft, infer_dft});
    t.push_back({Op::kSTFT, 17, kAll, parse_stft, infer_stft}); // decomposed
    t.push_back({Op::kMelWeightMatrix, 17, kAll, parse_mel_weight_matrix, infer_mel_weight_matrix});
    t.push_back({Op::kReverseSequence, 10, kAll, parse_reverse_sequence, infer_reverse_sequence});
    t.push_back({Op::kLRN, 1, kAll, parse_lrn, infer_same});
    t.push_back({Op::kQuantizeLinear, 10, kAll, parse_quantize, infer_quantize_linear});
    t.push_back({Op::kDequantizeLinear, 10, kAll, parse_quantize, infer_dequantize_linear});
    t.push_back({Op::kDynamicQuantizeLinear, 11, kAll, parse_none, infer_dynamic_quantize_linear});
    for (Op op : {Op::kHannWindow, Op::kHammingWindow, Op::kBlackmanWindow})
      t.push_back({op, 17, kAll, parse_window, infer_window});
    t.push_back({Op::kTfIdfVectorizer, 9, kAll, parse_tf_idf, infer_tf_idf}); // ml_ops.h
    t.push_back({Op::kTrilu, 14, kAll, parse_trilu, infer_same});
    t.push_back({Op::kEyeLike, 9, kAll, parse_eye_like, infer_eye_like});
    t.push_back({Op::kCumSum, 11, kAll, parse_cum_sum, infer_same});
    t.push_back({Op::kCumProd, 26, kAll, parse_cum_sum, infer_same});
    t.push_back({Op::kOneHot, 9, kAll, parse_axis<-1>, infer_one_hot});
    t.push_back({Op::kDepthToSpace, 1, 10, parse_block<false>, infer_depth_to_space});
    t.push_back({Op::kDepthToSpace, 11, kAll, parse_block<true>, infer_depth_to_space});
    t.push_back({Op::kSpaceToDepth, 1, 27, parse_block<false>, infer_space_to_depth});
    t.push_back({Op::kSpaceToDepth, 28, kAll, parse_block<true>, infer_space_to_depth}); // mode
    t.push_back({Op::kBitShift, 11, kAll, parse_bit_shift, infer_broadcast});
    t.push_back({Op::kShrink, 9, kAll, parse_shrink, infer_same});
    t.push_back({Op::kResize, 11, kAll, parse_resize, infer_resize});
    t.push_back({Op::kUpsample, 9, 9, parse_upsample, infer_resize});
    t.push_back({Op::kGridSample, 16, kAll, parse_grid_sample, infer_grid_sample});
    t.push_back({Op::kRoiAlign, 10, kAll, parse_roi_align, infer_roi_align});
    t.push_back({Op::kDeformConv, 19, kAll, parse_deform_conv, infer_deform_conv});
    t.push_back({Op::kNegativeLogLikelihoodLoss, 12, kAll, parse_loss, infer_nll_loss});
    t.push_back({Op::kSoftmaxCrossEntropyLoss, 12, kAll, parse_loss, infer_softmax_cross_entropy});
    t.push_back({Op::kMatMul, 1, kAll, parse_none, infer_matmul});
    t.push_back({Op::kGemm, 1, kAll, parse_gemm, infer_gemm});
    t.push_back({Op::kConv, 1, kAll, parse_conv, infer_conv});
    t.push_back({Op::kConvChannelsLast, 1, kAll, parse_conv, infer_conv_channels_last});
    t.push_back({Op::kQLinearConvChannelsLast, 1, kAll, parse_conv, infer_conv_channels_last});
    t.push_back({Op::kConvTranspose, 1, kAll, parse_conv_transpose, infer_conv_transpose});
    t.push_back({Op::kConvInteger, 10, kAll, parse_conv, infer_conv_integer});
    t.push_back({Op::kMatMulInteger, 10, kAll, parse_none, infer_matmul_integer});
    t.push_back({Op::kQLinearMatMul, 10, kAll, parse_none, infer_qlinear});
    t.push_back({Op::kQLinearMatMulBias, 1, kAll, parse_none, infer_qlinear});
    t.push_back({Op::kMoE, 1, kAll, parse_moe, infer_moe});
    t.push_back({Op::kQLinearConv, 10, kAll, parse_conv, infer_qlinear});
    t.push_back({Op::kMaxPool, 1, kAll, parse_pool, infer_pool});
    t.push_back({Op::kAveragePool, 1, kAll, parse_pool, infer_pool});
    t.push_back({Op::kMaxPoolChannelsLast, 1, kAll, parse_pool, infer_pool_channels_last});
    t.push_back({Op::kAveragePoolChannelsLast, 1, kAll, parse_pool, infer_pool_channels_last});
    t.push_back({Op::kMaxUnpool, 9, kAll, parse_pool, infer_max_unpool});
    t.push_back({Op::kGlobalAveragePool, 1, kAll, parse_none, infer_global_pool});
    t.push_back({Op::kGlobalMaxPool, 1, kAll, parse_none, infer_global_pool});
    t.push_back({Op::kConcat, 4, kAll, parse_concat, infer_concat});
    t.push_back({Op::kGather, 1, kAll, parse_axis<0>, infer_gather});
    t.push_back({Op::kGatherElements, 11, kAll, parse_axis<0>, infer_gather_elements});
    t.push_back({Op::kGatherND, 11, kAll, parse_batch_dims, infer_gather_nd});
    t.push_back({Op::kCompress, 11, kAll, parse_compress, infer_compress});
    // Data-dependent output shapes (data_dependent.h): they run on the host between stages.
    t.push_back({Op::kLoop, 1, kAll, parse_none, infer_loop}); // the importer sets its body
    t.push_back({Op::kScan, 8, kAll, parse_none, infer_scan}); // the importer sets its body
                                                               // (opset 8's: per batch entry)
    t.push_back({Op::kIf, 1, kAll, parse_none, infer_if});     // branches inlined at import
    t.push_back({Op::kNonZero, 9, kAll, parse_none, infer_non_zero});
    t.push_back({Op::kUnique, 11, kAll, parse_unique, infer_unique});
    t.push_back(
        {Op::kNonMaxSuppression, 10, kAll, parse_non_max_suppression, infer_non_max_suppression});
    t.push_back({Op::kScatter, 9, 10, parse_scatter, infer_scatter});
    t.push_back({Op::kScatterElements, 11, kAll, parse_scatter, infer_scatter});
    t.push_back({Op::kScatterND, 11, kAll, parse_scatter, infer_scatter});
    t.push_back({Op::kFlatten, 1, kAll, parse_axis<1>, infer_flatten});
    t.push_back({Op::kSqueeze, 1, kAll, parse_axes, infer_squeeze});
    t.push_back({Op::kUnsqueeze, 1, kAll, parse_axes, infer_unsqueeze});
    t.push_back({Op::kSplit, 2, kAll, parse_split, infer_split});
    t.push_back({Op::kTranspose, 1, kAll, parse_transpose, infer_transpose});
    t.push_back({Op::kReshape, 5, kAll, parse_reshape, infer_reshape});
    t.push_back(
        {Op::kExpand, 8, kAll, [](AttrParser&) -> OpAttrs { return ExpandAttrs{}; }, infer_expand});
    t.push_back(
        {Op::kTile, 6, kAll, [](AttrParser&) -> OpAttrs { return TileAttrs{}; }, infer_tile});
    t.push_back({Op::kSlice, 1, kAll, parse_slice, infer_slice});
    t.push_back({Op::kPad, 2, kAll, parse_pad, infer_pad});
    t.push_back({Op::kShape, 1, kAll, parse_shape, infer_shape_op});
    t.push_back({Op::kSize, 1, kAll, parse_none, infer_size});
    t.push_back(
        {Op::kRange, 11, kAll, [](AttrParser&) -> OpAttrs { return RangeAttrs{}; }, infer_range});
    t.push_back({Op::kConstant, 1, kAll, parse_constant, infer_constant});
    t.push_back({Op::kConstantOfShape, 9, kAll, parse_constant_of_shape, infer_constant_of_shape});
    t.push_back({Op::kDropout, 1, kAll, parse_dropout, infer_dropout});
    // Values drawn at each run, by calls that hold a generator (library/random_call.h).
    t.push_back({Op::kRandomNormal, 1, kAll, parse_random<true>, infer_random});
    t.push_back({Op::kRandomNormalLike, 1, kAll, parse_random<true>, infer_random});
    t.push_back({Op::kRandomUniform, 1, kAll, parse_random<false>, infer_random});
    t.push_back({Op::kRandomUniformLike, 1, kAll, parse_random<false>, infer_random});
    t.push_back({Op::kBernoulli, 15, kAll, parse_random<false>, infer_random});
    t.push_back({Op::kMultinomial, 7, kAll, parse_random<false>, infer_random});
    t.push_back({Op::kRNN, 7, kAll, parse_recurrent<1>, infer_recurrent});
    t.push_back({Op::kGRU, 7, kAll, parse_recurrent<2>, infer_recurrent});
    t.push_back({Op::kLSTM, 7, kAll, parse_recurrent<3>, infer_recurrent});
    // Domain ai.onnx.preview.training, opset 1, under qualified names (import_model.cc);
    // they do not depend on the ai.onnx opset.
    t.push_back({Op::kAdagrad, 1, kAll, parse_adagrad, infer_optimizer});
    t.push_back({Op::kAdam, 1, kAll, parse_adam, infer_optimizer});
    t.push_back({Op::kMomentum, 1, kAll, parse_momentum, infer_optimizer});
    // Domain ai.onnx.preview, opset 1; the importer reads the modifier graphs.
    t.push_back({Op::kFlexAttention, 1, kAll, parse_flex_attention, infer_flex_attention});
    // Domain ai.onnx.ml (ml_ops.h), at any ai.onnx opset.
    t.push_back({Op::kBinarizer, 1, kAll, parse_binarizer, infer_same});
    t.push_back({Op::kArrayFeatureExtractor, 1, kAll, parse_none, infer_array_feature_extractor});
    t.push_back({Op::kTreeEnsemble, 1, kAll, parse_tree_ensemble, infer_tree_ensemble});
    // Optional values: only what a tensor input or no input means (decompose.cc).
    t.push_back({Op::kOptionalHasElement, 15, kAll, parse_none, infer_optional_has_element});
    t.push_back({Op::kOptionalGetElement, 15, kAll, parse_none, infer_optional_get_element});
    return t;
  }();
  return table;
}

} // namespace

DType AttrParser::dtype(std::string_view name, DType fallback) {
  if (!expect(name, AttrReader::Kind::kInt)) return fallback;
  std::optional<DType> t = reader_.get_dtype(name);
  if (!t) fail(fmt::format("attribute '{}' names a data type Weft does not support", name));
  return t.value_or(fallback);
}

const std::vector<OpDef>& all_ops() { return build_table(); }

const OpDef* find_op(Op op, int opset) {
  for (const OpDef& def : build_table()) {
    if (def.op == op && def.min_opset <= opset && opset <= def.max_opset) return &def;
  }
  return nullptr;
}

std::vector<std::pair<int, int>> supported_opsets(Op op) {
  std::vector<std::pair<int, int>> ranges;
  for (const OpDef& def : build_table()) {
    if (def.op == op) ranges.emplace_back(def.min_opset, def.max_opset);
  }
  return ranges;
}

} // namespace weft
