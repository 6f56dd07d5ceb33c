"""Random values (library/random_call.h): RandomNormal, RandomUniform, their -Like forms and
Bernoulli draw new values at each run from a generator each call holds, seeded by the node's
seed where it has one. The values are not numpy's, so the checks are of the distributions
(moments of 100,000 draws, with seeds: the same outcome every time), the ranges, types and
shapes, and of which runs repeat."""

import numpy as np
import onnx
from onnx import TensorProto, helper

import weft


def compile_model(nodes, inputs, outputs, opset=17, **options):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return weft.compile(model.SerializeToString(), **options)


def value(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def test_normal_moments_and_fresh_draws():
    """mean 2, scale 3 over [200, 500]: each run new values; a seed gives the same runs in
    every session, no seed different ones."""
    def make(**seed):
        return compile_model([helper.make_node("RandomNormal", [], ["y"], shape=[200, 500],
                                               mean=2.0, scale=3.0, **seed)],
                             [], [value("y", TensorProto.FLOAT, [200, 500])])
    c = make(seed=5.0)
    first, second = c.run({})["y"], c.run({})["y"]
    assert first.dtype == np.float32 and first.shape == (200, 500)
    assert abs(first.mean() - 2.0) < 0.05 and abs(first.std() - 3.0) < 0.05
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(make(seed=5.0).run({})["y"], first)
    assert not np.array_equal(make().run({})["y"], make().run({})["y"])


def test_uniform_like_range_type_and_shape():
    """low -1, high 5, f64 by the dtype attribute, the shape of an f32 input."""
    c = compile_model([helper.make_node("RandomUniformLike", ["x"], ["y"], low=-1.0, high=5.0,
                                        seed=3.0, dtype=TensorProto.DOUBLE)],
                      [value("x", TensorProto.FLOAT, [100, 1000])],
                      [value("y", TensorProto.DOUBLE, [100, 1000])])
    y = c.run({"x": np.zeros((100, 1000), np.float32)})["y"]
    assert y.dtype == np.float64 and y.shape == (100, 1000)
    assert y.min() >= -1.0 and y.max() < 5.0
    assert abs(y.mean() - 2.0) < 0.05 and abs(y.std() - 6 / np.sqrt(12)) < 0.05


def test_bernoulli_follows_each_probability():
    """Probabilities 0, 1 and 0.25 in one input; the result as int32 (the dtype attribute)."""
    p = np.concatenate([np.zeros(1000), np.ones(1000), np.full(100000, 0.25)]).astype(np.float32)
    c = compile_model([helper.make_node("Bernoulli", ["p"], ["y"], seed=1.0,
                                        dtype=TensorProto.INT32)],
                      [value("p", TensorProto.FLOAT, [p.size])],
                      [value("y", TensorProto.INT32, [p.size])], opset=15)
    y = c.run({"p": p})["y"]
    assert y.dtype == np.int32
    assert (y[:1000] == 0).all() and (y[1000:2000] == 1).all()
    assert set(np.unique(y)) <= {0, 1} and abs(y[2000:].mean() - 0.25) < 0.01


def test_normal_like_half_over_symbolic_dims():
    """f16 noise of an input's shape, compiled once for any number of rows, fed to a kernel."""
    c = compile_model([helper.make_node("RandomNormalLike", ["x"], ["r"], seed=2.0),
                       helper.make_node("Mul", ["r", "x"], ["y"])],
                      [value("x", TensorProto.FLOAT16, ["n", 100])],
                      [value("y", TensorProto.FLOAT16, ["n", 100])], dynamic_shapes=True)
    for n in (1, 1000):
        y = c.run({"x": np.full((n, 100), 2, np.float16)})["y"]
        assert y.dtype == np.float16 and y.shape == (n, 100)
    y = y.astype(np.float32) / 2
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02


def test_multinomial_draws_each_class_by_its_probability():
    """Logits of probabilities 0.1-0.4 and of one certain class (the others -inf): 20,000 draws
    a row, as int64."""
    p = np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, 0.0, 0.0]])
    with np.errstate(divide="ignore"):
        logits = np.log(p).astype(np.float32) + 3.0  # unnormalized
    c = compile_model([helper.make_node("Multinomial", ["x"], ["y"], sample_size=20000, seed=4.0,
                                        dtype=TensorProto.INT64)],
                      [value("x", TensorProto.FLOAT, [2, 4])],
                      [value("y", TensorProto.INT64, [2, 20000])], opset=13)
    y = c.run({"x": logits})["y"]
    assert y.dtype == np.int64 and y.shape == (2, 20000)
    np.testing.assert_allclose(np.bincount(y[0], minlength=4) / 20000, p[0], atol=0.01)
    assert (y[1] == 0).all()


def test_training_dropout_masks_and_scales():
    """Dropout with training_mode true (opset 13): the mask keeps each element with
    probability 1 - ratio (here 0.7), the output is x * mask / (1 - ratio); each run draws a
    new mask, a seed repeats them; a ratio of 0 keeps every element."""
    def make(ratio, **seed):
        inits = [helper.make_tensor("r", TensorProto.FLOAT, [], [ratio]),
                 helper.make_tensor("t", TensorProto.BOOL, [], [True])]
        graph = helper.make_graph(
            [helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], **seed)], "g",
            [value("x", TensorProto.FLOAT, [200, 500])],
            [value("y", TensorProto.FLOAT, [200, 500]), value("m", TensorProto.BOOL, [200, 500])],
            inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return weft.compile(model.SerializeToString())
    x = np.random.default_rng(0).standard_normal((200, 500)).astype(np.float32) + 3
    c = make(0.3)
    first, second = c.run({"x": x}), c.run({"x": x})
    mask = first["m"]
    assert mask.dtype == np.bool_ and abs(mask.mean() - 0.7) < 0.01
    np.testing.assert_allclose(first["y"], np.where(mask, x / np.float32(0.7), 0), rtol=1e-6)
    assert not np.array_equal(mask, second["m"])
    seeded = make(0.3, seed=7).run({"x": x})["m"]
    np.testing.assert_array_equal(make(0.3, seed=7).run({"x": x})["m"], seeded)
    kept = make(0.0).run({"x": x})
    np.testing.assert_array_equal(kept["y"], x)
    assert kept["m"].all()
