"""2-D convolutions of few output channels run on the CPU as Weft's own kernel
(library/few_outputs_conv.cc), where oneDNN's put the output channels along the vector: an
image-to-image model's last convolution, 64 -> 3 channels. Paddings that cut into the windows
(rows of taps and taps along a row), strides, a dilation between rows, batches, 1 to 6 output
channels, widths that are not a multiple of the kernel's blocks of pixels and runs of taps
that are not a multiple of its registers; against NumPy in
float64. A Tanh after the convolution stays generated code. Convolutions of many output
channels stay oneDNN's, and WEFT_FEW_OUTPUTS=0 turns the kernel off."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cli_kernels, cpu_flags, make_model

FEW = "Weft convolution of few outputs"


def runs_by_default(c, m, kw):
    """The kernel's default rule (few_outputs_by_default): at most 6 output channels with
    AVX-512 (3 with AVX2), rows of at least 64 floats of taps."""
    flags = cpu_flags()
    if not {"avx2", "fma"} <= flags:
        return False
    return m <= (6 if "avx512f" in flags else 3) and kw * c >= 64


def model_of(n, c, m, h, w, kernel, strides, pads, dilations, tanh, rng):
    """y = Conv(Relu(Conv1x1(x)), w2, b2) [-> Tanh]: the 1x1 convolution before it makes the
    target's input channels-last, as inside a model."""
    w1 = (rng.standard_normal((c, 8, 1, 1)) / np.sqrt(8)).astype(np.float32)
    w2 = (rng.standard_normal((m, c) + kernel) / np.sqrt(c * kernel[0] * kernel[1])).astype(
        np.float32)
    b2 = rng.standard_normal(m).astype(np.float32)
    out = [(size + pads[i] + pads[i + 2] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
           for i, size in enumerate((h, w))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["c"], kernel_shape=list(kernel),
                              strides=list(strides), pads=list(pads), dilations=list(dilations)),
             helper.make_node("Tanh" if tanh else "Identity", ["c"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 8, h, w])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m] + out)],
                       [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
                        numpy_helper.from_array(b2, "b2")])
    return model, w1, w2, b2


def reference(x, w1, w2, b2, strides, pads, dilations, tanh):
    x = np.maximum(np.einsum("mc,nchw->nmhw", w1[:, :, 0, 0].astype(np.float64), x), 0)
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, _, kh, kw = w2.shape
    oh = (x.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (x.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((x.shape[0], m, oh, ow)) + b2.astype(np.float64)[None, :, None, None]
    for i in range(kh):
        for j in range(kw):
            top, left = i * dilations[0], j * dilations[1]
            patch = x[:, :, top:top + strides[0] * (oh - 1) + 1:strides[0],
                      left:left + strides[1] * (ow - 1) + 1:strides[1]]
            y += np.einsum("mc,nchw->nmhw", w2[:, :, i, j].astype(np.float64), patch)
    return np.tanh(y) if tanh else y


# (batch, channels in, out, height, width, kernel, strides, pads [t, l, b, r], dilations, tanh)
CASES = [
    (1, 64, 3, 40, 37, (7, 7), (1, 1), (3, 3, 3, 3), (1, 1), True),  # CycleGAN's last, smaller
    (2, 32, 1, 33, 20, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),  # stride 2, a batch of 2
    (1, 64, 6, 24, 29, (5, 5), (1, 1), (2, 0, 1, 3), (1, 1), False),  # asymmetric pads
    (1, 48, 4, 30, 30, (3, 3), (1, 1), (2, 1, 2, 1), (2, 1), False),  # rows of taps 2 apart
    (1, 64, 2, 16, 16, (3, 3), (1, 1), (4, 1, 4, 1), (1, 1), False),  # rows of padding alone
    (1, 32, 5, 21, 45, (9, 9), (1, 1), (4, 4, 4, 4), (1, 1), True),   # a block of 4 and 1
    (1, 40, 3, 19, 23, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),  # runs of 120, 80 floats
]


@pytest.mark.parametrize("n,c,m,h,w,kernel,strides,pads,dilations,tanh", CASES)
def test_few_outputs_matches_float64(n, c, m, h, w, kernel, strides, pads, dilations, tanh):
    rng = np.random.default_rng(m * 100 + c)
    model, w1, w2, b2 = model_of(n, c, m, h, w, kernel, strides, pads, dilations, tanh, rng)
    x = rng.standard_normal((n, 8, h, w)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    few = [k for k in kernels if FEW in k["strategy"]]
    if runs_by_default(c, m, kernel[1]):
        assert len(few) == 1 and few[0]["op_type"] == "Conv", kernels
    want = reference(x.astype(np.float64), w1, w2, b2, strides, pads, dilations, tanh)
    y = got["y"]
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_many_output_channels_stay_onednn():
    """64 -> 16 channels fill oneDNN's registers."""
    rng = np.random.default_rng(3)
    args = (1, 64, 16, 32, 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False)
    model, w1, w2, b2 = model_of(*args, rng)
    x = rng.standard_normal((1, 8, 32, 32)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    assert not [k for k in kernels if FEW in k["strategy"]], kernels
    want = reference(x.astype(np.float64), w1, w2, b2, (1, 1), (1, 1, 1, 1), (1, 1), False)
    np.testing.assert_allclose(got["y"], want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.skipif(not runs_by_default(64, 3, 7), reason="the kernel needs AVX2")
def test_the_knob_turns_the_kernel_off(tmp_path):
    """WEFT_FEW_OUTPUTS=0 (docs/knobs.md): oneDNN's direct convolution runs instead."""
    model, _, _, _ = model_of(*CASES[0], np.random.default_rng(4))
    path = tmp_path / "few.onnx"
    path.write_bytes(model.SerializeToString())
    for value, calls in (("1", 1), ("0", 0)):
        out = cli_kernels(path, {"WEFT_FEW_OUTPUTS": value})
        assert out.count(FEW) == calls, out
