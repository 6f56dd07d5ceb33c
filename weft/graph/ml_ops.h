// The op table's entries for the classic machine-learning ops that passes/decompose_ml.h
// turns into primitives: their attribute parsers and shape functions.
//
//   Binarizer(X) (ai.onnx.ml 1): Y like X
//   ArrayFeatureExtractor(X, Y) (ai.onnx.ml 1): X[..., indices] ([1, n] for a vector X)
//   TfIdfVectorizer(X) (9): X [C] or [B, C] of i32 or i64 gives f32 [O] or [B, O], O the
//                            largest of ngram_indexes plus one
//   TreeEnsemble(X) (ai.onnx.ml 5): X [N, F] gives [N, n_targets] in X's type
//
// The parsers check everything the attributes alone decide (lengths, ranges, the enums); the
// shape functions what needs X's type and shape.
#pragma once

#include <vector>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"

namespace weft {

// The most targets a tree ensemble may have (their outputs are [N, n_targets]).
inline constexpr int64_t kMaxTreeTargets = int64_t{1} << 20;

OpAttrs parse_binarizer(AttrParser& p);
OpAttrs parse_tf_idf(AttrParser& p);
OpAttrs parse_tree_ensemble(AttrParser& p);

TypesOrError infer_array_feature_extractor(const Node& node);
TypesOrError infer_tf_idf(const Node& node);
TypesOrError infer_tree_ensemble(const Node& node);

// One length of n-gram in TfIdfVectorizer's pool: "count" n-grams of "n" items from
// pool_int64s["start"] on, numbered from "first_id" in the pool's order.
struct TfIdfPoolLevel {
  int64_t n;
  int64_t start;
  int64_t count;
  int64_t first_id;
};
// The levels of "a"'s pool, the empty ones too, as ngram_counts divides it.
std::vector<TfIdfPoolLevel> tf_idf_pool_levels(const TfIdfAttrs& a);
// The number of output columns: the largest of ngram_indexes plus one.
int64_t tf_idf_output_size(const TfIdfAttrs& a);

} // namespace weft
