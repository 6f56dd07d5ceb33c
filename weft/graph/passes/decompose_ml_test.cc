#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/decompose.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/verify_graph.h"
#include "weft/onnx/import_model.h"

namespace weft {
namespace {

using testing::count_ops;
using testing::graph_from_text;
using testing::import_text;
using testing::print_body;

Graph decomposed_graph(const std::string& model) {
  Graph g = graph_from_text(model);
  Status s = decompose(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  Status v = verify_graph(g, "decompose");
  EXPECT_TRUE(v.ok()) << v.to_string();
  return g;
}

// "text" imported with every f32 999 of its tensor attributes made NaN, which the text
// syntax of libonnx 1.12 cannot spell.
Graph graph_with_nans(const std::string& text) {
  onnx::ModelProto model;
  onnx::OnnxParser parser(text.c_str());
  EXPECT_TRUE(parser.Parse(model).IsOK());
  for (onnx::NodeProto& node : *model.mutable_graph()->mutable_node()) {
    for (onnx::AttributeProto& attr : *node.mutable_attribute()) {
      for (float& v : *attr.mutable_t()->mutable_float_data()) {
        if (v == 999) v = NAN;
      }
    }
  }
  Result<Graph> g = import_model_bytes(model.SerializeAsString(), "test.onnx", ".");
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(g).value() : Graph();
}

// The values of y, a constant once X is: after the decomposition, folding computes y on the
// host.
std::vector<double> folded_y(const std::string& model) {
  Graph g = graph_with_nans(model);
  Status d = decompose(g);
  EXPECT_TRUE(d.ok()) << d.to_string();
  Status s = fold_constants(g);
  EXPECT_TRUE(s.ok()) << s.to_string();
  const Value* y = g.find_value("y");
  EXPECT_TRUE(y && y->is_constant()) << print_body(g);
  std::vector<double> values;
  for (int64_t i = 0; y && y->is_constant() && i < y->constant->num_elements(); ++i)
    values.push_back(y->constant->get_double(i));
  return values;
}

// min 1, max 2, one skip. In [1, 2, 1, 2, 3]: the unigram 1 twice and 3 once (each counted
// once, not once per skip); the bigram (1, 2) twice without a skip; (1, 3) once with one
// (x[2], x[4]). Column 3 has no n-gram.
TEST(DecomposeMl, TfIdfCountsEverySkipAndUnigramsOnce) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 9]>
    g () => (float[5] y) {
      x = Constant <value = int32[5] {1, 2, 1, 2, 3}> ()
      y = TfIdfVectorizer <mode = "TF", min_gram_length = 1, max_gram_length = 2,
                           max_skip_count = 1, ngram_counts = [0, 2],
                           ngram_indexes = [0, 1, 2, 4], pool_int64s = [1, 3, 1, 2, 1, 3]> (x)
    })");
  EXPECT_EQ(y, (std::vector<double>{2, 1, 2, 0, 1}));
}

// Rows of a batch; two unigrams share column 0 (their counts add), and TFIDF scales each
// column by its weight.
TEST(DecomposeMl, TfIdfWeightsSharedColumnsPerRow) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g () => (float[2, 2] y) {
      x = Constant <value = int64[2, 3] {5, 6, 6, 7, 7, 1}> ()
      y = TfIdfVectorizer <mode = "TFIDF", min_gram_length = 1, max_gram_length = 1,
                           max_skip_count = 3, ngram_counts = [0], ngram_indexes = [0, 0, 1],
                           pool_int64s = [5, 6, 7], weights = [0.5, 2.0]> (x)
    })");
  EXPECT_EQ(y, (std::vector<double>{1.5, 0, 0, 4}));
}

// No trigram fits in a row of two, whatever the skips: zeros, and no comparison at all.
TEST(DecomposeMl, TfIdfWithNothingToCountIsZeros) {
  Graph g = decomposed_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[3, 2] x) => (float[3, 4] y) {
      y = TfIdfVectorizer <mode = "IDF", min_gram_length = 3, max_gram_length = 3,
                           max_skip_count = 9, ngram_counts = [0, 0, 0],
                           ngram_indexes = [3], pool_int64s = [1, 2, 3]> (x)
    })");
  std::string body = print_body(g);
  EXPECT_EQ(count_ops(body, "Equal"), 0) << body;
  EXPECT_NE(body.find("%y: f32[3,4] = Identity("), std::string::npos) << body;
}

TEST(DecomposeMl, TfIdfRefusesStringPools) {
  Result<Graph> g = import_text(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[4] x) => (float[1] y) {
      y = TfIdfVectorizer <mode = "TF", min_gram_length = 1, max_gram_length = 1,
                           max_skip_count = 0, ngram_counts = [0], ngram_indexes = [0],
                           pool_strings = ["a"]> (x)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("(TfIdfVectorizer, opset 13): TfIdfVectorizer with "
                                      "pool_strings is not supported: strings are not supported"),
            std::string::npos)
      << g.status().message();
}

// Seven stumps, one per node mode, each on x with split 2 (the member set {1, 5}); tree i puts
// 1 on target i when its test holds. Only the LT node sends NaN to its true branch (999
// stands for NaN).
TEST(DecomposeMl, TreeEnsembleTakesEveryNodeMode) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g () => (float[5, 7] y) {
      x = Constant <value = float[5, 1] {1, 2, 3, 999, 5}> ()
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 7, tree_roots = [0, 1, 2, 3, 4, 5, 6],
          nodes_modes = uint8[7] {0, 1, 2, 3, 4, 5, 6},
          nodes_featureids = [0, 0, 0, 0, 0, 0, 0],
          nodes_splits = float[7] {2, 2, 2, 2, 2, 2, 999},
          nodes_truenodeids = [0, 2, 4, 6, 8, 10, 12], nodes_trueleafs = [1, 1, 1, 1, 1, 1, 1],
          nodes_falsenodeids = [1, 3, 5, 7, 9, 11, 13], nodes_falseleafs = [1, 1, 1, 1, 1, 1, 1],
          nodes_missing_value_tracks_true = [0, 1, 0, 0, 0, 0, 0],
          membership_values = float[3] {1, 5, 999},
          leaf_targetids = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6],
          leaf_weights = float[14] {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}> (x)
    })");
  // LEQ LT GTE GT EQ NEQ MEMBER
  EXPECT_EQ(y, (std::vector<double>{1, 1, 0, 0, 0, 1, 1,    // x = 1
                                    1, 0, 1, 0, 1, 0, 0,    // x = 2
                                    0, 0, 1, 1, 0, 1, 0,    // x = 3
                                    0, 1, 0, 0, 0, 1, 0,    // x = NaN
                                    0, 0, 1, 1, 0, 1, 1})); // x = 5
}

// Trees of depths 3 and 1, averaged. Tree A: x0 <= 0.5 ? (x1 < 0 ? 2 : (x1 >= 10 ? 4 : 8)) : 1;
// tree B: x0 > 0 ? 16 : 32. A walk that reached its leaf stays there for the later steps.
TEST(DecomposeMl, TreeEnsembleWalksTreesOfDifferentDepths) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g () => (double[3, 1] y) {
      x = Constant <value = double[3, 2] {0, -1, 0, 5, 1, 20}> ()
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 1, aggregate_function = 0, tree_roots = [0, 3],
          nodes_modes = uint8[4] {0, 1, 2, 3}, nodes_featureids = [0, 1, 1, 0],
          nodes_splits = double[4] {0.5, 0, 10, 0},
          nodes_truenodeids = [1, 1, 2, 4], nodes_trueleafs = [0, 1, 1, 1],
          nodes_falsenodeids = [0, 2, 3, 5], nodes_falseleafs = [1, 0, 1, 1],
          leaf_targetids = [0, 0, 0, 0, 0, 0],
          leaf_weights = double[6] {1, 2, 4, 8, 16, 32}> (x)
    })");
  EXPECT_EQ(y, (std::vector<double>{17, 20, 8.5}));
}

// MAX over two targets: target 1 is reached by no tree, and keeps the lowest f32.
TEST(DecomposeMl, TreeEnsembleMaxLeavesUnreachedTargetsAtTheLowestValue) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g () => (float[2, 2] y) {
      x = Constant <value = float[2, 1] {0, 1}> ()
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 2, aggregate_function = 3, tree_roots = [0, 1],
          nodes_modes = uint8[2] {0, 0}, nodes_featureids = [0, 0],
          nodes_splits = float[2] {0.5, 2},
          nodes_truenodeids = [0, 2], nodes_trueleafs = [1, 1],
          nodes_falsenodeids = [1, 3], nodes_falseleafs = [1, 1],
          leaf_targetids = [0, 0, 0, 0], leaf_weights = float[4] {1, 2, 3, 4}> (x)
    })");
  double lowest = std::numeric_limits<float>::lowest();
  EXPECT_EQ(y, (std::vector<double>{3, lowest, 3, lowest}));
}

// One tree per target, in another order (tree 0 feeds target 1): the aggregate is a gather of
// the trees' weights, AVERAGE's divided by the number of trees.
TEST(DecomposeMl, TreeEnsembleWithOneTreePerTargetGathersTheTrees) {
  std::vector<double> y = folded_y(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g () => (float[2, 2] y) {
      x = Constant <value = float[2, 1] {0, 1}> ()
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 2, aggregate_function = 0, tree_roots = [0, 1],
          nodes_modes = uint8[2] {0, 0}, nodes_featureids = [0, 0],
          nodes_splits = float[2] {0.5, 2},
          nodes_truenodeids = [0, 2], nodes_trueleafs = [1, 1],
          nodes_falsenodeids = [1, 3], nodes_falseleafs = [1, 1],
          leaf_targetids = [1, 1, 0, 0], leaf_weights = float[4] {2, 4, 6, 8}> (x)
    })");
  EXPECT_EQ(y, (std::vector<double>{3, 1, 3, 2}));
}

TEST(DecomposeMl, TreeEnsembleRefusesACycle) {
  Graph g = graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g (float[2, 1] x) => (float[2, 1] y) {
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 1, tree_roots = [0], nodes_modes = uint8[2] {0, 0},
          nodes_featureids = [0, 0], nodes_splits = float[2] {0, 1},
          nodes_truenodeids = [1, 0], nodes_trueleafs = [0, 0],
          nodes_falsenodeids = [0, 0], nodes_falseleafs = [1, 1],
          leaf_targetids = [0], leaf_weights = float[1] {1}> (x)
    })");
  Status s = decompose(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the tree of root 0 has a cycle through node 0"), std::string::npos)
      << s.message();
}

TEST(DecomposeMl, TreeEnsembleRefusesPostTransforms) {
  Result<Graph> g = import_text(R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g (float[2, 1] x) => (float[2, 1] y) {
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 1, post_transform = 2, tree_roots = [0], nodes_modes = uint8[1] {0},
          nodes_featureids = [0], nodes_splits = float[1] {0},
          nodes_truenodeids = [0], nodes_trueleafs = [1],
          nodes_falsenodeids = [0], nodes_falseleafs = [1],
          leaf_targetids = [0], leaf_weights = float[1] {1}> (x)
    })");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("post_transform LOGISTIC is not supported (only NONE)"),
            std::string::npos)
      << g.status().message();
}

// X's batch known only at run time: the node waits for specialization.
TEST(DecomposeMl, NothingToDoWithoutStaticShapes) {
  const char* model = R"(
    <ir_version: 8, opset_import: ["" : 21, "ai.onnx.ml" : 5]>
    g (float[N, 1] x) => (float[N, 1] y) {
      y = ai.onnx.ml.TreeEnsemble <
          n_targets = 1, tree_roots = [0], nodes_modes = uint8[1] {0},
          nodes_featureids = [0], nodes_splits = float[1] {0},
          nodes_truenodeids = [0], nodes_trueleafs = [1],
          nodes_falsenodeids = [1], nodes_falseleafs = [1],
          leaf_targetids = [0, 0], leaf_weights = float[2] {1, 2}> (x)
    })";
  EXPECT_EQ(print_body(decomposed_graph(model)), print_body(graph_from_text(model)));
}

} // namespace
} // namespace weft
