"""A Transpose with the elementwise ops fused into it runs in tiles of 16 x 16 on the CPU where
the lines its plain loops would read do not stay in the L1 (Emitter::emit_transposing_tiles):
each tile computed reading contiguous rows, then stored transposed; an NHWC -> NCHW one too,
its H and W loops as one. Against float64 numpy, on extents that are and are not multiples of
16."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft
from models import make_model


def silu_of_transpose(rows, columns):
    """y = t * Sigmoid(t) + z, t = Transpose(x): z in y's layout, x [rows, columns]."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Sigmoid", ["t"], ["s"]), helper.make_node("Mul", ["t", "s"], ["m"]),
             helper.make_node("Add", ["m", "z"], ["y"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, columns]),
                              helper.make_tensor_value_info("z", TensorProto.FLOAT, [columns, rows])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [columns, rows])])


# Tiled: lines 4 KB apart (one L1 set), and 1,000 lines 1,200 bytes apart (more than the L1
# keeps) with tails on both loops. Plain: lines that stay in the L1, and narrow nests.
@pytest.mark.parametrize("rows, columns", [(256, 1024), (1000, 300), (37, 100), (100, 17), (3, 64)])
def test_a_transpose_with_ops_fused_matches_numpy(rows, columns):
    rng = np.random.default_rng(rows * columns)
    x = rng.standard_normal((rows, columns)).astype(np.float32) * 4
    z = rng.standard_normal((columns, rows)).astype(np.float32)
    got = weft.compile(silu_of_transpose(rows, columns).SerializeToString(), threads=2).run(
        {"x": x, "z": z})["y"]
    t = x.T.astype(np.float64)
    np.testing.assert_allclose(got, t / (1 + np.exp(-t)) + z, rtol=1e-5, atol=1e-6)


def glu_into_transpose(batch, channels, steps):
    """y = Transpose(a * Sigmoid(b)), [a, b] = Split(x) over the channels: a Conformer's GLU
    before its depthwise convolution, x [batch, 2 * channels, steps], y [batch, steps, channels].
    Over a batch, each Split half and the product fuse under the batch loop."""
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1),
             helper.make_node("Sigmoid", ["b"], ["s"]), helper.make_node("Mul", ["a", "s"], ["m"]),
             helper.make_node("Transpose", ["m"], ["y"], perm=[0, 2, 1])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            [batch, 2 * channels, steps])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, steps, channels])])


@pytest.mark.parametrize("batch, channels, steps", [(1, 40, 1024), (3, 40, 1024), (2, 24, 500)])
def test_glu_into_a_transpose_matches_numpy(batch, channels, steps):
    rng = np.random.default_rng(batch * steps)
    x = rng.standard_normal((batch, 2 * channels, steps)).astype(np.float32) * 4
    got = weft.compile(glu_into_transpose(batch, channels, steps).SerializeToString(),
                       threads=2).run({"x": x})["y"]
    a, b = x[:, :channels].astype(np.float64), x[:, channels:].astype(np.float64)
    np.testing.assert_allclose(got, np.transpose(a / (1 + np.exp(-b)), (0, 2, 1)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("batch, height, width, channels", [(1, 112, 112, 96), (2, 30, 17, 40)])
def test_nhwc_to_nchw_matches_numpy(batch, height, width, channels):
    """y = Relu(Transpose(x, [0, 3, 1, 2])): the output of a channels-last region."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Relu", ["t"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [batch, height, width, channels])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                      [batch, channels, height, width])])
    x = np.random.default_rng(channels).standard_normal((batch, height, width, channels)).astype(np.float32)
    got = weft.compile(model.SerializeToString(), threads=2).run({"x": x})["y"]
    np.testing.assert_array_equal(got, np.maximum(np.transpose(x, (0, 3, 1, 2)), 0))
