#include "weft/onnx/ml_tree_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "weft/graph/ml_ops.h"
#include "weft/onnx/ml_legacy_ops.h"

namespace weft::contrib {

namespace {

constexpr int kFloat = 1, kInt64 = 7, kDouble = 11; // TensorProto's data types

// The branch modes of the legacy ops, in TreeEnsemble's (ai.onnx.ml 5) numbering
// (TreeNodeMode); "LEAF" marks a leaf.
constexpr std::array<std::string_view, 6> kBranchModes = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                                          "BRANCH_GT",  "BRANCH_EQ", "BRANCH_NEQ"};
constexpr std::string_view kLeaf = "LEAF";

// The most values of the leaves' weight table [leaves, targets] (2 GB of f64).
constexpr int64_t kMaxTableSize = int64_t{1} << 28;

enum class Aggregate { kSum, kAverage, kMin, kMax };
constexpr std::array<std::string_view, 4> kAggregates = {"SUM", "AVERAGE", "MIN", "MAX"};

// Attribute "name" as doubles, or "name_as_tensor" (ai.onnx.ml 3: f64 splits and weights);
// empty when neither is given.
Result<std::vector<double>> doubles_of(const Expansion& e, const std::string& name) {
  std::vector<double> out;
  if (const onnx::AttributeProto* a = find_attr(e.node(), name + "_as_tensor")) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, e.tensor(a->t()));
    for (int64_t i = 0; i < t.num_elements(); ++i)
      out.push_back(t.get_double(i));
    return out;
  }
  for (float v : e.floats_of(name))
    out.push_back(v);
  return out;
}

// Each list has "n" entries.
Status same_lengths(size_t n, std::initializer_list<std::pair<std::string, size_t>> lists) {
  for (const auto& [name, length] : lists) {
    if (length != n) {
      return Status::error(
          fmt::format("attribute '{}' has {} entries, expected {}", name, length, n));
    }
  }
  return Status();
}

std::string f64_constant(Expansion& e, std::vector<double> v, std::vector<int64_t> dims) {
  return e.constant_of(Tensor::from_vector(DType::kF64, std::move(dims), v));
}

std::string i64_constant(Expansion& e, std::vector<int64_t> v, std::vector<int64_t> dims) {
  return e.constant_of(Tensor::from_vector(DType::kI64, std::move(dims), v));
}

// The node's input in f64, [N, C]: f64 holds every split and leaf number exactly, and an f32
// or f64 X compares with an f32 split as ONNX Runtime compares them. The ops here broadcast
// as from opset 7; Where and Equal on floats, for MIN and MAX, need opset 11.
Result<std::string> f64_rows(Expansion& e) { return e.matrix_input(kDouble, 7); }

using NodeKey = std::pair<int64_t, int64_t>; // (tree id, node id)
struct NodeKeyHash {
  size_t operator()(const NodeKey& k) const {
    return std::hash<int64_t>()(k.first * 1000003 + k.second);
  }
};
// By (tree id, node id): hashed, as a forest has millions of nodes.
template <typename T> using NodeMap = std::unordered_map<NodeKey, T, NodeKeyHash>;

// Where each tree's walk ends.
struct Leaves {
  std::string reached; // the leaf numbers, [N, trees] i64
  int64_t trees = 0;
  NodeMap<int64_t> number; // of each leaf
};

// The nodes_* attributes, one entry per node.
struct TreeNodes {
  Ints tree, id, feature, tracks, on_true, on_false;
  std::vector<std::string> modes;
  std::vector<double> splits;
};

Result<TreeNodes> read_nodes(const Expansion& e) {
  TreeNodes a{e.ints_of("nodes_treeids"),     e.ints_of("nodes_nodeids"),
              e.ints_of("nodes_featureids"),  e.ints_of("nodes_missing_value_tracks_true"),
              e.ints_of("nodes_truenodeids"), e.ints_of("nodes_falsenodeids"),
              e.strings_of("nodes_modes"),    {}};
  WEFT_ASSIGN_OR_RETURN(a.splits, doubles_of(e, "nodes_values"));
  size_t n = a.modes.size();
  if (n == 0) return Status::error("the ensemble has no nodes (attribute 'nodes_modes')");
  if (a.tracks.empty()) a.tracks.assign(n, 0);
  WEFT_RETURN_IF_ERROR(same_lengths(n, {{"nodes_treeids", a.tree.size()},
                                        {"nodes_nodeids", a.id.size()},
                                        {"nodes_featureids", a.feature.size()},
                                        {"nodes_values", a.splits.size()},
                                        {"nodes_truenodeids", a.on_true.size()},
                                        {"nodes_falsenodeids", a.on_false.size()},
                                        {"nodes_missing_value_tracks_true", a.tracks.size()}}));
  return a;
}

// The trees of the nodes_* attributes as one TreeEnsemble (ai.onnx.ml 5) over "x". A tree's
// root is its first node, as in onnx's reference; a tree that is one leaf gets a root whose
// branches both lead to it.
Result<Leaves> walk_trees(Expansion& e, const std::string& x) {
  WEFT_ASSIGN_OR_RETURN(TreeNodes a, read_nodes(e));
  const Ints &tree = a.tree, &id = a.id, &feature = a.feature;
  size_t n = a.modes.size();
  NodeMap<size_t> at;
  std::unordered_map<int64_t, int64_t> tree_index;
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i) {
    if (!at.emplace(NodeKey{tree[i], id[i]}, i).second)
      return Status::error(fmt::format("tree {} has two nodes {}", tree[i], id[i]));
    if (tree_index.emplace(tree[i], static_cast<int64_t>(roots.size())).second) roots.push_back(i);
  }
  // Each node's number among the interior nodes or among the leaves, and its mode (-1: leaf).
  Leaves out;
  out.trees = static_cast<int64_t>(roots.size());
  std::vector<int64_t> number(n), mode(n);
  int64_t interior = 0;
  for (size_t i = 0; i < n; ++i) {
    if (a.modes[i] == kLeaf) {
      mode[i] = -1;
      number[i] = static_cast<int64_t>(out.number.size());
      out.number[{tree[i], id[i]}] = number[i];
      continue;
    }
    auto known = std::find(kBranchModes.begin(), kBranchModes.end(), a.modes[i]);
    if (known == kBranchModes.end()) {
      return Status::error(fmt::format("nodes_modes[{}] is '{}' (expected {} or {})", i, a.modes[i],
                                       fmt::join(kBranchModes, ", "), kLeaf));
    }
    if (feature[i] < 0)
      return Status::error(fmt::format("nodes_featureids[{}] is {}", i, feature[i]));
    mode[i] = known - kBranchModes.begin();
    number[i] = interior++;
  }
  // TreeEnsemble's lists: the interior nodes in order, then a root for each one-leaf tree.
  std::vector<uint8_t> modes5;
  std::vector<double> splits5;
  Ints features5, tracks5, trues, falses, true_leafs, false_leafs, roots5;
  auto add = [&](int64_t m, int64_t f, double split, int64_t track) {
    modes5.push_back(static_cast<uint8_t>(m));
    features5.push_back(f);
    splits5.push_back(split);
    tracks5.push_back(track != 0);
  };
  auto branch = [&](size_t i, int64_t child, Ints& ids, Ints& leafs) -> Status {
    auto it = at.find({tree[i], child});
    if (it == at.end()) {
      return Status::error(fmt::format("node {} of tree {} leads to node {}, which the tree does "
                                       "not have",
                                       id[i], tree[i], child));
    }
    ids.push_back(number[it->second]);
    leafs.push_back(mode[it->second] < 0);
    return Status();
  };
  for (size_t i = 0; i < n; ++i) {
    if (mode[i] < 0) continue;
    add(mode[i], feature[i], a.splits[i], a.tracks[i]);
    WEFT_RETURN_IF_ERROR(branch(i, a.on_true[i], trues, true_leafs));
    WEFT_RETURN_IF_ERROR(branch(i, a.on_false[i], falses, false_leafs));
  }
  for (size_t r : roots) {
    if (mode[r] >= 0) {
      roots5.push_back(number[r]);
      continue;
    }
    roots5.push_back(static_cast<int64_t>(modes5.size()));
    add(0, 0, 0.0, 0);
    for (Ints* ids : {&trues, &falses})
      ids->push_back(number[r]);
    for (Ints* leafs : {&true_leafs, &false_leafs})
      leafs->push_back(1);
  }
  if (out.number.empty()) return Status::error("the ensemble has no leaves");
  // Each leaf is its tree's target, and weighs its own number.
  auto leaves = static_cast<int64_t>(out.number.size());
  Ints leaf_tree(static_cast<size_t>(leaves));
  std::vector<double> leaf_number(static_cast<size_t>(leaves));
  for (size_t i = 0; i < n; ++i) {
    if (mode[i] >= 0) continue;
    leaf_tree[static_cast<size_t>(number[i])] = tree_index[tree[i]];
    leaf_number[static_cast<size_t>(number[i])] = static_cast<double>(number[i]);
  }
  auto m = static_cast<int64_t>(modes5.size());
  std::string reached =
      e.op(Op::kTreeEnsemble, {x},
           {int_attr("n_targets", out.trees), int_attr("aggregate_function", 1 /* SUM */),
            ints_attr("tree_roots", roots5),
            tensor_attr("nodes_modes", Tensor::from_vector(DType::kU8, {m}, modes5)),
            ints_attr("nodes_featureids", features5),
            tensor_attr("nodes_splits", Tensor::from_vector(DType::kF64, {m}, splits5)),
            ints_attr("nodes_truenodeids", trues), ints_attr("nodes_trueleafs", true_leafs),
            ints_attr("nodes_falsenodeids", falses), ints_attr("nodes_falseleafs", false_leafs),
            ints_attr("nodes_missing_value_tracks_true", tracks5),
            ints_attr("leaf_targetids", leaf_tree),
            tensor_attr("leaf_weights", Tensor::from_vector(DType::kF64, {leaves}, leaf_number))});
  out.reached = e.op(Op::kCast, {reached}, {int_attr("to", kInt64)});
  return out;
}

// The scores [N, targets] in f64 of the leaves reached, from the weights that the
// "prefix"_* attributes (target_ or class_) give the leaves: per target, summed over the
// trees (AVERAGE: then divided by their number), or their min or max, where a target that no
// reached leaf weighs scores 0, as in ONNX Runtime.
Result<std::string> scores(Expansion& e, const Leaves& leaves, const std::string& prefix,
                           int64_t targets, Aggregate aggregate) {
  Ints tree = e.ints_of(prefix + "_treeids"), node = e.ints_of(prefix + "_nodeids");
  Ints ids = e.ints_of(prefix + "_ids");
  WEFT_ASSIGN_OR_RETURN(std::vector<double> weights, doubles_of(e, prefix + "_weights"));
  WEFT_RETURN_IF_ERROR(same_lengths(ids.size(), {{prefix + "_treeids", tree.size()},
                                                 {prefix + "_nodeids", node.size()},
                                                 {prefix + "_weights", weights.size()}}));
  bool sum = aggregate == Aggregate::kSum || aggregate == Aggregate::kAverage;
  double inf = std::numeric_limits<double>::infinity();
  double none = sum ? 0.0 : aggregate == Aggregate::kMin ? inf : -inf;
  auto count = static_cast<int64_t>(leaves.number.size());
  if (count > kMaxTableSize / targets) {
    return Status::error(fmt::format("{} leaves and {} targets: the weight table would hold more "
                                     "than {} values",
                                     count, targets, kMaxTableSize));
  }
  std::vector<double> table(static_cast<size_t>(count * targets), none);
  for (size_t k = 0; k < ids.size(); ++k) {
    auto leaf = leaves.number.find({tree[k], node[k]});
    if (leaf == leaves.number.end()) {
      return Status::error(
          fmt::format("{}_nodeids[{}]: tree {} has no leaf {}", prefix, k, tree[k], node[k]));
    }
    if (ids[k] < 0 || ids[k] >= targets) {
      return Status::error(
          fmt::format("{}_ids[{}] is {}, outside [0, {})", prefix, k, ids[k], targets));
    }
    double& v = table[static_cast<size_t>(leaf->second * targets + ids[k])];
    v = sum                            ? v + weights[k]
        : aggregate == Aggregate::kMin ? std::min(v, weights[k])
                                       : std::max(v, weights[k]);
  }
  std::string per_tree =
      e.op(Op::kGather, {f64_constant(e, table, {count, targets}), leaves.reached});
  Op reduce = sum ? Op::kReduceSum : aggregate == Aggregate::kMin ? Op::kReduceMin : Op::kReduceMax;
  std::string s = e.reduce(reduce, per_tree, {1}, 0);
  if (aggregate == Aggregate::kAverage)
    s = e.op(Op::kDiv, {s, f64_constant(e, {double(leaves.trees)}, {})});
  if (!sum) {
    if (e.opset() < 11)
      return Status::error(
          "aggregate_function MIN and MAX need ai.onnx opset 11 or newer beside it");
    std::string unreached = e.op(Op::kEqual, {s, f64_constant(e, {none}, {})});
    s = e.op(Op::kWhere, {unreached, f64_constant(e, {0.0}, {}), s});
  }
  return s;
}

std::string add_base(Expansion& e, const std::string& s, const std::vector<double>& base) {
  return e.op(Op::kAdd, {s, f64_constant(e, base, {int64_t(base.size())})});
}

// Column "j" of "s", [N, 1].
std::string column(Expansion& e, const std::string& s, int64_t j) {
  return e.op(Op::kGather, {s, i64_constant(e, {j}, {1})}, {int_attr("axis", 1)});
}

std::string f32_out(Expansion& e, const std::string& s, int out) {
  return e.op(Op::kCast, {s}, {int_attr("to", kFloat)}, e.out(out));
}

// Two classes, as ONNX Runtime's classifier writes them: its cases by the classes that
// class_ids names (one: the "binary case"), the signs of the weights and how many base_values
// there are.
Status binary_classes(Expansion& e, const std::string& s, const std::vector<double>& base,
                      const std::set<int64_t>& scored, const Ints& labels,
                      const std::string& transform) {
  WEFT_ASSIGN_OR_RETURN(std::vector<double> weights, doubles_of(e, "class_weights"));
  bool positive = std::all_of(weights.begin(), weights.end(), [](double w) { return w >= 0; });
  bool one_class = scored.size() == 1, has0 = scored.count(0) > 0, has1 = scored.count(1) > 0;
  std::string s0 = column(e, s, 0), s1 = column(e, s, 1);
  bool two_scores = has1, negated = false;
  if (base.size() == 2) {
    two_scores = true;
    if (has1) { // class 0's sum plus base_values[1], and its negation
      s1 = e.op(Op::kAdd, {s0, f64_constant(e, {base[1]}, {})});
      s0 = e.op(Op::kNeg, {s1});
    } else {
      s0 = e.op(Op::kAdd, {s0, f64_constant(e, {base[0]}, {})});
      s1 = e.op(Op::kAdd, {s1, f64_constant(e, {base[1]}, {})});
    }
  } else if (base.size() == 1) {
    s0 = e.op(Op::kAdd, {s0, f64_constant(e, {base[0]}, {})});
  } else if (base.empty()) {
    negated = true;
  } else {
    return Status::error(fmt::format("{} base_values for two classes", base.size()));
  }
  // The label: of the class-1 score (else class 0's) against 0.5 (all weights positive) or
  // 0; outside the binary case, ONNX Runtime's labels are 1 and 0 whatever the attribute says.
  std::string pos = has1 ? s1 : has0 ? s0 : f64_constant(e, {0.0}, {});
  double threshold = one_class && positive ? 0.5 : 0.0;
  Ints pair = one_class ? Ints{labels[0], labels[1]} : Ints{0, 1};
  std::string above = e.op(Op::kGreater, {pos, f64_constant(e, {threshold}, {})});
  std::string index = e.squeeze(e.op(Op::kCast, {above}, {int_attr("to", kInt64)}), {1});
  e.op(Op::kGather, {i64_constant(e, pair, {2}), index}, {}, e.out(0));
  // The scores: both through the post-transform; else from the one score s0.
  std::string z;
  if (two_scores) {
    z = apply_post_transform(e, transform, e.op(Op::kConcat, {s0, s1}, {int_attr("axis", 1)}));
  } else if (one_class && positive) { // [1 - s, s], whatever the post-transform
    std::string rest = e.op(Op::kSub, {f64_constant(e, {1.0}, {}), s0});
    z = e.op(Op::kConcat, {rest, s0}, {int_attr("axis", 1)});
  } else if (one_class || negated) { // [-s, s], or both through the logistic
    std::string minus = e.op(Op::kNeg, {s0});
    z = transform == "LOGISTIC"
            ? e.op(Op::kConcat, {e.op(Op::kSigmoid, {minus}), e.op(Op::kSigmoid, {s0})},
                   {int_attr("axis", 1)})
            : e.op(Op::kConcat, {minus, s0}, {int_attr("axis", 1)});
  } else {
    return Status::error("two classes, class 1 unscored and one base value: ONNX Runtime writes "
                         "one score of two there; not supported");
  }
  f32_out(e, z, 1);
  return Status();
}

} // namespace

Status expand_tree_ensemble_regressor(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f64_rows(e));
  WEFT_ASSIGN_OR_RETURN(std::string transform, post_transform_of(e));
  std::string name = e.string_attr_or("aggregate_function", "SUM");
  auto known = std::find(kAggregates.begin(), kAggregates.end(), name);
  if (known == kAggregates.end()) {
    return Status::error(fmt::format("aggregate_function is '{}' (expected {})", name,
                                     fmt::join(kAggregates, ", ")));
  }
  auto aggregate = static_cast<Aggregate>(known - kAggregates.begin());
  int64_t targets = e.int_attr_or("n_targets", 1);
  if (targets < 1 || targets > kMaxTreeTargets) {
    return Status::error(fmt::format("n_targets is {}, outside [1, {}]", targets, kMaxTreeTargets));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<double> base, doubles_of(e, "base_values"));
  WEFT_ASSIGN_OR_RETURN(Leaves leaves, walk_trees(e, x));
  WEFT_ASSIGN_OR_RETURN(std::string s, scores(e, leaves, "target", targets, aggregate));
  if (base.size() == static_cast<size_t>(targets)) s = add_base(e, s, base);
  // ONNX Runtime applies no post-transform but PROBIT to a single target.
  if (targets > 1) s = apply_post_transform(e, transform, s);
  // f32 as the spec says, or f64 where the model declares it (skl2onnx does for an f64 X,
  // and onnx's reference computes it so).
  if (e.elem_type(e.out(0)) == kDouble)
    e.op(Op::kIdentity, {s}, {}, e.out(0));
  else
    f32_out(e, s, 0);
  return Status();
}

Status expand_tree_ensemble_classifier(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f64_rows(e));
  WEFT_ASSIGN_OR_RETURN(std::string transform, post_transform_of(e));
  if (find_attr(e.node(), "classlabels_strings")) return Status::error(kStringLabelsRead);
  Ints labels = e.ints_of("classlabels_int64s");
  auto classes = static_cast<int64_t>(labels.size());
  if (classes < 2)
    return Status::error(
        fmt::format("{} class labels (classlabels_int64s); expected 2 or more", classes));
  WEFT_ASSIGN_OR_RETURN(std::vector<double> base, doubles_of(e, "base_values"));
  WEFT_ASSIGN_OR_RETURN(Leaves leaves, walk_trees(e, x));
  WEFT_ASSIGN_OR_RETURN(std::string s, scores(e, leaves, "class", classes, Aggregate::kSum));
  Ints ids = e.ints_of("class_ids");
  std::set<int64_t> scored(ids.begin(), ids.end());
  if (classes == 2) return binary_classes(e, s, base, scored, labels, transform);
  if (base.size() > labels.size())
    return Status::error(fmt::format("{} base_values for {} classes", base.size(), classes));
  if (!base.empty()) {
    for (size_t k = 0; k < base.size(); ++k)
      scored.insert(static_cast<int64_t>(k));
    base.resize(labels.size(), 0.0);
    s = add_base(e, s, base);
  }
  f32_out(e, apply_post_transform(e, transform, s), 1);
  // The label of the highest score among the classes scored (-inf for the others).
  std::string ranked = s;
  if (static_cast<int64_t>(scored.size()) < classes) {
    std::vector<double> unscored(static_cast<size_t>(classes));
    for (int64_t k = 0; k < classes; ++k)
      unscored[static_cast<size_t>(k)] =
          scored.count(k) ? 0.0 : -std::numeric_limits<double>::infinity();
    ranked = add_base(e, s, unscored);
  }
  std::string best = e.op(Op::kArgMax, {ranked}, {int_attr("axis", 1), int_attr("keepdims", 0)});
  e.op(Op::kGather, {i64_constant(e, labels, {classes}), best}, {}, e.out(0));
  return Status();
}

} // namespace weft::contrib
