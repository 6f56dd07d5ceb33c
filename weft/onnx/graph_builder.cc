#include "weft/onnx/graph_builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/verify_graph.h"
#include "weft/onnx/attr_reader.h"
#include "weft/onnx/contrib_expansion.h"
#include "weft/onnx/model_checks.h"
#include "weft/onnx/onnx_dtype.h"
#include "weft/onnx/sequence_ops.h"
#include "weft/onnx/tensor_proto.h"
#include "weft/support/log.h"

namespace weft {

namespace {

class GraphBuilder {
public:
  GraphBuilder(const onnx::ModelProto& model, int opset, std::string name, std::string base_dir)
      : model_(model), name_(std::move(name)), base_dir_(std::move(base_dir)) {
    graph_.source = name_;
    graph_.opset = opset;
  }

  Result<Graph> build() { return build_graph(model_.graph(), {}); }

private:
  // The graph of "g". A body's inputs may omit their types ("operand_types" then has them),
  // and its nodes may read values of the enclosing graphs (captured as extra inputs).
  Result<Graph> build_graph(const onnx::GraphProto& g,
                            const std::vector<TensorType>& operand_types) {
    WEFT_RETURN_IF_ERROR(add_types_and_initializers(g));
    if (g.sparse_initializer_size() > 0) return fail("sparse initializers are not supported");
    for (int i = 0; i < g.input_size(); ++i) {
      const auto& in = g.input(i);
      // Before IR 4 initializers are also listed as inputs; they stay constants.
      if (graph_.find_value(in.name())) continue;
      TensorType type;
      bool typed = in.type().has_tensor_type() && in.type().tensor_type().elem_type() != 0;
      if (!typed && static_cast<size_t>(i) < operand_types.size()) {
        type = operand_types[static_cast<size_t>(i)];
      } else {
        WEFT_ASSIGN_OR_RETURN(type, tensor_type(in.name(), in.type()));
      }
      graph_.inputs.push_back(graph_.add_value(in.name(), with_fresh_symbols(type)));
    }
    for (int i = 0; i < g.node_size(); ++i)
      WEFT_RETURN_IF_ERROR(add_node(g.node(i), i));
    for (const auto& out : g.output()) {
      Value* v = lookup(out.name());
      if (!v && sequences_.contains(out.name())) {
        return fail(
            fmt::format("graph output '{}' is a sequence; Weft's outputs are tensors", out.name()));
      }
      if (!v) return fail(fmt::format("graph output '{}' is not defined", out.name()));
      graph_.outputs.push_back(v);
    }
    WEFT_RETURN_IF_ERROR(verify_graph(graph_, "import"));
    return std::move(graph_);
  }

  static std::string node_name(const onnx::NodeProto& proto, int index) {
    return proto.name().empty() ? fmt::format("{}_{}", proto.op_type(), index) : proto.name();
  }

  // The value "name" of this graph or, captured, of an enclosing one.
  Value* lookup(const std::string& name) {
    if (Value* v = graph_.find_value(name)) return v;
    if (!parent_) return nullptr;
    const Value* outer = parent_->lookup(name);
    if (!outer) return nullptr;
    Value* v = graph_.add_value(name, outer->type);
    graph_.inputs.push_back(v);
    captured_.push_back(name);
    return v;
  }

  // Why input "name" has no value here.
  std::string undefined(const std::string& name) const {
    if (!sequences_.contains(name)) return fmt::format("input '{}' is not defined", name);
    return fmt::format("input '{}' is a sequence, which only the sequence ops read (Weft resolves "
                       "sequences at import into their elements: docs/onnx-versions.md)",
                       name);
  }

  // The value "name" of this graph or an enclosing one, without capturing it.
  const Value* find_known(const std::string& name) const {
    for (const GraphBuilder* b = this; b; b = b->parent_) {
      if (const Value* v = b->graph_.find_value(name)) return v;
    }
    return nullptr;
  }

  // The contents of "name" where they are constant: an initializer's or a Constant node's, of
  // this graph or an enclosing one (a body's captured copy of it is not constant).
  std::optional<Tensor> constant_value(const std::string& name) const {
    for (const GraphBuilder* b = this; b; b = b->parent_) {
      const Value* v = b->graph_.find_value(name);
      if (v && v->is_constant()) return *v->constant;
      if (v && v->producer && v->producer->op_type == Op::kConstant)
        return *v->producer->attrs_as<ConstantAttrs>().value;
    }
    return std::nullopt;
  }

  // A sequence op, resolved into the tensor nodes that compute it (sequence_ops.h).
  Status add_sequence_op(const onnx::NodeProto& proto, int index) {
    Location where{name_, node_name(proto, index), proto.op_type(), graph_.opset};
    KnownValues known;
    known.type = [&](const std::string& n) -> std::optional<TensorType> {
      const Value* v = find_known(n);
      return v ? std::optional(v->type) : std::nullopt;
    };
    known.constant = [&](const std::string& n) { return constant_value(n); };
    WEFT_ASSIGN_OR_RETURN(std::vector<onnx::NodeProto> nodes,
                          sequences_.expand(proto, graph_.opset, known, where));
    for (const onnx::NodeProto& node : nodes)
      WEFT_RETURN_IF_ERROR(add_node(node, index));
    return Status();
  }

  // Loop: its body becomes a graph of its own (inputs: the iteration number, the
  // condition, the carried values, then the outer values it reads), and the node takes
  // those outer values after its own inputs. Unrolled between stages
  // (docs/data-dependent-shapes.md).
  Status add_loop(const onnx::NodeProto& given, int index) {
    Location where{name_, node_name(given, index), std::string(op_name(Op::kLoop)), graph_.opset};
    // The sequences it carries, as scan outputs (sequence_ops.h).
    WEFT_ASSIGN_OR_RETURN(onnx::NodeProto proto, sequences_.stack_loop_appends(given, where));
    const onnx::GraphProto* g = nullptr;
    for (const auto& a : proto.attribute()) {
      if (a.name() == "body" && a.has_g()) g = &a.g();
    }
    if (!g) return Status::error(where, "the attribute 'body' is missing");
    int carried = proto.input_size() - 2;
    if (carried < 0 || g->input_size() != 2 + carried || g->output_size() < 1 + carried ||
        proto.output_size() != g->output_size() - 1) {
      return Status::error(where, "the body's inputs and outputs do not match the node's");
    }
    std::vector<TensorType> operand_types = {{DType::kI64, Shape{}}, {DType::kBool, Shape{}}};
    for (int i = 2; i < proto.input_size(); ++i) {
      const Value* v = proto.input(i).empty() ? nullptr : lookup(proto.input(i));
      if (!v) return Status::error(where, undefined(proto.input(i)));
      operand_types.push_back(v->type);
    }
    onnx::NodeProto loop = proto;
    loop.clear_attribute();
    Result<std::shared_ptr<const Graph>> body = build_body(*g, operand_types, loop);
    if (!body.ok()) return body.status().with_location(where);
    return add_node(loop, index, LoopAttrs{*body, carried, 0});
  }

  // Scan (opset 9 on): like Loop's, its body is a graph of its own (inputs: the states, one
  // slice of each scan input, then the outer values it reads). Unrolled once its scan
  // extent is static.
  Status add_scan(const onnx::NodeProto& proto, int index) {
    Location where{name_, node_name(proto, index), std::string(op_name(Op::kScan)), graph_.opset};
    const onnx::GraphProto* g = nullptr;
    ScanAttrs attrs;
    for (const auto& a : proto.attribute()) {
      const std::string& n = a.name();
      if (n == "body" && a.has_g()) g = &a.g();
      if (n == "num_scan_inputs") attrs.scan_inputs = a.i();
      Ints* list = n == "scan_input_axes"          ? &attrs.input_axes
                   : n == "scan_input_directions"  ? &attrs.input_directions
                   : n == "scan_output_axes"       ? &attrs.output_axes
                   : n == "scan_output_directions" ? &attrs.output_directions
                                                   : nullptr;
      if (list) list->assign(a.ints().begin(), a.ints().end());
    }
    attrs.states = proto.input_size() - attrs.scan_inputs;
    if (!g) return Status::error(where, "the attribute 'body' is missing");
    if (attrs.scan_inputs < 1 || attrs.states < 0 || g->input_size() != proto.input_size() ||
        g->output_size() != proto.output_size() || g->output_size() < attrs.states) {
      return Status::error(where, "the body's inputs and outputs do not match the node's");
    }
    std::vector<TensorType> operand_types;
    for (int i = 0; i < proto.input_size(); ++i) {
      const Value* v = proto.input(i).empty() ? nullptr : lookup(proto.input(i));
      if (!v) return Status::error(where, undefined(proto.input(i)));
      TensorType t = v->type;
      if (i >= attrs.states && t.shape) { // one slice: the scan axis goes
        size_t j = static_cast<size_t>(i - attrs.states);
        int64_t axis = j < attrs.input_axes.size() ? attrs.input_axes[j] : 0;
        int64_t rank = static_cast<int64_t>(t.shape->size());
        if (axis < -rank || axis >= rank)
          return Status::error(where, fmt::format("scan axis {} of a rank-{} input", axis, rank));
        t.shape->erase(t.shape->begin() + (axis < 0 ? axis + rank : axis));
      }
      operand_types.push_back(std::move(t));
    }
    onnx::NodeProto scan = proto;
    scan.clear_attribute();
    Result<std::shared_ptr<const Graph>> body = build_body(*g, operand_types, scan);
    if (!body.ok()) return body.status().with_location(where);
    attrs.body = *body;
    return add_node(scan, index, std::move(attrs));
  }

  // Scan at opset 8: every input has a batch axis first (the scan axis is 1), and the body
  // runs on one batch entry at a time. It becomes one Scan of opset 9's form per entry of a
  // static batch, on that entry's states and scan inputs (Gather), its results stacked again
  // (Unsqueeze, Concat). sequence_lens may only say what its absence says: every sequence
  // runs its full length.
  static constexpr int64_t kMaxScan8Bodies = 1024; // as a Loop's or Scan's unrolled steps
  Status add_scan8(const onnx::NodeProto& proto, int index) {
    std::string name = node_name(proto, index);
    Location where{name_, name, std::string(op_name(Op::kScan)), graph_.opset};
    onnx::NodeProto scan; // one entry's, its inputs and outputs set below
    scan.set_op_type(std::string(op_name(Op::kScan)));
    int64_t scan_inputs = 0;
    for (const auto& a : proto.attribute()) {
      onnx::AttributeProto copy = a;
      if (a.name() == "num_scan_inputs") scan_inputs = a.i();
      if (a.name() == "directions") copy.set_name("scan_input_directions");
      *scan.add_attribute() = std::move(copy);
    }
    int operands = proto.input_size() - 1;
    if (operands < 1 || scan_inputs < 1 || scan_inputs > operands)
      return Status::error(where,
                           "expected sequence_lens, the states, then num_scan_inputs inputs");
    int64_t batch = -1, steps = -1;
    for (int i = 1; i <= operands; ++i) {
      const Value* v = proto.input(i).empty() ? nullptr : lookup(proto.input(i));
      if (!v) return Status::error(where, undefined(proto.input(i)));
      bool scanned = i > operands - scan_inputs;
      const std::optional<Shape>& shape = v->type.shape;
      if (!shape || shape->size() < (scanned ? 2u : 1u) || !(*shape)[0].is_static() ||
          (batch >= 0 && (*shape)[0].value() != batch)) {
        return Status::error(where, fmt::format("input '{}' has no static batch axis shared by "
                                                "the others (opset 8's Scan is unrolled per "
                                                "batch entry)",
                                                proto.input(i)));
      }
      batch = (*shape)[0].value();
      if (scanned && (*shape)[1].is_static()) steps = (*shape)[1].value();
    }
    if (batch == 0) return Status::error(where, "an empty batch is not supported at opset 8");
    if (batch * std::max<int64_t>(steps, 1) > kMaxScan8Bodies) {
      return Status::error(where, fmt::format("opset 8's Scan unrolls at most {} bodies (batch "
                                              "entries x steps), here {} x {}",
                                              kMaxScan8Bodies, batch, steps));
    }
    if (!proto.input(0).empty()) {
      std::optional<Tensor> lens = constant_value(proto.input(0));
      bool full = lens && lens->num_elements() == batch && steps >= 0;
      for (int64_t b = 0; full && b < batch; ++b)
        full = lens->get_int64(b) == steps;
      if (!full)
        return Status::error(where, "sequence_lens other than a constant of every sequence's "
                                    "full length is not supported");
    }
    auto node = [&](Op op_type, std::vector<std::string> inputs, const std::string& output,
                    std::vector<onnx::AttributeProto> attrs) {
      onnx::NodeProto n;
      n.set_op_type(std::string(op_name(op_type)));
      n.set_name(fmt::format("{}/{}", name, output));
      for (const std::string& i : inputs)
        n.add_input(i);
      n.add_output(output);
      for (onnx::AttributeProto& a : attrs)
        *n.add_attribute() = std::move(a);
      return n;
    };
    std::string prefix = fmt::format("{}/scan8", proto.output_size() ? proto.output(0) : name);
    std::vector<std::vector<std::string>> results(static_cast<size_t>(proto.output_size()));
    for (int64_t b = 0; b < batch; ++b) {
      std::string entry = fmt::format("{}/entry{}", prefix, b);
      WEFT_RETURN_IF_ERROR(add_node(
          node(Op::kConstant, {}, entry, {contrib::tensor_attr("value", Tensor::scalar_i64(b))}),
          index));
      scan.clear_input();
      scan.clear_output();
      for (int i = 1; i <= operands; ++i) {
        std::string part = fmt::format("{}/in{}", entry, i);
        WEFT_RETURN_IF_ERROR(add_node(
            node(Op::kGather, {proto.input(i), entry}, part, {contrib::int_attr("axis", 0)}),
            index));
        scan.add_input(part);
      }
      for (int k = 0; k < proto.output_size(); ++k) {
        std::string out = proto.output(k).empty() ? "" : fmt::format("{}/out{}", entry, k);
        scan.add_output(out);
        if (!out.empty()) results[static_cast<size_t>(k)].push_back(out);
      }
      scan.set_name(entry);
      WEFT_RETURN_IF_ERROR(add_scan(scan, index));
    }
    for (int k = 0; k < proto.output_size(); ++k) {
      std::vector<std::string> stacked;
      for (const std::string& r : results[static_cast<size_t>(k)]) {
        stacked.push_back(r + "/stacked");
        WEFT_RETURN_IF_ERROR(add_node(
            node(Op::kUnsqueeze, {r}, stacked.back(), {contrib::ints_attr("axes", {0})}), index));
      }
      if (!stacked.empty()) {
        onnx::NodeProto concat =
            node(Op::kConcat, stacked, proto.output(k), {contrib::int_attr("axis", 0)});
        WEFT_RETURN_IF_ERROR(add_node(concat, index));
      }
    }
    return Status();
  }

  // FlexAttention (ai.onnx.preview): score_mod and prob_mod become graphs of their own
  // (inputs: the scores or probabilities, then the outer values they read), and the node
  // takes those outer values after Q, K and V, score_mod's first.
  Status add_flex_attention(const onnx::NodeProto& proto, int index) {
    Location where{name_, node_name(proto, index), std::string(op_name(Op::kFlexAttention)),
                   graph_.opset};
    if (proto.input_size() != 3) return Status::error(where, "expected the inputs Q, K and V");
    NodeAttrReader reader(proto, base_dir_);
    AttrParser parser(reader, graph_.opset);
    OpAttrs parsed = find_op(Op::kFlexAttention, graph_.opset)->parse(parser);
    if (!parser.status().ok()) return parser.status().with_location(where);
    auto attrs = std::get<FlexAttentionAttrs>(std::move(parsed));
    onnx::NodeProto flex = proto;
    flex.clear_attribute();
    for (const char* name : {"score_mod", "prob_mod"}) {
      const onnx::GraphProto* g = nullptr;
      for (const auto& a : proto.attribute()) {
        if (a.name() == name && a.has_g()) g = &a.g();
      }
      if (!g) continue;
      if (g->input_size() != 1 || g->output_size() != 1) {
        return Status::error(where, fmt::format("'{}' must have one input and one output", name));
      }
      int before = flex.input_size();
      Result<std::shared_ptr<const Graph>> body = build_body(*g, {}, flex);
      if (!body.ok()) return body.status().with_location(where);
      if (std::string_view(name) == "score_mod") {
        attrs.score_mod = *body;
        attrs.score_mod_captured = flex.input_size() - before;
      } else {
        attrs.prob_mod = *body;
      }
    }
    return add_node(flex, index, std::move(attrs));
  }

  // A body graph; "node" gets the outer values it reads as extra inputs.
  Result<std::shared_ptr<const Graph>> build_body(const onnx::GraphProto& g,
                                                  const std::vector<TensorType>& operand_types,
                                                  onnx::NodeProto& node) {
    GraphBuilder sub(model_, graph_.opset, name_, base_dir_);
    sub.parent_ = this;
    sub.types_ = types_;
    sub.sequences_ = sequences_;
    WEFT_ASSIGN_OR_RETURN(Graph body, sub.build_graph(g, operand_types));
    for (const std::string& name : sub.captured_)
      node.add_input(name);
    return std::make_shared<const Graph>(std::move(body));
  }

  Status fail(const std::string& message) const {
    return Status::error(fmt::format("{}: {}", name_, message));
  }

  // Notes every dim_param of the model, before any fresh symbol is made.
  void note_symbols(const onnx::GraphProto& g) {
    for (const auto* infos : {&g.input(), &g.output(), &g.value_info()}) {
      for (const auto& vi : *infos) {
        if (!vi.type().has_tensor_type()) continue;
        for (const auto& d : vi.type().tensor_type().shape().dim()) {
          if (!d.has_dim_param()) continue;
          graph_.note_symbol(d.dim_param());
          for (const std::string& name : dim_symbols(dim_from_spelling(d.dim_param())))
            graph_.note_symbol(name);
        }
      }
    }
  }

  Result<TensorType> tensor_type(const std::string& value, const onnx::TypeProto& type) {
    if (!type.has_tensor_type()) {
      return fail(fmt::format("value '{}' is not a tensor (sequences as graph inputs, outputs "
                              "and loop state, maps and optionals are not supported)",
                              value));
    }
    const auto& tt = type.tensor_type();
    std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
    if (!dtype) {
      return fail(fmt::format("value '{}' has data type {}, which Weft does not support", value,
                              onnx_dtype_name(tt.elem_type())));
    }
    TensorType out{*dtype, std::nullopt};
    if (tt.has_shape()) {
      out.shape = Shape();
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() >= 0) {
          out.shape->push_back(d.dim_value());
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
          out.shape->push_back(dim_from_spelling(d.dim_param()));
        } else {
          out.shape->push_back(Dim::unknown()); // see with_fresh_symbols
        }
      }
    }
    return out;
  }

  // "type" with its unknown dims filled from "inferred" where that knows them, and the rest
  // made fresh symbols.
  TensorType with_fresh_symbols(TensorType type, const TensorType* inferred = nullptr) {
    if (!type.shape) return type;
    bool same_rank = inferred && inferred->shape && inferred->shape->size() == type.shape->size();
    for (size_t i = 0; i < type.shape->size(); ++i) {
      Dim& d = (*type.shape)[i];
      if (!d.is_unknown()) continue;
      if (same_rank && !(*inferred->shape)[i].is_unknown()) {
        d = (*inferred->shape)[i];
      } else {
        d = graph_.fresh_symbol();
      }
    }
    return type;
  }

  // If: both branches are imported into this graph (ONNX names are unique across scopes,
  // and a branch reads outer values by name), and Weft's If node takes the condition, then
  // the then-branch outputs, then the else-branch outputs, and passes one set through
  // (docs/data-dependent-shapes.md).
  Status add_if(const onnx::NodeProto& proto, int index) {
    onnx::NodeProto select = proto;
    select.clear_attribute();
    for (const char* branch : {"then_branch", "else_branch"}) {
      const onnx::GraphProto* g = nullptr;
      for (const auto& a : proto.attribute()) {
        if (a.name() == branch && a.has_g()) g = &a.g();
      }
      Location where{name_, node_name(proto, index), std::string(op_name(Op::kIf)), graph_.opset};
      if (!g) return Status::error(where, fmt::format("the attribute '{}' is missing", branch));
      if (g->output_size() != proto.output_size()) {
        return Status::error(where, fmt::format("'{}' has {} outputs, the node {}", branch,
                                                g->output_size(), proto.output_size()));
      }
      WEFT_RETURN_IF_ERROR(add_graph_body(*g));
      for (const auto& out : g->output())
        select.add_input(out.name());
    }
    return add_node(select, index);
  }

  // The symbols and declared types of "g", and its initializers as constants.
  Status add_types_and_initializers(const onnx::GraphProto& g) {
    note_symbols(g);
    for (const auto& vi : g.value_info())
      types_[vi.name()] = &vi.type();
    for (const auto& vi : g.output()) {
      types_[vi.name()] = &vi.type();
      graph_outputs_.insert(vi.name());
    }
    // Initializers nothing reads are not read in: those a com.microsoft expansion replaced
    // (MatMulNBits' packed weights, 156 MB of a 300 M int4 Llama's, held while it imported).
    std::set<std::string> read_by_nodes;
    names_read(g, read_by_nodes);
    for (const auto& in : g.input())
      read_by_nodes.insert(in.name()); // before IR 4, an input's default
    for (const auto& init : g.initializer()) {
      if (!read_by_nodes.contains(init.name()) && !graph_outputs_.contains(init.name())) continue;
      Result<Tensor> read = tensor_from_proto(init, base_dir_);
      if (!read.ok()) return fail(read.status().message());
      Tensor t = std::move(read).value();
      if (graph_.find_value(init.name()))
        return fail(fmt::format("initializer '{}' is defined twice", init.name()));
      graph_.add_constant(init.name(), std::move(t));
    }
    return Status();
  }

  // The names the nodes of "g" read, those of its subgraphs' nodes included (a branch reads an
  // enclosing graph's values by name).
  static void names_read(const onnx::GraphProto& g, std::set<std::string>& names) {
    for (const auto& node : g.node()) {
      for (const std::string& in : node.input())
        names.insert(in);
      for (const auto& a : node.attribute()) {
        if (a.has_g()) names_read(a.g(), names);
        for (const auto& sub : a.graphs())
          names_read(sub, names);
      }
    }
  }

  // The initializers and nodes of a branch, into this graph.
  Status add_graph_body(const onnx::GraphProto& g) {
    WEFT_RETURN_IF_ERROR(add_types_and_initializers(g));
    if (g.input_size() > 0) return fail(fmt::format("branch '{}' has inputs", g.name()));
    ++branch_depth_;
    for (int i = 0; i < g.node_size(); ++i) {
      Status added = add_node(g.node(i), i);
      if (!added.ok()) {
        --branch_depth_;
        return added;
      }
    }
    --branch_depth_;
    return Status();
  }

  Status add_node(const onnx::NodeProto& proto, int index,
                  std::optional<OpAttrs> attrs = std::nullopt) {
    if (is_sequence_op(proto)) return add_sequence_op(proto, index);
    Op op = graph_op(proto);
    if (op == Op::kIf && proto.attribute_size() > 0) return add_if(proto, index);
    if (op == Op::kLoop && !attrs) return add_loop(proto, index);
    if (op == Op::kScan && !attrs)
      return graph_.opset >= 9 ? add_scan(proto, index) : add_scan8(proto, index);
    if (op == Op::kFlexAttention && !attrs) return add_flex_attention(proto, index);
    Node node;
    node.op_type = op;
    node.opset = graph_.opset;
    node.name = graph_.unique_node_name(node_name(proto, index));
    Location where{name_, node.name, std::string(node.op_type.name()), node.opset};
    node.def = find_op(node.op_type, node.opset); // present: check_supported_ops ran
    if (attrs) {
      node.attrs = std::move(*attrs);
    } else {
      NodeAttrReader reader(proto, base_dir_);
      AttrParser parser(reader, node.opset);
      node.attrs = node.def->parse(parser);
      if (!parser.status().ok()) return parser.status().with_location(where);
    }
    for (const std::string& in : proto.input()) {
      if (in.empty()) {
        node.inputs.push_back(nullptr);
        continue;
      }
      Value* v = lookup(in);
      if (!v) return Status::error(where, undefined(in));
      node.inputs.push_back(v);
    }
    std::vector<std::optional<DType>> dtypes;
    for (const Value* v : node.inputs)
      dtypes.push_back(v ? std::optional(v->type.dtype) : std::nullopt);
    if (std::optional<std::string> mixed = mixed_input_types(proto, graph_.opset, dtypes))
      return Status::error(where, *mixed);
    // Output types come from ONNX shape inference; the op's shape function checks the
    // inputs and fills gaps.
    std::vector<TensorType> fallback;
    node.conditional = branch_depth_ > 0;
    if (node.def->infer) {
      node.outputs.assign(static_cast<size_t>(proto.output_size()), nullptr);
      Result<std::vector<TensorType>> inferred = node.def->infer(node);
      if (inferred.ok()) {
        fallback = std::move(inferred).value();
      } else if (node.conditional && !node.inputs.empty() && node.inputs[0]) {
        // Its branch may never be taken (graph.h): typed by its first input's dtype.
        fallback.assign(static_cast<size_t>(proto.output_size()),
                        TensorType{node.inputs[0]->type.dtype, std::nullopt});
      } else {
        return inferred.status().with_location(where);
      }
    }
    node.outputs.clear();
    for (int i = 0; i < proto.output_size(); ++i) {
      const std::string& out = proto.output(i);
      if (out.empty()) {
        node.outputs.push_back(nullptr);
        continue;
      }
      if (graph_.find_value(out))
        return Status::error(where, fmt::format("output '{}' is defined twice", out));
      auto it = types_.find(out);
      TensorType type;
      if (it != types_.end() && it->second->has_tensor_type() &&
          it->second->tensor_type().elem_type() != 0) {
        WEFT_ASSIGN_OR_RETURN(type, tensor_type(out, *it->second));
        const TensorType* inferred =
            static_cast<size_t>(i) < fallback.size() ? &fallback[static_cast<size_t>(i)] : nullptr;
        if (inferred && !types_agree(type, *inferred)) {
          if (graph_outputs_.contains(out) && type.dtype != inferred->dtype) {
            return Status::error(where,
                                 fmt::format("output '{}' is declared {} but the op gives {}", out,
                                             type.to_string(), inferred->to_string()));
          }
          // A wrong value_info (ONNX Runtime GenAI's builder declares its [1] constants as
          // scalars), or a graph output's wrong dims (PyTorch 1.13's export of a ceil_mode
          // pooling whose last window would start in the padding, which PyTorch drops and its
          // ONNX shape inference did not): the op decides, as in ONNX Runtime.
          log_info("{}: value '{}' is declared {} but the op gives {}: taking the op's",
                   where.to_string(), out, type.to_string(), inferred->to_string());
          type = refine_type({inferred->dtype, std::nullopt}, *inferred, graph_);
        } else {
          type = with_fresh_symbols(std::move(type), inferred);
        }
      } else if (static_cast<size_t>(i) < fallback.size()) {
        const TensorType& inferred = fallback[static_cast<size_t>(i)];
        type = refine_type({inferred.dtype, std::nullopt}, inferred, graph_);
      } else {
        return Status::error(where, fmt::format("cannot infer the type of output '{}'", out));
      }
      node.outputs.push_back(graph_.add_value(out, type));
    }
    // TopK's values and indices have one shape: where K is not yet a constant (a Constant
    // node's), its unknown extent is one symbol for both, not a fresh one each (a Softmax of
    // the values scattered at the indices, a mixture of experts' routing, checks they agree).
    if (node.op_type == Op::kTopK && node.outputs.size() == 2 && node.outputs[0] &&
        node.outputs[1] && node.outputs[0]->type.shape && node.outputs[1]->type.shape &&
        node.outputs[0]->type.shape->size() == node.outputs[1]->type.shape->size())
      node.outputs[1]->type.shape = node.outputs[0]->type.shape;
    graph_.add_node(std::move(node));
    return Status();
  }

  const onnx::ModelProto& model_;
  std::string name_;
  std::string base_dir_;
  Graph graph_;
  std::unordered_map<std::string, const onnx::TypeProto*> types_;
  std::unordered_set<std::string> graph_outputs_; // of this graph
  GraphBuilder* parent_ = nullptr;    // the enclosing graph's, for a body
  int branch_depth_ = 0;              // > 0 while importing an If's branch
  std::vector<std::string> captured_; // outer values a body reads, in order
  Sequences sequences_;               // the sequences built so far, as their elements
};

} // namespace

Result<Graph> build_graph(const onnx::ModelProto& model, int opset, const std::string& name,
                          const std::string& base_dir) {
  return GraphBuilder(model, opset, name, base_dir).build();
}

} // namespace weft
