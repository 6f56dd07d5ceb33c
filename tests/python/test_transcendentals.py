"""Log, Softplus and Mish in generated kernels against float64 numpy, over inputs from denormals
to past the range of exp: the vectorizable weft_log (codegen/dialect.cc), Softplus as x past 20,
and Mish as x n / (n + 2), n = e^x (e^x + 2) (kernel/lower_elementwise.cc), both as the Mish op
(opset 18) and as the TorchScript exporter writes it, Softplus, Tanh and Mul (canonicalize.h);
GPT-2's tanh GELU spelled out, its 1 + tanh as a sigmoid (canonicalize.h);
Pow of non-integer exponents and Sin, Atan and Asinh as ONNX nodes (glibc's vector forms, declared
in the prelude; every such function is checked over the floats in codegen_test).
"""

import math

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


def test_tanh_gelu_matches_float64():
    # GPT-2's GELU as its exporter spells it, 0.5 x (1 + tanh(c (x + 0.044715 x^3))): 1 + tanh
    # runs as 2 sigmoid(2 u) (canonicalize_rewrites.h), which keeps its relative precision on
    # the negative side, where 1 + tanh(u) in f32 cancels to a few bits or 0.
    c = np.sqrt(2 / np.pi)
    const = {n: helper.make_tensor(n, TensorProto.FLOAT, [], [v])
             for n, v in (("three", 3.0), ("k", 0.044715), ("c", c), ("one", 1.0), ("half", 0.5))}
    nodes = [helper.make_node("Pow", ["x", "three"], ["x3"]), helper.make_node("Mul", ["x3", "k"], ["kx3"]),
             helper.make_node("Add", ["x", "kx3"], ["in"]), helper.make_node("Mul", ["in", "c"], ["u"]),
             helper.make_node("Tanh", ["u"], ["t"]), helper.make_node("Add", ["one", "t"], ["p"]),
             helper.make_node("Mul", ["x", "half"], ["hx"]), helper.make_node("Mul", ["hx", "p"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])],
                              list(const.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.concatenate([np.random.default_rng(5).uniform(-12, 12, N - 6),
                        [0, -0.0, 1e30, -1e30, np.inf, np.nan]]).astype(np.float32)
    y = weft.compile(model.SerializeToString(), threads=2).run({"x": x})["y"]
    f = np.float32
    with np.errstate(all="ignore"):
        # u in f32 as the model computes it (a relative error of u is 2|u| times as large in
        # e^2u), the rest in f64: 0.5 x (1 + tanh(u)) = x / (1 + e^-2u), without cancellation.
        u = ((x + (x * x * x) * f(0.044715)) * f(c)).astype(np.float64)
        want = x.astype(np.float64) / (1 + np.exp(-2 * u))
    small = np.abs(want) < 1e-36  # exp's flush to 0 (docs/status.md)
    assert np.all(np.abs(y[small]) < 1e-36), y[small]
    # An ulp of u moves e^-2u by 2|u| ulps, and u rounds 4 times (the kernel may fuse a Mul and
    # an Add, or not): 1 + tanh(u) in f32 is off by 7e-4 of it at u = -5, where this allows 2.6e-6.
    with np.errstate(invalid="ignore"):
        rtol = (8 * np.abs(u) + 4) * 2.0 ** -24
        bad = ~small & ~(np.abs(y - want) <= rtol * np.abs(want)) & ~(np.isnan(want) & np.isnan(y))
    bad &= ~(y == want)  # the infinities
    assert not bad.any(), list(zip(x[bad], y[bad], want[bad]))[:5]


@pytest.mark.parametrize("before", ["Relu", "Clip", "Where"])
@pytest.mark.parametrize("fn", ["Exp", "Log", "Sigmoid", "Erf", "Softplus"])
def test_functions_of_selects_match_float64(before, fn):
    # A Relu, Clip or Where before exp, log or erf prints as a bit blend (emit_c.cc:
    # blended_selects), which GCC vectorizes; the values are the select's, NaN and -0 included.
    x = inputs()
    lo, hi = np.float32(-30), np.float32(20)
    pre = {"Relu": [helper.make_node("Relu", ["x"], ["a"])],
           "Clip": [helper.make_node("Clip", ["x", "lo", "hi"], ["a"])],
           "Where": [helper.make_node("Less", ["x", "lo"], ["c"]),
                     helper.make_node("Where", ["c", "lo", "x"], ["a"])]}[before]
    graph = helper.make_graph(pre + [helper.make_node(fn, ["a"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])],
                              [helper.make_tensor("lo", TensorProto.FLOAT, [], [lo]),
                               helper.make_tensor("hi", TensorProto.FLOAT, [], [hi])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    y = weft.compile(model.SerializeToString(), threads=2).run({"x": x})["y"]
    with np.errstate(all="ignore"):
        a = {"Relu": np.where(x > 0, x, np.where(np.isnan(x), x, 0)), "Clip": np.clip(x, lo, hi),
             "Where": np.where(x < lo, lo, x)}[before].astype(np.float64)
        want = {"Exp": np.exp, "Log": np.log, "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
                "Erf": np.vectorize(math.erf), "Softplus": softplus}[fn](a)
    flushed = (np.abs(want) < np.finfo(np.float32).tiny) & (want != 0)  # exp's flush (docs/status.md)
    assert np.all(np.abs(y[flushed]) < 2 * np.finfo(np.float32).tiny), y[flushed]
    assert np.array_equal(np.signbit(y[a == 0]), np.signbit(want[a == 0].astype(np.float32)))
    close(y[~flushed], want[~flushed].astype(np.float32), 4e-7)


@pytest.mark.parametrize("fn", ["Exp", "Log", "Erf"])
def test_functions_of_exp_match_float64(fn):
    # exp's result taken by another function with range checks prints as weft_exp_blended
    # (its final select a bit blend; the loop was scalar). The reference takes the f32 exp,
    # 0 below -87.34 as Weft's (docs/status.md), inf past 88.72.
    x = inputs()
    graph = helper.make_graph([helper.make_node("Exp", ["x"], ["a"]), helper.make_node(fn, ["a"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    y = weft.compile(model.SerializeToString(), threads=2).run({"x": x})["y"]
    with np.errstate(all="ignore"):
        a = np.where(x < -87.33654, 0, np.exp(x.astype(np.float64)).astype(np.float32)).astype(np.float64)
        want = {"Exp": np.exp, "Log": np.log, "Erf": np.vectorize(math.erf)}[fn](a)
        want = want.astype(np.float32).astype(np.float64)  # inf past FLT_MAX, as Weft's
        # Weft's exp may be an ulp from the rounded one (2.4e-7 of a), which the second
        # function scales by its derivative: |want| a for exp, 1 / a for log, below 1.13 a for erf.
        moved = 2.4e-7 * {"Exp": np.abs(want) * a, "Log": 1.0, "Erf": 1.13 * a}[fn]
        ok = (np.abs(y - want) <= 4e-7 * np.abs(want) + moved) | (y == want) | (np.isnan(y) & np.isnan(want))
    assert ok.all(), list(zip(x[~ok], y[~ok], want[~ok]))[:5]


@pytest.mark.parametrize("form", ["x^1.7", "2.5^x", "x^y"])
def test_pow_matches_float64(form):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0, 50, N - 12), [0, -0.0, 1e-45, 1e-30, 1, 2, 1e30, 3e38,
                                                     np.inf, -1.5, -2, np.nan]]).astype(np.float32)
    y_in = rng.uniform(-4, 4, N).astype(np.float32)
    if form == "2.5^x":
        x = np.clip(x, -np.inf, 120).astype(np.float32) - 60  # 2.5^x from 1e-24 to 1e24
    nodes = [helper.make_node("Pow", ["x", "e"] if form == "x^1.7" else
                              (["b", "x"] if form == "2.5^x" else ["x", "z"]), ["y"])]
    inits = {"x^1.7": [helper.make_tensor("e", TensorProto.FLOAT, [], [1.7])],
             "2.5^x": [helper.make_tensor("b", TensorProto.FLOAT, [], [2.5])], "x^y": []}[form]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])]
    if form == "x^y":
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [N]))
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feed = {"x": x} if form != "x^y" else {"x": x, "z": y_in}
    got = weft.compile(model.SerializeToString(), threads=2).run(feed)["y"]
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = {"x^1.7": lambda: xd ** np.float64(np.float32(1.7)), "2.5^x": lambda: 2.5 ** xd,
                "x^y": lambda: xd ** y_in.astype(np.float64)}[form]()
        want = want.astype(np.float32)  # inf past FLT_MAX, as Weft's
    close(got, want, 2.4e-7)


@pytest.mark.parametrize("op,lo,hi,ulps", [("Sin", -1e4, 1e4, 2), ("Atan", -100, 100, 3),
                                           ("Asinh", -1e6, 1e6, 2)])
def test_trigonometric_ops_match_float64(op, lo, hi, ulps):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(lo, hi, N - 6), [0, -0.0, 1e-30, np.inf, -np.inf, np.nan]])
    x = x.astype(np.float32)
    got = compile_model([helper.make_node(op, ["x"], ["y"])], 17).run({"x": x})["y"]
    with np.errstate(invalid="ignore"):
        want = {"Sin": np.sin, "Atan": np.arctan, "Asinh": np.arcsinh}[op](x.astype(np.float64))
    close(got, want, ulps * 1.2e-7)
