"""Depthwise convolutions and max poolings as generated code (WEFT_DEPTHWISE=generated;
codegen's taps in registers: blocks of lanes, with constant tap loops inside the image where
the window is padded), against NumPy in float64. Channels that fill whole registers and not
(40: 32 + 8, 44: a remainder), strides 1 and 2, 3x3 and 5x5 windows, padded and not.
The knob is read once per process, so each model runs through the CLI (WEFT_CLI)."""

import os
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

from models import make_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("WEFT_CLI", os.path.join(ROOT, "build", "tools", "weft", "weft"))


def depthwise_reference(x, w, b, stride, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    k = w.shape[2]
    side = (x.shape[2] - k) // stride + 1
    y = np.zeros((x.shape[0], x.shape[1], side, side)) + b.astype(np.float64)[None, :, None, None]
    for i in range(k):
        for j in range(k):
            y += w[None, :, 0, i, j, None, None].astype(np.float64) * \
                x[:, :, i:i + stride * side:stride, j:j + stride * side:stride]
    return np.clip(y, 0, 6)


def max_pool_reference(x, k, stride, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
               constant_values=-np.inf)
    side = (x.shape[2] - k) // stride + 1
    y = np.full((x.shape[0], x.shape[1], side, side), -np.inf)
    for i in range(k):
        for j in range(k):
            y = np.maximum(y, x[:, :, i:i + stride * side:stride, j:j + stride * side:stride])
    return y


def run_cli(tmp_path, model, x, env):
    """The model's output y, and its kernels' source (WEFT_DUMP_DIR)."""
    path, inp = tmp_path / "m.onnx", tmp_path / "x.npy"
    save(model, str(path))
    np.save(inp, x)
    out, dump = tmp_path / "out", tmp_path / "dump"
    subprocess.run([CLI, "run", str(path), "--input", f"x={inp}", "--output-dir", str(out),
                    "--threads", "2"], check=True, capture_output=True,
                   env=dict(os.environ, WEFT_DUMP_DIR=str(dump), **env))
    source = "".join(p.read_text() for p in dump.rglob("kernels.cc"))
    return np.load(out / "y.npy"), source


# (channels, side, kernel, stride, pad); without padding no interior branch.
CASES = [(32, 20, 3, 1, 1), (40, 17, 3, 2, 1), (44, 15, 5, 1, 2), (144, 14, 3, 1, 1),
         (48, 15, 3, 2, 0)]


@pytest.mark.parametrize("c,side,k,stride,pad", CASES)
def test_generated_depthwise_matches_float64(tmp_path, c, side, k, stride, pad):
    rng = np.random.default_rng(c)
    # Two depthwise convolutions with a Clip after each (MobileNetV2's ReLU6): both generated,
    # the first one's output channels-last between them.
    w = [(rng.standard_normal((c, 1, k, k)) / k).astype(np.float32) for _ in range(2)]
    b = [rng.standard_normal(c).astype(np.float32) for _ in range(2)]
    nodes, last = [], "x"
    for i in range(2):
        s = stride if i == 0 else 1
        nodes += [helper.make_node("Conv", [last, f"w{i}", f"b{i}"], [f"c{i}"], group=c,
                                   kernel_shape=[k, k], pads=[pad] * 4, strides=[s, s]),
                  helper.make_node("Clip", [f"c{i}", "lo", "hi"], ["y" if i else f"r{i}"])]
        last = f"r{i}"
    inits = [numpy_helper.from_array(a, f"w{i}") for i, a in enumerate(w)]
    inits += [numpy_helper.from_array(a, f"b{i}") for i, a in enumerate(b)]
    inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
              numpy_helper.from_array(np.array(6, np.float32), "hi")]
    out_side = (side + 2 * pad - k) // stride + 1 + 2 * pad - k + 1
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, side, side])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, out_side, out_side])],
                       inits)
    x = rng.standard_normal((1, c, side, side)).astype(np.float32) * 4
    got, source = run_cli(tmp_path, model, x, {"WEFT_DEPTHWISE": "generated"})
    assert ("every tap inside" in source) == (pad > 0)
    want = depthwise_reference(depthwise_reference(x, w[0], b[0], stride, pad), w[1], b[1], 1, pad)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c,side,k,stride,pad", CASES)
def test_generated_max_pool_matches_float64(tmp_path, c, side, k, stride, pad):
    rng = np.random.default_rng(c + 1)
    # Between two 1x1 convolutions, so that the pooling runs channels-last (generated code).
    w = [(rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(np.float32) for _ in range(2)]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c"]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[k, k], pads=[pad] * 4,
                              strides=[stride, stride]),
             helper.make_node("Conv", ["p", "w1"], ["y"])]
    out_side = (side + 2 * pad - k) // stride + 1
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, side, side])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, out_side, out_side])],
                       [numpy_helper.from_array(a, f"w{i}") for i, a in enumerate(w)])
    x = rng.standard_normal((1, c, side, side)).astype(np.float32)
    got, source = run_cli(tmp_path, model, x, {})
    assert ("every tap inside" in source) == (pad > 0)
    mix = lambda a, v: np.einsum("mc,nchw->nmhw", a[:, :, 0, 0].astype(np.float64), v)
    want = mix(w[1], max_pool_reference(mix(w[0], x.astype(np.float64)), k, stride, pad))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
