"""f16 and bf16 convolutions, matrix products and poolings run on the CPU as oneDNN's f32 calls
between Casts (graph/passes/narrow_in_f32.h), each node summing in f32 and rounding its result
once to its type: against a float64 reference that rounds each node's result the same way.
The kernel table shows the calls (an f16 ResNet-18 had run as generated code, 8 s a run). On
CPUs with AVX512-BF16 or AMX, bf16 convolutions multiply in bf16 (exact products, f32 sums),
reading and writing bf16 (library::bf16_products_native)."""

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cli_kernels, make_model

# Largest difference, as a share of the output's largest magnitude: a few units of the
# type's rounding (2^-11 for f16, 2^-8 for bf16), which differing roundings of a sum near a
# tie pass on through the layers after it.
TOLERANCE = {TensorProto.FLOAT16: 4e-3, TensorProto.BFLOAT16: 3e-2}


def rounded(a, onnx_type):
    """float64 values rounded to f16 or bf16 (half to even), back in float64."""
    if onnx_type == TensorProto.FLOAT16:
        return a.astype(np.float16).astype(np.float64)
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def stored(a, onnx_type):
    """An initializer of "onnx_type" holding float64 values already rounded to it."""
    if onnx_type == TensorProto.FLOAT16:
        return numpy_helper.from_array(a.astype(np.float16))
    patterns = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return helper.make_tensor("", TensorProto.BFLOAT16, a.shape, patterns.tobytes(), raw=True)


def conv(x, w, b, pad):
    """NCHW, stride 1."""
    k = w.shape[2]
    x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    h, wd = x.shape[2] - k + 1, x.shape[3] - k + 1
    y = sum(np.einsum("nchw,mc->nmhw", x[:, :, i:i + h, j:j + wd], w[:, :, i, j])
            for i in range(k) for j in range(k))
    return y + b.reshape(1, -1, 1, 1)


def pool(x, reduce):  # 2x2, stride 2
    n, c, h, w = x.shape
    return reduce(x.reshape(n, c, h // 2, 2, w // 2, 2), axis=(3, 5))


def cnn(onnx_type, rng):
    """Conv -> Relu -> MaxPool -> Conv -> Add (the pooled input) -> Relu -> AveragePool ->
    Conv 1x1 -> GlobalAveragePool -> Flatten -> Gemm, every value of "onnx_type"; returns the
    model, an input and the float64 reference."""
    r = lambda a: rounded(a, onnx_type)
    w1, b1 = r(rng.standard_normal((16, 8, 3, 3)) / 5), r(rng.standard_normal(16) / 5)
    w2, b2 = r(rng.standard_normal((16, 16, 3, 3)) / 12), r(rng.standard_normal(16) / 5)
    w3, b3 = r(rng.standard_normal((32, 16, 1, 1)) / 4), r(rng.standard_normal(32) / 5)
    wg, bg = r(rng.standard_normal((10, 32)) / 6), r(rng.standard_normal(10) / 5)
    x = r(rng.standard_normal((1, 8, 20, 20)))
    a = r(np.maximum(r(conv(x, w1, b1, 1)), 0))
    p = r(pool(a, np.max))
    s = r(np.maximum(r(r(conv(p, w2, b2, 1)) + p), 0))
    q = r(pool(s, np.mean))
    c = r(conv(q, w3, b3, 0))
    g = r(c.mean(axis=(2, 3)))
    want = r(g @ wg.T + bg)
    inits = []
    for name, value in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3),
                        ("wg", wg), ("bg", bg)]:
        t = stored(value, onnx_type)
        t.name = name
        inits.append(t)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["a"]),
        helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p"], ["sum"]),
        helper.make_node("Relu", ["sum"], ["s"]),
        helper.make_node("AveragePool", ["s"], ["q"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["q", "w3", "b3"], ["c3"]),
        helper.make_node("GlobalAveragePool", ["c3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1),
    ]
    model = make_model(nodes, [helper.make_tensor_value_info("x", onnx_type, [1, 8, 20, 20])],
                       [helper.make_tensor_value_info("y", onnx_type, [1, 10])], inits)
    return model, x, want


def run(model, onnx_type, **inputs):
    """Runs "model"; f16 inputs go as float16 arrays, bf16 ones as float32 (the module's way)."""
    as_type = np.float16 if onnx_type == TensorProto.FLOAT16 else np.float32
    out = weft.compile(model.SerializeToString()).run(
        {k: v.astype(as_type) for k, v in inputs.items()})
    return out["y"].astype(np.float64)


@pytest.mark.parametrize("onnx_type", sorted(TOLERANCE))
def test_a_narrow_cnn_matches_float64_rounded_per_node(onnx_type):
    model, x, want = cnn(onnx_type, np.random.default_rng(3))
    got = run(model, onnx_type, x=x)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[onnx_type] * np.abs(want).max())


def cpu_has_bf16():
    with open("/proc/cpuinfo") as f:
        return re.search(r"\bavx512_bf16\b", f.read()) is not None


@pytest.mark.parametrize("onnx_type", sorted(TOLERANCE))
def test_a_narrow_cnn_runs_library_calls(tmp_path, onnx_type):
    """On a CPU that multiplies bf16 natively, the bf16 model's convolutions and Gemm are bf16
    calls (the first convolution reads the input through its Cast and the Transpose to
    channels-last)."""
    model, _, _ = cnn(onnx_type, np.random.default_rng(3))
    path = tmp_path / "cnn.onnx"
    path.write_bytes(model.SerializeToString())
    table = cli_kernels(path, {})
    # With AVX2 only, the 16 -> 16 3x3 convolution runs on Weft's own Winograd kernel
    assert table.count("oneDNN convolution") + table.count("Weft Winograd") == 3, table
    assert "matrix-vector product" in table or "oneDNN matmul" in table, table
    bf16_calls = 4 if onnx_type == TensorProto.BFLOAT16 and cpu_has_bf16() else 0
    assert table.count("bf16 products") == bf16_calls, table
    assert "bf16 products" not in cli_kernels(path, {"WEFT_ONEDNN_BF16": "0"})


@pytest.mark.parametrize("onnx_type", sorted(TOLERANCE))
def test_a_narrow_product_of_two_activations(onnx_type):
    """Batched MatMul of two activations (attention's scores): both Cast to f32, one call."""
    rng = np.random.default_rng(4)
    a = rounded(rng.standard_normal((2, 3, 16, 24)), onnx_type)
    b = rounded(rng.standard_normal((2, 3, 24, 20)), onnx_type)
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                       [helper.make_tensor_value_info("a", onnx_type, list(a.shape)),
                        helper.make_tensor_value_info("b", onnx_type, list(b.shape))],
                       [helper.make_tensor_value_info("y", onnx_type, [2, 3, 16, 20])])
    want = rounded(a @ b, onnx_type)
    got = run(model, onnx_type, a=a, b=b)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[onnx_type] * np.abs(want).max())

