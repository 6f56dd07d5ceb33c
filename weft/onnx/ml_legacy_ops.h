// The classic machine-learning ops of ai.onnx.ml that scikit-learn's exporter (skl2onnx)
// writes around a model: Scaler, Normalizer, LinearRegressor, LinearClassifier, Imputer,
// OneHotEncoder, LabelEncoder and ZipMap, each
// expanded at import into the ai.onnx ops it computes (contrib_expansion.h), as ONNX
// Runtime computes it where the spec is silent (docs/onnx-versions.md):
//   Scaler(X)           (X - offset) * scale, per column (f32 out)
//   Normalizer(X)       each row divided by its max, L1 or L2 norm (a row whose norm is 0
//                       stays as it is)
//   LinearRegressor(X)  X W^T + b, [N, targets]
//   LinearClassifier(X) scores X W^T + b through the post-transform (NONE, LOGISTIC or
//                       SOFTMAX), and the label of the largest score (integer labels); with
//                       one row of coefficients and two labels, the scores [1 - s, s] (after
//                       LOGISTIC, [1 - p, p]) and the second label where s > 0
//   Imputer(X)          each element equal to replaced_value (NaN: any NaN) replaced by its
//                       column's imputed value, in X's type
//   OneHotEncoder(X)    X cast to int64 compared with cats_int64s: f32 [..., categories]
//                       (an unknown category gives zeros)
//   LabelEncoder(X)     numbers to numbers (OrdinalEncoder): a key's value (a NaN key matches
//                       NaN; of equal keys, the first), else the default
//   ZipMap(X)           X itself, its labels noted as the output's keys (Graph::map_outputs)
// String labels, keys and categories, SOFTMAX_ZERO and PROBIT are refused with a message. The table
// holds the tree ensembles of ml_tree_ops.h too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "weft/onnx/contrib_expansion.h"

namespace weft::contrib {

// Why a classifier with classlabels_strings is refused: its labels do not go straight to an
// output declared as strings (string_labels.h made those positions).
inline constexpr const char* kStringLabelsRead =
    "string class labels are supported only where they go straight to an output of the model "
    "declared as strings (through Identity or Reshape); Weft has no string tensors";

// Why a OneHotEncoder or LabelEncoder of strings is refused: its input is no input of the model
// that such encoders alone read (string_labels.h made those take indices).
inline constexpr const char* kStringInputRead =
    "string categories and keys are supported only on an input of the model that "
    "OneHotEncoders and LabelEncoders alone read; Weft has no string tensors";

// By qualified name: "ai.onnx.ml.Scaler".
std::map<std::string, ContribOp> ml_legacy_ops();

// The node's post_transform where Weft applies it (NONE, LOGISTIC or SOFTMAX), else an error.
Result<std::string> post_transform_of(const Expansion& e);
// Scores [N, C] through "transform" (post_transform_of).
std::string apply_post_transform(Expansion& e, const std::string& transform, const std::string& s);

} // namespace weft::contrib
