// The support vector machines of ai.onnx.ml, SVMRegressor and SVMClassifier, which
// scikit-learn's exporter (skl2onnx) writes for SVR, NuSVR, OneClassSVM, SVC and NuSVC,
// expanded at import (contrib_expansion.h) into ai.onnx ops, as ONNX Runtime computes them:
//   kernels K [N, V] of X [N, F] and the support vectors: LINEAR x.sv; POLY
//       (gamma x.sv + coef0)^degree; SIGMOID tanh(gamma x.sv + coef0); RBF
//       exp(-gamma |x - sv|^2), from the differences (no cancellation)
//   SVMRegressor    K coefficients + rho[0] ([N, 1]; one_class: the sign, +1 or -1);
//                   without support vectors, X coefficients + rho[0]
//   SVMClassifier   one score per pair of classes i < j, K W + rho, W holding the
//                   coefficients of the two classes' support vectors (libsvm's one-vs-one);
//                   each pair votes for i where its score is > 0, else for j, and the label
//                   is the class with the most votes (the first). Two classes: the scores
//                   [-s, s] (through the logistic for LOGISTIC) or [1 - s, s] (SOFTMAX), as
//                   ONNX Runtime 1.32 writes them. Without support vectors: X coefficients^T
//                   + rho[0] per class, the label by the highest score (ONNX Runtime's rules
//                   for two classes).
// Probabilities (prob_a and prob_b: SVC(probability=True)), PROBIT, SOFTMAX_ZERO and string
// labels are refused with a message.
#pragma once

#include "weft/onnx/contrib_expansion.h"

namespace weft::contrib {

Status expand_svm_regressor(Expansion& e);
Status expand_svm_classifier(Expansion& e);

} // namespace weft::contrib
