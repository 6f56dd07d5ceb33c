"""The support vector machines of ai.onnx.ml, SVMRegressor and SVMClassifier, as scikit-learn's
exporter (skl2onnx) writes them for SVR, NuSVR, OneClassSVM, SVC and NuSVC, expanded at import
(weft/onnx/ml_svm_ops.cc). Random machines against float64 numpy references of ONNX Runtime's
rules (libsvm's one-vs-one votes; the two-class scores), checked against onnxruntime 1.32 on
these same models (2026-12-05); and the messages for what stays unsupported."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft

ML = "ai.onnx.ml"
KERNELS = {"LINEAR": (0.0, 0.0, 0.0), "POLY": (0.3, 1.0, 3.0), "RBF": (0.4, 0.0, 0.0),
           "SIGMOID": (0.2, -0.5, 0.0)}


def kernel(name, x, sv):
    gamma, coef0, degree = KERNELS[name]
    if name == "RBF":
        return np.exp(-gamma * ((x[:, None, :] - sv[None]) ** 2).sum(-1))
    dot = x @ sv.T
    if name == "LINEAR":
        return dot
    return (gamma * dot + coef0) ** degree if name == "POLY" else np.tanh(gamma * dot + coef0)


def machine(seed, vectors, features=5, rows=40):
    rng = np.random.default_rng(seed)
    sv = rng.standard_normal((vectors, features)).astype(np.float32)
    x = rng.standard_normal((rows, features)).astype(np.float32)
    return rng, sv, x


def run(node, x, outputs, opset=13):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, x.shape[1]])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return weft.compile(m.SerializeToString()).run({"x": x})


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("one_class", [0, 1])
def test_regressor(name, one_class):
    rng, sv, x = machine(1, vectors=12)
    coef = rng.uniform(-1, 1, 12).astype(np.float32)
    node = helper.make_node("SVMRegressor", ["x"], ["y"], domain=ML, kernel_type=name,
                            kernel_params=list(KERNELS[name]), support_vectors=sv.ravel().tolist(),
                            coefficients=coef.tolist(), rho=[0.25], n_supports=12, one_class=one_class)
    got = run(node, x, [("y", TensorProto.FLOAT)])["y"]
    want = kernel(name, x.astype(np.float64), sv.astype(np.float64)) @ coef.astype(np.float64)[:, None] + 0.25
    if one_class:
        want = np.where(want > 0, 1.0, -1.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_regressor_without_support_vectors():
    """liblinear's form: X coefficients + rho."""
    _, _, x = machine(2, vectors=1)
    node = helper.make_node("SVMRegressor", ["x"], ["y"], domain=ML, coefficients=[0.5, -1, 2, 0, 1.5],
                            rho=[-0.5], n_supports=0, kernel_params=[0.0, 0.0, 0.0])  # ORT asks for them
    got = run(node, x, [("y", TensorProto.FLOAT)], opset=9)["y"]
    np.testing.assert_allclose(got, x.astype(np.float64) @ [[0.5], [-1], [2], [0], [1.5]] - 0.5, rtol=1e-6, atol=1e-6)


def one_vs_one(k, per_class, coef, rho):
    """libsvm's pair scores [N, pairs] and votes [N, classes]."""
    classes, start = len(per_class), np.concatenate([[0], np.cumsum(per_class)])
    scores, votes = [], np.zeros((k.shape[0], classes))
    pair = 0
    for i in range(classes):
        for j in range(i + 1, classes):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            s = k[:, si] @ coef[j - 1, si] + k[:, sj] @ coef[i, sj] + rho[pair]
            scores.append(s)
            votes[np.arange(len(s)), np.where(s > 0, i, j)] += 1
            pair += 1
    return np.stack(scores, axis=1), votes


def classifier(name, per_class, labels, transform, seed=3):
    vectors = sum(per_class)
    rng, sv, x = machine(seed, vectors)
    coef = rng.uniform(-1, 1, (len(per_class) - 1, vectors)).astype(np.float32)
    rho = rng.uniform(-0.5, 0.5, len(per_class) * (len(per_class) - 1) // 2).astype(np.float32)
    node = helper.make_node("SVMClassifier", ["x"], ["label", "scores"], domain=ML, kernel_type=name,
                            kernel_params=list(KERNELS[name]), support_vectors=sv.ravel().tolist(),
                            coefficients=coef.ravel().tolist(), rho=rho.tolist(),
                            vectors_per_class=per_class, classlabels_ints=labels, post_transform=transform)
    got = run(node, x, [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)])
    k = kernel(name, x.astype(np.float64), sv.astype(np.float64))
    scores, votes = one_vs_one(k, per_class, coef.astype(np.float64), rho.astype(np.float64))
    return got, scores, votes


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC"])
def test_classifier_one_vs_one(name, transform):
    labels = [5, 6, 7, 9]
    got, scores, votes = classifier(name, [3, 4, 2, 5], labels, transform)
    want = 1 / (1 + np.exp(-scores)) if transform == "LOGISTIC" else scores
    np.testing.assert_allclose(got["scores"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["label"], np.array(labels)[votes.argmax(axis=1)])


@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_classifier_two_classes(transform):
    """One score s: [-s, s], through the logistic for LOGISTIC, and [1 - s, s] for SOFTMAX (as
    ONNX Runtime 1.32 writes them); the first label where s > 0."""
    got, scores, _ = classifier("RBF", [4, 6], [3, 8], transform, seed=4)
    s = scores[:, 0]
    want = np.stack([1 - s if transform == "SOFTMAX" else -s, s], axis=1)
    if transform == "LOGISTIC":
        want = 1 / (1 + np.exp(-want))
    np.testing.assert_allclose(got["scores"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["label"], np.where(s > 0, 3, 8))


@pytest.mark.parametrize("labels,coef", [
    ([1, 2, 4], [[1, -1, 0, 0.5, 2], [0, 1, 1, -1, 0], [-1, 0, 2, 0, 1]]),
    ([0, 1], [[0.1, 0.2, 0, 0.3, 0.1], [0.2, 0, 0.1, 0.1, 0.4]]),  # positive: the second at >= 0.5
    ([0, 1], [[-0.1, 0.2, 0, 0.3, 0.1], [0.2, 0, 0.1, -0.1, 0.4]])])  # mixed: the second above 0
def test_classifier_without_support_vectors(labels, coef):
    """liblinear's form: X coefficients^T + rho[0] per class."""
    _, _, x = machine(5, vectors=1)
    node = helper.make_node("SVMClassifier", ["x"], ["label", "scores"], domain=ML, kernel_params=[0.0, 0.0, 0.0],
                            coefficients=np.ravel(coef).tolist(), rho=[0.125], classlabels_ints=labels)
    got = run(node, x, [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)])
    s = x.astype(np.float64) @ np.array(coef).T + 0.125
    np.testing.assert_allclose(got["scores"], s, rtol=1e-6, atol=1e-6)
    best = s.argmax(axis=1)
    if len(labels) == 2:
        top = s.max(axis=1)
        best = np.where(top >= 0.5 if min(np.ravel(coef)) >= 0 else top > 0, 1, best)
    np.testing.assert_array_equal(got["label"], np.array(labels)[best])


def test_what_stays_unsupported():
    _, sv, x = machine(6, vectors=2)
    common = dict(domain=ML, kernel_type="RBF", kernel_params=[0.1, 0, 0], support_vectors=sv.ravel().tolist(),
                  coefficients=[1.0, -1.0], rho=[0.0], vectors_per_class=[1, 1])
    out = [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)]
    cases = [(dict(classlabels_ints=[0, 1], prob_a=[1.0], prob_b=[0.0]), r"export the SVC without probability=True"),
             (dict(classlabels_ints=[0, 1], post_transform="PROBIT"), "post_transform PROBIT is not supported"),
             (dict(classlabels_strings=["a", "b"]), "string class labels are supported only where")]
    for attrs, message in cases:
        with pytest.raises(weft.WeftError, match=message):
            run(helper.make_node("SVMClassifier", ["x"], ["label", "scores"], **common, **attrs), x, out)
    with pytest.raises(weft.WeftError, match=r"vectors_per_class holds a count outside"):
        run(helper.make_node("SVMClassifier", ["x"], ["label", "scores"], classlabels_ints=[0, 1],
                             **dict(common, vectors_per_class=[-1, 3])), x, out)
    bad = dict(common, kernel_type="CUBIC")
    with pytest.raises(weft.WeftError, match="kernel_type is 'CUBIC'"):
        run(helper.make_node("SVMClassifier", ["x"], ["label", "scores"], classlabels_ints=[0, 1], **bad), x, out)
