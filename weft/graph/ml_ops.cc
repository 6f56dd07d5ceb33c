#include "weft/graph/ml_ops.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "weft/graph/shape_function_helpers.h"

namespace weft {

using namespace shape_detail; // NOLINT(google-build-using-namespace)

namespace {

constexpr std::string_view kTfIdfModes[] = {"TF", "IDF", "TFIDF"};
constexpr std::string_view kTreeAggregates[] = {"AVERAGE", "SUM", "MIN", "MAX"};
constexpr std::string_view kPostTransforms[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO",
                                                "PROBIT"};

// Does "p" have every one of "names"? Notes the first missing one.
bool require(AttrParser& p, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (!p.has(name)) {
      p.fail(fmt::format("attribute '{}' is required", name));
      return false;
    }
  }
  return true;
}

// "t" (a 1-D tensor attribute, when present) as integers; notes a tensor of floats.
Ints tensor_ints(AttrParser& p, const TensorRef& t, std::string_view name) {
  Ints out;
  if (!t) return out;
  if (dtype_is_float(t->dtype())) p.fail(fmt::format("attribute '{}' must hold integers", name));
  for (int64_t i = 0; i < t->num_elements(); ++i)
    out.push_back(t->get_int64(i));
  return out;
}

// Is each of "ids" in [0, "bound")? Notes the first that is not.
void check_range(AttrParser& p, const Ints& ids, int64_t bound, std::string_view what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= bound) {
      p.fail(fmt::format("{}[{}] is {}, outside [0, {})", what, i, ids[i], bound));
      return;
    }
  }
}

// The per-node lists of "a" have as many entries as nodes_modes, and the per-leaf ones as
// leaf_targetids; every index is in range.
void check_tree_lists(AttrParser& p, const TreeEnsembleAttrs& a) {
  size_t nodes = a.nodes_modes.size();
  size_t leaves = a.leaf_targetids.size();
  auto same_length = [&](std::string_view name, size_t length, size_t expected) {
    if (length != expected) {
      p.fail(fmt::format("attribute '{}' has {} entries, expected {}", name, length, expected));
    }
  };
  same_length("nodes_featureids", a.nodes_featureids.size(), nodes);
  same_length("nodes_splits", static_cast<size_t>(a.nodes_splits->num_elements()), nodes);
  same_length("nodes_truenodeids", a.nodes_truenodeids.size(), nodes);
  same_length("nodes_falsenodeids", a.nodes_falsenodeids.size(), nodes);
  same_length("nodes_trueleafs", a.nodes_trueleafs.size(), nodes);
  same_length("nodes_falseleafs", a.nodes_falseleafs.size(), nodes);
  if (!a.nodes_missing_value_tracks_true.empty()) {
    same_length("nodes_missing_value_tracks_true", a.nodes_missing_value_tracks_true.size(), nodes);
  }
  same_length("leaf_weights", static_cast<size_t>(a.leaf_weights->num_elements()), leaves);
  if (!p.status().ok()) return;
  if (nodes == 0) p.fail("the ensemble has no nodes");
  if (a.tree_roots.empty()) p.fail("attribute 'tree_roots' is empty");
  auto m = static_cast<int64_t>(nodes);
  check_range(p, a.nodes_modes, static_cast<int64_t>(TreeNodeMode::kMember) + 1, "nodes_modes");
  check_range(p, a.tree_roots, m, "tree_roots");
  check_range(p, a.leaf_targetids, a.n_targets, "leaf_targetids");
  for (int64_t f : a.nodes_featureids) {
    if (f < 0) p.fail(fmt::format("nodes_featureids holds {}", f));
  }
  for (size_t i = 0; i < nodes; ++i) {
    for (bool truth : {true, false}) {
      bool leaf = (truth ? a.nodes_trueleafs : a.nodes_falseleafs)[i] != 0;
      int64_t id = (truth ? a.nodes_truenodeids : a.nodes_falsenodeids)[i];
      int64_t bound = leaf ? static_cast<int64_t>(leaves) : m;
      if (id < 0 || id >= bound) {
        p.fail(fmt::format("node {}'s {} branch is {} {}, outside [0, {})", i,
                           truth ? "true" : "false", leaf ? "leaf" : "node", id, bound));
      }
    }
  }
}

// As many NaN-ended sets in membership_values as MEMBER nodes.
void check_membership(AttrParser& p, const TreeEnsembleAttrs& a) {
  int64_t members = std::count(a.nodes_modes.begin(), a.nodes_modes.end(),
                               static_cast<int64_t>(TreeNodeMode::kMember));
  if (members == 0) return;
  if (!a.membership_values) {
    p.fail("BRANCH_MEMBER nodes need the attribute 'membership_values'");
    return;
  }
  int64_t sets = 0;
  for (int64_t i = 0; i < a.membership_values->num_elements(); ++i)
    sets += std::isnan(a.membership_values->get_double(i)) ? 1 : 0;
  if (sets != members) {
    p.fail(fmt::format("membership_values holds {} NaN-ended sets for {} BRANCH_MEMBER nodes", sets,
                       members));
  }
}

} // namespace

std::string_view tf_idf_mode_name(TfIdfMode m) { return kTfIdfModes[static_cast<size_t>(m)]; }
std::string_view tree_aggregate_name(TreeAggregate a) {
  return kTreeAggregates[static_cast<size_t>(a)];
}

OpAttrs parse_binarizer(AttrParser& p) { return BinarizerAttrs{p.float_or("threshold", 0.0f)}; }

std::vector<TfIdfPoolLevel> tf_idf_pool_levels(const TfIdfAttrs& a) {
  std::vector<TfIdfPoolLevel> levels;
  auto total = static_cast<int64_t>(a.pool_int64s.size());
  int64_t id = 0;
  for (size_t i = 0; i < a.ngram_counts.size(); ++i) {
    int64_t n = static_cast<int64_t>(i) + 1;
    int64_t start = a.ngram_counts[i];
    int64_t end = i + 1 < a.ngram_counts.size() ? a.ngram_counts[i + 1] : total;
    int64_t count = std::max<int64_t>(end - start, 0) / n;
    levels.push_back({n, start, count, id});
    id += count;
  }
  return levels;
}

int64_t tf_idf_output_size(const TfIdfAttrs& a) {
  return *std::max_element(a.ngram_indexes.begin(), a.ngram_indexes.end()) + 1;
}

OpAttrs parse_tf_idf(AttrParser& p) {
  TfIdfAttrs a;
  if (p.has("pool_strings")) {
    p.fail("TfIdfVectorizer with pool_strings is not supported: strings are not supported");
    return a;
  }
  if (!require(p, {"mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts",
                   "ngram_indexes", "pool_int64s"}))
    return a;
  std::string mode = p.string_or("mode", "TF");
  auto known = std::find(std::begin(kTfIdfModes), std::end(kTfIdfModes), mode);
  if (known == std::end(kTfIdfModes)) {
    p.fail(
        fmt::format("attribute 'mode' has unknown value '{}' (expected TF, IDF or TFIDF)", mode));
  } else {
    a.mode = static_cast<TfIdfMode>(known - std::begin(kTfIdfModes));
  }
  a.min_gram_length = p.int_or("min_gram_length", 1);
  a.max_gram_length = p.int_or("max_gram_length", 1);
  a.max_skip_count = p.int_or("max_skip_count", 0);
  a.ngram_counts = p.ints_or_empty("ngram_counts");
  a.ngram_indexes = p.ints_or_empty("ngram_indexes");
  a.pool_int64s = p.ints_or_empty("pool_int64s");
  a.weights = p.floats("weights");
  if (!p.status().ok()) return a;
  if (a.min_gram_length < 1 || a.max_gram_length < a.min_gram_length) {
    p.fail(fmt::format("the n-gram lengths {}-{} are not a range of positive lengths",
                       a.min_gram_length, a.max_gram_length));
  }
  if (a.max_skip_count < 0) p.fail("attribute 'max_skip_count' is negative");
  auto pool = static_cast<int64_t>(a.pool_int64s.size());
  for (size_t i = 0; i < a.ngram_counts.size(); ++i) {
    int64_t previous = i == 0 ? 0 : a.ngram_counts[i - 1];
    if (a.ngram_counts[i] < previous || a.ngram_counts[i] > pool) {
      p.fail(fmt::format("ngram_counts[{}] is {}: the starts must rise within the pool of {}", i,
                         a.ngram_counts[i], pool));
    }
  }
  if (a.ngram_indexes.empty()) p.fail("attribute 'ngram_indexes' is empty");
  for (int64_t index : a.ngram_indexes) {
    if (index < 0) p.fail(fmt::format("ngram_indexes holds {}", index));
  }
  if (!p.status().ok()) return a;
  std::vector<TfIdfPoolLevel> levels = tf_idf_pool_levels(a);
  int64_t ngrams = levels.empty() ? 0 : levels.back().first_id + levels.back().count;
  if (static_cast<int64_t>(a.ngram_indexes.size()) < ngrams) {
    p.fail(fmt::format("ngram_indexes has {} entries for the pool's {} n-grams",
                       a.ngram_indexes.size(), ngrams));
  }
  int64_t columns = tf_idf_output_size(a);
  if (a.mode != TfIdfMode::kTf && !a.weights.empty() &&
      static_cast<int64_t>(a.weights.size()) < columns) {
    p.fail(fmt::format("attribute 'weights' has {} entries for {} output columns", a.weights.size(),
                       columns));
  }
  return a;
}

OpAttrs parse_tree_ensemble(AttrParser& p) {
  TreeEnsembleAttrs a;
  if (!require(p, {"tree_roots", "nodes_modes", "nodes_featureids", "nodes_splits",
                   "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs",
                   "leaf_targetids", "leaf_weights", "n_targets"}))
    return a;
  int64_t aggregate = p.int_or("aggregate_function", 1);
  if (aggregate < 0 || aggregate > 3) {
    p.fail(fmt::format("attribute 'aggregate_function' has unknown value {}", aggregate));
  }
  a.aggregate = static_cast<TreeAggregate>(std::clamp<int64_t>(aggregate, 0, 3));
  int64_t transform = p.int_or("post_transform", 0);
  if (transform != 0) {
    std::string name = transform > 0 && transform < 5
                           ? std::string(kPostTransforms[static_cast<size_t>(transform)])
                           : std::to_string(transform);
    p.fail(fmt::format("post_transform {} is not supported (only NONE)", name));
  }
  a.n_targets = p.int_or("n_targets", 1);
  if (a.n_targets < 1 || a.n_targets > kMaxTreeTargets) {
    p.fail(
        fmt::format("attribute 'n_targets' is {}, outside [1, {}]", a.n_targets, kMaxTreeTargets));
  }
  a.tree_roots = p.ints_or_empty("tree_roots");
  a.nodes_modes = tensor_ints(p, p.tensor("nodes_modes"), "nodes_modes");
  a.nodes_featureids = p.ints_or_empty("nodes_featureids");
  a.nodes_splits = p.tensor("nodes_splits");
  a.nodes_truenodeids = p.ints_or_empty("nodes_truenodeids");
  a.nodes_falsenodeids = p.ints_or_empty("nodes_falsenodeids");
  a.nodes_trueleafs = p.ints_or_empty("nodes_trueleafs");
  a.nodes_falseleafs = p.ints_or_empty("nodes_falseleafs");
  a.nodes_missing_value_tracks_true = p.ints_or_empty("nodes_missing_value_tracks_true");
  a.membership_values = p.tensor("membership_values");
  a.leaf_targetids = p.ints_or_empty("leaf_targetids");
  a.leaf_weights = p.tensor("leaf_weights");
  if (!p.status().ok()) return a;
  for (const auto& [t, name] :
       {std::pair{a.nodes_splits, "nodes_splits"}, {a.leaf_weights, "leaf_weights"}}) {
    if (!dtype_is_float(t->dtype()) || dtype_is_float8_or_4(t->dtype()) ||
        t->dtype() == DType::kBF16) {
      p.fail(fmt::format("attribute '{}' has type {}, expected f16, f32 or f64", name,
                         dtype_name(t->dtype())));
    }
  }
  check_tree_lists(p, a);
  check_membership(p, a);
  return a;
}

// ArrayFeatureExtractor (ai.onnx.ml): x[..., indices] with the indices flattened; a vector x
// gives one row ([1, n]), as ONNX Runtime and the reference do.
TypesOrError infer_array_feature_extractor(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const TensorType& indices = in_type(node, 1);
  if (indices.dtype != DType::kI64) return fail("the indices must be i64");
  if (!x.shape || !indices.shape) return one({x.dtype, std::nullopt});
  if (x.shape->empty()) return fail("X must have at least one dim");
  std::optional<int64_t> n = shape_num_elements(*indices.shape);
  if (!n) return one({x.dtype, std::nullopt});
  Shape out(x.shape->begin(), x.shape->end() - 1);
  if (out.empty()) out.push_back(Dim(1));
  out.push_back(Dim(*n));
  return one({x.dtype, out});
}

TypesOrError infer_tf_idf(const Node& node) {
  const TensorType& x = in_type(node, 0);
  if (x.dtype != DType::kI32 && x.dtype != DType::kI64)
    return fail(fmt::format("X has type {}, expected i32 or i64", dtype_name(x.dtype)));
  Dim columns(tf_idf_output_size(node.attrs_as<TfIdfAttrs>()));
  if (!x.shape) return one({DType::kF32, std::nullopt});
  if (x.shape->size() == 1) return one({DType::kF32, Shape{columns}});
  if (x.shape->size() == 2) return one({DType::kF32, Shape{(*x.shape)[0], columns}});
  return fail(fmt::format("X has rank {}, expected [C] or [B, C]", x.shape->size()));
}

TypesOrError infer_tree_ensemble(const Node& node) {
  const TensorType& x = in_type(node, 0);
  const auto& a = node.attrs_as<TreeEnsembleAttrs>();
  if (x.dtype != DType::kF32 && x.dtype != DType::kF64 && x.dtype != DType::kF16)
    return fail(fmt::format("X has type {}, expected f16, f32 or f64", dtype_name(x.dtype)));
  if (a.nodes_splits->dtype() != x.dtype) {
    return fail(fmt::format("nodes_splits has type {}, X {}: they must match",
                            dtype_name(a.nodes_splits->dtype()), dtype_name(x.dtype)));
  }
  if (!x.shape) return one({x.dtype, std::nullopt});
  if (x.shape->size() != 2)
    return fail(fmt::format("X has rank {}, expected [N, F]", x.shape->size()));
  const Dim& features = (*x.shape)[1];
  int64_t widest = *std::max_element(a.nodes_featureids.begin(), a.nodes_featureids.end());
  if (features.is_static() && widest >= features.value()) {
    return fail(
        fmt::format("nodes_featureids holds {}, but X has {} features", widest, features.value()));
  }
  return one({x.dtype, Shape{(*x.shape)[0], Dim(a.n_targets)}});
}

} // namespace weft
