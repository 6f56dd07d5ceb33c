"""QLinearConv and QLinearMatMul with scales per tensor, per output channel (the weights of a
model that ONNX Runtime's quantizer wrote with per_channel=True) and per row and column,
against a numpy reference that sums in integers and requantizes in float32 as the kernels do:
round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zero, saturated. Bit for bit."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model


def requantize(acc, a_scale, b_scale, y_scale, y_zero, dtype):
    scale = (np.float32(a_scale) * np.float32(b_scale)).astype(np.float32) / np.float32(y_scale)
    q = np.rint(acc.astype(np.float32) * scale.astype(np.float32)) + np.float32(y_zero)
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def conv_reference(x, x_zero, w, w_zero, bias, pads):
    """The integer sum of a 2-D convolution, [N, M, H', W'] (stride 1)."""
    xi = np.pad(x.astype(np.int64) - int(x_zero), [(0, 0), (0, 0), (pads, pads), (pads, pads)])
    wi = w.astype(np.int64) - w_zero.astype(np.int64).reshape(-1, 1, 1, 1)
    m, c, kh, kw = wi.shape
    oh, ow = xi.shape[2] - kh + 1, xi.shape[3] - kw + 1
    acc = np.zeros((x.shape[0], m, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            acc += np.einsum("nchw,mc->nmhw", xi[:, :, i:i + oh, j:j + ow], wi[:, :, i, j])
    return acc + bias.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("activation", [TensorProto.UINT8, TensorProto.INT8])
def test_qlinear_conv_with_weight_scales_per_output_channel(per_channel, activation):
    rng = np.random.default_rng(3)
    x_type = np.uint8 if activation == TensorProto.UINT8 else np.int8
    x_zero = np.array(128 if x_type == np.uint8 else 3, x_type)
    m = 8
    w = rng.integers(-127, 128, (m, 4, 3, 3)).astype(np.int8)
    w_scale = (rng.uniform(0.001, 0.01, m) if per_channel else np.array(0.004)).astype(np.float32)
    w_zero = np.zeros(m if per_channel else (), np.int8)
    bias = rng.integers(-2000, 2000, m).astype(np.int32)
    x_scale, y_scale = np.float32(0.02), np.float32(0.25)
    y_zero = np.array(120 if x_type == np.uint8 else -5, x_type)
    inits = [numpy_helper.from_array(np.array(x_scale), "xs"), numpy_helper.from_array(x_zero, "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_scale, "ws"),
             numpy_helper.from_array(w_zero, "wz"), numpy_helper.from_array(np.array(y_scale), "ys"),
             numpy_helper.from_array(y_zero, "yz"), numpy_helper.from_array(bias, "b")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1])
    model = make_model([node], [helper.make_tensor_value_info("x", activation, [2, 4, 9, 7])],
                       [helper.make_tensor_value_info("y", activation, [2, m, 9, 7])], inits)
    compiled = weft.compile(model.SerializeToString())
    info = np.iinfo(x_type)
    x = rng.integers(info.min, info.max + 1, (2, 4, 9, 7)).astype(x_type)
    acc = conv_reference(x, x_zero, w, np.broadcast_to(w_zero, (m,)), bias, 1)
    want = requantize(acc, x_scale, np.broadcast_to(w_scale, (m,)).reshape(1, m, 1, 1), y_scale,
                      y_zero, x_type)
    got = compiled.run({"x": x})["y"]
    assert 0.05 < np.mean((got != info.min) & (got != info.max))  # mostly not saturated
    np.testing.assert_array_equal(got, want)


def test_qlinear_matmul_with_scales_per_row_and_column():
    rng = np.random.default_rng(4)
    rows, k, columns = 5, 12, 6
    a = rng.integers(0, 256, (rows, k)).astype(np.uint8)
    b = rng.integers(-127, 128, (k, columns)).astype(np.int8)
    a_scale = rng.uniform(0.01, 0.03, rows).astype(np.float32)
    b_scale = rng.uniform(0.002, 0.02, columns).astype(np.float32)
    a_zero, b_zero = np.array(128, np.uint8), np.zeros(columns, np.int8)
    y_scale, y_zero = np.float32(0.05), np.array(128, np.uint8)
    inits = [numpy_helper.from_array(a_scale, "as"), numpy_helper.from_array(a_zero, "az"),
             numpy_helper.from_array(b, "b"), numpy_helper.from_array(b_scale, "bs"),
             numpy_helper.from_array(b_zero, "bz"), numpy_helper.from_array(np.array(y_scale), "ys"),
             numpy_helper.from_array(y_zero, "yz")]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = make_model([node], [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])],
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, [rows, columns])], inits)
    got = weft.compile(model.SerializeToString()).run({"a": a})["y"]
    acc = (a.astype(np.int64) - 128) @ b.astype(np.int64)
    want = requantize(acc, a_scale[:, None], b_scale[None, :], y_scale, y_zero, np.uint8)
    assert 0.05 < np.mean((got != 0) & (got != 255))
    np.testing.assert_array_equal(got, want)


def test_qlinear_scales_of_other_lengths_are_one_clear_error():
    """A weight scale per input channel is no layout ONNX defines: one error naming the node."""
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(np.ones((8, 4, 3, 3), np.int8), "w"),
             numpy_helper.from_array(np.full(4, 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.25, np.float32), "ys"),
             numpy_helper.from_array(np.array(120, np.uint8), "yz")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                            name="conv_7")
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 5, 5])],
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 8, 3, 3])], inits)
    with pytest.raises(weft.WeftError, match=r"conv_7.*QLinearConv.*w_scale must have one element or 8"):
        weft.compile(model.SerializeToString())
