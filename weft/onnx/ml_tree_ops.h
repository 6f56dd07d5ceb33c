// The tree ensembles of ai.onnx.ml 1 and 3, TreeEnsembleRegressor and TreeEnsembleClassifier,
// which the exporters of scikit-learn (skl2onnx), LightGBM and XGBoost (onnxmltools) write,
// expanded at import (contrib_expansion.h) into a TreeEnsemble of ai.onnx.ml 5 and ai.onnx ops:
//   1. the trees become one TreeEnsemble over X in f64, with a target per tree and leaves that
//      weigh their own numbers: it gives the leaf each tree reaches, [N, trees];
//   2. a Gather from the table of the leaves' weights [leaves, targets] and a reduction over
//      the trees give the scores [N, targets]: summed, averaged, or their min or max;
//   3. base_values, the post-transform and the labels follow, as ONNX Runtime applies them
//      where the spec is silent (docs/onnx-versions.md). Scores are f32.
// A class that class_ids names counts as scored on every row (ONNX Runtime decides per row,
// from the leaves reached). SOFTMAX_ZERO, PROBIT and string labels are refused with a message.
#pragma once

#include "weft/onnx/contrib_expansion.h"

namespace weft::contrib {

Status expand_tree_ensemble_regressor(Expansion& e);
Status expand_tree_ensemble_classifier(Expansion& e);

} // namespace weft::contrib
