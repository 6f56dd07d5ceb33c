// The op table: which ONNX ops Weft supports, at which opsets, how their attributes are
// parsed into typed structs, and how their output types are inferred.
//
// An entry covers a range of ai.onnx opsets [min_opset, max_opset] over which the op's
// signature is one ONNX version (or several versions that Weft treats alike). A node whose
// (op_type, opset) has no entry is unsupported; the importer lists all of them at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/graph/attrs.h"
#include "weft/graph/op.h"
#include "weft/graph/shape.h"
#include "weft/support/status.h"

namespace weft {

struct Node;

// The attributes of one node, as the importer sees them. The onnx/ layer implements it over
// a NodeProto, so that the table does not depend on protobuf.
class AttrReader {
public:
  enum class Kind { kMissing, kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kOther };
  virtual ~AttrReader() = default;
  virtual Kind kind(std::string_view name) const = 0;
  virtual int64_t get_int(std::string_view name) const = 0;
  virtual float get_float(std::string_view name) const = 0;
  virtual std::string get_string(std::string_view name) const = 0;
  virtual Ints get_ints(std::string_view name) const = 0;
  virtual std::vector<float> get_floats(std::string_view name) const = 0;
  virtual std::vector<std::string> get_strings(std::string_view name) const = 0;
  virtual Result<Tensor> get_tensor(std::string_view name) const = 0;
  // An int attribute holding an ONNX data type; none when Weft has no such dtype.
  virtual std::optional<DType> get_dtype(std::string_view name) const = 0;
};

// Reads typed attributes with defaults; the first attribute of the wrong kind or value is
// kept as the parse error.
class AttrParser {
public:
  AttrParser(const AttrReader& reader, int opset) : reader_(reader), opset_(opset) {}

  int opset() const { return opset_; }
  bool has(std::string_view name) const;
  int64_t int_or(std::string_view name, int64_t fallback);
  // A flag: 0 or 1, as ONNX defines them (another value is an error: ONNX Runtime reads some
  // such as set, others as clear).
  bool bool_or(std::string_view name, bool fallback);
  float float_or(std::string_view name, float fallback);
  std::optional<float> optional_float(std::string_view name);
  std::string string_or(std::string_view name, std::string fallback);
  Ints ints_or_empty(std::string_view name);
  std::optional<Ints> optional_ints(std::string_view name);
  std::vector<float> floats(std::string_view name);
  std::vector<std::string> strings(std::string_view name); // empty when absent
  std::optional<int64_t> optional_int(std::string_view name);
  TensorRef tensor(std::string_view name);
  DType dtype(std::string_view name, DType fallback);
  AutoPad auto_pad();

  void fail(std::string message);
  const Status& status() const { return status_; }

private:
  bool expect(std::string_view name, AttrReader::Kind kind);

  const AttrReader& reader_;
  int opset_;
  Status status_;
};

// Output types of a node from its input types (and constant inputs and attributes).
using ShapeFn = Result<std::vector<TensorType>> (*)(const Node& node);

struct OpDef {
  Op op;
  int min_opset;
  int max_opset;
  OpAttrs (*parse)(AttrParser& parser);
  ShapeFn infer; // null: output types come from ONNX shape inference alone
};

// Ops of other domains than ai.onnx have qualified names, "<domain>.<op>" (ops.inc). Weft
// knows the optimizers of ai.onnx.preview.training (Op::kAdagrad, kAdam, kMomentum), opset 1;
// FlexAttention of ai.onnx.preview, opset 1; and three ops of ai.onnx.ml (Binarizer,
// ArrayFeatureExtractor, TreeEnsemble; any of its opsets: they have one version each).
inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";
inline constexpr int kTrainingOpset = 1;
inline constexpr std::string_view kPreviewDomain = "ai.onnx.preview";
inline constexpr int kPreviewOpset = 1;
inline constexpr std::string_view kMlDomain = "ai.onnx.ml";

// Weft's own ops, which passes make (no model can name them): Op::kConvChannelsLast, Conv
// over channels-last activations (passes/channels_last.h), with Conv's attributes and weights;
// Op::kQLinearConvChannelsLast, QLinearConv over them, with QLinearConv's inputs;
// Op::kMaxPoolChannelsLast and Op::kAveragePoolChannelsLast, MaxPool (without Indices) and
// AveragePool over them, with their attributes (passes/channels_last.h, pools_between_regions);
// Op::kQLinearMatMulBias, QLinearMatMul's eight inputs and a ninth, an int32 bias [N] added to
// the sums before requantization, as QLinearConv's B (passes/quantized_products.h). And
// Op::kMoE, a mixture of experts (attrs.h, MoEAttrs), which the import of com.microsoft's MoE
// and QMoE makes in domain kWeftDomain; a model's own nodes of that domain are refused there.
inline constexpr std::string_view kWeftDomain = "weft";
// The op a profile shows for "op": the ONNX op a node of Weft's own computes.
inline Op shown_op(Op op) {
  return op == Op::kConvChannelsLast          ? Op::kConv
         : op == Op::kQLinearConvChannelsLast ? Op::kQLinearConv
         : op == Op::kQLinearMatMulBias       ? Op::kQLinearMatMul
         : op == Op::kMaxPoolChannelsLast     ? Op::kMaxPool
         : op == Op::kAveragePoolChannelsLast ? Op::kAveragePool
                                              : op;
}

// The ai.onnx opsets Weft accepts: those of the ONNX release the table follows
// (docs/onnx-versions.md). A model outside this window is refused; so is a node whose op
// has an entry at none of its opset's ranges.
inline constexpr std::string_view kOnnxRelease = "1.23.2";
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 28;
// The newest ONNX IR version, of the same release.
inline constexpr int64_t kMaxIrVersion = 14;

// The entry for "op" at "opset", or null.
const OpDef* find_op(Op op, int opset);
// The opset ranges at which "op" is supported, for error messages; empty for an op Weft does
// not know at all.
std::vector<std::pair<int, int>> supported_opsets(Op op);
// Every entry, for documentation and tests.
const std::vector<OpDef>& all_ops();

} // namespace weft
