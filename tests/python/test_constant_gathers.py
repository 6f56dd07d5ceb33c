"""Gathers at constant indices: a scalar (PyTorch's select) or evenly stepped positions (a
strided slice, reversed, repeated) lower to plain loads that fusion views through; others stay
indirect. PyTorch's head split (nn.MultiheadAttention: select q, k, v from the projection, then
Reshape and Transpose to heads) runs as copies straight from the projection. Against numpy."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


@pytest.mark.parametrize("indices, axis", [(2, 0), (-1, 1), ([4, 2, 0], 1), ([0, 3, 6], 1),
                                           ([2, 2, 2], 1), ([-5, -3, -1], 0), ([1, 3, 4], 1)])
def test_a_gather_at_constant_indices_matches_numpy(indices, axis):
    x = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    want = np.maximum(np.take(x, indices, axis=axis), 0)
    i = numpy_helper.from_array(np.array(indices, dtype=np.int64), "i")
    model = make_model([helper.make_node("Gather", ["x", "i"], ["g"], axis=axis),
                        helper.make_node("Relu", ["g"], ["y"])],
                       [f32("x", x.shape)], [f32("y", want.shape)], [i])
    got = weft.compile(model.SerializeToString()).run({"x": x})["y"]
    np.testing.assert_array_equal(got, want)


def test_pytorch_head_split_matches_numpy():
    s, b, h, d = 24, 2, 3, 8
    e = h * d
    x = np.random.default_rng(1).standard_normal((s, b, 3 * e)).astype(np.float32)
    nodes = [helper.make_node("Reshape", ["x", "s4"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1, 3])]
    outputs, want = [], {}
    parts = x.reshape(s, b, 3, e).transpose(2, 0, 1, 3)
    for j, (name, perm) in enumerate((("q", [1, 0, 2]), ("k", [1, 2, 0]), ("v", [1, 0, 2]))):
        nodes += [helper.make_node("Gather", ["t", f"i{j}"], [name + "_sel"], axis=0),
                  helper.make_node("Reshape", [name + "_sel", "s3"], [name + "_heads"]),
                  helper.make_node("Transpose", [name + "_heads"], [name], perm=perm)]
        want[name] = parts[j].reshape(s, b * h, d).transpose(perm)
        outputs.append(f32(name, want[name].shape))
    inits = [numpy_helper.from_array(np.array([s, b, 3, e], dtype=np.int64), "s4"),
             numpy_helper.from_array(np.array([s, b * h, d], dtype=np.int64), "s3")]
    inits += [numpy_helper.from_array(np.array(j, dtype=np.int64), f"i{j}") for j in range(3)]
    model = make_model(nodes, [f32("x", x.shape)], outputs, inits)
    got = weft.compile(model.SerializeToString()).run({"x": x})
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_a_gather_from_an_empty_axis_is_refused():
    """Every index is out of range there (ONNX Runtime fails at run time); it had read outside
    the data. Gathering no indices from it is fine."""
    data = numpy_helper.from_array(np.zeros([0, 3], np.float32), "d")

    def build(count):
        return make_model([helper.make_node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
                           helper.make_node("Slice", ["i", "zero", "count"], ["some"]),
                           helper.make_node("Gather", ["d", "some"], ["y"])],
                          [f32("x", (4, 3))], [f32("y", (count, 3))],
                          [data, numpy_helper.from_array(np.array([0], np.int64), "zero"),
                           numpy_helper.from_array(np.array([count], np.int64), "count")]).SerializeToString()

    with pytest.raises(weft.WeftError, match="Gather.*gathers along axis 0, which is empty"):
        weft.compile(build(4))
    got = weft.compile(build(0)).run({"x": np.ones((4, 3), np.float32)})["y"]
    assert got.shape == (0, 3)
