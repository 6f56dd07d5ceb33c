#include "weft/onnx/string_labels.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "weft/graph/op_table.h"
#include "weft/onnx/model_checks.h"

namespace weft {

namespace {

bool passes_values(const onnx::NodeProto& n) {
  Op op = graph_op(n);
  return (op == Op::kIdentity || op == Op::kReshape || op == Op::kFlatten || op == Op::kSqueeze ||
          op == Op::kUnsqueeze) &&
         n.input_size() > 0 && n.output_size() == 1;
}

bool is_classifier(const onnx::NodeProto& n) {
  return n.domain() == kMlDomain &&
         (n.op_type() == "TreeEnsembleClassifier" || n.op_type() == "LinearClassifier" ||
          n.op_type() == "SVMClassifier");
}

onnx::AttributeProto* attr(onnx::NodeProto& n, const std::string& name) {
  for (onnx::AttributeProto& a : *n.mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Labels that Python and the CLI can show: at least one, each valid UTF-8.
bool showable(const std::vector<std::string>& labels) {
  if (labels.empty()) return false;
  for (const std::string& s : labels) {
    for (size_t i = 0; i < s.size();) {
      auto c = static_cast<unsigned char>(s[i]);
      size_t n = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
      if (n == 0 || i + n > s.size()) return false;
      for (size_t k = 1; k < n; ++k) {
        if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
      }
      i += n;
    }
  }
  return true;
}

// The positions 0..count-1 as an int64 tensor named "name".
onnx::TensorProto positions(const std::string& name, int count) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(count);
  for (int i = 0; i < count; ++i)
    t.add_int64_data(i);
  return t;
}

// A OneHotEncoder or LabelEncoder that tells strings apart (and gives no strings): the
// strings it names, in order; none for any other node.
std::optional<std::vector<std::string>> string_keys(onnx::NodeProto& n) {
  if (n.domain() != kMlDomain) return std::nullopt;
  if (n.op_type() == "OneHotEncoder" && !attr(n, "cats_int64s")) {
    if (const onnx::AttributeProto* cats = attr(n, "cats_strings"))
      return std::vector<std::string>(cats->strings().begin(), cats->strings().end());
  }
  if (n.op_type() != "LabelEncoder" || attr(n, "values_strings")) return std::nullopt;
  if (const onnx::AttributeProto* values = attr(n, "values_tensor");
      values && values->t().data_type() == onnx::TensorProto::STRING)
    return std::nullopt;
  if (const onnx::AttributeProto* keys = attr(n, "keys_strings"))
    return std::vector<std::string>(keys->strings().begin(), keys->strings().end());
  if (const onnx::AttributeProto* keys = attr(n, "keys_tensor");
      keys && keys->t().data_type() == onnx::TensorProto::STRING)
    return std::vector<std::string>(keys->t().string_data().begin(), keys->t().string_data().end());
  return std::nullopt;
}

// That node's strings (string_keys) replaced by their indices in a vocabulary.
void key_by_index(onnx::NodeProto& n, const std::unordered_map<std::string, int64_t>& index) {
  for (onnx::AttributeProto& a : *n.mutable_attribute()) {
    if (a.name() == "cats_strings" || a.name() == "keys_strings") {
      onnx::AttributeProto ints;
      ints.set_name(a.name() == "cats_strings" ? "cats_int64s" : "keys_int64s");
      ints.set_type(onnx::AttributeProto::INTS);
      for (const std::string& s : a.strings())
        ints.add_ints(index.at(s));
      a = ints;
    } else if (a.name() == "keys_tensor") {
      onnx::TensorProto t;
      t.set_name(a.t().name());
      t.set_data_type(onnx::TensorProto::INT64);
      *t.mutable_dims() = a.t().dims();
      for (const std::string& s : a.t().string_data())
        t.add_int64_data(index.at(s));
      *a.mutable_t() = t;
    }
  }
}

class Indexer {
public:
  explicit Indexer(onnx::GraphProto& g) : g_(g) {
    for (onnx::NodeProto& n : *g.mutable_node()) {
      for (const std::string& o : n.output())
        producer_[o] = &n;
      for (const std::string& i : n.input())
        readers_[i].push_back(&n);
    }
    for (int i = 0; i < g.initializer_size(); ++i)
      initializer_[g.initializer(i).name()] = i;
    for (const onnx::ValueInfoProto& o : g.output())
      outputs_.insert(o.name());
  }

  // The vocabulary of input "name", its readers rewritten to take indices into it; none when
  // it does not qualify.
  std::optional<std::vector<std::string>> vocabulary(const std::string& name) {
    std::vector<std::string> values = {name}; // the input, and what passes its values on
    std::vector<onnx::NodeProto*> encoders;
    for (size_t v = 0; v < values.size(); ++v) {
      if (outputs_.contains(values[v])) return std::nullopt;
      for (onnx::NodeProto* r : readers_[values[v]]) {
        if (r->input(0) != values[v] ||
            std::count(r->input().begin(), r->input().end(), values[v]) != 1)
          return std::nullopt;
        if (passes_values(*r)) {
          if (std::find(values.begin(), values.end(), r->output(0)) != values.end())
            return std::nullopt; // a cycle (a malformed model)
          values.push_back(r->output(0));
        } else if (string_keys(*r)) {
          encoders.push_back(r);
        } else {
          return std::nullopt;
        }
      }
    }
    std::vector<std::string> words;
    std::unordered_map<std::string, int64_t> index;
    for (onnx::NodeProto* e : encoders) {
      std::vector<std::string> keys = *string_keys(*e);
      for (const std::string& s : keys) {
        if (index.emplace(s, static_cast<int64_t>(words.size())).second) words.push_back(s);
      }
    }
    if (!showable(words)) return std::nullopt;
    for (onnx::NodeProto* e : encoders)
      key_by_index(*e, index);
    for (const std::string& v : values)
      retype(v);
    return words;
  }

  // The labels of output "name", its path rewritten to carry their indices; none when it
  // does not qualify.
  std::optional<std::vector<std::string>> index(const std::string& name) {
    std::vector<std::string> path = {name};
    onnx::NodeProto* source = nullptr;
    for (;;) {
      auto it = producer_.find(path.back());
      if (it == producer_.end()) return std::nullopt;
      if (!passes_values(*it->second)) {
        source = it->second;
        break;
      }
      if (std::find(path.begin(), path.end(), it->second->input(0)) != path.end())
        return std::nullopt; // a cycle (a malformed model)
      path.push_back(it->second->input(0));
    }
    // Every value on the path but the output is read by the path's next node alone, and is
    // no output itself.
    for (size_t v = 0; v < path.size(); ++v) {
      if (v > 0 && outputs_.contains(path[v])) return std::nullopt;
      for (const onnx::NodeProto* r : readers_[path[v]]) {
        if (v == 0 || r != producer_[path[v - 1]]) return std::nullopt;
      }
    }
    auto done = indexed_.find(source);
    std::optional<std::vector<std::string>> labels = done != indexed_.end() ? done->second
                                                     : is_classifier(*source)
                                                         ? classifier_labels(*source, path.back())
                                                         : gathered_labels(*source, path.back());
    if (!labels) return std::nullopt;
    indexed_[source] = *labels; // another output may come from it too
    for (const std::string& v : path)
      retype(v);
    return labels;
  }

private:
  // A classifier's label output: its classlabels_strings, which become positions (in
  // classlabels_int64s for TreeEnsembleClassifier, classlabels_ints for the others).
  static std::optional<std::vector<std::string>> classifier_labels(onnx::NodeProto& n,
                                                                   const std::string& value) {
    std::string ints_name =
        n.op_type() == "TreeEnsembleClassifier" ? "classlabels_int64s" : "classlabels_ints";
    onnx::AttributeProto* strings = attr(n, "classlabels_strings");
    if (n.output_size() == 0 || n.output(0) != value || !strings || attr(n, ints_name))
      return std::nullopt;
    std::vector<std::string> labels(strings->strings().begin(), strings->strings().end());
    if (!showable(labels)) return std::nullopt;
    onnx::AttributeProto ints;
    ints.set_name(ints_name);
    ints.set_type(onnx::AttributeProto::INTS);
    for (size_t i = 0; i < labels.size(); ++i)
      ints.add_ints(static_cast<int64_t>(i));
    *strings = ints;
    return labels;
  }

  // ArrayFeatureExtractor or Gather (axis 0) from a constant 1-D string tensor: the data
  // becomes positions.
  std::optional<std::vector<std::string>> gathered_labels(onnx::NodeProto& n,
                                                          const std::string& value) {
    bool afe = graph_op(n) == Op::kArrayFeatureExtractor;
    bool gather = graph_op(n) == Op::kGather;
    if (!(afe || gather) || n.input_size() != 2 || n.output_size() != 1 || n.output(0) != value)
      return std::nullopt;
    if (gather) {
      const onnx::AttributeProto* axis = attr(n, "axis");
      if (axis && axis->i() != 0 && axis->i() != -1) return std::nullopt;
    }
    auto it = initializer_.find(n.input(0));
    if (it == initializer_.end()) return std::nullopt;
    const onnx::TensorProto& data = g_.initializer(it->second);
    if (data.data_type() != onnx::TensorProto::STRING || data.dims_size() != 1 ||
        data.dims(0) != data.string_data_size())
      return std::nullopt;
    std::vector<std::string> labels(data.string_data().begin(), data.string_data().end());
    if (!showable(labels)) return std::nullopt;
    std::string name = n.input(0) + "_label_positions";
    while (initializer_.contains(name) || producer_.contains(name))
      name += "_";
    *g_.add_initializer() = positions(name, static_cast<int>(labels.size()));
    initializer_[name] = g_.initializer_size() - 1;
    n.set_input(0, name);
    return labels;
  }

  // Value "name", where the graph declares it, as int64.
  void retype(const std::string& name) {
    for (auto* list : {g_.mutable_input(), g_.mutable_output(), g_.mutable_value_info()}) {
      for (onnx::ValueInfoProto& v : *list) {
        if (v.name() == name && v.type().has_tensor_type())
          v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
      }
    }
  }

  onnx::GraphProto& g_;
  std::unordered_map<std::string, onnx::NodeProto*> producer_;
  std::unordered_map<std::string, std::vector<onnx::NodeProto*>> readers_;
  std::unordered_map<std::string, int> initializer_;
  std::set<std::string> outputs_;
  std::map<const onnx::NodeProto*, std::vector<std::string>> indexed_;
};

} // namespace

std::map<std::string, std::vector<std::string>> index_string_labels(onnx::GraphProto& graph) {
  std::map<std::string, std::vector<std::string>> labels;
  std::vector<std::string> strings;
  for (const onnx::ValueInfoProto& o : graph.output()) {
    if (o.type().tensor_type().elem_type() == onnx::TensorProto::STRING)
      strings.push_back(o.name());
  }
  if (strings.empty()) return labels;
  Indexer indexer(graph);
  for (const std::string& name : strings) {
    if (auto l = indexer.index(name)) labels[name] = std::move(*l);
  }
  return labels;
}

} // namespace weft

namespace weft {

std::map<std::string, std::vector<std::string>> index_string_inputs(onnx::GraphProto& graph) {
  std::map<std::string, std::vector<std::string>> vocabularies;
  std::set<std::string> constants;
  for (const onnx::TensorProto& t : graph.initializer())
    constants.insert(t.name());
  std::vector<std::string> strings;
  for (const onnx::ValueInfoProto& i : graph.input()) {
    if (i.type().tensor_type().elem_type() == onnx::TensorProto::STRING &&
        !constants.contains(i.name()))
      strings.push_back(i.name());
  }
  if (strings.empty()) return vocabularies;
  Indexer indexer(graph);
  for (const std::string& name : strings) {
    if (auto v = indexer.vocabulary(name)) vocabularies[name] = std::move(*v);
  }
  return vocabularies;
}

} // namespace weft
