#include "weft/graph/passes/decompose_ml.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "weft/graph/ml_ops.h"
#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/decompose_builders.h"

namespace weft {

namespace {

using namespace decompose_builders; // NOLINT(google-build-using-namespace)

Value* i64_constant(NodeBuilder& b, const std::string& what, const Ints& values,
                    std::vector<int64_t> dims) {
  return b.constant(what, Tensor::from_vector<int64_t>(DType::kI64, std::move(dims), values));
}

// Binarizer (ai.onnx.ml): x > threshold, as x's type.
Status binarizer(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* x = node.inputs[0];
  double threshold = node.attrs_as<BinarizerAttrs>().threshold;
  Value* above = b.op(Op::kGreater, {x, scalar(b, "threshold", x->type.dtype, threshold)});
  b.op(Op::kCast, {above}, CastAttrs{x->type.dtype}, y);
  return b.status();
}

// ArrayFeatureExtractor (ai.onnx.ml): a Gather along the last axis with the flattened
// indices; a vector X gives one row.
Status array_feature_extractor(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* x = node.inputs[0];
  Value* indices = constant_shape(b, node.inputs[1], {-1}, "flat");
  Value* picked = b.op(Op::kGather, {x, indices}, AxisAttrs{-1});
  if (x->type.shape->size() == 1) picked = constant_shape(b, picked, {1, -1}, "one_row");
  define(b, picked, y);
  return b.status();
}

// ---- TfIdfVectorizer ----------------------------------------------------------------------

// The pool's n-grams of one length that are counted, each with its output column.
struct TfIdfGrams {
  int64_t n = 0;
  std::vector<Ints> grams;
  Ints columns;
};

// The counted lengths (min_gram_length to max_gram_length) of the pool. An n-gram listed twice
// counts once, into the column of its last listing, as in the reference's trie.
std::vector<TfIdfGrams> counted_grams(const TfIdfAttrs& a) {
  std::vector<TfIdfGrams> out;
  for (const TfIdfPoolLevel& level : tf_idf_pool_levels(a)) {
    if (level.n < a.min_gram_length || level.n > a.max_gram_length || level.count == 0) continue;
    std::map<Ints, int64_t> column_of;
    for (int64_t k = 0; k < level.count; ++k) {
      auto begin = a.pool_int64s.begin() + level.start + k * level.n;
      column_of[Ints(begin, begin + level.n)] =
          a.ngram_indexes[static_cast<size_t>(level.first_id + k)];
    }
    TfIdfGrams g{level.n, {}, {}};
    for (auto& [gram, column] : column_of) {
      g.grams.push_back(gram);
      g.columns.push_back(column);
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The start of every window of "n" items in a row of "length": each skip distance d from 1
// to max_skip_count + 1 (only 1 for unigrams, which skips do not change), each start s with
// s + d (n - 1) inside the row. Item k of the window is at s + d k.
std::vector<std::pair<int64_t, int64_t>> windows(const TfIdfAttrs& a, int64_t n, int64_t length) {
  std::vector<std::pair<int64_t, int64_t>> out; // (start, distance)
  int64_t distances = n == 1 ? 1 : a.max_skip_count + 1;
  for (int64_t d = 1; d <= distances && d * (n - 1) < length; ++d) {
    for (int64_t s = 0; s + d * (n - 1) < length; ++s)
      out.emplace_back(s, d);
  }
  return out;
}

// The counts [rows, G] of the n-grams "g" in "rows" ([rows, length], i64): for each item k,
// the items at the windows' k-th positions compared with every n-gram's k-th item.
Value* count_grams(NodeBuilder& b, const TfIdfAttrs& a, const TfIdfGrams& g, Value* rows,
                   int64_t length) {
  std::vector<std::pair<int64_t, int64_t>> starts = windows(a, g.n, length);
  if (starts.empty()) return nullptr;
  auto count = static_cast<int64_t>(starts.size());
  auto grams = static_cast<int64_t>(g.grams.size());
  Value* match = nullptr;
  for (int64_t k = 0; k < g.n; ++k) {
    Ints positions, items;
    for (auto [s, d] : starts)
      positions.push_back(s + d * k);
    for (const Ints& gram : g.grams)
      items.push_back(gram[static_cast<size_t>(k)]);
    Value* at = b.op(Op::kGather, {rows, i64_constant(b, "positions", positions, {count})},
                     AxisAttrs{1}); // [rows, windows]
    at = b.op(Op::kUnsqueeze, {at}, AxesAttrs{Ints{2}});
    Value* same = b.op(Op::kEqual, {at, i64_constant(b, "grams", items, {grams})});
    match = match ? b.op(Op::kAnd, {match, same}) : same; // [rows, windows, grams]
  }
  return b.op(Op::kReduceSum, {cast_to(b, match, DType::kF32)}, ReduceAttrs{Ints{1}, false, false});
}

// The n-grams' counts [rows, G] gathered into the output columns [rows, columns]; a column
// that several n-grams share sums them, a column none has is 0.
Value* to_columns(NodeBuilder& b, Value* counts, const Ints& column_of, int64_t columns,
                  int64_t rows) {
  std::vector<Ints> sources(static_cast<size_t>(columns));
  for (size_t i = 0; i < column_of.size(); ++i)
    sources[static_cast<size_t>(column_of[i])].push_back(static_cast<int64_t>(i));
  size_t widest = 0;
  for (const Ints& s : sources)
    widest = std::max(widest, s.size());
  bool gaps =
      std::any_of(sources.begin(), sources.end(), [&](const Ints& s) { return s.size() < widest; });
  auto zero = static_cast<int64_t>(column_of.size()); // the index of an appended 0 count
  if (gaps) counts = b.op(Op::kConcat, {counts, b.fill(DType::kF32, {rows, 1}, 0)}, AxisAttrs{1});
  Ints index;
  for (Ints& s : sources) {
    s.resize(widest, zero);
    index.insert(index.end(), s.begin(), s.end());
  }
  auto w = static_cast<int64_t>(widest);
  if (widest == 1)
    return b.op(Op::kGather, {counts, i64_constant(b, "columns", index, {columns})}, AxisAttrs{1});
  Value* parts =
      b.op(Op::kGather, {counts, i64_constant(b, "columns", index, {columns, w})}, AxisAttrs{1});
  return b.op(Op::kReduceSum, {parts}, ReduceAttrs{Ints{2}, false, false});
}

// TfIdfVectorizer, as the reference implementation counts: every window of every counted
// length and skip, unigrams once.
Status tf_idf(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  const auto& a = node.attrs_as<TfIdfAttrs>();
  Value* x = node.inputs[0];
  std::vector<int64_t> dims = shape_static_dims(*x->type.shape);
  std::vector<int64_t> out_dims = shape_static_dims(*y->type.shape);
  int64_t rows = dims.size() == 2 ? dims[0] : 1;
  int64_t length = dims.back();
  int64_t columns = tf_idf_output_size(a);
  Value* items = constant_shape(b, cast_to(b, x, DType::kI64), {rows, length}, "rows");
  std::vector<Value*> counts;
  Ints column_of;
  for (const TfIdfGrams& g : counted_grams(a)) {
    if (Value* c = count_grams(b, a, g, items, length)) {
      counts.push_back(c);
      column_of.insert(column_of.end(), g.columns.begin(), g.columns.end());
    }
  }
  if (counts.empty() || rows == 0) { // nothing can match
    define(b, b.fill(DType::kF32, out_dims, 0), y);
    return b.status();
  }
  Value* all = counts.size() == 1 ? counts[0] : b.op(Op::kConcat, counts, AxisAttrs{1});
  Value* v = to_columns(b, all, column_of, columns, rows);
  Value* zero = scalar(b, "zero", DType::kF32, 0);
  Value* weights =
      a.weights.empty()
          ? nullptr
          : b.constant("weights", Tensor::from_vector<float>(
                                      DType::kF32, {columns},
                                      Floats(a.weights.begin(), a.weights.begin() + columns)));
  if (a.mode == TfIdfMode::kIdf) { // 1 (or the weight) where the count is positive
    Value* seen = b.op(Op::kGreater, {v, zero});
    v = weights ? b.op(Op::kWhere, {seen, weights, zero}) : cast_to(b, seen, DType::kF32);
  } else if (a.mode == TfIdfMode::kTfIdf && weights) {
    v = b.op(Op::kMul, {v, weights});
  }
  if (dims.size() == 1) v = constant_shape(b, v, {columns}, "vector");
  define(b, v, y);
  return b.status();
}

// ---- TreeEnsemble -------------------------------------------------------------------------

// The number of interior nodes on the longest path from a root to a leaf; an error for a
// cycle or a tree deeper than kMaxTreeDepth. Iterative, for trees that are long chains.
Result<int64_t> tree_depth(const TreeEnsembleAttrs& a) {
  constexpr int64_t kUnseen = -1, kOnPath = -2;
  std::vector<int64_t> depth(a.nodes_modes.size(), kUnseen);
  auto children = [&](int64_t i) {
    Ints out;
    auto u = static_cast<size_t>(i);
    if (!a.nodes_trueleafs[u]) out.push_back(a.nodes_truenodeids[u]);
    if (!a.nodes_falseleafs[u]) out.push_back(a.nodes_falsenodeids[u]);
    return out;
  };
  int64_t deepest = 0;
  for (int64_t root : a.tree_roots) {
    std::vector<std::pair<int64_t, bool>> stack = {{root, false}}; // (node, expanded)
    while (!stack.empty()) {
      auto [i, expanded] = stack.back();
      auto u = static_cast<size_t>(i);
      if (expanded) {
        stack.pop_back();
        depth[u] = 1;
        for (int64_t c : children(i))
          depth[u] = std::max(depth[u], depth[static_cast<size_t>(c)] + 1);
        continue;
      }
      if (depth[u] >= 0) {
        stack.pop_back();
        continue;
      }
      depth[u] = kOnPath;
      stack.back().second = true;
      for (int64_t c : children(i)) {
        if (depth[static_cast<size_t>(c)] == kOnPath)
          return Status::error(
              fmt::format("the tree of root {} has a cycle through node {}", root, c));
        if (depth[static_cast<size_t>(c)] == kUnseen) stack.emplace_back(c, false);
      }
    }
    deepest = std::max(deepest, depth[static_cast<size_t>(root)]);
    if (deepest > kMaxTreeDepth) {
      return Status::error(fmt::format("the tree of root {} is {} nodes deep; Weft unrolls at "
                                       "most {}",
                                       root, deepest, kMaxTreeDepth));
    }
  }
  return deepest;
}

// The ensemble as tables over positions: the interior nodes 0..M-1, then the leaves. A leaf
// leads to itself, so that a walk that reached it stays there. The walk's fields of a
// position lie side by side in one f64 row (f64 holds every split of X's type, and every
// feature and position below 2^53, exactly), so that a step reads one cache line where a
// table per field took a miss each (bench/tabular_bench.py, 1000 rows: 300 trees of depth 6
// 4.0 -> 1.7 ms, 100 grown without a depth limit 10.3 -> 8.0 ms).
struct TreeTables {
  // The fields of a row of "nodes"; kMode only where there are several modes. A node whose
  // missing values go to its true branch holds -(feature + 1) as its feature.
  enum Field : int64_t { kFeature, kSplit, kTrue, kFalse, kMode };
  int64_t size = 0;
  int64_t width = 4; // fields a row, 4 or 8
  Tensor nodes;      // [size * width] f64
  Tensor weight, target;
  Tensor members; // [size, widest set]: each MEMBER node's set, NaN elsewhere
  std::set<TreeNodeMode> modes;
  bool tracks_missing = false;
};

TreeTables tree_tables(const TreeEnsembleAttrs& a, DType t) {
  auto m = static_cast<int64_t>(a.nodes_modes.size());
  auto l = static_cast<int64_t>(a.leaf_targetids.size());
  TreeTables tt;
  tt.size = m + l;
  for (size_t i = 0; i < a.nodes_modes.size(); ++i) {
    tt.modes.insert(static_cast<TreeNodeMode>(a.nodes_modes[i]));
    if (!a.nodes_missing_value_tracks_true.empty())
      tt.tracks_missing |= a.nodes_missing_value_tracks_true[i] != 0;
  }
  if (tt.modes.size() > 1) tt.width = 8;
  std::vector<double> nodes(static_cast<size_t>(tt.size * tt.width));
  tt.weight = Tensor(t, {tt.size});
  tt.target = Tensor(DType::kI64, {tt.size});
  double trees = a.aggregate == TreeAggregate::kAverage ? double(a.tree_roots.size()) : 1.0;
  for (int64_t i = 0; i < tt.size; ++i) {
    auto u = static_cast<size_t>(i);
    double* row = &nodes[static_cast<size_t>(i * tt.width)];
    if (i < m) {
      bool tracks =
          !a.nodes_missing_value_tracks_true.empty() && a.nodes_missing_value_tracks_true[u] != 0;
      row[TreeTables::kFeature] =
          double(tracks ? -a.nodes_featureids[u] - 1 : a.nodes_featureids[u]);
      row[TreeTables::kSplit] = a.nodes_splits->get_double(i);
      row[TreeTables::kTrue] = double(a.nodes_truenodeids[u] + (a.nodes_trueleafs[u] ? m : 0));
      row[TreeTables::kFalse] = double(a.nodes_falsenodeids[u] + (a.nodes_falseleafs[u] ? m : 0));
      if (tt.width > TreeTables::kMode) row[TreeTables::kMode] = double(a.nodes_modes[u]);
    } else {
      row[TreeTables::kTrue] = row[TreeTables::kFalse] = double(i);
      // AVERAGE divides each leaf's weight by the number of trees, as the reference does.
      tt.weight.set_double(i, a.leaf_weights->get_double(i - m) / trees);
      tt.target.set_int64(i, a.leaf_targetids[static_cast<size_t>(i - m)]);
    }
  }
  tt.nodes = Tensor::from_vector(DType::kF64, {tt.size * tt.width}, nodes);
  // The sets, in X's type; a member that type cannot hold exactly never matches, and is left
  // out.
  std::vector<std::vector<double>> sets(static_cast<size_t>(tt.size));
  size_t widest = 0;
  if (a.membership_values) {
    Tensor probe(t, {1});
    int64_t next = 0;
    for (int64_t i = 0; i < m; ++i) {
      if (a.nodes_modes[static_cast<size_t>(i)] != static_cast<int64_t>(TreeNodeMode::kMember))
        continue;
      std::vector<double>& set = sets[static_cast<size_t>(i)];
      for (double v; !std::isnan(v = a.membership_values->get_double(next)); ++next) {
        probe.set_double(0, v);
        if (probe.get_double(0) == v) set.push_back(v);
      }
      ++next; // the NaN that ends the set
      widest = std::max(widest, set.size());
    }
  }
  tt.members = Tensor(t, {tt.size, static_cast<int64_t>(std::max<size_t>(widest, 1))});
  for (int64_t i = 0; i < tt.members.num_elements(); ++i)
    tt.members.set_double(i, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < sets.size(); ++i) {
    for (size_t j = 0; j < sets[i].size(); ++j)
      tt.members.set_double(static_cast<int64_t>(i * std::max<size_t>(widest, 1) + j), sets[i][j]);
  }
  return tt;
}

// One step of every walk: the next positions [N, T] from the current ones. X is compared in
// f64, as the splits are held; for X of f16, f32 or f64 that compares as X's type would.
class TreeWalk {
public:
  TreeWalk(NodeBuilder& b, TreeTables& tt, Value* x) : b_(b), tt_(tt) {
    std::vector<int64_t> d = shape_static_dims(*x->type.shape);
    Ints bases;
    for (int64_t n = 0; n < d[0]; ++n)
      bases.push_back(n * d[1]);
    flat_ = constant_shape(b, cast_to(b, x, DType::kF64), {d[0] * d[1]}, "flat");
    row_base_ = i64_constant(b, "row_base", bases, {d[0], 1});
    nodes_ = b.constant("nodes", std::move(tt.nodes));
    width_ = number(DType::kI64, double(tt.width));
  }

  Value* step(Value* at) {
    Value* row = b_.op(Op::kMul, {at, width_});
    auto field = [&](TreeTables::Field f) {
      Value* where = f == 0 ? row : b_.op(Op::kAdd, {row, number(DType::kI64, double(f))});
      return b_.op(Op::kGather, {nodes_, where}, AxisAttrs{0});
    };
    auto position = [&](Value* v) { return cast_to(b_, v, DType::kI64); };
    Value* feature = position(field(TreeTables::kFeature));
    Value* tracks = nullptr; // does the node send missing values to its true branch?
    if (tt_.tracks_missing) {
      tracks = b_.op(Op::kLess, {feature, number(DType::kI64, 0)});
      Value* flipped = b_.op(Op::kSub, {number(DType::kI64, -1), feature});
      feature = b_.op(Op::kWhere, {tracks, flipped, feature});
    }
    Value* xv = b_.op(Op::kGather, {flat_, b_.op(Op::kAdd, {row_base_, feature})}, AxisAttrs{0});
    Value* go_true = condition(at, xv, field);
    if (tracks) {
      Value* missing = b_.op(Op::kAnd, {b_.op(Op::kIsNaN, {xv}), tracks});
      go_true = b_.op(Op::kOr, {go_true, missing});
    }
    return position(
        b_.op(Op::kWhere, {go_true, field(TreeTables::kTrue), field(TreeTables::kFalse)}));
  }

private:
  // Does the node at "at" send "xv" to its true branch?
  template <typename Field> Value* condition(Value* at, Value* xv, Field field) {
    Value* split = nullptr;
    auto by_mode = [&](TreeNodeMode mode) -> Value* {
      if (mode == TreeNodeMode::kMember) return member(at, xv);
      if (!split) split = field(TreeTables::kSplit);
      auto op = [&](Op name) { return b_.op(name, {xv, split}); };
      switch (mode) {
        case TreeNodeMode::kLeq: return op(Op::kLessOrEqual);
        case TreeNodeMode::kLt: return op(Op::kLess);
        case TreeNodeMode::kGte: return op(Op::kGreaterOrEqual);
        case TreeNodeMode::kGt: return op(Op::kGreater);
        case TreeNodeMode::kEq: return op(Op::kEqual);
        default: return b_.op(Op::kNot, {op(Op::kEqual)}); // kNeq: true for NaN too
      }
    };
    Value* mode = tt_.modes.size() > 1 ? field(TreeTables::kMode) : nullptr;
    Value* cond = nullptr;
    for (TreeNodeMode m : tt_.modes) {
      Value* term = by_mode(m);
      if (mode) {
        Value* code = number(DType::kF64, double(static_cast<int64_t>(m)));
        term = b_.op(Op::kAnd, {term, b_.op(Op::kEqual, {mode, code})});
      }
      cond = cond ? b_.op(Op::kOr, {cond, term}) : term;
    }
    return cond;
  }

  // Is "xv" in the set of the node at "at"? (NaN pads the sets and matches nothing.)
  Value* member(Value* at, Value* xv) {
    if (!members_) members_ = b_.constant("members", std::move(tt_.members));
    Value* set = b_.op(Op::kGather, {members_, at}, AxisAttrs{0}); // [N, T, widest]
    Value* x = b_.op(Op::kUnsqueeze, {cast_to(b_, xv, set->type.dtype)}, AxesAttrs{Ints{-1}});
    Value* hits = b_.op(Op::kReduceSum, {cast_to(b_, b_.op(Op::kEqual, {x, set}), DType::kF32)},
                        ReduceAttrs{Ints{-1}, false, false});
    return b_.op(Op::kGreater, {hits, number(DType::kF32, 0)});
  }

  // A scalar constant, made once for every step.
  Value* number(DType t, double v) {
    Value*& c = numbers_[{t, v}];
    if (!c) c = scalar(b_, "number", t, v);
    return c;
  }

  NodeBuilder& b_;
  TreeTables& tt_;
  Value* flat_;
  Value* row_base_;
  Value* nodes_;
  Value* width_;
  std::map<std::pair<DType, double>, Value*> numbers_;
  Value* members_ = nullptr;
};

// The leaves' weights [N, T] combined per target into [N, n_targets]: summed (AVERAGE's
// already divided), or the min or max, which a target no tree reaches keeps at the largest
// or lowest finite value of "t", as the reference leaves it.
Value* aggregate(NodeBuilder& b, const TreeEnsembleAttrs& a, Value* weights, Value* targets,
                 DType t) {
  bool sum = a.aggregate == TreeAggregate::kSum || a.aggregate == TreeAggregate::kAverage;
  Op reduce = sum                                  ? Op::kReduceSum
              : a.aggregate == TreeAggregate::kMin ? Op::kReduceMin
                                                   : Op::kReduceMax;
  if (a.n_targets == 1) return b.op(reduce, {weights}, ReduceAttrs{Ints{1}, true, false});
  Ints ids(static_cast<size_t>(a.n_targets));
  for (int64_t j = 0; j < a.n_targets; ++j)
    ids[static_cast<size_t>(j)] = j;
  Value* ours = b.op(Op::kEqual, {b.op(Op::kUnsqueeze, {targets}, AxesAttrs{Ints{2}}),
                                  i64_constant(b, "targets", ids, {a.n_targets})}); // [N, T, J]
  double largest = t == DType::kF16   ? 65504.0
                   : t == DType::kF32 ? double(std::numeric_limits<float>::max())
                                      : std::numeric_limits<double>::max();
  double none = sum ? 0.0 : a.aggregate == TreeAggregate::kMin ? largest : -largest;
  Tensor bound(t, {});
  bound.set_double(0, none);
  Value* filler = b.constant("none", std::move(bound));
  Value* spread =
      b.op(Op::kWhere, {ours, b.op(Op::kUnsqueeze, {weights}, AxesAttrs{Ints{2}}), filler});
  return b.op(reduce, {spread}, ReduceAttrs{Ints{1}, false, false});
}

// When the leaves of each tree all name one target and no two trees name the same, and every
// target is named: the tree of each target. The aggregate is then that tree's weight.
std::optional<Ints> tree_per_target(const TreeEnsembleAttrs& a) {
  auto m = static_cast<int64_t>(a.nodes_modes.size());
  Ints tree_of(static_cast<size_t>(a.n_targets), -1);
  for (size_t t = 0; t < a.tree_roots.size(); ++t) {
    std::optional<int64_t> target;
    std::vector<bool> seen(static_cast<size_t>(m));
    std::vector<int64_t> stack = {a.tree_roots[t]};
    while (!stack.empty()) {
      auto i = static_cast<size_t>(stack.back());
      stack.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      for (bool truth : {true, false}) {
        int64_t next = (truth ? a.nodes_truenodeids : a.nodes_falsenodeids)[i];
        if (!(truth ? a.nodes_trueleafs : a.nodes_falseleafs)[i]) {
          stack.push_back(next);
          continue;
        }
        int64_t leaf_target = a.leaf_targetids[static_cast<size_t>(next)];
        if (target && *target != leaf_target) return std::nullopt;
        target = leaf_target;
      }
    }
    if (!target) return std::nullopt;
    int64_t& tree = tree_of[static_cast<size_t>(*target)];
    if (tree >= 0) return std::nullopt;
    tree = static_cast<int64_t>(t);
  }
  if (std::find(tree_of.begin(), tree_of.end(), -1) != tree_of.end()) return std::nullopt;
  return tree_of;
}

Status tree_ensemble(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node, std::max(node.opset, kTreeWalkOpset));
  const auto& a = node.attrs_as<TreeEnsembleAttrs>();
  Value* x = node.inputs[0];
  DType t = x->type.dtype;
  WEFT_ASSIGN_OR_RETURN(int64_t depth, tree_depth(a));
  TreeTables tables = tree_tables(a, t);
  Value* weight = b.constant("leaf_weight", std::move(tables.weight));
  Value* target = b.constant("leaf_target", std::move(tables.target));
  TreeWalk walk(b, tables, x);
  auto trees = static_cast<int64_t>(a.tree_roots.size());
  Value* at = i64_constant(b, "roots", a.tree_roots, {trees});
  for (int64_t level = 0; level < depth; ++level)
    at = walk.step(at); // [N, T] from the first step on
  Value* weights = b.op(Op::kGather, {weight, at}, AxisAttrs{0});
  std::optional<Ints> tree_of = a.n_targets > 1 ? tree_per_target(a) : std::nullopt;
  if (tree_of) { // one tree per target: its weight, in the targets' order
    Ints order(tree_of->size());
    std::iota(order.begin(), order.end(), 0);
    if (*tree_of != order)
      weights = b.op(Op::kGather, {weights, i64_constant(b, "tree_of", *tree_of, {a.n_targets})},
                     AxisAttrs{1});
    define(b, weights, y);
    return b.status();
  }
  Value* targets = b.op(Op::kGather, {target, at}, AxisAttrs{0});
  define(b, aggregate(b, a, weights, targets, t), y);
  return b.status();
}

bool static_input(const Node& n) {
  const Value* x = n.inputs[0];
  return x->type.shape && shape_is_static(*x->type.shape);
}

} // namespace

bool is_ml_op(const Node& node) {
  Op op = node.op_type.id();
  return op == Op::kBinarizer || op == Op::kArrayFeatureExtractor || op == Op::kTreeEnsemble ||
         op == Op::kTfIdfVectorizer;
}

bool ml_op_ready(const Node& node) {
  Op op = node.op_type.id();
  if (op == Op::kBinarizer) return true;
  if (op == Op::kArrayFeatureExtractor)
    return node.inputs[0]->type.shape.has_value() && node.inputs[1]->type.shape.has_value();
  return static_input(node);
}

Status decompose_ml_op(Graph& graph, Node& node, Value* y) {
  Op op = node.op_type.id();
  if (op == Op::kBinarizer) return binarizer(graph, node, y);
  if (op == Op::kArrayFeatureExtractor) return array_feature_extractor(graph, node, y);
  if (op == Op::kTreeEnsemble) return tree_ensemble(graph, node, y);
  return tf_idf(graph, node, y);
}

} // namespace weft
