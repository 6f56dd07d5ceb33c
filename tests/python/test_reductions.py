"""The reductions over every subset of axes, keepdims or not, of shapes with unit dims, against
NumPy in float64. Reducing a unit dim before the reduced row without keepdims once wrote only
part of the output (ReduceMean of a [1, C, K] view over axes [0, 2]: timm's weight-standardized
convolutions)."""

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model

OPS = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max,
       "ReduceL2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))}


@pytest.mark.parametrize("shape", [[1, 64, 147], [1, 8, 4, 5], [1, 1, 4, 5], [2, 1, 3, 1],
                                   [1, 6, 1, 7], [5, 1]])
def test_every_axes_subset_matches_float64(shape):
    nodes, outputs, inits, want = [], [], [], {}
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    rank = len(shape)
    for count in range(1, rank + 1):
        for axes in itertools.combinations(range(rank), count):
            name = "axes_" + "_".join(map(str, axes))
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), name))
            for (op, f), keep in itertools.product(OPS.items(), (0, 1)):
                y = f"{op}_{name}_{keep}"
                if op == "ReduceSum":  # (its axes an input from opset 13, the others' from 18)
                    nodes.append(helper.make_node(op, ["x", name], [y], keepdims=keep))
                else:
                    nodes.append(helper.make_node(op, ["x"], [y], axes=axes, keepdims=keep))
                expected = f(x.astype(np.float64), axis=axes, keepdims=bool(keep))
                outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, expected.shape))
                want[y] = expected
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                       outputs, inits, opset=13)
    got = weft.compile(model.SerializeToString(), threads=2).run({"x": x})
    for y, expected in want.items():
        assert got[y].shape == expected.shape, y
        np.testing.assert_allclose(got[y], expected, rtol=1e-5, atol=1e-6, err_msg=y)


def test_column_partials_reused_across_shapes():
    """A COLUMN reduction split across threads keeps its partial rows in the thread's scratch
    from call to call (codegen/dialect.cc: weft_scratch): one compile for every shape, run
    with more columns, then fewer, then more rows, each against NumPy in float64."""
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["R", "K"])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["K"])],
                       [numpy_helper.from_array(np.array([0], np.int64), "axes")], opset=13)
    compiled = weft.compile(model.SerializeToString(), threads=2, dynamic_shapes=True)
    rng = np.random.default_rng(7)
    for shape in [(64, 600), (64, 3000), (64, 600), (2000, 40), (300, 1000)]:
        x = rng.standard_normal(shape).astype(np.float32)
        got = compiled.run({"x": x})["y"]
        np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4,
                                   err_msg=str(shape))


@pytest.mark.parametrize("columns", [1024, 1000, 77])
def test_masked_softmax_matches_float64(columns):
    # Where(mask, x, -inf) then Softmax, the bool mask read in the row's max and exp passes:
    # those passes take SIMD loops of 64 elements where a byte is read (emit_c_memory.cc,
    # cpu_strategy.cc), with tails after the last 64 (1000, 77).
    rows = 48
    rng = np.random.default_rng(columns)
    x = (3 * rng.standard_normal((2, rows, columns))).astype(np.float32)
    mask = rng.random((rows, columns)) < 0.7
    mask[:, 0] = True  # no row entirely masked
    model = make_model([helper.make_node("Where", ["m", "x", "ninf"], ["w"]),
                        helper.make_node("Softmax", ["w"], ["y"], axis=-1)],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
                        helper.make_tensor_value_info("m", TensorProto.BOOL, list(mask.shape))],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))],
                       [numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf")])
    got = weft.compile(model.SerializeToString()).run({"x": x, "m": mask})["y"]
    w = np.where(mask, x.astype(np.float64), -np.inf)
    e = np.exp(w - w.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=2e-6, atol=1e-30)
