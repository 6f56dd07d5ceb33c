#include "weft/onnx/model_checks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <google/protobuf/stubs/logging.h>
#include <onnx/defs/schema.h>

#include "weft/graph/op_table.h"
#include "weft/onnx/attr_reader.h"
#include "weft/onnx/contrib_ops.h"
#include "weft/onnx/sequence_ops.h"
#include "weft/support/grouped_list.h"

namespace weft {

namespace {

// libprotobuf logs parse failures to stderr itself; Weft reports them as one line instead.
void silence_protobuf_logging() {
  static const bool once = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)once;
}

// The ops of "domain" in the op table, as a list for messages: "Adagrad, Adam and Momentum".
std::string ops_of_domain(const std::string& domain) {
  std::vector<std::string_view> names;
  for (const OpDef& def : all_ops()) {
    std::string_view name = op_name(def.op);
    if (!name.starts_with(domain + ".")) continue;
    name.remove_prefix(domain.size() + 1);
    if (name.find('.') == std::string_view::npos) names.push_back(name);
  }
  if (names.size() < 2) return fmt::format("{}", fmt::join(names, ""));
  return fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

// One message listing every node Weft cannot import, grouped by op.
void find_unsupported(const onnx::GraphProto& graph, int opset,
                      std::vector<std::pair<std::string, std::string>>& unsupported) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    Op op = graph_op(node);
    if (op == Op::kIf || op == Op::kLoop || op == Op::kScan || op == Op::kFlexAttention) {
      for (const onnx::GraphProto* branch : subgraphs(node))
        find_unsupported(*branch, opset, unsupported);
    }
    if (is_sequence_op(node) && opset >= kSequenceOpset) continue; // resolved at import
    std::string key;
    bool known_domain = node.domain() == kTrainingDomain || node.domain() == kPreviewDomain ||
                        node.domain() == kMlDomain || node.domain() == kWeftDomain;
    if (node.domain() == kMicrosoftDomain) {
      key = fmt::format("{} (domain '{}': Weft expands {} from it)", node.op_type(), node.domain(),
                        contrib_ops_list());
    } else if (!is_onnx_domain(node.domain()) && !known_domain) {
      key = fmt::format("{} (domain '{}': only ai.onnx, {}, {} and {} are supported)",
                        node.op_type(), node.domain(), kTrainingDomain, kPreviewDomain, kMlDomain);
    } else if (!is_onnx_domain(node.domain())) {
      if (find_op(op, opset)) continue;
      key = fmt::format("{} (domain '{}': Weft supports {} there", node.op_type(), node.domain(),
                        ops_of_domain(node.domain()));
      if (node.domain() == kMlDomain) {
        std::vector<std::string> expanded = ml_expanded_op_names();
        key += fmt::format(", and expands {} and {}",
                           fmt::join(expanded.begin(), expanded.end() - 1, ", "), expanded.back());
      }
      key += ")";
    } else if (!find_op(op, opset) ||
               node.op_type().find('.') != std::string::npos) { // qualified: not ai.onnx's
      std::vector<std::string> spans;
      for (auto [lo, hi] : supported_opsets(op)) {
        spans.push_back(lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi));
      }
      key = spans.empty() ? fmt::format("{} (opset {})", node.op_type(), opset)
                          : fmt::format("{} (opset {}; supported at opsets {})", node.op_type(),
                                        opset, fmt::join(spans, ", "));
    } else {
      continue;
    }
    unsupported.emplace_back(key, node.name().empty() ? fmt::format("#{}", i) : node.name());
  }
}

// Spec rules checked on the protobuf, before any shape function runs. They were first
// written against inputs that crashed libonnx 1.12's shape inference (found by
// tests/fuzz/import_fuzzer.cc: LayerNormalization with an axis out of range, the Conv/pool
// family with zero strides or attributes whose lengths do not match the input's rank); Weft
// no longer runs that inference, and keeps the checks for its own shape functions. The
// ranks known here are the declared ones of graph inputs, outputs, value_info and
// initializers.
class DeclaredRankChecks {
public:
  DeclaredRankChecks(const onnx::GraphProto& graph, std::string name) : name_(std::move(name)) {
    for (const auto* infos : {&graph.input(), &graph.output(), &graph.value_info()}) {
      for (const auto& vi : *infos) {
        if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
          declare(vi.name(), vi.type().tensor_type().shape().dim_size());
        }
      }
    }
    for (const auto& init : graph.initializer())
      declare(init.name(), init.dims_size());
  }

  // A value declared with two ranks (say an output reusing an input's name) is refused:
  // the shape functions would see one rank and these checks the other.
  Status check_declarations() const {
    if (conflict_.empty()) return Status();
    return Status::error(
        fmt::format("{}: value '{}' is declared with different ranks", name_, conflict_));
  }

  Status check(const onnx::NodeProto& node, int index) const {
    Location where{name_, node.name().empty() ? fmt::format("#{}", index) : node.name(),
                   node.op_type(), 0};
    std::optional<int> rank = rank_of(node, 0);
    Op op = graph_op(node);
    bool window = kWindowOps.contains(op);
    if (window && rank && *rank < 3) {
      return Status::error(where,
                           fmt::format("input rank {} is below 3 (N, C, spatial...)", *rank));
    }
    if (window && rank && node.input_size() > 1 &&
        (op == Op::kConv || op == Op::kConvTranspose || op == Op::kConvInteger)) {
      std::optional<int> w_rank = rank_of(node, 1);
      if (w_rank && *w_rank != *rank) {
        return Status::error(
            where, fmt::format("weights have rank {}, input has rank {}", *w_rank, *rank));
      }
    }
    if (op == Op::kLayerNormalization && rank) {
      int64_t axis = -1; // the default
      for (const auto& attr : node.attribute()) {
        if (attr.name() == "axis") axis = attr.i();
      }
      if (axis < -*rank || axis >= *rank) {
        return Status::error(where,
                             fmt::format("axis {} is out of range for input rank {}", axis, *rank));
      }
    }
    for (const auto& attr : node.attribute()) {
      const std::string& a = attr.name();
      bool positive = a == "strides" || a == "dilations" || a == "kernel_shape";
      if (positive &&
          std::any_of(attr.ints().begin(), attr.ints().end(), [](int64_t v) { return v <= 0; })) {
        return Status::error(where, fmt::format("attribute '{}' must be positive", a));
      }
      if (window && rank && (positive || a == "pads") && attr.ints_size() > 0) {
        int expected = (a == "pads" ? 2 : 1) * (*rank - 2);
        if (attr.ints_size() != expected) {
          return Status::error(
              where, fmt::format("attribute '{}' has {} values, the input's spatial rank needs {}",
                                 a, attr.ints_size(), expected));
        }
      }
    }
    return Status();
  }

private:
  std::optional<int> rank_of(const onnx::NodeProto& node, int input) const {
    if (node.input_size() <= input) return std::nullopt;
    auto it = ranks_.find(node.input(input));
    return it == ranks_.end() ? std::nullopt : std::optional<int>(it->second);
  }

  void declare(const std::string& value, int rank) {
    auto [it, inserted] = ranks_.emplace(value, rank);
    if (!inserted && it->second != rank && conflict_.empty()) conflict_ = value;
  }

  static inline const std::unordered_set<Op> kWindowOps = {
      Op::kConv,    Op::kConvTranspose, Op::kConvInteger, Op::kQLinearConv,
      Op::kMaxPool, Op::kAveragePool,   Op::kLpPool,      Op::kMaxUnpool};
  std::string name_;
  std::unordered_map<std::string, int> ranks_;
  std::string conflict_; // the first value declared with two ranks
};

// The inputs of one version of an op (op_inputs.inc, from onnx's schemas).
struct OpInputs {
  std::string_view op;
  int since;
  int min_inputs, max_inputs;
  uint64_t required; // bit i: input i must be given (a single or variadic one)
  std::string_view names;
};

constexpr OpInputs kOpInputs[] = {
#define WEFT_OP_INPUTS(op, since, lo, hi, required, names) {op, since, lo, hi, required, names},
#include "weft/onnx/op_inputs.inc"
#undef WEFT_OP_INPUTS
};

// The newest version of "op" at "opset" or before; for other domains than ai.onnx, whose
// opsets Weft does not track per op, the newest.
const OpInputs* op_inputs(std::string_view op, int opset, bool onnx_domain) {
  const OpInputs* found = nullptr;
  for (const OpInputs& e : kOpInputs) {
    if (e.op == op && (!onnx_domain || e.since <= opset) && (!found || e.since > found->since))
      found = &e;
  }
  return found;
}

// The name of input "i" in "names" ("X,W,B"), or its index.
std::string input_name(std::string_view names, int i) {
  for (int at = 0; at < i; ++at) {
    size_t comma = names.find(',');
    if (comma == std::string_view::npos) return std::to_string(i);
    names.remove_prefix(comma + 1);
  }
  return fmt::format("{} ('{}')", i, names.substr(0, names.find(',')));
}

// The node's inputs against its op's schema: how many (trailing empty names of optional
// inputs dropped, as absent), and every input that is not optional given a name.
Status check_inputs(const onnx::NodeProto& node, int index, int opset, const std::string& name) {
  const OpInputs* spec = op_inputs(graph_op_type(node), opset, is_onnx_domain(node.domain()));
  if (!spec) return Status(); // an op of Weft's table without a schema: its shape function checks
  int given = node.input_size();
  auto required = [&](int i) { return i < 64 && (spec->required >> i & 1); };
  while (given > 0 && node.input(given - 1).empty() && !required(given - 1))
    --given;
  Location where{name, node.name().empty() ? fmt::format("#{}", index) : node.name(),
                 node.op_type(), opset};
  if (given < spec->min_inputs || given > spec->max_inputs) {
    std::string range = spec->min_inputs == spec->max_inputs
                            ? std::to_string(spec->min_inputs)
                            : fmt::format("{} to {}", spec->min_inputs, spec->max_inputs);
    if (spec->max_inputs == std::numeric_limits<int32_t>::max())
      range = fmt::format("at least {}", spec->min_inputs);
    return Status::error(where, fmt::format("takes {} inputs, {} given", range, given));
  }
  for (int i = 0; i < given; ++i) {
    if (required(i) && node.input(i).empty()) {
      return Status::error(where, fmt::format("input {} is required, but its name is empty",
                                              input_name(spec->names, i)));
    }
  }
  return Status();
}

} // namespace

Result<std::string> read_file(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return Status::error(fmt::format("{}: no such file", path), StatusCode::kNoSuchFile);
  }
  if (std::filesystem::is_directory(st)) {
    return Status::error(fmt::format("{}: is a directory, expected an .onnx model file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(fmt::format("{}: cannot open the file for reading", path));
  // Read at its size in one piece (a stream copy grows a string by doubling: a 271 MB model
  // was copied and faulted in several times over).
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  std::string bytes;
  if (!ec) {
    bytes.resize(static_cast<size_t>(size));
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(in.gcount()));
    in.clear();
  }
  std::ostringstream rest; // what a growing (or special) file holds beyond its size
  rest << in.rdbuf();
  if (in.bad()) return Status::error(fmt::format("{}: cannot read the file", path));
  bytes += rest.str();
  return bytes;
}

Result<onnx::ModelProto> parse_model(std::string_view bytes, const std::string& name) {
  if (bytes.empty())
    return Status::error(fmt::format("{}: the file is empty", name), StatusCode::kInvalidModel);
  silence_protobuf_logging();
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::error(
        fmt::format(
            "{}: not a valid ONNX model: the protobuf does not parse (truncated or not a model?)",
            name),
        StatusCode::kInvalidModel);
  }
  if (model.ir_version() <= 0 || !model.has_graph()) {
    return Status::error(fmt::format("{}: not a valid ONNX model: it has no {}", name,
                                     model.ir_version() <= 0 ? "ir_version" : "graph"),
                         StatusCode::kInvalidModel);
  }
  if (model.ir_version() > kMaxIrVersion) {
    return Status::error(
        fmt::format("{}: the model's IR version {} is newer than Weft knows (IR up to {}, onnx {})",
                    name, model.ir_version(), kMaxIrVersion, kOnnxRelease),
        StatusCode::kNotImplemented);
  }
  return model;
}

bool is_onnx_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// The op type Weft's graph gives a node: ONNX's for ai.onnx, qualified by the domain for
// the other domains Weft knows (op_table.h).
Op graph_op(const onnx::NodeProto& node) { return op_from_name(graph_op_type(node)); }

std::string graph_op_type(const onnx::NodeProto& node) {
  if (node.domain() == kTrainingDomain || node.domain() == kPreviewDomain ||
      node.domain() == kMlDomain || node.domain() == kWeftDomain)
    return fmt::format("{}.{}", node.domain(), node.op_type());
  return node.op_type();
}

// The ai.onnx opset. A model that imports none may hold nodes of the other domains only
// (say, a training step); passes that add ai.onnx nodes to it use the newest opset.
Result<int> find_opset(const onnx::ModelProto& model, const std::string& name) {
  std::optional<int> opset;
  for (const auto& imp : model.opset_import()) {
    if (is_onnx_domain(imp.domain())) opset = static_cast<int>(imp.version());
    if (imp.domain() == kTrainingDomain && imp.version() != kTrainingOpset) {
      return Status::error(fmt::format("{}: {} opset {} is not supported (only {})", name,
                                       kTrainingDomain, imp.version(), kTrainingOpset),
                           StatusCode::kNotImplemented);
    }
    if (imp.domain() == kPreviewDomain && imp.version() != kPreviewOpset) {
      return Status::error(fmt::format("{}: {} opset {} is not supported (only {})", name,
                                       kPreviewDomain, imp.version(), kPreviewOpset),
                           StatusCode::kNotImplemented);
    }
  }
  const auto& nodes = model.graph().node();
  if (!opset && std::none_of(nodes.begin(), nodes.end(),
                             [](const onnx::NodeProto& n) { return is_onnx_domain(n.domain()); })) {
    opset = kMaxOpset;
  }
  if (!opset) return Status::error(fmt::format("{}: the model imports no ai.onnx opset", name));
  if (*opset > kMaxOpset) {
    return Status::error(
        fmt::format(
            "{}: ai.onnx opset {} is newer than Weft knows (opsets {}-{}, onnx {}); convert the "
            "model with onnx.version_converter",
            name, *opset, kMinOpset, kMaxOpset, kOnnxRelease),
        StatusCode::kNotImplemented);
  }
  if (*opset < kMinOpset) {
    return Status::error(fmt::format("{}: ai.onnx opset {} is not valid (opsets start at {})", name,
                                     *opset, kMinOpset));
  }
  return *opset;
}

// The graphs of a node's attributes: If's branches, Loop's and Scan's bodies.
std::vector<const onnx::GraphProto*> subgraphs(const onnx::NodeProto& node) {
  std::vector<const onnx::GraphProto*> out;
  for (const auto& a : node.attribute()) {
    if (a.has_g()) out.push_back(&a.g());
  }
  return out;
}

// Every op of the model (and of the branches and bodies of If, Loop and Scan) is in the table.
Status check_supported_ops(const onnx::GraphProto& graph, int opset, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> unsupported; // (op and why, node)
  find_unsupported(graph, opset, unsupported);
  if (unsupported.empty()) return Status();
  return Status::error(fmt::format("{}: unsupported ops: {}", name, format_grouped(unsupported)),
                       StatusCode::kNotImplemented);
}

Status check_declared_ranks(const onnx::GraphProto& graph, const std::string& name) {
  DeclaredRankChecks checks(graph, name);
  WEFT_RETURN_IF_ERROR(checks.check_declarations());
  for (int i = 0; i < graph.node_size(); ++i) {
    WEFT_RETURN_IF_ERROR(checks.check(graph.node(i), i));
    for (const onnx::GraphProto* sub : subgraphs(graph.node(i)))
      WEFT_RETURN_IF_ERROR(check_declared_ranks(*sub, name));
  }
  return Status();
}

Status check_node_inputs(const onnx::GraphProto& graph, int opset, const std::string& name) {
  for (int i = 0; i < graph.node_size(); ++i) {
    WEFT_RETURN_IF_ERROR(check_inputs(graph.node(i), i, opset, name));
    for (const onnx::GraphProto* sub : subgraphs(graph.node(i)))
      WEFT_RETURN_IF_ERROR(check_node_inputs(*sub, opset, name));
  }
  return Status();
}

std::optional<std::string> mixed_input_types(const onnx::NodeProto& node, int opset,
                                             const std::vector<std::optional<DType>>& dtypes) {
  if (!is_onnx_domain(node.domain())) return std::nullopt;
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "");
  if (!schema || schema->inputs().empty()) return std::nullopt;
  const auto& formals = schema->inputs();
  std::set<std::string> parameters; // "T", "T1": not a fixed type like tensor(int64)
  for (const auto& c : schema->typeConstraintParams())
    parameters.insert(c.type_param_str);
  std::map<std::string, size_t> first; // type parameter -> the first input bound to it
  for (size_t i = 0; i < dtypes.size() && i < static_cast<size_t>(node.input_size()); ++i) {
    const onnx::OpSchema::FormalParameter& formal = formals[std::min(i, formals.size() - 1)];
    bool variadic = formal.GetOption() == onnx::OpSchema::Variadic;
    if (i >= formals.size() && !variadic) break;
    if (!dtypes[i] || (variadic && !formal.GetIsHomogeneous()) ||
        !parameters.contains(formal.GetTypeStr()))
      continue;
    auto [it, fresh] = first.emplace(formal.GetTypeStr(), i);
    if (!fresh && *dtypes[it->second] != *dtypes[i]) {
      return fmt::format("inputs '{}' ({}) and '{}' ({}) are both of type {}, which must be one "
                         "type",
                         node.input(static_cast<int>(it->second)), dtype_name(*dtypes[it->second]),
                         node.input(static_cast<int>(i)), dtype_name(*dtypes[i]),
                         formal.GetTypeStr());
    }
  }
  return std::nullopt;
}

} // namespace weft
