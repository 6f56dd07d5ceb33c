"""Resize forms that oneDNN's resampling does not take (nearest, linear with align_corners,
cubic, downsampling, a 1-D and a 5-D one) run on the CPU as Weft's own call, one pass per
resized axis (library/resize_taps_call.h): against onnx's ReferenceEvaluator in float64, on
extents large enough for the threaded passes."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model

reference = pytest.importorskip("onnx.reference")


def resize_model(in_shape, scales, dtype, **attrs):
    out_shape = [int(np.floor(n * s)) for n, s in zip(in_shape, scales)]
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    return make_model([node], [helper.make_tensor_value_info("x", elem, in_shape)],
                      [helper.make_tensor_value_info("y", elem, out_shape)],
                      [numpy_helper.from_array(np.array(scales, np.float32), "scales")], opset=19)


CASES = [
    # YOLO's upsampling, as PyTorch exports nn.Upsample(scale_factor=2)
    ([1, 128, 40, 40], [1, 1, 2, 2], dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                          nearest_mode="floor")),
    ([1, 64, 30, 17], [1, 1, 2, 3], dict(mode="nearest")),
    ([1, 32, 33, 40], [1, 1, 2, 2], dict(mode="linear", coordinate_transformation_mode="align_corners")),
    ([2, 16, 24, 20], [1, 1, 1.5, 2.5], dict(mode="cubic")),
    ([1, 8, 64, 96], [1, 1, 0.5, 0.25], dict(mode="linear", coordinate_transformation_mode="asymmetric")),
    ([3, 40, 1000], [1, 1, 0.75], dict(mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5)),
    ([1, 4, 8, 16, 16], [1, 1, 2, 2, 2], dict(mode="linear", coordinate_transformation_mode="align_corners")),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("in_shape, scales, attrs", CASES)
def test_resize_matches_the_reference(in_shape, scales, attrs, dtype):
    model = resize_model(in_shape, scales, dtype, **attrs)
    x = np.random.default_rng(len(in_shape) * 7 + in_shape[-1]).standard_normal(in_shape).astype(dtype)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    assert any("Weft's resize" in k["strategy"] for k in kernels), kernels
    (want,) = reference.ReferenceEvaluator(model).run(["y"], {"x": x.astype(np.float64)
                                                             if dtype == np.float64 else x})
    # onnx's reference computes cubic coefficients less precisely than f64 (the generated
    # kernel is as far from it there: 2e-6)
    tolerance = 1e-5 if dtype == np.float32 or attrs["mode"] == "cubic" else 1e-12
    np.testing.assert_allclose(got["y"], want, rtol=tolerance, atol=tolerance)


def test_upsampling_between_convolutions_stays_channels_last():
    """YOLO's neck: Conv, nearest x2, Concat with a wider branch, Conv. The Resize runs
    channels-last between the convolutions (channels_last.h), its scales permuted: the
    Transposes left are the input's two and the output's."""
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((16, 8, 3, 3)) / 9).astype(np.float32)
    w2 = (rng.standard_normal((8, 24, 1, 1)) / 5).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Resize", ["a", "", "scales"], ["u"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Conv", ["x", "w2x"], ["b"]),
             helper.make_node("Concat", ["u", "b"], ["c"], axis=1),
             helper.make_node("Conv", ["c", "w2"], ["y"])]
    w2x = (rng.standard_normal((8, 8, 1, 1)) / 3).astype(np.float32)
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 40, 40])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 40, 40])],
                       [numpy_helper.from_array(a, n) for a, n in
                        ((w1, "w1"), (w2, "w2"), (w2x, "w2x"),
                         (np.array([1, 1, 2, 2], np.float32), "scales"))], opset=19)
    x = rng.standard_normal((1, 8, 40, 40)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    transposes = [k for k in kernels if "Transpose" in k["op_type"]]
    assert len(transposes) <= 2, [k["op_type"] for k in kernels]
    (want,) = reference.ReferenceEvaluator(model).run(["y"], {"x": x})
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-4)
