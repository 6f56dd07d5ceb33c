#include "weft/onnx/contrib_ops.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "weft/graph/op_table.h"
#include "weft/onnx/model_checks.h"
#include "weft/onnx/onnx_dtype.h"
#include "weft/onnx/tensor_proto.h"

namespace weft {

namespace {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto float_attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a.add_ints(x);
  return a;
}

onnx::AttributeProto tensor_attr(const std::string& name, const Tensor& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = tensor_to_proto(t, "");
  return a;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// What the expansions of one graph share: its constants (initializers and Constant nodes
// so far), and the dequantized form of each quantized value, made once for all its readers
// so that each QuantizeLinear meets one DequantizeLinear (canonicalize's QDQ pair).
// And the ranks known so far: of the graph's inputs, initializers and value_info, and through
// the Casts and Identities after them (an attention mask's rank says what it means).
struct Scope {
  std::map<std::string, const onnx::TensorProto*> constants;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, std::string> dequantized;
  std::map<std::string, int> ranks;
};

// One node's expansion: new nodes, at the model's opset, appended to "out". Values it makes
// are named after the node with a prefix of their own.
class Expansion {
public:
  Expansion(const onnx::NodeProto& node, Nodes& out, Scope& scope, int opset, std::string prefix)
      : node_(node), out_(out), scope_(scope), opset_(opset), prefix_(std::move(prefix)) {}

  int opset() const { return opset_; }
  const onnx::NodeProto& node() const { return node_; }

  // The node's input "i", empty when absent.
  std::string in(int i) const { return i < node_.input_size() ? node_.input(i) : std::string(); }
  std::string out(int i) const { return i < node_.output_size() ? node_.output(i) : std::string(); }
  int64_t int_attr_or(const std::string& name, int64_t fallback) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? a->i() : fallback;
  }

  // A node of "type" writing "output" (a new value when empty); trailing absent inputs
  // are dropped.
  std::string op(Op type, std::vector<std::string> inputs,
                 std::vector<onnx::AttributeProto> attrs = {}, std::string output = "") {
    while (!inputs.empty() && inputs.back().empty())
      inputs.pop_back();
    std::string name = fmt::format("{}{}_{}", prefix_, type, count_++);
    if (output.empty()) output = name;
    onnx::NodeProto* n = out_.Add();
    n->set_op_type(std::string(op_name(type)));
    n->set_name(name);
    for (const std::string& i : inputs)
      n->add_input(i);
    n->add_output(output);
    for (onnx::AttributeProto& a : attrs)
      *n->add_attribute() = std::move(a);
    return output;
  }

  // A Constant node of "t".
  std::string constant_of(const Tensor& t) {
    return op(Op::kConstant, {}, {tensor_attr("value", t)});
  }

  std::string ints(const std::vector<int64_t>& v) { return constant_of(Tensor::vector_i64(v)); }
  std::string ints_scalar(int64_t v) { return constant_of(Tensor::scalar_i64(v)); }

  // The float values of quantized input "x" (DequantizeLinear), per tensor or along "axis".
  std::string dequantize(const std::string& x, const std::string& scale, const std::string& zero,
                         std::optional<int64_t> axis = std::nullopt) {
    if (opset_ < 13) axis.reset();
    auto key = std::make_tuple(x, scale, zero, axis.value_or(kPerTensor));
    auto it = scope_.dequantized.find(key);
    if (it != scope_.dequantized.end()) return it->second;
    std::vector<onnx::AttributeProto> attrs;
    if (axis) attrs.push_back(int_attr("axis", *axis));
    return scope_.dequantized[key] = op(Op::kDequantizeLinear, {x, scale, zero}, attrs);
  }

  // The constant "name" holds, if it is one.
  const onnx::TensorProto* constant(const std::string& name) const {
    auto it = scope_.constants.find(name);
    return it == scope_.constants.end() ? nullptr : it->second;
  }

  // The rank of "name", where the graph says it (Scope::ranks).
  std::optional<int> rank(const std::string& name) const {
    auto it = scope_.ranks.find(name);
    return it == scope_.ranks.end() ? std::nullopt : std::optional(it->second);
  }
  void set_rank(const std::string& name, int rank) { scope_.ranks[name] = rank; }

  // "axis" where "scale" is a constant of more than one element (per axis), else none.
  std::optional<int64_t> axis_of(const std::string& scale, int64_t axis) const;

  // "y" quantized into the node's output. The contrib ops' output zero point defaults to 0
  // of the input's type; QuantizeLinear's to uint8's, so an absent one is made like "like"
  // where CastLike exists (opset 15).
  void quantize(const std::string& y, const std::string& scale, std::string zero,
                const std::string& like) {
    if (zero.empty() && opset_ >= 15)
      zero = op(Op::kCastLike, {constant_of(Tensor(DType::kI32, {})), like});
    op(Op::kQuantizeLinear, {y, scale, zero}, {}, out(0));
  }

  // A scalar "v" of the element type of "like": that of a constant when "like" is one, else
  // CastLike to it (opset 15 on; folded at compile time), else f32.
  std::string scalar(double v, const std::string& like) {
    const onnx::TensorProto* t = constant(like);
    std::optional<DType> dtype = t ? dtype_from_onnx(t->data_type()) : std::nullopt;
    Tensor value(dtype && dtype_is_float(*dtype) ? *dtype : DType::kF32, {});
    value.set_double(0, v);
    std::string c = constant_of(value);
    return t || opset_ < 15 ? c : op(Op::kCastLike, {c, like});
  }

  // The mean of "x" over "axes" (an input from opset 18, an attribute before).
  std::string mean(const std::string& x, const std::vector<int64_t>& axes, int64_t keepdims = 1) {
    onnx::AttributeProto keep = int_attr("keepdims", keepdims);
    if (opset_ >= 18) return op(Op::kReduceMean, {x, ints(axes)}, {keep});
    return op(Op::kReduceMean, {x}, {keep, ints_attr("axes", axes)});
  }

  float float_attr_or(const std::string& name, float fallback) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? a->f() : fallback;
  }

  // The same attributes without "skip".
  std::vector<onnx::AttributeProto> attrs_except(const std::string& skip) const {
    std::vector<onnx::AttributeProto> out;
    for (const auto& a : node_.attribute()) {
      if (a.name() != skip) out.push_back(a);
    }
    return out;
  }

private:
  static constexpr int64_t kPerTensor = std::numeric_limits<int64_t>::min();

  const onnx::NodeProto& node_;
  Nodes& out_;
  Scope& scope_;
  int opset_;
  std::string prefix_;
  int count_ = 0;
};

// The number of elements of "t".
int64_t num_elements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  return n;
}

std::optional<int64_t> Expansion::axis_of(const std::string& scale, int64_t axis) const {
  const onnx::TensorProto* t = constant(scale);
  return t && num_elements(*t) > 1 ? std::optional(axis) : std::nullopt;
}

using Expand = std::function<Status(Expansion&)>;

struct ContribOp {
  std::vector<const char*> inputs; // names, for messages; none: the expansion checks its own
  size_t required;                 // how many of them must be given (zero points are optional)
  Expand expand;
};

// QLinearAdd, QLinearMul: C = Q(DQ(A) op DQ(B)), broadcast.
ContribOp binary(Op op) {
  return {
      {"A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point", "C_scale", "C_zero_point"},
      7,
      [op](Expansion& e) {
        std::string a = e.dequantize(e.in(0), e.in(1), e.in(2));
        std::string b = e.dequantize(e.in(3), e.in(4), e.in(5));
        e.quantize(e.op(op, {a, b}), e.in(6), e.in(7), e.in(0));
        return Status();
      }};
}

// QLinearSigmoid, QLinearLeakyRelu: Y = Q(op(DQ(X))).
ContribOp unary(Op op, std::vector<onnx::AttributeProto> (*attrs)(const Expansion&)) {
  return {
      {"X", "X_scale", "X_zero_point", "Y_scale", "Y_zero_point"}, 4, [op, attrs](Expansion& e) {
        std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
        e.quantize(e.op(op, {x}, attrs(e)), e.in(3), e.in(4), e.in(0));
        return Status();
      }};
}

std::vector<onnx::AttributeProto> no_attrs(const Expansion&) { return {}; }

std::vector<onnx::AttributeProto> leaky_relu_attrs(const Expansion& e) {
  return {float_attr("alpha", e.float_attr_or("alpha", 0.01f))};
}

// Pools whose quantized form may also take NHWC input (channels_last), which Weft refuses.
Status channels_first(const Expansion& e) {
  if (e.int_attr_or("channels_last", 0) == 0) return Status();
  return Status::error("channels_last=1 is not supported (NCHW input only)");
}

// QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...).
Status expand_concat(Expansion& e) {
  const onnx::NodeProto& n = e.node();
  if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0) {
    return Status::error(fmt::format("has {} inputs: it takes Y_scale, Y_zero_point and then a "
                                     "(tensor, scale, zero point) triple per input",
                                     n.input_size()));
  }
  if (!find_attr(n, "axis")) return Status::error("attribute 'axis' is required");
  std::vector<std::string> parts;
  for (int i = 2; i < n.input_size(); i += 3)
    parts.push_back(e.dequantize(e.in(i), e.in(i + 1), e.in(i + 2)));
  e.quantize(e.op(Op::kConcat, parts, {int_attr("axis", e.int_attr_or("axis", 0))}), e.in(0),
             e.in(1), e.in(2));
  return Status();
}

// QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point):
// alpha * A' B' + C, with C's int32 bias at scale a_scale * b_scale (B's per column when
// b_scale is); quantized when y_scale is given, float otherwise.
Status expand_qgemm(Expansion& e) {
  int64_t trans_b = e.int_attr_or("transB", 0);
  std::string a = e.dequantize(e.in(0), e.in(1), e.in(2));
  std::string b = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), trans_b ? 0 : 1));
  std::string c;
  if (!e.in(6).empty())
    c = e.dequantize(e.in(6), e.op(Op::kMul, {e.in(1), e.in(4)}), "", e.axis_of(e.in(4), 0));
  std::vector<onnx::AttributeProto> attrs = {float_attr("alpha", e.float_attr_or("alpha", 1.0f)),
                                             int_attr("transA", e.int_attr_or("transA", 0)),
                                             int_attr("transB", trans_b)};
  if (e.in(7).empty()) {
    e.op(Op::kGemm, {a, b, c}, attrs, e.out(0));
  } else {
    e.quantize(e.op(Op::kGemm, {a, b, c}, attrs), e.in(7), e.in(8), e.in(0));
  }
  return Status();
}

// QLinearSoftmax(X, X_scale, x_zero_point, y_scale, y_zero_point), axis and the ai.onnx
// "opset" whose Softmax it follows: before 13, over the input flattened at axis.
Status expand_softmax(Expansion& e) {
  const onnx::AttributeProto* version = find_attr(e.node(), "opset");
  if (!version) return Status::error("attribute 'opset' is required");
  int64_t axis = e.int_attr_or("axis", version->i() < 13 ? 1 : -1);
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2)), y;
  if (version->i() < 13) {
    std::string flat = e.op(Op::kFlatten, {x}, {int_attr("axis", axis)});
    y = e.op(Op::kReshape,
             {e.op(Op::kSoftmax, {flat}, {int_attr("axis", 1)}), e.op(Op::kShape, {x})});
  } else if (e.opset() >= 13 || axis == -1) {
    y = e.op(Op::kSoftmax, {x}, {int_attr("axis", axis)});
  } else {
    return Status::error(fmt::format("a Softmax over axis {} alone needs ai.onnx opset 13 or "
                                     "later (the model's is {})",
                                     axis, e.opset()));
  }
  e.quantize(y, e.in(3), e.in(4), e.in(0));
  return Status();
}

// QLinearReduceMean(data, data_scale, data_zero_point, reduced_scale, reduced_zero_point).
Status expand_reduce_mean(Expansion& e) {
  const onnx::AttributeProto* axes = find_attr(e.node(), "axes");
  if (!axes) return Status::error("attribute 'axes' is required");
  std::vector<int64_t> list(axes->ints().begin(), axes->ints().end());
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
  e.quantize(e.mean(x, list, e.int_attr_or("keepdims", 1)), e.in(3), e.in(4), e.in(0));
  return Status();
}

// ai.onnx's QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B) on constant weights, in the form ORT's QDQ format writes: the library runs
// it on f32 weights folded at compile time. B's int32 bias has scale x_scale * w_scale.
Status expand_qlinear_conv(Expansion& e) {
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
  std::string w = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), 0));
  std::string b;
  if (!e.in(8).empty())
    b = e.dequantize(e.in(8), e.op(Op::kMul, {e.in(1), e.in(4)}), "", e.axis_of(e.in(4), 0));
  e.quantize(e.op(Op::kConv, {x, w, b}, e.attrs_except("")), e.in(6), e.in(7), e.in(0)); // all
  return Status();
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point),
// likewise; scales per row of a and per column of b.
Status expand_qlinear_matmul(Expansion& e) {
  std::string a = e.dequantize(e.in(0), e.in(1), e.in(2), e.axis_of(e.in(1), -2));
  std::string b = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), -1));
  e.quantize(e.op(Op::kMatMul, {a, b}), e.in(6), e.in(7), e.in(0));
  return Status();
}

// Does the QLinearConv or QLinearMatMul "e" take the float path: constant weights (input 3)
// of rank 2 or more, with a scale and zero point of one element or one per output channel
// (other lengths stay for infer_qlinear's error), and before opset 13 (no DequantizeLinear
// axis) scales and zero points of one element.
bool weights_constant(const Expansion& e) {
  const onnx::TensorProto* w = e.constant(e.in(3));
  if (!w || w->dims_size() < 2) return false;
  int64_t channels =
      graph_op(e.node()) == Op::kQLinearConv ? w->dims(0) : w->dims(w->dims_size() - 1);
  for (int i : {4, 5}) {
    const onnx::TensorProto* t = e.constant(e.in(i));
    if (!e.in(i).empty() && (!t || (num_elements(*t) != 1 && num_elements(*t) != channels)))
      return false;
  }
  if (e.opset() >= 13) return true;
  for (int i : {1, 2, 4, 5, 6, 7}) {
    if (e.in(i).empty()) continue;
    const onnx::TensorProto* t = e.constant(e.in(i));
    if (!t || e.axis_of(e.in(i), 0)) return false;
  }
  return true;
}

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

// SimplifiedLayerNormalization(X, scale), ONNX Runtime's RMSNorm: over the last axis only,
// without its output 1 (the inverse standard deviation).
Status expand_simplified_layer_norm(Expansion& e) {
  if (e.in(0).empty() || e.in(1).empty()) return Status::error("inputs X and scale are required");
  if (e.int_attr_or("axis", -1) != -1) return Status::error("only axis -1 is supported");
  if (!e.out(1).empty()) return Status::error("output 1 (inv_std_var) is not supported");
  normalize(e, e.in(0), e.float_attr_or("epsilon", 1e-5f), true, e.in(1), "");
  return Status();
}

// Dim "d" of "t", as an int64 tensor [1].
std::string dim_of(Expansion& e, const std::string& t, int64_t d) {
  return e.op(Op::kSlice, {e.op(Op::kShape, {t}), e.ints({d}), e.ints({d + 1})});
}

// Positions 0 .. n - 1 of dim "d" of "t", as int64.
std::string positions(Expansion& e, const std::string& t, int64_t d) {
  std::string n = e.op(Op::kSqueeze, {dim_of(e, t, d), e.ints({0})});
  return e.op(Op::kRange, {e.ints_scalar(0), n, e.ints_scalar(1)});
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
    std::string size =
        e.op(Op::kCast, {dim_of(e, qh, 3)}, {int_attr("to", onnx::TensorProto::FLOAT)});
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
      std::string b = dim_of(e, q, 0);
      std::string zeros =
          e.op(Op::kConstantOfShape, {b}, {tensor_attr("value", Tensor(DType::kI32, {1}))});
      std::string both = e.op(Op::kConcat, {mask, zeros}, {int_attr("axis", 0)}); // starts 0
      auto column = [&](const std::string& from, const std::string& to) {
        std::string piece = e.op(Op::kSlice, {both, from, to, e.ints({0})});
        return e.op(
            Op::kUnsqueeze,
            {e.op(Op::kCast, {piece}, {int_attr("to", onnx::TensorProto::INT64)}), e.ints({1})});
      };
      std::string keys = positions(e, k, 1);
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
    std::string rows = e.op(Op::kUnsqueeze, {positions(e, q, 1), e.ints({1})});
    std::string last = e.op(Op::kSub, {dim_of(e, q, 1), e.ints({1})});
    add_where(e.op(Op::kAnd,
                   {e.op(Op::kGreater, {positions(e, k, 1), rows}), e.op(Op::kLess, {rows, last})}),
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
    std::string d = dim_of(e, q, 2);
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
  std::string ids = e.in(0), at = e.in(8).empty() ? positions(e, ids, 1) : e.in(8);
  std::string sum =
      e.op(Op::kAdd, {e.op(Op::kGather, {e.in(2), ids}), e.op(Op::kGather, {e.in(3), at})}, {},
           e.in(1).empty() ? e.out(2) : "");
  if (!e.in(1).empty())
    sum = e.op(Op::kAdd, {sum, e.op(Op::kGather, {e.in(4), e.in(1)})}, {}, e.out(2));
  normalize(e, sum, e.float_attr_or("epsilon", 1e-12f), false, e.in(5), e.in(6));
  if (e.out(1).empty()) return Status();
  e.set_rank(e.out(1), 1);
  if (e.in(7).empty()) {
    e.op(Op::kConstantOfShape, {dim_of(e, ids, 0)},
         {tensor_attr("value", Tensor(DType::kI32, {1}))}, e.out(1));
  } else {
    std::string mask = e.op(Op::kCast, {e.in(7)}, {int_attr("to", onnx::TensorProto::INT32)});
    e.op(Op::kReduceSum, {mask, e.ints({1})}, {int_attr("keepdims", 0)}, e.out(1));
  }
  return Status();
}

// By qualified name: "com.microsoft.QGemm".
const std::map<std::string, ContribOp>& contrib_ops() {
  static const std::map<std::string, ContribOp> ops = {
      {"com.microsoft.Attention",
       {{"input", "weights", "bias", "mask_index", "past", "attention_bias",
         "past_sequence_length"},
        2,
        expand_attention}},
      {"com.microsoft.QGemm",
       {{"A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale",
         "y_zero_point"},
        5,
        expand_qgemm}},
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
      {"com.microsoft.QLinearAdd", binary(Op::kAdd)},
      {"com.microsoft.QLinearAveragePool",
       {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
        4,
        [](Expansion& e) {
          WEFT_RETURN_IF_ERROR(channels_first(e));
          std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
          e.quantize(e.op(Op::kAveragePool, {x}, e.attrs_except("channels_last")), e.in(3), e.in(4),
                     e.in(0));
          return Status();
        }}},
      {"com.microsoft.QLinearConcat", {{}, 0, expand_concat}},
      {"com.microsoft.QLinearGlobalAveragePool",
       {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
        5,
        [](Expansion& e) {
          WEFT_RETURN_IF_ERROR(channels_first(e));
          std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
          e.quantize(e.op(Op::kGlobalAveragePool, {x}), e.in(3), e.in(4), e.in(0));
          return Status();
        }}},
      {"com.microsoft.QLinearLeakyRelu", unary(Op::kLeakyRelu, leaky_relu_attrs)},
      {"com.microsoft.QLinearMul", binary(Op::kMul)},
      {"com.microsoft.QLinearReduceMean",
       {{"data", "data_scale", "data_zero_point", "reduced_scale", "reduced_zero_point"},
        4,
        expand_reduce_mean}},
      {"com.microsoft.QLinearSigmoid", unary(Op::kSigmoid, no_attrs)},
      {"com.microsoft.QLinearSoftmax",
       {{"X", "X_scale", "x_zero_point", "y_scale", "y_zero_point"}, 4, expand_softmax}},
      {"com.microsoft.QLinearWhere",
       {{"condition", "X", "x_scale", "x_zero_point", "Y", "y_scale", "y_zero_point", "z_scale",
         "z_zero_point"},
        9,
        [](Expansion& e) {
          std::string x = e.dequantize(e.in(1), e.in(2), e.in(3));
          std::string y = e.dequantize(e.in(4), e.in(5), e.in(6));
          e.quantize(e.op(Op::kWhere, {e.in(0), x, y}), e.in(7), e.in(8), e.in(1));
          return Status();
        }}},
  };
  return ops;
}

// Required inputs (the first "required", those with names ending in "_zero_point" aside,
// which are optional in every op here) are given, and no more than the op takes.
Status check_inputs(const onnx::NodeProto& node, const ContribOp& op) {
  if (op.inputs.empty()) return Status();
  if (static_cast<size_t>(node.input_size()) > op.inputs.size()) {
    return Status::error(
        fmt::format("has {} inputs, at most {}", node.input_size(), op.inputs.size()));
  }
  for (size_t i = 0; i < op.required; ++i) {
    std::string_view name = op.inputs[i];
    bool optional = name.ends_with("_zero_point");
    if (!optional && (static_cast<int>(i) >= node.input_size() || node.input(i).empty()))
      return Status::error(fmt::format("input '{}' is required", name));
  }
  return Status();
}

// The rank of a Cast's, an Identity's or a ReduceSum's output, where its input's is known
// (ONNX Runtime's optimizer makes an attention's [B] mask_index as ReduceSum(Cast(mask), 1)).
std::optional<int> output_rank(const onnx::NodeProto& n, const Scope& scope) {
  Op op = graph_op(n);
  auto in = n.input_size() > 0 ? scope.ranks.find(n.input(0)) : scope.ranks.end();
  if (n.output_size() != 1 || in == scope.ranks.end()) return std::nullopt;
  if (op == Op::kCast || op == Op::kIdentity) return in->second;
  if (op != Op::kReduceSum) return std::nullopt;
  const onnx::AttributeProto* keepdims = find_attr(n, "keepdims");
  if (!keepdims || keepdims->i() != 0) return in->second;
  if (const onnx::AttributeProto* axes = find_attr(n, "axes")) // (before opset 13)
    return in->second - axes->ints_size();
  auto axes = n.input_size() > 1 ? scope.constants.find(n.input(1)) : scope.constants.end();
  if (axes == scope.constants.end() || axes->second->dims_size() != 1) return std::nullopt;
  return in->second - static_cast<int>(axes->second->dims(0));
}

class Expander {
public:
  Expander(int opset, std::string name) : opset_(opset), name_(std::move(name)) {}

  // "outer": the constants of the graphs around this one.
  Status expand_graph(onnx::GraphProto& graph, const Scope& outer) {
    Nodes out;
    Scope scope{outer.constants, {}, outer.ranks};
    for (const onnx::TensorProto& t : graph.initializer()) {
      scope.constants[t.name()] = &t;
      scope.ranks[t.name()] = t.dims_size();
    }
    for (const auto* infos : {&graph.input(), &graph.value_info()}) {
      for (const onnx::ValueInfoProto& v : *infos) {
        if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
          scope.ranks[v.name()] = v.type().tensor_type().shape().dim_size();
      }
    }
    for (onnx::NodeProto& node : *graph.mutable_node()) {
      for (onnx::AttributeProto& a : *node.mutable_attribute()) {
        if (a.has_g()) WEFT_RETURN_IF_ERROR(expand_graph(*a.mutable_g(), scope));
        for (onnx::GraphProto& g : *a.mutable_graphs())
          WEFT_RETURN_IF_ERROR(expand_graph(g, scope));
      }
      std::string base = node.name().empty() ? node.op_type() : node.name();
      Expansion e(node, out, scope, opset_, fmt::format("{}__q{}/", base, count_));
      if (is_onnx_domain(node.domain()) && node.input_size() >= 8 && weights_constant(e) &&
          (graph_op(node) == Op::kQLinearConv || graph_op(node) == Op::kQLinearMatMul)) {
        ++count_;
        WEFT_RETURN_IF_ERROR(graph_op(node) == Op::kQLinearConv ? expand_qlinear_conv(e)
                                                                : expand_qlinear_matmul(e));
        continue;
      }
      // ONNX Runtime registers its RMSNorm in the ai.onnx domain: not an ONNX op.
      bool rms_norm =
          is_onnx_domain(node.domain()) && node.op_type() == "SimplifiedLayerNormalization";
      auto it = contrib_ops().find(rms_norm ? "com.microsoft.SkipSimplifiedLayerNormalization"
                                            : fmt::format("{}.{}", node.domain(), node.op_type()));
      if ((node.domain() != kMicrosoftDomain && !rms_norm) || it == contrib_ops().end()) {
        onnx::NodeProto* kept = out.Add();
        *kept = std::move(node);
        if (std::optional<int> rank = output_rank(*kept, scope))
          scope.ranks[kept->output(0)] = *rank;
        const onnx::AttributeProto* value = find_attr(*kept, "value");
        if (graph_op(*kept) == Op::kConstant && kept->output_size() == 1 && value && value->has_t())
          scope.constants[kept->output(0)] = &value->t();
        continue;
      }
      ++count_;
      Status s = rms_norm ? expand_simplified_layer_norm(e) : check_inputs(node, it->second);
      if (s.ok() && !rms_norm) s = it->second.expand(e);
      if (!s.ok()) {
        return Status::error(fmt::format("{}: node '{}' ({}.{}): {}", name_, base,
                                         rms_norm ? "ai.onnx" : kMicrosoftDomain, node.op_type(),
                                         s.message()));
      }
    }
    graph.mutable_node()->Swap(&out);
    return Status();
  }

private:
  int opset_;
  std::string name_;
  int count_ = 0;
};

} // namespace

Status expand_contrib_ops(onnx::ModelProto& model, int opset, const std::string& name) {
  return Expander(opset, name).expand_graph(*model.mutable_graph(), Scope{});
}

std::vector<std::string> contrib_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, op] : contrib_ops())
    names.push_back(name.substr(kMicrosoftDomain.size() + 1));
  return names;
}

std::string contrib_ops_list() {
  std::vector<std::string> names = contrib_op_names();
  return fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

} // namespace weft
