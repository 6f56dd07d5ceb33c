#include "weft/onnx/contrib_ops.h"

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

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// What the expansions of one graph share: its constants (initializers and Constant nodes
// so far), and the dequantized form of each quantized value, made once for all its readers
// so that each QuantizeLinear meets one DequantizeLinear (canonicalize's QDQ pair).
struct Scope {
  std::map<std::string, const onnx::TensorProto*> constants;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, std::string> dequantized;
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

  std::string ints(const std::vector<int64_t>& v) {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a.mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v)
      t->add_int64_data(x);
    return op(Op::kConstant, {}, {a});
  }

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

  // "axis" where "scale" is a constant of more than one element (per axis), else none.
  std::optional<int64_t> axis_of(const std::string& scale, int64_t axis) const;

  // "y" quantized into the node's output "index". The contrib ops' output zero point
  // defaults to 0 of the input's type; QuantizeLinear's to uint8's, so an absent one is
  // made like "like" where CastLike exists (opset 15).
  void quantize(const std::string& y, const std::string& scale, std::string zero,
                const std::string& like, int index = 0) {
    if (zero.empty() && opset_ >= 15) {
      onnx::AttributeProto a;
      a.set_name("value");
      a.set_type(onnx::AttributeProto::TENSOR);
      a.mutable_t()->set_data_type(onnx::TensorProto::INT32);
      a.mutable_t()->add_int32_data(0);
      zero = op(Op::kCastLike, {op(Op::kConstant, {}, {a}), like});
    }
    op(Op::kQuantizeLinear, {y, scale, zero}, {}, out(index));
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
  const onnx::AttributeProto* alpha = find_attr(e.node(), "alpha");
  return {float_attr("alpha", alpha ? alpha->f() : 0.01f)};
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
  const onnx::AttributeProto* alpha = find_attr(e.node(), "alpha");
  std::vector<onnx::AttributeProto> attrs = {float_attr("alpha", alpha ? alpha->f() : 1.0f),
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
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2)), y;
  onnx::AttributeProto keep = int_attr("keepdims", e.int_attr_or("keepdims", 1));
  if (e.opset() >= 18) {
    y = e.op(Op::kReduceMean, {x, e.ints(list)}, {keep});
  } else {
    y = e.op(Op::kReduceMean, {x}, {keep, ints_attr("axes", list)});
  }
  e.quantize(y, e.in(3), e.in(4), e.in(0));
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
  e.quantize(e.op(Op::kConv, {x, w, b}, e.attrs_except("")), e.in(6), e.in(7), e.in(0));
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

const std::map<std::string, ContribOp>& contrib_ops() {
  static const std::map<std::string, ContribOp> ops = {
      {"QGemm",
       {{"A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale",
         "y_zero_point"},
        5,
        expand_qgemm}},
      {"QLinearAdd", binary(Op::kAdd)},
      {"QLinearAveragePool",
       {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
        4,
        [](Expansion& e) {
          WEFT_RETURN_IF_ERROR(channels_first(e));
          std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
          e.quantize(e.op(Op::kAveragePool, {x}, e.attrs_except("channels_last")), e.in(3), e.in(4),
                     e.in(0));
          return Status();
        }}},
      {"QLinearConcat", {{}, 0, expand_concat}},
      {"QLinearGlobalAveragePool",
       {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
        5,
        [](Expansion& e) {
          WEFT_RETURN_IF_ERROR(channels_first(e));
          std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
          e.quantize(e.op(Op::kGlobalAveragePool, {x}), e.in(3), e.in(4), e.in(0));
          return Status();
        }}},
      {"QLinearLeakyRelu", unary(Op::kLeakyRelu, leaky_relu_attrs)},
      {"QLinearMul", binary(Op::kMul)},
      {"QLinearReduceMean",
       {{"data", "data_scale", "data_zero_point", "reduced_scale", "reduced_zero_point"},
        4,
        expand_reduce_mean}},
      {"QLinearSigmoid", unary(Op::kSigmoid, no_attrs)},
      {"QLinearSoftmax",
       {{"X", "X_scale", "x_zero_point", "y_scale", "y_zero_point"}, 4, expand_softmax}},
      {"QLinearWhere",
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

class Expander {
public:
  Expander(int opset, std::string name) : opset_(opset), name_(std::move(name)) {}

  // "outer": the constants of the graphs around this one.
  Status expand_graph(onnx::GraphProto& graph, const Scope& outer) {
    Nodes out;
    Scope scope{outer.constants, {}};
    for (const onnx::TensorProto& t : graph.initializer())
      scope.constants[t.name()] = &t;
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
      auto it = contrib_ops().find(node.op_type());
      if (node.domain() != kMicrosoftDomain || it == contrib_ops().end()) {
        onnx::NodeProto* kept = out.Add();
        *kept = std::move(node);
        const onnx::AttributeProto* value = find_attr(*kept, "value");
        if (graph_op(*kept) == Op::kConstant && kept->output_size() == 1 && value && value->has_t())
          scope.constants[kept->output(0)] = &value->t();
        continue;
      }
      ++count_;
      Status s = check_inputs(node, it->second);
      if (s.ok()) s = it->second.expand(e);
      if (!s.ok()) {
        return Status::error(fmt::format("{}: node '{}' ({}.{}): {}", name_, base, kMicrosoftDomain,
                                         node.op_type(), s.message()));
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

std::string contrib_ops_list() {
  std::vector<std::string> names;
  for (const auto& [name, op] : contrib_ops())
    names.push_back(name);
  return fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

} // namespace weft
