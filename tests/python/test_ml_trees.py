"""The tree ensembles of ai.onnx.ml 1 and 3, TreeEnsembleRegressor and TreeEnsembleClassifier, as
scikit-learn's (skl2onnx), LightGBM's and XGBoost's (onnxmltools) exporters write them, expanded
at import (weft/onnx/ml_tree_ops.cc). Random ensembles, with every branch mode, missing values
and one-leaf trees, against `walk` below: a float64 walk of the trees with ONNX Runtime's rules
for base_values, the post-transforms and two classes (the reference itself was checked against
onnxruntime 1.32 on these same models, 2026-12-05). And the messages for what stays unsupported."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft

ML = "ai.onnx.ml"
MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
GRID = [-1.0, -0.5, 0.0, 0.5, 1.0]  # the splits and most values of X: ties are common


def random_ensemble(seed, trees, features, ids, modes=MODES, positive=False):
    """Node lists of "trees" random trees (tree ids 3t + 1, node ids from 0 in preorder, the
    first a one-leaf tree) and their leaves' weights: each leaf gives each of "ids" a weight."""
    rng = np.random.default_rng(seed)
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
                         "nodes_values", "nodes_truenodeids", "nodes_falsenodeids",
                         "nodes_missing_value_tracks_true", "w_treeids", "w_nodeids", "w_ids",
                         "w_weights")}
    for t in range(trees):
        tree, count = 3 * t + 1, [0]

        def grow(depth):
            i = count[0]
            count[0] += 1
            at = len(a["nodes_treeids"])
            leaf = t == 0 or depth == 0 or rng.random() < 0.2
            for k, v in (("nodes_treeids", tree), ("nodes_nodeids", i),
                         ("nodes_featureids", 0 if leaf else int(rng.integers(features))),
                         ("nodes_modes", "LEAF" if leaf else str(rng.choice(modes))),
                         ("nodes_values", 0.0 if leaf else float(rng.choice(GRID))),
                         ("nodes_truenodeids", 0), ("nodes_falsenodeids", 0),
                         ("nodes_missing_value_tracks_true", int(rng.random() < 0.5))):
                a[k].append(v)
            if leaf:
                for j in ids:
                    w = float(np.round(rng.uniform(0 if positive else -1, 1), 3))
                    for k, v in (("w_treeids", tree), ("w_nodeids", i), ("w_ids", j), ("w_weights", w)):
                        a[k].append(v)
                return i
            a["nodes_truenodeids"][at] = grow(depth - 1)
            a["nodes_falsenodeids"][at] = grow(depth - 1)
            return i

        grow(4)
    return a


def rows(features, n=64, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.choice(GRID, size=(n, features)) + rng.choice([0, 0, 0.25], size=(n, features))
    x[rng.random(x.shape) < 0.1] = np.nan
    return x.astype(np.float32)


def goes_true(mode, v, split):
    return {"BRANCH_LEQ": v <= split, "BRANCH_LT": v < split, "BRANCH_GTE": v >= split,
            "BRANCH_GT": v > split, "BRANCH_EQ": v == split, "BRANCH_NEQ": v != split}[mode]


def walk(a, x, targets, aggregate="SUM", f32=True):
    """Per row, per target: the leaves' weights of each tree combined, in float64, and whether
    any reached leaf weighs the target (ONNX Runtime's has_score). Splits and weights are
    rounded to f32 where "f32", as float attributes hold them."""
    f = np.float32 if f32 else np.float64
    at = {(t, n): i for i, (t, n) in enumerate(zip(a["nodes_treeids"], a["nodes_nodeids"]))}
    roots = [at[(t, n)] for i, (t, n) in enumerate(zip(a["nodes_treeids"], a["nodes_nodeids"]))
             if t not in a["nodes_treeids"][:i]]
    s = np.zeros((len(x), targets))
    has = np.zeros((len(x), targets), bool)
    for r, row in enumerate(x.astype(np.float64)):
        for i in roots:
            tree = a["nodes_treeids"][i]
            while a["nodes_modes"][i] != "LEAF":
                v = row[a["nodes_featureids"][i]]
                split = np.float64(f(a["nodes_values"][i]))
                true = goes_true(a["nodes_modes"][i], v, split) or (
                    np.isnan(v) and a["nodes_missing_value_tracks_true"][i])
                child = a["nodes_truenodeids" if true else "nodes_falsenodeids"][i]
                i = at[(tree, child)]
            node = a["nodes_nodeids"][i]
            for t, n, j, w in zip(a["w_treeids"], a["w_nodeids"], a["w_ids"], a["w_weights"]):
                if (t, n) != (tree, node):
                    continue
                w = np.float64(f(w))
                if aggregate in ("SUM", "AVERAGE") or not has[r, j]:
                    s[r, j] = s[r, j] + w if aggregate in ("SUM", "AVERAGE") else w
                else:
                    s[r, j] = min(s[r, j], w) if aggregate == "MIN" else max(s[r, j], w)
                has[r, j] = True
    if aggregate == "AVERAGE":
        s /= len(roots)
    return s, has


def sigmoid(s):
    return 1 / (1 + np.exp(-s))


def transformed(s, transform):
    if transform == "LOGISTIC":
        return sigmoid(s)
    if transform == "SOFTMAX":
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return s


def attrs_for(a, prefix, as_tensor=False):
    """The node's attributes: the ensemble's, its weights under "prefix" (target_ or class_);
    nodes_values and the weights as f64 tensors (ai.onnx.ml 3) where "as_tensor"."""
    out = {k: v for k, v in a.items() if not k.startswith("w_")}
    for k in ("treeids", "nodeids", "ids", "weights"):
        out[prefix + k] = a["w_" + k]
    if as_tensor:
        for k in ("nodes_values", prefix + "weights"):
            out[k + "_as_tensor"] = helper.make_tensor(k + "_as_tensor", TensorProto.DOUBLE,
                                                       [len(out[k])], out.pop(k))
    return out


def model(node, x_type, features, outputs, opset=13, ml_opset=1, shape=None):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", x_type, [None, features])],
        [helper.make_tensor_value_info(name, t, shape) for name, t in outputs])
    imports = [helper.make_opsetid(ML, ml_opset)]
    if opset:  # XGBoost's exports import ai.onnx.ml alone
        imports.append(helper.make_opsetid("", opset))
    m = helper.make_model(graph, opset_imports=imports)
    m.ir_version = 8
    return m.SerializeToString()


def regressor(a, x, targets, opset=13, ml_opset=1, as_tensor=False, y_type=None, y_shape=None,
              **kwargs):
    x_type = TensorProto.DOUBLE if x.dtype == np.float64 else TensorProto.FLOAT
    node = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, n_targets=targets,
                            **attrs_for(a, "target_", as_tensor), **kwargs)
    m = model(node, x_type, x.shape[1], [("y", y_type or x_type)], opset, ml_opset, y_shape)
    return weft.compile(m).run({"x": x})["y"]


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets", [1, 3])
def test_regressor_aggregates(aggregate, targets):
    a = random_ensemble(seed=targets, trees=12, features=5, ids=range(targets))
    x = rows(5)
    base = [0.5, -2.0, 1.0][:targets]
    got = regressor(a, x, targets, aggregate_function=aggregate, base_values=base)
    s, has = walk(a, x, targets, aggregate)
    want = np.where(has, s, 0) + base  # a target no reached leaf weighs scores 0 (MIN, MAX)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_regressor_post_transforms(transform):
    a = random_ensemble(seed=7, trees=8, features=4, ids=range(3))
    x = rows(4)
    got = regressor(a, x, 3, post_transform=transform)
    np.testing.assert_allclose(got, transformed(walk(a, x, 3)[0], transform), rtol=1e-6, atol=1e-7)
    # One target: ONNX Runtime adds base_values[0] and applies no transform but PROBIT.
    a = random_ensemble(seed=8, trees=8, features=4, ids=[0])
    got = regressor(a, x, 1, post_transform=transform, base_values=[0.25])
    np.testing.assert_allclose(got, walk(a, x, 1)[0] + 0.25, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("opset", [None, 8, 17])
def test_regressor_at_the_opsets_exporters_write(opset):
    """LightGBM's regressors import ai.onnx opset 8, XGBoost's no ai.onnx opset at all."""
    a = random_ensemble(seed=9, trees=10, features=6, ids=[0])
    x = rows(6)
    np.testing.assert_allclose(regressor(a, x, 1, opset=opset), walk(a, x, 1)[0], rtol=1e-6, atol=1e-6)


def test_regressor_f64_with_tensor_attributes():
    """ai.onnx.ml 3's nodes_values_as_tensor and target_weights_as_tensor: f64 splits and
    weights that f32 cannot hold, an f64 X and Y."""
    a = random_ensemble(seed=10, trees=10, features=4, ids=range(2))
    a["nodes_values"] = [v + 1e-9 for v in a["nodes_values"]]
    a["w_weights"] = [w + 1e-9 for w in a["w_weights"]]
    x = rows(4).astype(np.float64)
    x[::2] += 1e-9  # on the splits, which only f64 tells apart
    want = walk(a, x, 2, f32=False)[0]
    got = regressor(a, x, 2, ml_opset=3, as_tensor=True)  # Y declared f64, as skl2onnx does
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got = regressor(a, x, 2, ml_opset=3, as_tensor=True, y_type=TensorProto.FLOAT)  # the spec's
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_regressor_output_declared_with_one_column():
    """skl2onnx declares a multi-target regressor's Y [N, 1]: the node's [N, 3] wins, as in
    ONNX Runtime."""
    a = random_ensemble(seed=15, trees=4, features=3, ids=range(3))
    x = rows(3)
    got = regressor(a, x, 3, y_shape=[None, 1])
    np.testing.assert_allclose(got, walk(a, x, 3)[0], rtol=1e-6, atol=1e-6)


def classify(a, x, labels, opset=13, **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if v != []}  # no base_values
    node = helper.make_node("TreeEnsembleClassifier", ["x"], ["label", "scores"], domain=ML,
                            classlabels_int64s=labels, **attrs_for(a, "class_"), **kwargs)
    m = model(node, TensorProto.FLOAT, x.shape[1], [("label", TensorProto.INT64),
                                                   ("scores", TensorProto.FLOAT)], opset)
    return weft.compile(m).run({"x": x})


@pytest.mark.parametrize("transform,base,positive", [
    ("NONE", [], True),  # a random forest
    ("SOFTMAX", [0.1, -0.2, 0.3], False),  # gradient boosting
    ("LOGISTIC", [], False)])
def test_classifier_three_classes(transform, base, positive):
    a = random_ensemble(seed=11, trees=9, features=5, ids=range(3), positive=positive)
    x = rows(5)
    got = classify(a, x, [10, 20, 30], post_transform=transform, base_values=base)
    s = walk(a, x, 3)[0] + (base or 0)
    np.testing.assert_allclose(got["scores"], transformed(s, transform), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got["label"], np.array([10, 20, 30])[s.argmax(axis=1)])


def test_classifier_skips_unscored_classes_for_the_label():
    """Class 1 gets no weight: its score is 0 but it is never the label, as in ONNX Runtime."""
    a = random_ensemble(seed=12, trees=6, features=3, ids=[0, 2])
    a["w_weights"] = [-abs(w) for w in a["w_weights"]]  # every score below class 1's 0
    x = rows(3)
    got = classify(a, x, [5, 6, 7])
    s = walk(a, x, 3)[0]
    np.testing.assert_allclose(got["scores"], s, rtol=1e-6, atol=1e-7)
    assert 6 not in got["label"]
    np.testing.assert_array_equal(got["label"], np.where(s[:, 0] >= s[:, 2], 5, 7))


# Two classes, as the exporters write them: weights for class 0 alone, base_values absent or
# one. ONNX Runtime's rules: [1 - s, s] and label 1 above 0.5 when every weight is positive (a
# random forest); else [-s, s], through the logistic for LOGISTIC, and label 1 above 0.
@pytest.mark.parametrize("transform,base,positive,opset", [
    ("NONE", [], True, 13),  # scikit-learn's random forest
    ("LOGISTIC", [0.125], False, 13),  # scikit-learn's gradient boosting, XGBoost
    ("LOGISTIC", [], False, 9),  # LightGBM
    ("NONE", [], False, 13)])
def test_classifier_two_classes(transform, base, positive, opset):
    a = random_ensemble(seed=13, trees=10, features=4, ids=[0], positive=positive)
    if positive:
        a["w_weights"] = [w / 10 for w in a["w_weights"]]  # probabilities
    x = rows(4)
    got = classify(a, x, [3, 8], opset=opset, post_transform=transform, base_values=base)
    s = walk(a, x, 1)[0][:, 0] + (base[0] if base else 0)
    if positive:
        want, label = np.stack([1 - s, s], axis=1), np.where(s > 0.5, 8, 3)
    else:
        pair = np.stack([-s, s], axis=1)
        want, label = (sigmoid(pair) if transform == "LOGISTIC" else pair), np.where(s > 0, 8, 3)
    np.testing.assert_allclose(got["scores"], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["label"], label)


def test_what_stays_unsupported():
    a = random_ensemble(seed=14, trees=2, features=2, ids=[0])
    node = lambda **kw: helper.make_node(  # noqa: E731
        "TreeEnsembleClassifier", ["x"], ["label", "scores"], domain=ML, **attrs_for(a, "class_"), **kw)
    out = [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)]
    with pytest.raises(weft.WeftError, match="string class labels are supported only where"):
        weft.compile(model(node(classlabels_strings=["a", "b"]), TensorProto.FLOAT, 2, out))
    with pytest.raises(weft.WeftError, match="post_transform PROBIT is not supported"):
        weft.compile(model(node(classlabels_int64s=[0, 1], post_transform="PROBIT"),
                           TensorProto.FLOAT, 2, out))
    broken = attrs_for(a, "class_")
    broken["nodes_truenodeids"] = [n + 100 if m != "LEAF" else n
                                   for n, m in zip(broken["nodes_truenodeids"], broken["nodes_modes"])]
    with pytest.raises(weft.WeftError, match=r"leads to node 10\d, which the tree does not have"):
        weft.compile(model(helper.make_node("TreeEnsembleClassifier", ["x"], ["label", "scores"], domain=ML,
                                            classlabels_int64s=[0, 1], **broken), TensorProto.FLOAT, 2, out))
    with pytest.raises(weft.WeftError, match=r"n_targets is 1099511627776, outside \[1, 1048576\]"):
        weft.compile(model(helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, n_targets=2 ** 40,
                                            **attrs_for(a, "target_")), TensorProto.FLOAT, 2, [("y", TensorProto.FLOAT)]))
    modes = attrs_for(a, "target_")
    modes["nodes_modes"] = ["BRANCH_MEMBER" if m != "LEAF" else m for m in modes["nodes_modes"]]
    with pytest.raises(weft.WeftError, match="is 'BRANCH_MEMBER'"):
        weft.compile(model(helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain=ML, **modes),
                           TensorProto.FLOAT, 2, [("y", TensorProto.FLOAT)]))
