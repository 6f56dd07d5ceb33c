// How a com.microsoft op becomes ai.onnx nodes (contrib_ops.h): the Expansion its rule
// writes into, the attribute helpers, and the table entry (ContribOp) of each op.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "weft/graph/graph.h"
#include "weft/graph/op_table.h"
#include "weft/graph/tensor.h"
#include "weft/onnx/onnx_dtype.h"
#include "weft/onnx/tensor_proto.h"
#include "weft/support/status.h"

namespace weft::contrib {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

inline onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

inline onnx::AttributeProto float_attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

inline onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a.add_ints(x);
  return a;
}

inline onnx::AttributeProto tensor_attr(const std::string& name, const Tensor& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = tensor_to_proto(t, "");
  return a;
}

inline const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// What the expansions of one graph share: its constants (initializers and Constant nodes
// so far), and the dequantized form of each quantized value, made once for all its readers
// so that each QuantizeLinear meets one DequantizeLinear (canonicalize's QDQ pair).
// And the ranks known so far: of the graph's inputs, initializers and value_info, and through
// the Casts and Identities after them (an attention mask's rank says what it means). And the
// element types (TensorProto codes) that the graph's inputs, outputs and value_info declare.
// And the values made as tensors that the graph declares as maps.
struct Scope {
  std::string base_dir; // where the model's external data lies
  std::map<std::string, const onnx::TensorProto*> constants;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, std::string> dequantized;
  std::map<std::string, int> ranks;
  std::map<std::string, int> elem_types;
  std::map<std::string, MapKeys> map_outputs; // this graph's ZipMaps (Graph::map_outputs)
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
  std::string string_attr_or(const std::string& name, const std::string& fallback) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? a->s() : fallback;
  }

  // A node of "type" writing "output" (a new value when empty); trailing absent inputs
  // are dropped.
  std::string op(Op type, std::vector<std::string> inputs,
                 std::vector<onnx::AttributeProto> attrs = {}, std::string output = "") {
    return op_outputs(type, std::move(inputs), std::move(attrs), {std::move(output)})[0];
  }

  // The same with several outputs (TopK's values and indices), each new where empty.
  std::vector<std::string> op_outputs(Op type, std::vector<std::string> inputs,
                                      std::vector<onnx::AttributeProto> attrs,
                                      std::vector<std::string> outputs) {
    while (!inputs.empty() && inputs.back().empty())
      inputs.pop_back();
    std::string name = fmt::format("{}{}_{}", prefix_, type, count_++);
    onnx::NodeProto* n = out_.Add();
    std::string_view op_type = op_name(type);
    for (std::string_view domain : {kWeftDomain, kMlDomain}) { // qualified names (op_table.h)
      if (op_type.starts_with(fmt::format("{}.", domain))) {
        n->set_domain(std::string(domain));
        op_type.remove_prefix(domain.size() + 1);
      }
    }
    n->set_op_type(std::string(op_type));
    n->set_name(name);
    for (const std::string& i : inputs)
      n->add_input(i);
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].empty()) outputs[o] = o == 0 ? name : fmt::format("{}_{}", name, o);
      n->add_output(outputs[o]);
    }
    for (onnx::AttributeProto& a : attrs)
      *n->add_attribute() = std::move(a);
    return outputs;
  }

  // A Constant node of "t".
  std::string constant_of(const Tensor& t) {
    return op(Op::kConstant, {}, {tensor_attr("value", t)});
  }

  // A Constant of "type" and "dims" whose value is "bytes" as ONNX packs them (u4 two to a
  // byte, low bits first): packed weights go in without unpacking here.
  // Where "source" (the initializer the bytes were read from) lies in an external data file,
  // the Constant's value points there too, not copied: read in where it lies (tensor_proto.h).
  std::string packed_constant(DType type, const std::vector<int64_t>& dims, const std::byte* bytes,
                              size_t size, const onnx::TensorProto& source) {
    onnx::TensorProto t;
    t.set_data_type(dtype_to_onnx(type));
    for (int64_t d : dims)
      t.add_dims(d);
    if (source.data_location() == onnx::TensorProto::EXTERNAL) {
      t.set_name(source.name());
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      *t.mutable_external_data() = source.external_data();
    } else {
      t.set_raw_data(std::string(reinterpret_cast<const char*>(bytes), size));
    }
    onnx::AttributeProto value;
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    *value.mutable_t() = std::move(t);
    return op(Op::kConstant, {}, {std::move(value)});
  }

  std::string ints(const std::vector<int64_t>& v) { return constant_of(Tensor::vector_i64(v)); }
  // An f32 constant of "dims" ({} for a scalar).
  std::string floats(const std::vector<float>& v, std::vector<int64_t> dims) {
    return constant_of(Tensor::from_vector(DType::kF32, std::move(dims), v));
  }
  std::string ints_scalar(int64_t v) { return constant_of(Tensor::scalar_i64(v)); }

  // Dim "d" of "t", as an int64 tensor [1].
  std::string dim(const std::string& t, int64_t d) {
    return op(Op::kSlice, {op(Op::kShape, {t}), ints({d}), ints({d + 1})});
  }

  // Positions 0 .. n - 1 of dim "d" of "t", as int64.
  std::string positions(const std::string& t, int64_t d) {
    std::string n = op(Op::kSqueeze, {dim(t, d), ints({0})});
    return op(Op::kRange, {ints_scalar(0), n, ints_scalar(1)});
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

  // The contents of constant "t" (its external data read from the model's directory).
  Result<Tensor> tensor(const onnx::TensorProto& t) const {
    return tensor_from_proto(t, scope_.base_dir);
  }

  // The rank of "name", where the graph says it (Scope::ranks).
  std::optional<int> rank(const std::string& name) const {
    auto it = scope_.ranks.find(name);
    return it == scope_.ranks.end() ? std::nullopt : std::optional(it->second);
  }
  void set_rank(const std::string& name, int rank) { scope_.ranks[name] = rank; }

  // Input 0 cast to "to" (a TensorProto type) for the ops of ai.onnx.ml that take X [N, C]:
  // an error where the model's opset is older than "opset" or X's known rank is not 2.
  Result<std::string> matrix_input(int to, int opset) {
    if (opset_ < opset)
      return Status::error(fmt::format("needs ai.onnx opset {} or newer beside it", opset));
    std::optional<int> r = rank(in(0));
    if (r && *r != 2) return Status::error(fmt::format("X has rank {}, expected [N, C]", *r));
    return op(Op::kCast, {in(0)}, {int_attr("to", to)});
  }

  // "name", a tensor [N, C] here, is a sequence of maps with "keys" in the model.
  void add_map_output(const std::string& name, MapKeys keys) {
    scope_.map_outputs[name] = std::move(keys);
  }

  // The element type that the graph declares for "name" (Scope::elem_types).
  std::optional<int> elem_type(const std::string& name) const {
    auto it = scope_.elem_types.find(name);
    return it == scope_.elem_types.end() ? std::nullopt : std::optional(it->second);
  }

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

  // Reduction "type" of "x" over "axes": an input from opset 13 for ReduceSum and from 18 for
  // the others, an attribute before.
  std::string reduce(Op type, const std::string& x, const std::vector<int64_t>& axes,
                     int64_t keepdims = 1) {
    onnx::AttributeProto keep = int_attr("keepdims", keepdims);
    if (opset_ >= (type == Op::kReduceSum ? 13 : 18)) return op(type, {x, ints(axes)}, {keep});
    return op(type, {x}, {keep, ints_attr("axes", axes)});
  }

  // The mean of "x" over "axes".
  std::string mean(const std::string& x, const std::vector<int64_t>& axes, int64_t keepdims = 1) {
    return reduce(Op::kReduceMean, x, axes, keepdims);
  }

  // "x" with new "axes" of extent 1 (an input from opset 13, an attribute before).
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes) {
    if (opset_ >= 13) return op(Op::kUnsqueeze, {x, ints(axes)});
    return op(Op::kUnsqueeze, {x}, {ints_attr("axes", axes)});
  }

  // "x" without "axes" (an input from opset 13, an attribute before), into "output".
  std::string squeeze(const std::string& x, const std::vector<int64_t>& axes,
                      std::string output = "") {
    if (opset_ >= 13) return op(Op::kSqueeze, {x, ints(axes)}, {}, std::move(output));
    return op(Op::kSqueeze, {x}, {ints_attr("axes", axes)}, std::move(output));
  }

  float float_attr_or(const std::string& name, float fallback) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? a->f() : fallback;
  }

  // List attribute "name", empty when absent.
  std::vector<int64_t> ints_of(const std::string& name) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
  }
  std::vector<float> floats_of(const std::string& name) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>();
  }
  std::vector<std::string> strings_of(const std::string& name) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? std::vector<std::string>(a->strings().begin(), a->strings().end())
             : std::vector<std::string>();
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
inline int64_t num_elements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  return n;
}

inline std::optional<int64_t> Expansion::axis_of(const std::string& scale, int64_t axis) const {
  const onnx::TensorProto* t = constant(scale);
  return t && num_elements(*t) > 1 ? std::optional(axis) : std::nullopt;
}

using Expand = std::function<Status(Expansion&)>;

struct ContribOp {
  std::vector<const char*> inputs; // names, for messages; none: the expansion checks its own
  size_t required;                 // how many of them must be given (zero points are optional)
  Expand expand;
};

} // namespace weft::contrib
