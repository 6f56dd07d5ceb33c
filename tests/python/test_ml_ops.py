"""The classic machine-learning ops of ai.onnx.ml that scikit-learn's exporter (skl2onnx)
writes: Scaler, Normalizer, LinearRegressor, LinearClassifier, Imputer and OneHotEncoder, each
expanded at import into ai.onnx ops (weft/onnx/ml_legacy_ops.cc). Against float64 numpy
references of ONNX Runtime's results (checked beside onnxruntime 1.32 and skl2onnx 1.20 exports on 2026-12-05), at the
opsets skl2onnx writes beside them (9, 13 and 22); ZipMap, skl2onnx's default ending of
classifiers, as ONNX Runtime's session returns it; and the messages for what stays
unsupported."""

import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft

ML = "ai.onnx.ml"


def model(nodes, x, outputs, opset):
    """A model of "nodes" reading "x" (f32 [N, C]); outputs (name, TensorProto type)."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, x.shape[1]])],
        [helper.make_tensor_value_info(name, t, None) for name, t in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return m.SerializeToString()


def rows():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    x[2] = 0  # a row whose norms are 0
    x[4] = -np.abs(x[4])  # one whose max is negative
    return x


@pytest.mark.parametrize("opset", [9, 13, 22])
def test_scaler_and_normalizer(opset):
    x = rows()
    nodes = [helper.make_node("Scaler", ["x"], ["scaled"], domain=ML, offset=[0.5, -1.0, 2.0],
                              scale=[2.0, 0.25, -1.0])]
    for norm in ("MAX", "L1", "L2"):
        nodes.append(helper.make_node("Normalizer", ["x"], [norm], domain=ML, norm=norm))
    names = ["scaled", "MAX", "L1", "L2"]
    got = weft.compile(model(nodes, x, [(n, TensorProto.FLOAT) for n in names], opset)).run({"x": x})
    x64 = x.astype(np.float64)
    norms = {"MAX": x64.max(axis=1), "L1": np.abs(x64).sum(axis=1), "L2": np.sqrt((x64 ** 2).sum(axis=1))}
    want = {"scaled": (x64 - [0.5, -1.0, 2.0]) * [2.0, 0.25, -1.0]}
    for norm, z in norms.items():  # ONNX Runtime: divided by the row's max (not |max|); 0 stays
        want[norm] = np.where(z[:, None] == 0, x64, x64 / np.where(z == 0, 1, z)[:, None])
    for name in names:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("opset", [9, 13, 22])
def test_linear_regressor(opset):
    x = rows()
    w = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
    nodes = [helper.make_node("LinearRegressor", ["x"], ["y"], domain=ML, coefficients=w.ravel().tolist(),
                              intercepts=[0.5, -1.0], targets=2),
             helper.make_node("LinearRegressor", ["x"], ["one"], domain=ML, coefficients=[1.0, 2.0, 3.0])]
    got = weft.compile(model(nodes, x, [("y", TensorProto.FLOAT), ("one", TensorProto.FLOAT)], opset)).run({"x": x})
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got["y"], x64 @ w.T.astype(np.float64) + [0.5, -1.0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["one"], x64 @ [[1.0], [2.0], [3.0]], rtol=1e-6, atol=1e-6)


def classify(x, w, b, labels, transform, opset):
    node = helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain=ML,
                            coefficients=w.ravel().tolist(), intercepts=b, classlabels_ints=labels,
                            post_transform=transform)
    out = [("label", TensorProto.INT64), ("scores", TensorProto.FLOAT)]
    return weft.compile(model([node], x, out, opset)).run({"x": x})


@pytest.mark.parametrize("opset", [9, 13, 22])
@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_linear_classifier(opset, transform):
    x = rows()
    w = np.array([[0.1, 0.2, 0.3], [0.0, -0.5, 0.2], [-1.0, 0.0, 1.0]], np.float32)
    b = [0.1, 0.0, -0.2]
    got = classify(x, w, b, [4, 8, 15], transform, opset)
    s = x.astype(np.float64) @ w.T.astype(np.float64) + b
    if transform == "LOGISTIC":
        s = 1 / (1 + np.exp(-s))
    elif transform == "SOFTMAX":
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got["scores"], s, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["label"], np.array([4, 8, 15])[s.argmax(axis=1)])


@pytest.mark.parametrize("opset", [9, 13, 22])
@pytest.mark.parametrize("transform", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_binary_linear_classifier(opset, transform):
    """One row of coefficients and two labels, as ONNX Runtime: the scores [1 - s, s] ([1 - p, p]
    after LOGISTIC; SOFTMAX as NONE) and the second label where s > 0 (ties to the first)."""
    x = rows()
    w = np.array([[0.1, 0.2, 0.3]], np.float32)
    got = classify(x, w, [0.0], [3, 7], transform, opset)
    s = x.astype(np.float64) @ w[0].astype(np.float64)
    p = 1 / (1 + np.exp(-s)) if transform == "LOGISTIC" else s
    np.testing.assert_allclose(got["scores"], np.stack([1 - p, p], axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["label"], np.where(s > 0, 7, 3))
    assert got["label"][2] == 3  # the row of zeros: s = 0


def typed_model(nodes, inputs, outputs, opset):
    """A model of "nodes"; inputs and outputs (name, TensorProto type, shape)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("opset", [9, 13, 22])
def test_imputer(opset):
    """NaN replaced per column (SimpleImputer's export), a value replaced by one value for all
    columns, and int64 X; in X's type."""
    x = rows()
    x[1, 0] = x[3, 2] = np.nan
    x[5, 1] = 2.5
    ints = np.array([[1, -1, 3], [-1, 5, -1]], np.int64)
    nodes = [helper.make_node("Imputer", ["x"], ["nan"], domain=ML, imputed_value_floats=[10.0, 20.0, 30.0],
                              replaced_value_float=float("nan")),
             helper.make_node("Imputer", ["x"], ["value"], domain=ML, imputed_value_floats=[-7.0],
                              replaced_value_float=2.5),
             helper.make_node("Imputer", ["i"], ["ints"], domain=ML, imputed_value_int64s=[0, 9, 8],
                              replaced_value_int64=-1)]
    f, i = TensorProto.FLOAT, TensorProto.INT64
    m = typed_model(nodes, [("x", f, [None, 3]), ("i", i, [None, 3])],
                    [("nan", f, None), ("value", f, None), ("ints", i, None)], opset)
    got = weft.compile(m).run({"x": x, "i": ints})
    np.testing.assert_array_equal(got["nan"], np.where(np.isnan(x), [10, 20, 30], x).astype(np.float32))
    np.testing.assert_array_equal(got["value"], np.where(x == 2.5, -7, x).astype(np.float32))
    assert got["ints"].dtype == np.int64
    np.testing.assert_array_equal(got["ints"], np.where(ints == -1, [0, 9, 8], ints))


@pytest.mark.parametrize("opset", [9, 13, 22])
def test_one_hot_encoder(opset):
    """int64 and f32 columns (cast to int64: 2.7 is category 2), categories unknown to the
    encoder give zeros; Y is X's shape plus the categories."""
    cats = [4, 2, 7]
    ints = np.array([[4], [7], [5], [2]], np.int64)
    floats = np.array([2.7, 4.0, -1.0], np.float32)
    nodes = [helper.make_node("OneHotEncoder", ["i"], ["yi"], domain=ML, cats_int64s=cats, zeros=1),
             helper.make_node("OneHotEncoder", ["f"], ["yf"], domain=ML, cats_int64s=cats)]
    f, i = TensorProto.FLOAT, TensorProto.INT64
    m = typed_model(nodes, [("i", i, [None, 1]), ("f", f, [None])], [("yi", f, None), ("yf", f, None)], opset)
    got = weft.compile(m).run({"i": ints, "f": floats})
    want = lambda v: (v.astype(np.int64)[..., None] == cats).astype(np.float32)  # noqa: E731
    assert got["yi"].shape == (4, 1, 3) and got["yf"].shape == (3, 3)
    np.testing.assert_array_equal(got["yi"], want(ints))
    np.testing.assert_array_equal(got["yf"], want(floats))


def test_what_stays_unsupported():
    x = rows()
    # String labels that a node reads (here one that copies them to a second output).
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain=ML, coefficients=[0.1] * 6,
                              intercepts=[0.0, 0.0], classlabels_strings=["a", "b"]),
             helper.make_node("Identity", ["label"], ["copy"])]
    outputs = [("label", TensorProto.STRING), ("copy", TensorProto.STRING), ("p", TensorProto.FLOAT)]
    with pytest.raises(weft.WeftError, match="string class labels are supported only where they go straight"):
        weft.compile(model(nodes, x, outputs, 13))
    probit = helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain=ML, coefficients=[0.1] * 6,
                              intercepts=[0.0, 0.0], classlabels_ints=[0, 1], post_transform="PROBIT")
    with pytest.raises(weft.WeftError, match="post_transform PROBIT is not supported"):
        weft.compile(model([probit], x, [("label", TensorProto.INT64), ("p", TensorProto.FLOAT)], 13))
    # A ZipMap's sequence of maps is made only as an output of the model.
    nodes = [helper.make_node("ZipMap", ["x"], ["maps"], domain=ML, classlabels_int64s=[0, 1, 2]),
             helper.make_node("SequenceLength", ["maps"], ["n"])]
    with pytest.raises(weft.WeftError, match="ZipMap's 'maps' is read inside the model"):
        weft.compile(model(nodes, x, [("n", TensorProto.INT64)], 13))


def label_encoder_model(x_type, y_type, ml_opset, opset, **attrs):
    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, [None, 2])],
                              [helper.make_tensor_value_info("y", y_type, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(ML, ml_opset)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("opset", [11, 13, 22])
def test_label_encoder(opset):
    """Numbers to numbers (scikit-learn's OrdinalEncoder): a key's value, else the default; a
    NaN key (ai.onnx.ml 4's tensors) matches NaN; of two equal keys, the first."""
    ints = np.array([[10, 30], [20, 99], [30, 10]], np.int64)
    floats = np.array([[0.5, np.nan], [2.0, 7.0], [-1.0, 0.5]], np.float32)
    cases = [
        (ints, 2, dict(keys_int64s=[10, 20, 30, 10], values_int64s=[0, 1, 2, 3]),
         np.array([[0, 2], [1, -1], [2, 0]])),
        (floats, 2, dict(keys_floats=[0.5, 2.0, -1.0], values_int64s=[4, 5, 6], default_int64=7),
         np.array([[4, 7], [5, 7], [6, 4]])),
        (ints, 2, dict(keys_int64s=[10, 30], values_floats=[1.5, -2.0], default_float=2.5),
         np.array([[1.5, -2.0], [2.5, 2.5], [-2.0, 1.5]], np.float32)),
        (floats, 4, dict(keys_tensor=numpy_helper.from_array(np.array([np.nan, 2.0], np.float32)),
                         values_tensor=numpy_helper.from_array(np.array([8, 9], np.int64)),
                         default_tensor=numpy_helper.from_array(np.array([-5], np.int64))),
         np.array([[-5, 8], [9, -5], [-5, -5]]))]
    for x, ml_opset, attrs, want in cases:
        x_type, y_type = (TensorProto.INT64 if v.dtype == np.int64 else TensorProto.FLOAT for v in (x, want))
        got = weft.compile(label_encoder_model(x_type, y_type, ml_opset, opset, **attrs)).run({"x": x})["y"]
        assert got.dtype == want.dtype, attrs
        np.testing.assert_array_equal(got, want)


def cli_run(data, x, tmp_path):
    """`weft run` of model "data" on input x, its outputs into tmp_path / "out"."""
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    np.save(tmp_path / "x.npy", x)
    cli = os.environ.get("WEFT_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools", "weft", "weft"))
    done = subprocess.run([cli, "run", str(path), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir",
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def zip_map_model(keys):
    """LinearClassifier then skl2onnx's default ending, ZipMap, with "keys" as its labels."""
    attr = {"classlabels_int64s" if isinstance(keys[0], int) else "classlabels_strings": keys}
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "p"], domain=ML,
                              coefficients=[0.1, 0.2, 0.3, -0.5, 0.0, 0.25], intercepts=[0.0, 0.5],
                              classlabels_ints=[0, 1], post_transform="SOFTMAX"),
             helper.make_node("ZipMap", ["p"], ["maps"], domain=ML, **attr)]
    maps = onnx.TypeProto()  # seq(map(key, tensor(float))), as onnx 1.12's helper cannot write it
    maps.sequence_type.elem_type.map_type.key_type = (TensorProto.INT64 if "classlabels_int64s" in attr
                                                      else TensorProto.STRING)
    maps.sequence_type.elem_type.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                              [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                               onnx.ValueInfoProto(name="maps", type=maps)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("keys", [[3, 7], ["cat", "dog"]])
def test_zip_map(keys, tmp_path):
    """ONNX Runtime's session gives a list of {label: probability} dicts; weft.compile the tensor
    [N, C] and the labels in map_keys; the CLI writes the tensor and says what it is."""
    x = rows()
    data = zip_map_model(keys)
    s = x.astype(np.float64) @ np.array([[0.1, 0.2, 0.3], [-0.5, 0.0, 0.25]]).T + [0.0, 0.5]
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    session = weft.InferenceSession(data)
    kind = "int64" if isinstance(keys[0], int) else "string"
    assert session.get_outputs()[1].type == f"seq(map({kind},tensor(float)))"
    label, maps = session.run(None, {"x": x})
    assert isinstance(maps, list) and len(maps) == len(x)
    for row, m in zip(p, maps):
        assert list(m) == keys and all(type(v) is float for v in m.values())
        np.testing.assert_allclose(list(m.values()), row, rtol=1e-6)
    compiled = weft.compile(data)
    assert compiled.outputs[1].map_keys == keys
    np.testing.assert_allclose(compiled.run({"x": x})["maps"], p, rtol=1e-6)
    done = cli_run(data, x, tmp_path)
    assert "a ZipMap: each row's map from the labels" in done.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out" / "maps.npy"), p, rtol=1e-6)


def test_string_labels(tmp_path):
    """A classifier trained on strings (LinearClassifier's classlabels_strings, through Identity
    as skl2onnx writes it) and skl2onnx's naive Bayes ending (its classes, a string constant,
    gathered at the ArgMax): weft.compile gives numpy str arrays and the labels in the outputs'
    labels, ONNX Runtime's session object arrays and tensor(string), the CLI the indices."""
    x = rows()
    names = ["cat", "dog", "eel"]
    w = np.array([[0.1, 0.2, 0.3], [0.0, -0.5, 0.2], [-1.0, 0.0, 1.0]], np.float32)
    classes = numpy_helper.from_array(np.array(names, dtype=object), "classes")
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain=ML,
                              coefficients=w.ravel().tolist(), intercepts=[0.1, 0.0, -0.2],
                              classlabels_strings=names),
             helper.make_node("Identity", ["label"], ["output_label"]),
             helper.make_node("ArgMax", ["x"], ["at"], axis=1),
             helper.make_node("ArrayFeatureExtractor", ["classes", "at"], ["picked"], domain=ML),
             helper.make_node("Reshape", ["picked", "flat"], ["gathered"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("output_label", TensorProto.STRING), ("scores", TensorProto.FLOAT), ("gathered", TensorProto.STRING))],
        [classes, numpy_helper.from_array(np.array([-1], np.int64), "flat")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    data = m.SerializeToString()
    scores = x.astype(np.float64) @ w.T.astype(np.float64) + [0.1, 0.0, -0.2]
    want = np.array(names)[scores.argmax(axis=1)]
    picked = np.array(names)[x.argmax(axis=1)]
    compiled = weft.compile(data)
    assert [o.labels for o in compiled.outputs] == [names, [], names]
    got = compiled.run({"x": x})
    assert got["output_label"].dtype.kind == "U" and got["gathered"].dtype.kind == "U"
    np.testing.assert_array_equal(got["output_label"], want)
    np.testing.assert_array_equal(got["gathered"], picked)
    session = weft.InferenceSession(data)
    assert [o.type for o in session.get_outputs()] == ["tensor(string)", "tensor(float)", "tensor(string)"]
    label, _, gathered = session.run(None, {"x": x})
    assert label.dtype == object and list(label) == list(want) and list(gathered) == list(picked)
    done = cli_run(data, x, tmp_path)
    assert "string labels: each value's index into 'cat', 'dog', 'eel'" in done.stdout
    np.testing.assert_array_equal(np.array(names)[np.load(tmp_path / "out" / "output_label.npy")], want)


def string_input_model(extra_output=False):
    """Two string columns, as a scikit-learn pipeline's categorical ones: one one-hot encoded,
    one ordinal (LabelEncoder, ai.onnx.ml 2); with extra_output, the first is also an output."""
    nodes = [helper.make_node("OneHotEncoder", ["color"], ["onehot"], domain=ML, cats_strings=["red", "green", "blue"],
                              zeros=1),
             helper.make_node("LabelEncoder", ["size"], ["ordinal"], domain=ML, keys_strings=["S", "M", "L"],
                              values_int64s=[0, 1, 2], default_int64=-1)]
    outputs = [helper.make_tensor_value_info("onehot", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("ordinal", TensorProto.INT64, None)]
    if extra_output:
        nodes.append(helper.make_node("Identity", ["color"], ["copy"]))
        outputs.append(helper.make_tensor_value_info("copy", TensorProto.STRING, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("color", TensorProto.STRING, [None, 1]),
                                           helper.make_tensor_value_info("size", TensorProto.STRING, [None, 1])],
                              outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ML, 2)])
    m.ir_version = 8
    return m.SerializeToString()


def test_string_inputs(tmp_path):
    """A string input that only OneHotEncoders and LabelEncoders read takes the strings (object,
    str or bytes arrays) from Python, as their indices in its vocabulary; unknown strings match
    no category (zeros) and no key (the default), as in ONNX Runtime. Other string inputs get a
    message."""
    color = np.array([["red"], ["blue"], ["pink"], ["green"]], dtype=object)
    size = np.array([["L"], ["XL"], ["S"], ["M"]], dtype=object)
    onehot = np.array([[[1, 0, 0]], [[0, 0, 1]], [[0, 0, 0]], [[0, 1, 0]]], np.float32)
    ordinal = np.array([[2], [-1], [0], [1]])
    compiled = weft.compile(string_input_model())
    assert [i.labels for i in compiled.inputs] == [["red", "green", "blue"], ["S", "M", "L"]]
    for feeds in ({"color": color, "size": size}, {"color": color.astype(str), "size": size.astype(bytes)}):
        got = compiled.run(feeds)
        np.testing.assert_array_equal(got["onehot"], onehot)
        np.testing.assert_array_equal(got["ordinal"], ordinal)
    indices = compiled.run({"color": np.array([[0], [2], [-1], [1]]), "size": np.array([[2], [-1], [0], [1]])})
    np.testing.assert_array_equal(indices["onehot"], onehot)
    session = weft.InferenceSession(string_input_model())
    assert [i.type for i in session.get_inputs()] == ["tensor(string)", "tensor(string)"]
    np.testing.assert_array_equal(session.run(["ordinal"], {"color": color, "size": size})[0], ordinal)
    # The CLI reads .npy files of strings ('<U', here with a code point beyond ASCII, and '|S').
    (tmp_path / "m.onnx").write_bytes(string_input_model())
    np.save(tmp_path / "color.npy", np.array([["red"], ["blue"], ["rosé"], ["green"]]))
    np.save(tmp_path / "size.npy", size.astype(bytes))
    cli = os.environ.get("WEFT_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools", "weft", "weft"))
    done = subprocess.run([cli, "run", str(tmp_path / "m.onnx"), "--input", f"color={tmp_path / 'color.npy'}",
                           "--input", f"size={tmp_path / 'size.npy'}", "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "onehot.npy"), onehot)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "ordinal.npy"), ordinal)
    with pytest.raises(weft.WeftError, match="string categories and keys are supported only on an input"):
        weft.compile(string_input_model(extra_output=True))
