"""ONNX Runtime's own ops (domain com.microsoft) that its transformer optimizer writes:
Gelu, BiasGelu, FastGelu, QuickGelu, BiasAdd, FusedMatMul, SkipLayerNormalization and
SkipSimplifiedLayerNormalization. Each expands at import into ai.onnx ops (weft/onnx/
contrib_ops.cc); against float64 numpy references of ONNX Runtime's definitions. The
quantized ones are in test_quantized.py."""

import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft

MS = "com.microsoft"


def run(nodes, inputs, initializers=(), opset=17, outputs=("y",)):
    """Runs a model of "nodes" on "inputs" (name -> f32 array), its outputs declared f32
    without shapes (the shape functions give them)."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return weft.compile(model.SerializeToString()).run(inputs)


def erf(x):
    return np.vectorize(math.erf)(x)


@pytest.mark.parametrize("opset", [13, 17])
def test_gelu_family(opset):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 16)).astype(np.float32) * 3
    b = rng.standard_normal(16).astype(np.float32)
    nodes = [helper.make_node("Gelu", ["x"], ["gelu"], domain=MS),
             helper.make_node("BiasGelu", ["x", "b"], ["bias_gelu"], domain=MS),
             helper.make_node("FastGelu", ["x", "b"], ["fast_gelu"], domain=MS),
             helper.make_node("FastGelu", ["x"], ["fast_gelu_no_bias"], domain=MS),
             helper.make_node("QuickGelu", ["x"], ["quick_gelu"], alpha=1.5, domain=MS)]
    got = run(nodes, {"x": x}, [("b", b)], opset,
              outputs=("gelu", "bias_gelu", "fast_gelu", "fast_gelu_no_bias", "quick_gelu"))
    x64, xb = x.astype(np.float64), (x + b).astype(np.float64)
    exact = lambda v: v / 2 * (1 + erf(v / math.sqrt(2)))  # noqa: E731
    tanh = lambda v: v / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))  # noqa: E731
    want = {"gelu": exact(x64), "bias_gelu": exact(xb), "fast_gelu": tanh(xb),
            "fast_gelu_no_bias": tanh(x64), "quick_gelu": x64 / (1 + np.exp(-1.5 * x64))}
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=name)


def test_bias_add_and_fused_matmul():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    b = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    bias, skip = rng.standard_normal(8).astype(np.float32), rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    nodes = [helper.make_node("FusedMatMul", ["a", "b"], ["mm"], alpha=0.25, transB=1, domain=MS),
             helper.make_node("BiasAdd", ["a", "bias", "skip"], ["sum"], domain=MS)]
    got = run(nodes, {"a": a, "b": b, "skip": skip}, [("bias", bias)], outputs=("mm", "sum"))
    want = 0.25 * a.astype(np.float64) @ np.swapaxes(b.astype(np.float64), -1, -2)
    np.testing.assert_allclose(got["mm"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["sum"], a + bias + skip, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("opset", [14, 18])
def test_skip_layer_normalizations(opset):
    rng = np.random.default_rng(3)
    x, skip = (rng.standard_normal((2, 7, 32)).astype(np.float32) for _ in range(2))
    gamma, beta, bias = (rng.standard_normal(32).astype(np.float32) for _ in range(3))
    nodes = [helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                              ["ln", "", "", "sum"], epsilon=1e-5, domain=MS),
             helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["rms"],
                              epsilon=1e-6, domain=MS)]
    got = run(nodes, {"x": x, "skip": skip}, [("gamma", gamma), ("beta", beta), ("bias", bias)], opset,
              outputs=("ln", "sum", "rms"))
    s = x.astype(np.float64) + skip + bias
    d = s - s.mean(-1, keepdims=True)
    want_ln = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * gamma + beta
    s2 = x.astype(np.float64) + skip
    want_rms = s2 / np.sqrt((s2 * s2).mean(-1, keepdims=True) + 1e-6) * gamma
    np.testing.assert_allclose(got["ln"], want_ln, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["sum"], s, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["rms"], want_rms, rtol=1e-4, atol=1e-5)


def test_unknown_onnx_runtime_op_names_the_ones_weft_expands():
    node = helper.make_node("QAttention", ["x"], ["y"], domain=MS, name="attn_0")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    with pytest.raises(weft.WeftError, match=r"QAttention \(domain 'com.microsoft': Weft expands BiasAdd, "
                                             r"BiasGelu, .* and SkipSimplifiedLayerNormalization from it\)"):
        weft.compile(model.SerializeToString())


def test_simplified_layer_normalization_of_the_onnx_domain():
    """ONNX Runtime's RMSNorm, which it registers in the ai.onnx domain (its GenAI builder's
    Llama and Phi models)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 24)).astype(np.float32)
    scale = rng.standard_normal(24).astype(np.float32)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], epsilon=1e-6)
    got = run([node], {"x": x}, [("scale", scale)])["y"]
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got, x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * scale,
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("node, message", [
    (helper.make_node("QLinearAdd", ["x", "s"], ["y"], domain=MS), "input 'A_zero_point'|input 'B'"),
    (helper.make_node("QLinearConcat", ["s", "z", "x"], ["y"], axis=0, domain=MS), "has 3 inputs"),
    (helper.make_node("QLinearConcat", ["s", "z", "x", "s", "z"], ["y"], domain=MS), "attribute 'axis' is required"),
    (helper.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"], domain=MS), "attribute 'opset' is required"),
    (helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["y"], channels_last=1,
                      domain=MS), "channels_last=1"),
    (helper.make_node("SkipLayerNormalization", ["x", "x"], ["y"], domain=MS), "input 'gamma' is required"),
    (helper.make_node("SkipLayerNormalization", ["x", "x", "g"], ["y", "mean"], domain=MS), "outputs 1 and 2"),
    (helper.make_node("FusedMatMul", ["x", "x"], ["y"], transBatchA=1, domain=MS), "transBatchA"),
    (helper.make_node("Gelu", ["x", "x", "x"], ["y"], domain=MS), "has 3 inputs, at most 1"),
])
def test_malformed_onnx_runtime_ops_are_one_clear_error(node, message):
    """Each names the file, the node and its op, and why; none crashes."""
    node.name = "bad"
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
                               numpy_helper.from_array(np.array(3, np.uint8), "z"),
                               numpy_helper.from_array(np.ones(4, np.float32), "g")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    with pytest.raises(weft.WeftError, match=rf"node 'bad' \(com.microsoft.{node.op_type}\): ({message})"):
        weft.compile(model.SerializeToString())
