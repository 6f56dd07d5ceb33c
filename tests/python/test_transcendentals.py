"""Log, Softplus and Mish in generated kernels against float64 numpy, over inputs from denormals
to past the range of exp: the vectorizable weft_log (codegen/dialect.cc), Softplus as x past 20,
and Mish as x n / (n + 2), n = e^x (e^x + 2) (kernel/lower_elementwise.cc), both as the Mish op
(opset 18) and as the TorchScript exporter writes it, Softplus, Tanh and Mul (canonicalize.h).
"""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft

N = 4099  # not a multiple of a vector's lanes


def compile_model(nodes, opset, elem=TensorProto.FLOAT, n=N):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [n])],
                              [helper.make_tensor_value_info("y", elem, [n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return weft.compile(model.SerializeToString(), threads=2)


def inputs(dtype=np.float32):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-30, 30, N - 20), [0, -0.0, 1, -1, 19.99, 20, 20.01, 44, 45, 88,
                                                       89, 100, 1e30, -20, -87, -88, -100, -1e30,
                                                       np.inf, np.nan]])
    return x.astype(dtype)


def softplus(x):
    with np.errstate(invalid="ignore"):  # NaN
        return np.logaddexp(x, 0)


def mish(x):
    return x * np.tanh(softplus(x))


def close(got, want, rtol):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30, equal_nan=True)


def test_log_over_every_binade():
    x = np.concatenate([np.exp2(np.arange(-149, 128, 0.37)), [1e-45, 0.0, -0.0, -1.0, np.inf,
                                                               np.nan, 1.0, 0.7071068, 1.4142135]])
    x = x.astype(np.float32)
    y = compile_model([helper.make_node("Log", ["x"], ["y"])], 17, n=len(x)).run({"x": x})["y"]
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(x.astype(np.float64))
    close(y, want, 1.2e-7)


@pytest.mark.parametrize("dtype,elem,rtol", [(np.float32, TensorProto.FLOAT, 1e-6),
                                             (np.float64, TensorProto.DOUBLE, 1e-12)])
def test_softplus_is_x_where_it_rounds_to_x(dtype, elem, rtol):
    x = inputs(dtype)
    y = compile_model([helper.make_node("Softplus", ["x"], ["y"])], 17, elem).run({"x": x})["y"]
    want = softplus(x.astype(np.float64))
    want[x < -87.3] = 0 if dtype == np.float32 else want[x < -87.3]  # weft_exp flushes there
    close(y, want, rtol)


@pytest.mark.parametrize("form", ["op", "torchscript"])
def test_mish_matches_float64(form):
    nodes = ([helper.make_node("Mish", ["x"], ["y"])] if form == "op" else
             [helper.make_node("Softplus", ["x"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
              helper.make_node("Mul", ["x", "t"], ["y"])])
    x = inputs()
    y = compile_model(nodes, 18 if form == "op" else 17).run({"x": x})["y"]
    want = mish(x.astype(np.float64))
    small = x < -87.3  # e^x below FLT_MIN: 0 (docs/status.md), so -0 where mish is -1e-38 or less
    assert np.all(np.abs(y[small]) < 1e-37), y[small]
    close(y[~small], want[~small], 2e-6)
