"""A convolution then InstanceNormalization (wav2vec2's GroupNorm of one channel a group, as
PyTorch's dynamo exporter writes it: no Reshapes around it), then an activation, runs as reductions over time in the
convolution's channels-last layout (canonicalize.cc: expand_grouped_instance_norm), not as
InstanceNormalization's own lowering behind a Transpose. Against float64 numpy."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model


def test_instance_norm_after_a_conv_keeps_channels_last():
    rng = np.random.default_rng(3)
    c_in, c_out, taps, stride, steps = 16, 64, 5, 2, 301
    w = (rng.standard_normal((c_out, c_in, taps)) / np.sqrt(c_in * taps)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, c_out).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, c_out).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"], strides=[stride]),
             helper.make_node("InstanceNormalization", ["h", "scale", "bias"], ["n"], epsilon=1e-5),
             helper.make_node("Relu", ["n"], ["y"])]
    out = (steps - taps) // stride + 1
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, steps])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, out])],
                       [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (scale, "scale"), (bias, "bias"))],
                       opset=17)
    x = rng.standard_normal((1, c_in, steps)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    assert not any("InstanceNormalization" in k["op_type"] for k in kernels), [k["op_type"] for k in kernels]
    windows = np.stack([x[0, :, t * stride:t * stride + taps] for t in range(out)]).astype(np.float64)
    h = np.einsum("tck,ock->ot", windows, w.astype(np.float64))
    mean, var = h.mean(axis=1, keepdims=True), h.var(axis=1, keepdims=True)
    want = np.maximum((h - mean) / np.sqrt(var + 1e-5) * scale[:, None] + bias[:, None], 0)
    np.testing.assert_allclose(got["y"][0], want, rtol=1e-4, atol=1e-4)
