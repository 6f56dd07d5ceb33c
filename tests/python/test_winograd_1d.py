"""1-D convolutions of stride 1 with enough channels run on the CPU as Weft's own Winograd
kernel, F(4, 3) over their taps in chunks of 3 (library/winograd_1d.cc): long and short
windows, taps not a multiple of 3, dilations, lengths not a multiple of 4, asymmetric and no
padding, batches, output channels in half groups, ReLU and a residual Add in the epilogue;
against NumPy in float64. Small ones stay oneDNN's, and WEFT_WINOGRAD=0 turns the kernel off."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cli_kernels, make_model

WINOGRAD = "Weft Winograd F(4, 3)"


def has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read().split()
        return "avx2" in flags and "fma" in flags
    except OSError:
        return False


def conv1d_model(n, c, m, length, taps, pads, rng, bias=True, relu=False, residual=False,
                 dilation=1):
    """y = Conv(x, w, b) [+ r] [-> Relu]; returns the model and its weights and bias."""
    w = (rng.standard_normal((m, c, taps)) / np.sqrt(c * taps)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32) if bias else None
    out_len = length + pads[0] + pads[1] - dilation * (taps - 1)
    inits = [numpy_helper.from_array(w, "w")]
    conv_inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(b, "b"))
        conv_inputs.append("b")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, length])]
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], kernel_shape=[taps], pads=list(pads),
                              dilations=[dilation])]
    last = "c"
    if residual:
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [n, m, out_len]))
        nodes.append(helper.make_node("Add", [last, "r"], ["s"]))
        last = "s"
    if relu:
        nodes.append(helper.make_node("Relu", [last], ["a"]))
        last = "a"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m, out_len])]
    return make_model(nodes, inputs, outputs, inits), w, b


def reference(x, w, b, pads, r, relu, dilation=1):
    x, w = x.astype(np.float64), w.astype(np.float64)
    x = np.pad(x, ((0, 0), (0, 0), pads))
    taps = w.shape[2]
    out_len = x.shape[2] - dilation * (taps - 1)
    y = np.zeros((x.shape[0], w.shape[0], out_len))
    for k in range(taps):
        y += np.einsum("mc,ncl->nml", w[:, :, k], x[:, :, k * dilation:k * dilation + out_len])
    if b is not None:
        y += b.astype(np.float64)[None, :, None]
    if r is not None:
        y += r
    return np.maximum(y, 0) if relu else y


# (batch, channels in, out, length, taps, pads, bias, relu, residual[, dilation])
CASES = [
    (1, 64, 128, 1000, 15, (7, 7), True, True, False),   # the byte-level classifier's, shorter
    (2, 192, 96, 517, 3, (1, 1), False, False, False),   # 96 outputs: a half group with AVX-512
    (1, 384, 384, 300, 4, (2, 1), True, False, False),   # 4 taps: 2 chunks, the last padded
    (1, 128, 128, 640, 3, (1, 1), True, True, True),     # a residual, then ReLU
    (1, 128, 128, 600, 16, (0, 0), True, False, False),  # no padding
    (1, 96, 384, 750, 3, (1, 1), True, False, False),    # Whisper's first convolution, shorter
    (1, 256, 256, 701, 3, (3, 3), True, True, True, 3),  # HiFi-GAN's dilated blocks, 701 = 3k + 2
    (2, 256, 256, 400, 7, (15, 15), False, False, False, 5),  # 7 taps 5 apart
]


@pytest.mark.parametrize("n,c,m,length,taps,pads,bias,relu,residual,dilation",
                         [case + (1,) * (10 - len(case)) for case in CASES])
def test_winograd_1d_matches_float64(n, c, m, length, taps, pads, bias, relu, residual, dilation):
    rng = np.random.default_rng(taps * 1000 + c)
    model, w, b = conv1d_model(n, c, m, length, taps, pads, rng, bias, relu, residual, dilation)
    x = rng.standard_normal((n, c, length)).astype(np.float32)
    feeds = {"x": x}
    out_len = length + pads[0] + pads[1] - dilation * (taps - 1)
    r = None
    if residual:
        r = rng.standard_normal((n, m, out_len)).astype(np.float32)
        feeds["r"] = r
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    if has_avx2():
        assert [k["strategy"] for k in kernels if WINOGRAD in k["strategy"]], kernels
    want = reference(x, w, b, pads, r, relu, dilation)
    y = got["y"]
    assert y.shape == want.shape
    # Against float64 the kernel's largest error on these is 1e-6 to 5e-6 of the largest output,
    # oneDNN's direct kernel's 2e-7 to 1.2e-6 (Winograd's transforms round more).
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_small_convolutions_stay_onednn():
    """32 -> 32 channels and 3 taps save too few products for the transforms' traffic."""
    rng = np.random.default_rng(1)
    model, w, b = conv1d_model(1, 32, 32, 4096, 3, (1, 1), rng)
    x = rng.standard_normal((1, 32, 4096)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    assert not [k for k in kernels if WINOGRAD in k["strategy"]], kernels
    y = got["y"]
    np.testing.assert_allclose(y, reference(x, w, b, (1, 1), None, False), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not has_avx2(), reason="Weft's Winograd kernels need AVX2")
def test_the_knob_turns_the_kernel_off(tmp_path):
    """WEFT_WINOGRAD=0 (docs/knobs.md): oneDNN's direct convolution runs instead."""
    model, _, _ = conv1d_model(1, 128, 128, 1024, 15, (7, 7), np.random.default_rng(2))
    path = tmp_path / "conv1d.onnx"
    path.write_bytes(model.SerializeToString())
    for value, calls in (("1", 1), ("0", 0)):
        out = cli_kernels(path, {"WEFT_WINOGRAD": value})
        assert out.count(WINOGRAD) == calls, out
