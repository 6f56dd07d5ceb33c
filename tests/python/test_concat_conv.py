"""A 3x3 convolution reading a Concat along channels (a U-Net's skip connection) runs as Weft's
Winograd kernel reading the Concat's parts in place (library/winograd.cc): the concatenation is
never written. Two parts whose channels are whole registers of AVX-512, three that are not (8
channels a unit), and a residual that is one of the parts (the output then cannot take its
memory); against NumPy in float64."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cpu_flags, make_model

IN_PLACE = "read in place"


def model_of(parts, out, residual, rng, side=48):
    """Each part Relu(Conv1x1(x)) of "parts" channels; y = Relu(Conv3x3(Concat(parts)) [+ part
    0]). Returns the model and its weights."""
    weights = [(rng.standard_normal((c, 8, 1, 1)) / np.sqrt(8)).astype(np.float32) for c in parts]
    w = (rng.standard_normal((out, sum(parts), 3, 3)) / np.sqrt(9 * sum(parts))).astype(np.float32)
    nodes, names = [], []
    for i, _ in enumerate(parts):
        nodes += [helper.make_node("Conv", ["x", f"w{i}"], [f"c{i}"]),
                  helper.make_node("Relu", [f"c{i}"], [f"p{i}"])]
        names.append(f"p{i}")
    nodes += [helper.make_node("Concat", names, ["cat"], axis=1),
              helper.make_node("Conv", ["cat", "w"], ["conv"], pads=[1, 1, 1, 1])]
    last = "conv"
    if residual:
        nodes.append(helper.make_node("Add", [last, "p0"], ["sum"]))
        last = "sum"
    nodes.append(helper.make_node("Relu", [last], ["y"]))
    inits = [numpy_helper.from_array(a, f"w{i}") for i, a in enumerate(weights)]
    inits.append(numpy_helper.from_array(w, "w"))
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, side, side])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out, side, side])],
                       inits)
    return model, weights, w


def reference(x, weights, w, residual):
    x = x.astype(np.float64)
    parts = [np.maximum(np.einsum("mc,nchw->nmhw", a[:, :, 0, 0].astype(np.float64), x), 0)
             for a in weights]
    cat = np.pad(np.concatenate(parts, axis=1), ((0, 0), (0, 0), (1, 1), (1, 1)))
    side = x.shape[2]
    y = np.zeros((x.shape[0], w.shape[0], side, side))
    for i in range(3):
        for j in range(3):
            y += np.einsum("mc,nchw->nmhw", w[:, :, i, j].astype(np.float64),
                           cat[:, :, i:i + side, j:j + side])
    if residual:
        y += parts[0]
    return np.maximum(y, 0)


# (the parts' channels, output channels, a residual of part 0)
CASES = [((64, 32), 32, False),      # a U-Net's decoder: upsampled and skipped features
         ((16, 24, 24), 32, False),  # parts not in whole registers of 16
         ((64, 32), 64, True)]       # the residual is a part


@pytest.mark.parametrize("parts,out,residual", CASES)
def test_concat_read_in_place_matches_float64(parts, out, residual):
    rng = np.random.default_rng(sum(parts) + out)
    model, weights, w = model_of(parts, out, residual, rng)
    x = rng.standard_normal((1, 8, 48, 48)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    # 144 tiles of 4x4, 32 channels or more on each side: Weft's Winograd kernel by default
    # (conv_choice.cc), with AVX2 (oneDNN's otherwise, on AVX-512 below 128 tiles).
    if {"avx2", "fma"} <= cpu_flags():
        (conv,) = [k for k in kernels if "Concat" in k["op_type"]]
        assert conv["op_type"].startswith("Concat+Conv") and IN_PLACE in conv["strategy"], kernels
    want = reference(x, weights, w, residual)
    np.testing.assert_allclose(got["y"], want, rtol=0, atol=1e-5 * np.abs(want).max())
