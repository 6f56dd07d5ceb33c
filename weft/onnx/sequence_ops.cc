#include "weft/onnx/sequence_ops.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "weft/onnx/contrib_expansion.h"
#include "weft/onnx/model_checks.h"

namespace weft {

namespace {

using contrib::find_attr;
using contrib::int_attr;
using contrib::ints_attr;
using contrib::tensor_attr;

// One sequence op's expansion: the nodes it writes, named after it.
class Expansion {
public:
  Expansion(const onnx::NodeProto& node, int opset, const KnownValues& known, const Location& where)
      : node_(node), opset_(opset), known_(known), where_(where) {}

  std::string in(int i) const { return i < node_.input_size() ? node_.input(i) : std::string(); }
  std::string out() const { return node_.output_size() > 0 ? node_.output(0) : std::string(); }
  int64_t attr_or(const std::string& name, int64_t fallback) const {
    const onnx::AttributeProto* a = find_attr(node_, name);
    return a ? a->i() : fallback;
  }

  Status error(const std::string& message) const { return Status::error(where_, message); }

  // A node of "type" writing "outputs" (new values where empty); returns their names.
  std::vector<std::string> op(Op type, const std::vector<std::string>& inputs,
                              std::vector<onnx::AttributeProto> attrs,
                              std::vector<std::string> outputs = {""}) {
    onnx::NodeProto& n = nodes.emplace_back();
    n.set_op_type(std::string(op_name(type)));
    n.set_name(fmt::format("{}/{}_{}", where_.node, op_name(type), nodes.size() - 1));
    for (const std::string& i : inputs)
      n.add_input(i);
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (outputs[o].empty()) outputs[o] = fmt::format("{}_{}", n.name(), o);
      n.add_output(outputs[o]);
    }
    for (onnx::AttributeProto& a : attrs)
      *n.add_attribute() = std::move(a);
    return outputs;
  }

  std::string constant(const Tensor& t, const std::string& output = "") {
    return op(Op::kConstant, {}, {tensor_attr("value", t)}, {output})[0];
  }

  // Unsqueeze and Squeeze of "x" along "axis": its axes an attribute before opset 13, an input
  // from 13 on.
  std::string along_axis(Op type, const std::string& x, int64_t axis) {
    if (opset_ < 13) return op(type, {x}, {ints_attr("axes", {axis})})[0];
    return op(type, {x, constant(Tensor::vector_i64({axis}))}, {})[0];
  }

  // The position input "i" gives in a sequence of "n": constant, from -n to n - 1 (to n where
  // "past_end": an insertion), counted from the front.
  Result<int64_t> position(int i, int64_t n, bool past_end) const {
    std::optional<Tensor> t = known_.constant(in(i));
    if (!t) {
      return error(fmt::format("position '{}' is not a constant: Weft resolves sequences at "
                               "import, where their elements must be known",
                               in(i)));
    }
    if (t->num_elements() != 1) return error(fmt::format("position '{}' is not a scalar", in(i)));
    int64_t p = t->get_int64(0), hi = past_end ? n : n - 1;
    if (p < -n || p > hi) {
      return error(fmt::format("position {} is outside the sequence of {} element(s)", p, n));
    }
    return p < 0 ? p + n : p;
  }

  // The static extent of dim "axis" of "x", and the axis counted from 0.
  Result<std::pair<int64_t, int64_t>> static_dim(const std::string& x, int64_t axis) const {
    std::optional<TensorType> t = known_.type(x);
    if (!t || !t->shape) return error(fmt::format("the rank of '{}' is not known", x));
    int64_t rank = static_cast<int64_t>(t->shape->size());
    if (axis < -rank || axis >= rank)
      return error(fmt::format("axis {} is out of range for rank {}", axis, rank));
    if (axis < 0) axis += rank;
    const Dim& d = (*t->shape)[static_cast<size_t>(axis)];
    if (!d.is_static()) {
      return error(fmt::format("dim {} of '{}' is not static, so the count of the sequence's "
                               "elements is not known at import (where Weft resolves sequences)",
                               axis, x));
    }
    return std::pair{d.value(), axis};
  }

  std::vector<onnx::NodeProto> nodes;

private:
  const onnx::NodeProto& node_;
  int opset_;
  const KnownValues& known_;
  const Location& where_;
};

// How many inputs of the nodes of "g" and of their subgraphs read "name".
int readers(const onnx::GraphProto& g, const std::string& name) {
  int n = 0;
  for (const onnx::NodeProto& node : g.node()) {
    n += static_cast<int>(std::count(node.input().begin(), node.input().end(), name));
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) n += readers(a.g(), name);
      for (const onnx::GraphProto& sub : a.graphs())
        n += readers(sub, name);
    }
  }
  return n;
}

// The node of "body" that appends to body input "in" (a SequenceInsert at the back) and
// writes body output "out", where nothing else reads either; -1 if there is none.
int append_node(const onnx::GraphProto& body, const std::string& in, const std::string& out) {
  for (int j = 0; j < body.node_size(); ++j) {
    const onnx::NodeProto& n = body.node(j);
    if (n.op_type() != "SequenceInsert" || n.output_size() != 1 || n.output(0) != out) continue;
    bool at_back = n.input_size() == 2 || (n.input_size() == 3 && n.input(2).empty());
    bool only = readers(body, in) == 1 && readers(body, out) == 0;
    return at_back && n.input(0) == in && only ? j : -1;
  }
  return -1;
}

} // namespace

bool is_sequence_op(const onnx::NodeProto& node) {
  return is_onnx_domain(node.domain()) &&
         std::find(kSequenceOps.begin(), kSequenceOps.end(), node.op_type()) != kSequenceOps.end();
}

Result<onnx::NodeProto> Sequences::stack_loop_appends(const onnx::NodeProto& loop,
                                                      const Location& where) {
  onnx::NodeProto out = loop;
  onnx::GraphProto* body = nullptr;
  for (onnx::AttributeProto& a : *out.mutable_attribute()) {
    if (a.name() == "body" && a.has_g()) body = a.mutable_g();
  }
  int carried = loop.input_size() - 2;
  if (!body || carried < 0 || body->input_size() != 2 + carried ||
      body->output_size() < 1 + carried || loop.output_size() != body->output_size() - 1)
    return out;                            // the importer says what is wrong
  for (int k = carried - 1; k >= 0; --k) { // from the back: removals keep earlier positions
    const std::string& start = loop.input(2 + k);
    if (!contains(start)) continue;
    auto list = lists_.find(start);
    int j = append_node(*body, body->input(2 + k).name(), body->output(1 + k).name());
    if (list == lists_.end() || !list->second.empty() || j < 0) {
      return Status::error(
          where, fmt::format("carries the sequence '{}' other than as an empty one the body "
                             "appends to (SequenceInsert at the back), which Weft does not "
                             "resolve at import",
                             start));
    }
    std::string element = body->node(j).input(1);
    body->mutable_node()->DeleteSubrange(j, 1);
    body->mutable_input()->DeleteSubrange(2 + k, 1);
    body->mutable_output()->DeleteSubrange(1 + k, 1);
    body->add_output()->set_name(element); // a scan output
    out.mutable_input()->DeleteSubrange(2 + k, 1);
    std::string sequence = loop.output(k);
    out.mutable_output()->DeleteSubrange(k, 1);
    std::string stacked = fmt::format("{}/stacked_{}", where.node, k); // unique, even unnamed
    out.add_output(stacked);
    if (!sequence.empty()) stacked_[sequence] = stacked;
  }
  return out;
}

namespace {

// A sequence a loop stacked (Sequences::stack_loop_appends) as "s", read by "type".
Status read_stacked(Expansion& e, const std::string& type, const std::string& s,
                    const KnownValues& known) {
  if (type == "SequenceAt") {
    e.op(Op::kGather, {s, e.in(1)}, {int_attr("axis", 0)}, {e.out()});
    return Status();
  }
  std::string shape = e.op(Op::kShape, {s}, {})[0];
  if (type == "SequenceLength") {
    e.op(Op::kGather, {shape, e.constant(Tensor::scalar_i64(0))}, {int_attr("axis", 0)}, {e.out()});
    return Status();
  }
  if (type != "ConcatFromSequence") {
    return e.error("reads a sequence a loop built, which only SequenceAt, SequenceLength and "
                   "ConcatFromSequence do here");
  }
  int64_t axis = e.attr_or("axis", 0);
  bool new_axis = e.attr_or("new_axis", 0) != 0;
  std::optional<TensorType> t = known.type(s);
  if ((new_axis || axis != 0) && (!t || !t->shape)) {
    return e.error(fmt::format("concatenates a sequence a loop built along axis {}{}, which "
                               "needs the rank of its elements, not known at import",
                               axis, new_axis ? " (new_axis)" : ""));
  }
  if (new_axis) {                                              // dim 0 moved to "axis"
    int64_t rank = static_cast<int64_t>(t->shape->size()) - 1; // of an element
    if (axis < -rank - 1 || axis > rank)
      return e.error(fmt::format("axis {} is out of range for rank {}", axis, rank + 1));
    if (axis < 0) axis += rank + 1;
    std::vector<int64_t> perm;
    for (int64_t d = 1; d <= rank; ++d) {
      if (d == axis + 1) perm.push_back(0);
      perm.push_back(d);
    }
    if (axis == rank) perm.push_back(0);
    e.op(Op::kTranspose, {s}, {ints_attr("perm", perm)}, {e.out()});
    return Status();
  }
  if (axis != 0 && axis != 1 - static_cast<int64_t>(t->shape->size())) {
    return e.error("concatenates a sequence a loop built along an axis other than the first, "
                   "which Weft does not resolve at import");
  }
  // Dims 0 and 1 merged.
  std::string rest = e.op(Op::kSlice,
                          {shape, e.constant(Tensor::vector_i64({2})),
                           e.constant(Tensor::vector_i64({std::numeric_limits<int64_t>::max()}))},
                          {})[0];
  std::string dims =
      e.op(Op::kConcat, {e.constant(Tensor::vector_i64({-1})), rest}, {int_attr("axis", 0)})[0];
  e.op(Op::kReshape, {s, dims}, {}, {e.out()});
  return Status();
}

} // namespace

Result<std::vector<onnx::NodeProto>> Sequences::expand(const onnx::NodeProto& node, int opset,
                                                       const KnownValues& known,
                                                       const Location& where) {
  Expansion e(node, opset, known, where);
  const std::string& type = node.op_type();
  if (e.out().empty()) return std::vector<onnx::NodeProto>{};
  if (type == "SequenceEmpty") {
    lists_[e.out()] = {};
    return std::move(e.nodes);
  }
  if (type == "SequenceConstruct") {
    for (const std::string& x : node.input()) {
      if (x.empty()) return e.error("an element is absent");
      if (contains(x))
        return e.error(fmt::format("input '{}' is a sequence (sequences of "
                                   "sequences are not supported)",
                                   x));
    }
    lists_[e.out()] = {node.input().begin(), node.input().end()};
    return std::move(e.nodes);
  }
  if (type == "SplitToSequence") {
    int64_t axis = e.attr_or("axis", 0);
    std::vector<std::string> pieces;
    std::optional<Tensor> split = e.in(1).empty() ? std::nullopt : known.constant(e.in(1));
    if (!e.in(1).empty() && !split) {
      // Sizes known at run time only: as many pieces as the split has entries, each a Slice
      // (Split takes its sizes as an attribute before opset 13).
      std::optional<TensorType> t = known.type(e.in(1));
      if (!t || !t->shape || t->shape->size() != 1 || !(*t->shape)[0].is_static())
        return e.error(fmt::format("split '{}' is neither a constant nor a list of a static "
                                   "length, so the count of the sequence's elements is not "
                                   "known at import (where Weft resolves sequences)",
                                   e.in(1)));
      std::string sizes = e.op(Op::kCast, {e.in(1)}, {int_attr("to", onnx::TensorProto::INT64)})[0];
      std::string ends = e.op(Op::kCumSum, {sizes, e.constant(Tensor::scalar_i64(0))}, {})[0];
      std::string starts = e.op(Op::kSub, {ends, sizes}, {})[0];
      std::string axes = e.constant(Tensor::vector_i64({axis}));
      for (int64_t i = 0; i < (*t->shape)[0].value(); ++i) {
        std::string at = e.constant(Tensor::vector_i64({i})),
                    next = e.constant(Tensor::vector_i64({i + 1}));
        std::string from = e.op(Op::kSlice, {starts, at, next}, {})[0],
                    to = e.op(Op::kSlice, {ends, at, next}, {})[0];
        pieces.push_back(e.op(Op::kSlice, {e.in(0), from, to, axes}, {})[0]);
      }
      lists_[e.out()] = pieces;
      return std::move(e.nodes);
    }
    if (split && split->rank() > 1) return e.error("the split has more than one dim");
    std::vector<int64_t> sizes;
    bool squeeze = !split && e.attr_or("keepdims", 1) == 0;
    if (split && split->rank() == 1) {
      sizes = split->to_int64_vector();
    } else {
      WEFT_ASSIGN_OR_RETURN(auto dim, e.static_dim(e.in(0), axis));
      int64_t chunk = split ? split->get_int64(0) : 1;
      if (chunk <= 0) return e.error(fmt::format("split {} is not positive", chunk));
      for (int64_t at = 0; at < dim.first; at += chunk)
        sizes.push_back(std::min(chunk, dim.first - at));
      axis = dim.second;
    }
    if (sizes.empty()) {
      lists_[e.out()] = {};
      return std::move(e.nodes);
    }
    std::vector<onnx::AttributeProto> attrs = {int_attr("axis", axis)};
    std::vector<std::string> inputs = {e.in(0)};
    if (opset < 13) {
      attrs.push_back(ints_attr("split", sizes));
    } else {
      inputs.push_back(e.constant(Tensor::vector_i64(sizes)));
    }
    pieces = e.op(Op::kSplit, inputs, std::move(attrs), std::vector<std::string>(sizes.size()));
    if (squeeze) {
      for (std::string& p : pieces)
        p = e.along_axis(Op::kSqueeze, p, axis);
    }
    lists_[e.out()] = pieces;
    return std::move(e.nodes);
  }
  // The rest read a list, or a loop's stack.
  if (auto stacked = stacked_.find(e.in(0)); stacked != stacked_.end()) {
    WEFT_RETURN_IF_ERROR(read_stacked(e, type, stacked->second, known));
    return std::move(e.nodes);
  }
  auto it = lists_.find(e.in(0));
  if (it == lists_.end()) {
    return e.error(fmt::format("input '{}' is not a sequence whose elements are known at import "
                               "(where Weft resolves sequences)",
                               e.in(0)));
  }
  std::vector<std::string> list = it->second;
  int64_t n = static_cast<int64_t>(list.size());
  if (type == "SequenceInsert" || type == "SequenceErase") {
    bool insert = type == "SequenceInsert";
    if (insert && e.in(1).empty()) return e.error("the tensor to insert is absent");
    if (insert && contains(e.in(1))) return e.error("sequences of sequences are not supported");
    int64_t at = insert ? n : n - 1;
    if (!insert && n == 0) return e.error("erases from an empty sequence");
    if (!e.in(insert ? 2 : 1).empty()) {
      WEFT_ASSIGN_OR_RETURN(at, e.position(insert ? 2 : 1, n, insert));
    }
    if (insert) {
      list.insert(list.begin() + at, e.in(1));
    } else {
      list.erase(list.begin() + at);
    }
    lists_[e.out()] = std::move(list);
  } else if (type == "SequenceAt") {
    WEFT_ASSIGN_OR_RETURN(int64_t at, e.position(1, n, false));
    e.op(Op::kIdentity, {list[static_cast<size_t>(at)]}, {}, {e.out()});
  } else if (type == "SequenceLength") {
    e.constant(Tensor::scalar_i64(n), e.out());
  } else { // ConcatFromSequence
    const onnx::AttributeProto* axis = find_attr(node, "axis");
    if (!axis) return e.error("the attribute 'axis' is missing");
    if (list.empty()) return e.error("concatenates an empty sequence");
    if (e.attr_or("new_axis", 0) != 0) {
      for (std::string& x : list) // the new axis counts in the output's rank, as Unsqueeze's
        x = e.along_axis(Op::kUnsqueeze, x, axis->i());
    }
    e.op(Op::kConcat, list, {int_attr("axis", axis->i())}, {e.out()});
  }
  return std::move(e.nodes);
}

} // namespace weft
