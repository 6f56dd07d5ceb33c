"""QLinearConv and QLinearMatMul with scales per tensor, per output channel (the weights of a
model that ONNX Runtime's quantizer wrote with per_channel=True) and per row and column,
against a numpy reference that sums in integers and requantizes in float32 as the kernels do:
round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zero, saturated. Bit for bit when
the weights are an input (generated integer kernels); within one quantum when they are
constant (the float path of QDQ models: docs/library.md). Then ONNX Runtime's QOperator
format, its com.microsoft ops included, and its QDQ format."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import has_avx512_vnni, make_model


def cpu_has_vnni():
    """Whether the CPU's int8 dot products add into int32 without saturating (what Weft needs
    before it runs MatMulInteger as oneDNN's int8 matmul)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read().split()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


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


def check_requantized(got, want, constant_weights, dtype):
    """Bit for bit from the integer kernels; from the float path (constant weights), within
    one quantum, a rounding tie falling the other way in a few."""
    info = np.iinfo(dtype)
    assert 0.05 < np.mean((got != info.min) & (got != info.max))  # mostly not saturated
    if not constant_weights:
        np.testing.assert_array_equal(got, want)
        return
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
    assert np.mean(got == want) > 0.97


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("activation", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize("constant_weights", [False, True])
def test_qlinear_conv_with_weight_scales_per_output_channel(per_channel, activation, constant_weights):
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
             numpy_helper.from_array(w_scale, "ws"),
             numpy_helper.from_array(w_zero, "wz"), numpy_helper.from_array(np.array(y_scale), "ys"),
             numpy_helper.from_array(y_zero, "yz"), numpy_helper.from_array(bias, "b")]
    inputs = [helper.make_tensor_value_info("x", activation, [2, 4, 9, 7])]
    if constant_weights:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.INT8, list(w.shape)))
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1])
    model = make_model([node], inputs, [helper.make_tensor_value_info("y", activation, [2, m, 9, 7])],
                       inits)
    compiled = weft.compile(model.SerializeToString())
    info = np.iinfo(x_type)
    x = rng.integers(info.min, info.max + 1, (2, 4, 9, 7)).astype(x_type)
    acc = conv_reference(x, x_zero, w, np.broadcast_to(w_zero, (m,)), bias, 1)
    want = requantize(acc, x_scale, np.broadcast_to(w_scale, (m,)).reshape(1, m, 1, 1), y_scale,
                      y_zero, x_type)
    got = compiled.run({"x": x} if constant_weights else {"x": x, "w": w})["y"]
    check_requantized(got, want, constant_weights, x_type)


@pytest.mark.parametrize("constant_weights", [False, True])
def test_qlinear_matmul_with_scales_per_row_and_column(constant_weights):
    rng = np.random.default_rng(4)
    rows, k, columns = 5, 12, 6
    a = rng.integers(0, 256, (rows, k)).astype(np.uint8)
    b = rng.integers(-127, 128, (k, columns)).astype(np.int8)
    a_scale = rng.uniform(0.01, 0.03, rows).astype(np.float32)
    b_scale = rng.uniform(0.002, 0.02, columns).astype(np.float32)
    a_zero, b_zero = np.array(128, np.uint8), np.zeros(columns, np.int8)
    y_scale, y_zero = np.float32(0.05), np.array(128, np.uint8)
    inits = [numpy_helper.from_array(a_scale, "as"), numpy_helper.from_array(a_zero, "az"),
             numpy_helper.from_array(b_scale, "bs"),
             numpy_helper.from_array(b_zero, "bz"), numpy_helper.from_array(np.array(y_scale), "ys"),
             numpy_helper.from_array(y_zero, "yz")]
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])]
    if constant_weights:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.INT8, [k, columns]))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = make_model([node], inputs,
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, [rows, columns])], inits)
    feeds = {"a": a} if constant_weights else {"a": a, "b": b}
    got = weft.compile(model.SerializeToString()).run(feeds)["y"]
    acc = (a.astype(np.int64) - 128) @ b.astype(np.int64)
    want = requantize(acc, a_scale[:, None], b_scale[None, :], y_scale, y_zero, np.uint8)
    check_requantized(got, want, constant_weights, np.uint8)


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


def fake_quant(x, scale, zero, dtype):
    info = np.iinfo(dtype)
    return (np.clip(np.rint(x / scale) + zero, info.min, info.max) - zero) * scale


def test_qdq_model_runs_its_convolutions_on_float_weights_channels_last():
    """ONNX Runtime's default quantized format (QDQ): int8 weights per output channel behind
    DequantizeLinear, activations through QuantizeLinear -> DequantizeLinear per tensor. The
    weights fold to f32 at compile time (packed once by oneDNN), and the Q/DQ pairs, in float
    (x / s rounded, clipped, times s), stay in the channels-last region between the
    convolutions: no reorder between them. Against a float64
    reference of the same arithmetic, within one quantum of the output's scale (a rounding tie
    may fall the other way in f32)."""
    rng = np.random.default_rng(6)
    c1, c2 = 16, 8
    w1 = rng.integers(-127, 128, (c1, 3, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (c2, c1, 3, 3)).astype(np.int8)
    s1 = rng.uniform(0.002, 0.005, c1).astype(np.float32)
    s2 = rng.uniform(0.002, 0.005, c2).astype(np.float32)
    b1 = rng.uniform(-0.5, 0.5, c1).astype(np.float32)
    xs, hs, ys = np.float32(0.02), np.float32(0.01), np.float32(0.02)
    arr = numpy_helper.from_array
    inits = [arr(w1, "w1q"), arr(s1, "s1"), arr(np.zeros(c1, np.int8), "z1"),
             arr(w2, "w2q"), arr(s2, "s2"), arr(np.zeros(c2, np.int8), "z2"),
             arr(np.array(xs), "xs"), arr(np.array(hs), "hs"), arr(np.array(ys), "ys"),
             arr(np.array(128, np.uint8), "az"), arr(np.array(0, np.uint8), "rz"),
             arr(b1, "b1")]
    dq = lambda i, o, s, z, **a: helper.make_node("DequantizeLinear", [i, s, z], [o], **a)  # noqa: E731
    q = lambda i, o, s, z: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [dq("w1q", "w1", "s1", "z1", axis=0), dq("w2q", "w2", "s2", "z2", axis=0),
             q("x", "xq", "xs", "az"), dq("xq", "xd", "xs", "az"),
             helper.make_node("Conv", ["xd", "w1", "b1"], ["h"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["hr"]),
             q("hr", "hq", "hs", "rz"), dq("hq", "hd", "hs", "rz"),
             helper.make_node("MaxPool", ["hd"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["g"], pads=[1, 1, 1, 1]),
             q("g", "gq", "ys", "az"), dq("gq", "y", "ys", "az")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c2, 6, 6])], inits)
    compiled = weft.compile(model.SerializeToString())
    x = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
    out, profile = compiled.profile({"x": x})

    def conv(v, w, b=None):
        v = np.pad(v, [(0, 0), (0, 0), (1, 1), (1, 1)])
        h, w_ = v.shape[2] - 2, v.shape[3] - 2
        r = sum(np.einsum("nchw,mc->nmhw", v[:, :, i:i + h, j:j + w_], w[:, :, i, j])
                for i in range(3) for j in range(3))
        return r if b is None else r + b.reshape(1, -1, 1, 1)

    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    xq = fake_quant(f64(x), xs, 128, np.uint8)
    h = fake_quant(np.maximum(conv(xq, f64(w1) * f64(s1)[:, None, None, None], f64(b1)), 0), hs, 0, np.uint8)
    p = h.reshape(1, c1, 6, 2, 6, 2).max(axis=(3, 5))
    want = fake_quant(conv(p, f64(w2) * f64(s2)[:, None, None, None]), ys, 128, np.uint8)
    np.testing.assert_allclose(out["y"], want, rtol=0, atol=float(ys) * 1.01)
    assert np.mean(out["y"] == want.astype(np.float32)) > 0.99
    calls = [k["strategy"] for k in profile if k["op_type"].startswith("Conv")]
    assert len(calls) == 2 and all("channels-last in place" in c for c in calls), calls
    # The first step of each convolution's quantize-dequantize pair (x / s) folds into its
    # weights and bias (through the Relu: s > 0); the rounding runs in a generated kernel
    # after the call (library.md: not oneDNN 2.6's round post-op).
    fused = [k["op_type"] for k in profile if k["op_type"].startswith("Conv")]
    assert fused == ["Conv+Relu", "Conv"], fused
    rounds = [k["op_type"] for k in profile if "Round" in k["op_type"]]
    assert len(rounds) == 3, rounds  # the input's pair, the first convolution's, the output's
    # The input's reorder (with its Q/DQ) and the output's; none between the convolutions,
    # and no DequantizeLinear of the weights at run time.
    moves = [k["op_type"] for k in profile if "Transpose" in k["op_type"] and "MaxPool" not in k["op_type"]]
    assert len(moves) == 2, moves
    assert not [k for k in profile if "f32[16,3,3,3]" in k["shapes"].split("->")[-1]], profile


def test_qoperator_model_with_onnx_runtime_ops_runs_as_qdq():
    """ONNX Runtime's QOperator format: QLinearConv on constant int8 weights per output
    channel, MaxPool and Flatten on the quantized values, and ORT's own com.microsoft ops
    (QLinearAdd, QLinearSigmoid, QLinearMul, QLinearConcat, QLinearGlobalAveragePool, QGemm).
    Each expands at import into DequantizeLinear -> float op -> QuantizeLinear and runs as a
    QDQ model: the convolutions in oneDNN on f32 weights folded at compile time. Against a
    float64 reference of the same arithmetic, within one quantum of the output's scale."""
    rng = np.random.default_rng(8)
    arr = numpy_helper.from_array
    f32 = np.float32
    w1 = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (8, 8, 1, 1)).astype(np.int8)
    w3 = rng.integers(-127, 128, (10, 16)).astype(np.int8)
    s1, s2 = rng.uniform(0.002, 0.005, 8).astype(f32), rng.uniform(0.002, 0.005, 8).astype(f32)
    s3 = rng.uniform(0.002, 0.005, 10).astype(f32)
    b1 = rng.integers(-3000, 3000, 8).astype(np.int32)
    b3 = rng.integers(-300, 300, 10).astype(np.int32)
    scales = {"xs": 0.02, "cs": 0.03, "ds": 0.02, "as": 0.04, "gs": 0.004, "ms": 0.02, "ks": 0.02,
              "ps": 0.01, "ys": 0.05}
    zeros = {"xz": 128, "cz": 0, "dz": 128, "az": 100, "gz": 0, "mz": 20, "kz": 20, "pz": 10, "yz": 120}
    inits = [arr(w1, "w1"), arr(w2, "w2"), arr(w3, "w3"), arr(s1, "s1"), arr(s2, "s2"), arr(s3, "s3"),
             arr(np.zeros(8, np.int8), "z8"), arr(np.zeros(10, np.int8), "z10"), arr(b1, "b1"),
             arr(b3, "b3")]
    inits += [arr(np.array(v, f32), k) for k, v in scales.items()]
    inits += [arr(np.array(v, np.uint8), k) for k, v in zeros.items()]
    ms = "com.microsoft"
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w1", "s1", "z8", "cs", "cz", "b1"], ["c"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("QLinearConv", ["p", "cs", "cz", "w2", "s2", "z8", "ds", "dz"], ["d"]),
        helper.make_node("QLinearAdd", ["d", "ds", "dz", "p", "cs", "cz", "as", "az"], ["a"], domain=ms),
        helper.make_node("QLinearSigmoid", ["a", "as", "az", "gs", "gz"], ["g"], domain=ms),
        helper.make_node("QLinearMul", ["a", "as", "az", "g", "gs", "gz", "ms", "mz"], ["m"], domain=ms),
        helper.make_node("QLinearConcat", ["ks", "kz", "m", "ms", "mz", "p", "cs", "cz"], ["k"],
                         axis=1, domain=ms),
        helper.make_node("QLinearGlobalAveragePool", ["k", "ks", "kz", "ps", "pz"], ["pool"], domain=ms),
        helper.make_node("Flatten", ["pool"], ["f"]),
        helper.make_node("QGemm", ["f", "ps", "pz", "w3", "s3", "z10", "b3", "ys", "yz"], ["yq"],
                         transB=1, domain=ms),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ms, 1)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString())
    x = rng.standard_normal((4, 3, 12, 12)).astype(f32)
    got, profile = compiled.profile({"x": x})

    def q(v, s, z):  # quantized values, as integers in float64
        return np.clip(np.rint(v / scales[s]) + zeros[z], 0, 255)

    def dq(v, s, z):
        return (v - zeros[z]) * scales[s]

    def conv(v, w, pad):
        v = np.pad(v, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
        kh = w.shape[2]
        h, w_ = v.shape[2] - kh + 1, v.shape[3] - kh + 1
        return sum(np.einsum("nchw,mc->nmhw", v[:, :, i:i + h, j:j + w_], w[:, :, i, j])
                   for i in range(kh) for j in range(kh))

    f64 = lambda a: np.asarray(a, np.float64)  # noqa: E731
    xq = q(f64(x), "xs", "xz")
    bias1 = f64(b1) * scales["xs"] * f64(s1)
    c = q(conv(dq(xq, "xs", "xz"), f64(w1) * f64(s1)[:, None, None, None], 1) + bias1[None, :, None, None],
          "cs", "cz")
    p = c.reshape(4, 8, 6, 2, 6, 2).max(axis=(3, 5))
    d = q(conv(dq(p, "cs", "cz"), f64(w2) * f64(s2)[:, None, None, None], 0), "ds", "dz")
    a = q(dq(d, "ds", "dz") + dq(p, "cs", "cz"), "as", "az")
    g = q(1 / (1 + np.exp(-dq(a, "as", "az"))), "gs", "gz")
    m = q(dq(a, "as", "az") * dq(g, "gs", "gz"), "ms", "mz")
    k = q(np.concatenate([dq(m, "ms", "mz"), dq(p, "cs", "cz")], axis=1), "ks", "kz")
    pool = q(dq(k, "ks", "kz").mean(axis=(2, 3)), "ps", "pz")
    bias3 = f64(b3) * scales["ps"] * f64(s3)
    want = dq(q(dq(pool, "ps", "pz") @ (f64(w3) * f64(s3)[:, None]).T + bias3, "ys", "yz"), "ys", "yz")
    assert 0.1 < np.mean((want > dq(0, "ys", "yz")) & (want < dq(255, "ys", "yz")))  # not saturated
    np.testing.assert_allclose(got["y"], want, rtol=0, atol=scales["ys"] * 1.01)
    if cpu_has_vnni():  # the convolutions and QGemm in int8 (test_qdq_*_as_int8_library_call*)
        calls = [k["strategy"] for k in profile if k["op_type"].startswith("QLinearConv")]
        assert len(calls) == 2 and all("oneDNN int8 convolution" in c for c in calls), calls
        assert [k for k in profile if "oneDNN int8 matmul" in k["strategy"]], profile
        return
    assert [k for k in profile if k["op_type"].startswith("Gemm")], profile
    calls = [k["strategy"] for k in profile if k["op_type"].startswith("Conv")]
    assert len(calls) == 2 and all("oneDNN" in c for c in calls), calls
    # The MaxPool and Flatten on quantized values run in float: each DequantizeLinear moved
    # above them to meet its QuantizeLinear (quantized_in_float's sink_dequantize).
    assert not [k for k in profile if "u8[" in k["shapes"]], profile



def dynamically_quantized(product, y):
    """ONNX Runtime's quantize_dynamic around "product" (a MatMulInteger or ConvInteger of
    "xq" by "w", zero points "xz" and "wz", into "acc"): DynamicQuantizeLinear of "x", the
    product, a Cast to float and a Mul by the two scales (the weights' is "ws") into "y"."""
    return [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]), product,
            helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["xs", "ws"], ["s"]),
            helper.make_node("Mul", ["accf", "s"], [y])]


def dynamic_quantize(x):
    """DynamicQuantizeLinear's reference: the u8 values (as int64), their zero point and scale."""
    lo, hi = min(0.0, float(x.min(initial=0))), max(0.0, float(x.max(initial=0)))
    scale = np.float32(1 if hi == lo else (hi - lo) / 255)  # ONNX Runtime's 1 for all zeros
    zero = np.clip(np.rint(-lo / scale), 0, 255)
    return np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.int64), int(zero), scale


@pytest.mark.parametrize("kind", ["normal", "negative", "zeros", "empty"])
def test_dynamic_quantize_linear(kind):
    """DynamicQuantizeLinear's three outputs, against dynamic_quantize; an all-zero or empty x
    takes scale 1 (ONNX Runtime's and PyTorch's), not the spec formula's 0 (onnx/onnx#8437)."""
    rng = np.random.default_rng(3)
    shape = [0, 16] if kind == "empty" else [8, 16]
    x = {"normal": rng.standard_normal(shape), "negative": -np.abs(rng.standard_normal(shape)),
         "zeros": np.zeros(shape), "empty": np.zeros(shape)}[kind].astype(np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, shape),
                        helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                        helper.make_tensor_value_info("z", TensorProto.UINT8, [])])
    got = weft.compile(model.SerializeToString()).run({"x": x})
    y, zero, scale = dynamic_quantize(x)
    np.testing.assert_array_equal(got["y"].astype(np.int64), y)
    assert int(got["z"]) == zero and np.float32(got["s"]) == scale, (got["s"], got["z"])


def test_dynamically_quantized_matmul_runs_as_a_float_library_call():
    """ONNX Runtime's quantize_dynamic (its usual way to quantize transformers): each weight's
    MatMul becomes DynamicQuantizeLinear of the activations, MatMulInteger on int8 weights
    (here with a zero point per column), Cast to float and a Mul by the two scales. The
    MatMulInteger of constant weights runs as an f32 oneDNN matmul on the weights less their
    zero points (exact integers), the activations less theirs: the same sums, against an
    integer reference."""
    rng = np.random.default_rng(9)
    m, k, n = 24, 64, 48
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    w_zero = rng.integers(-3, 4, n).astype(np.int8)
    w_scale = np.float32(0.01)
    arr = numpy_helper.from_array
    nodes = dynamically_quantized(helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]), "y")
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                       [arr(w, "w"), arr(w_zero, "wz"), arr(np.array(w_scale), "ws")])
    x = rng.standard_normal((m, k)).astype(np.float32)
    got, profile = weft.compile(model.SerializeToString()).profile({"x": x})
    xq, zero, scale = dynamic_quantize(x)
    acc = (xq - zero) @ (w.astype(np.int64) - w_zero.astype(np.int64))
    want = acc.astype(np.float32) * (scale * w_scale)
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    assert [k for k in profile if "oneDNN matmul" in k["strategy"]], profile
    assert not [k for k in profile if "MatMulInteger" in k["op_type"]], profile


def test_dynamically_quantized_linear_runs_as_an_int8_library_call():
    """quantize_dynamic's Linear with symmetric weights (zero point 0, its default): on a CPU
    with VNNI, the MatMulInteger of [2, 12, 64] activations runs as one oneDNN int8 matmul
    (u8 by s8, adding in int32) that absorbs the Cast, the scale, the bias and a residual;
    elsewhere, and with WEFT_ONEDNN_INT8=0, as the f32 matmul. Both against an integer
    reference, and the same outputs."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    rng = np.random.default_rng(11)
    k, n = 64, 48
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    bias = rng.standard_normal(n).astype(np.float32)
    arr = numpy_helper.from_array
    nodes = dynamically_quantized(helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]), "scaled") + [
             helper.make_node("Add", ["scaled", "b"], ["biased"]),
             helper.make_node("Add", ["biased", "r"], ["y"])]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, [helper.make_tensor_value_info("x", f32, [2, 12, k]),
                               helper.make_tensor_value_info("r", f32, [2, 12, n])],
                       [helper.make_tensor_value_info("y", f32, [2, 12, n])],
                       [arr(w, "w"), arr(np.zeros(1, np.int8), "wz"),
                        arr(np.array(np.float32(0.02)), "ws"), arr(bias, "b")])
    x = rng.standard_normal((2, 12, k)).astype(np.float32)
    r = rng.standard_normal((2, 12, n)).astype(np.float32)
    xq, zero, scale = dynamic_quantize(x)
    acc = (xq - zero) @ w.astype(np.int64)
    want = acc.astype(np.float32) * (scale * np.float32(0.02)) + bias + r

    got, profile = weft.compile(model.SerializeToString()).profile({"x": x, "r": r})
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    int8 = [p for p in profile if "oneDNN int8 matmul" in p["strategy"]]
    if cpu_has_vnni():
        assert [p["op_type"] for p in int8] == ["MatMulInteger+Cast+Mul+Add+Add"], profile
    else:
        assert not int8 and [p for p in profile if "oneDNN matmul" in p["strategy"]], profile

    with tempfile.TemporaryDirectory() as tmp:  # the f32 product, asked for
        path = os.path.join(tmp, "linear.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        np.save(os.path.join(tmp, "x.npy"), x)
        np.save(os.path.join(tmp, "r.npy"), r)
        script = ("import json, sys, numpy as np, weft\n"
                  "d = sys.argv[1]\n"
                  "out, prof = weft.compile(d + '/linear.onnx').profile("
                  "{'x': np.load(d + '/x.npy'), 'r': np.load(d + '/r.npy')})\n"
                  "np.save(d + '/y.npy', out['y'])\n"
                  "print(json.dumps([p['strategy'] for p in prof]))\n")
        env = dict(os.environ, WEFT_ONEDNN_INT8="0")
        done = subprocess.run([sys.executable, "-c", script, tmp], env=env, capture_output=True,
                              text=True, check=True)
        strategies = json.loads(done.stdout.splitlines()[-1])
        assert not [s for s in strategies if "int8" in s], strategies
        assert [s for s in strategies if "oneDNN matmul" in s], strategies
        np.testing.assert_array_equal(np.load(os.path.join(tmp, "y.npy")), got["y"])


def test_dynamically_quantized_convolution_runs_as_a_float_library_call():
    """quantize_dynamic on a CNN: ConvInteger on int8 weights (a zero point per output
    channel), padded with the input's zero point as the spec says, then Cast and Mul. It runs
    as an f32 oneDNN convolution of the activations less their zero point (zero padding
    there) and of the weights less theirs; against an integer reference."""
    rng = np.random.default_rng(10)
    w = rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8)
    w_zero = rng.integers(-3, 4, 6).astype(np.int8)
    arr = numpy_helper.from_array
    nodes = dynamically_quantized(
        helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["acc"], pads=[1, 1, 1, 1]), "y")
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 7, 5])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, 7, 5])],
                       [arr(w, "w"), arr(w_zero, "wz"), arr(np.array(np.float32(0.01)), "ws")])
    x = (rng.standard_normal((2, 4, 7, 5)) + 0.5).astype(np.float32)
    got, profile = weft.compile(model.SerializeToString()).profile({"x": x})
    xq, zero, scale = dynamic_quantize(x)
    acc = conv_reference(xq, zero, w, w_zero, np.zeros(6, np.int64), 1)
    want = acc.astype(np.float32) * (scale * np.float32(0.01))
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    assert [k for k in profile if "oneDNN convolution" in k["strategy"]], profile
    assert not [k for k in profile if "ConvInteger" in k["op_type"]], profile


@pytest.mark.parametrize("activations", [np.uint8, np.int8])
def test_qdq_convolutions_run_as_int8_library_calls(activations):
    """A QDQ chain as ONNX Runtime's quantize_static writes it (its default format): each
    DequantizeLinear -> Conv -> QuantizeLinear, weights int8 per output channel, the bias
    int32 in units of x_scale * w_scale. On a CPU with VNNI each becomes a QLinearConv that
    oneDNN runs as an int8 convolution (u8 or s8 activations with a zero point, requantized
    to u8 or s8); elsewhere, and with WEFT_ONEDNN_INT8=0, f32 convolutions. Against a float64
    reference of the QDQ arithmetic: within one quantum, nearly all exact. The second
    convolution is depthwise with stride 2; the 8-bit activations between the two lie
    channels-last. Between them, a MaxPool with the same scale and zero point on both sides
    (a ResNet's stem) runs on the 8-bit values where the convolutions do."""
    rng = np.random.default_rng(12)
    info = np.iinfo(activations)
    zero = lambda z: np.array(z, activations)  # noqa: E731
    c0, c1 = 8, 16
    w1 = rng.integers(-127, 128, (c1, c0, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (c1, 1, 3, 3)).astype(np.int8)
    s1 = rng.uniform(0.002, 0.005, c1).astype(np.float32)
    s2 = rng.uniform(0.01, 0.02, c1).astype(np.float32)
    xs, hs, ys = np.float32(0.02), np.float32(0.05), np.float32(0.04)
    b1 = rng.integers(-2000, 2000, c1).astype(np.int32)
    arr = numpy_helper.from_array
    inits = [arr(w1, "w1q"), arr(s1, "s1"), arr(np.zeros(c1, np.int8), "wz1"),
             arr(w2, "w2q"), arr(s2, "s2"), arr(np.zeros(c1, np.int8), "wz2"),
             arr(b1, "b1q"), arr((xs * s1).astype(np.float32), "bs1"), arr(np.zeros(c1, np.int32), "bz1"),
             arr(np.array(xs), "xs"), arr(np.array(hs), "hs"), arr(np.array(ys), "ys"),
             arr(zero(info.min + 100), "xz"), arr(zero(info.min + 60), "hz"), arr(zero(info.min + 128), "yz")]
    dq = lambda i, o, s, z, **a: helper.make_node("DequantizeLinear", [i, s, z], [o], **a)  # noqa: E731
    q = lambda i, o, s, z: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [dq("w1q", "w1", "s1", "wz1", axis=0), dq("w2q", "w2", "s2", "wz2", axis=0),
             dq("b1q", "b1", "bs1", "bz1", axis=0),
             q("x", "xq", "xs", "xz"), dq("xq", "xd", "xs", "xz"),
             helper.make_node("Conv", ["xd", "w1", "b1"], ["h"], pads=[1, 1, 1, 1]),
             q("h", "hq", "hs", "hz"), dq("hq", "hd", "hs", "hz"),
             helper.make_node("MaxPool", ["hd"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             q("p", "pq", "hs", "hz"), dq("pq", "pd", "hs", "hz"),
             helper.make_node("Conv", ["pd", "w2"], ["g"], pads=[1, 1, 1, 1], strides=[2, 2], group=c1),
             q("g", "gq", "ys", "yz"), dq("gq", "y", "ys", "yz")]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, [helper.make_tensor_value_info("x", f32, [2, c0, 14, 14])],
                       [helper.make_tensor_value_info("y", f32, [2, c1, 7, 7])], inits)
    x = (rng.standard_normal((2, c0, 14, 14)) * 1.5).astype(np.float32)

    def fake_quant_to(v, s, z):  # QuantizeLinear then DequantizeLinear, in float64
        return (np.clip(np.rint(v / np.float64(s)) + z, info.min, info.max) - z) * np.float64(s)

    def conv(v, w, stride=1, groups=1):
        v = np.pad(v, [(0, 0), (0, 0), (1, 1), (1, 1)])
        n, c, hh, ww = v.shape
        oh, ow = (hh - 3) // stride + 1, (ww - 3) // stride + 1
        out = np.zeros((n, w.shape[0], oh, ow))
        per = w.shape[0] // groups
        for g in range(groups):
            vg = v[:, g * (c // groups):(g + 1) * (c // groups)]
            for i in range(3):
                for j in range(3):
                    patch = vg[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                    out[:, g * per:(g + 1) * per] += np.einsum(
                        "nchw,mc->nmhw", patch, w[g * per:(g + 1) * per, :, i, j])
        return out

    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    xq = fake_quant_to(f64(x), xs, info.min + 100)
    h = conv(xq, f64(w1) * f64(s1)[:, None, None, None]) + (f64(b1) * f64(xs * s1)).reshape(1, -1, 1, 1)
    hq = fake_quant_to(h, hs, info.min + 60)
    padded = np.pad(hq, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-np.inf)
    hq = np.max([padded[:, :, i:i + 14, j:j + 14] for i in range(3) for j in range(3)], axis=0)
    want = fake_quant_to(conv(hq, f64(w2) * f64(s2)[:, None, None, None], 2, c1), ys, info.min + 128)

    out, profile = weft.compile(model.SerializeToString()).profile({"x": x})
    np.testing.assert_allclose(out["y"], want, rtol=0, atol=float(ys) * 1.01)
    assert np.mean(out["y"] == want.astype(np.float32)) > 0.97
    int8 = [p["strategy"] for p in profile if "int8 convolution" in p["strategy"]]
    if cpu_has_vnni():
        # Between the two, the 8-bit activations stay channels-last (channels_last.h).
        assert len(int8) == 2 and all("channels-last in place" in s for s in int8), int8
        assert not [p for p in profile if p["op_type"].startswith("Conv")], profile
        pools = [p for p in profile if "MaxPool" in p["op_type"]]
        assert len(pools) == 1 and "8[" in pools[0]["shapes"] and "oneDNN" in pools[0]["strategy"], pools
    else:
        assert not int8, profile


def test_dynamically_quantized_linear_compiles_once_for_dynamic_shapes():
    """quantize_dynamic's transformers over symbolic batch and sequence dims (dynamic_shapes):
    DynamicQuantizeLinear, the per-tensor DequantizeLinear after it and the QuantizeLinear
    lower over symbolic dims; one compile serves two shapes, against an integer reference."""
    rng = np.random.default_rng(13)
    k, n = 32, 24
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    arr = numpy_helper.from_array
    nodes = dynamically_quantized(helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]), "y0") + [
             helper.make_node("QuantizeLinear", ["y0", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, [helper.make_tensor_value_info("x", f32, ["b", "t", k])],
                       [helper.make_tensor_value_info("y", f32, ["b", "t", n]),  # yq too: Q and DQ stay
                        helper.make_tensor_value_info("yq", TensorProto.UINT8, ["b", "t", n])],
                       [arr(w, "w"), arr(np.zeros(1, np.int8), "wz"), arr(np.array(np.float32(0.02)), "ws"),
                        arr(np.array(np.float32(0.5)), "ys"), arr(np.array(np.uint8(128)), "yz")])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    for shape in [(1, 5, k), (3, 17, k)]:
        x = rng.standard_normal(shape).astype(np.float32)
        xq, zero, scale = dynamic_quantize(x)
        y0 = ((xq - zero) @ w.astype(np.int64)).astype(np.float32) * (scale * np.float32(0.02))
        want = (np.clip(np.rint(y0 / np.float32(0.5)) + 128, 0, 255) - 128) * np.float32(0.5)
        out = compiled.run({"x": x})
        got = out["y"]
        assert got.shape == want.shape and out["yq"].dtype == np.uint8
        np.testing.assert_array_equal(out["yq"].astype(np.float32) - 128, got / np.float32(0.5))
        np.testing.assert_allclose(got, want, rtol=0, atol=0.5 * 1.01)
        assert np.mean(got == want) > 0.97


def test_qdq_matmul_runs_as_an_int8_library_call():
    """quantize_static's QDQ transformers: DequantizeLinear -> MatMul (int8 weights per column,
    axis 1) -> QuantizeLinear. On a CPU with VNNI it becomes a QLinearMatMul that oneDNN runs
    as an int8 matmul writing u8 with the requantization's scales and zero point; elsewhere an
    f32 matmul. Against a float64 reference of the QDQ arithmetic, within one quantum."""
    rng = np.random.default_rng(14)
    k, n = 64, 40
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = rng.uniform(0.002, 0.005, n).astype(np.float32)
    xs, ys = np.float32(0.03), np.float32(0.06)
    arr = numpy_helper.from_array
    dq = lambda i, o, s, z, **a: helper.make_node("DequantizeLinear", [i, s, z], [o], **a)  # noqa: E731
    q = lambda i, o, s, z: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [dq("wq", "w", "ws", "wz", axis=1), q("x", "xq", "xs", "xz"), dq("xq", "xd", "xs", "xz"),
             helper.make_node("MatMul", ["xd", "w"], ["h"]), q("h", "hq", "ys", "yz"), dq("hq", "y", "ys", "yz")]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, [helper.make_tensor_value_info("x", f32, [2, 12, k])],
                       [helper.make_tensor_value_info("y", f32, [2, 12, n])],
                       [arr(w, "wq"), arr(ws, "ws"), arr(np.zeros(n, np.int8), "wz"),
                        arr(np.array(xs), "xs"), arr(np.array(np.uint8(120)), "xz"),
                        arr(np.array(ys), "ys"), arr(np.array(np.uint8(130)), "yz")], opset=13)
    x = rng.standard_normal((2, 12, k)).astype(np.float32)

    def fake_quant(v, s, z):
        return (np.clip(np.rint(v / np.float64(s)) + z, 0, 255) - z) * np.float64(s)

    want = fake_quant(fake_quant(x.astype(np.float64), xs, 120) @ (w * ws.astype(np.float64)), ys, 130)
    out, profile = weft.compile(model.SerializeToString()).profile({"x": x})
    np.testing.assert_allclose(out["y"], want, rtol=0, atol=float(ys) * 1.01)
    assert np.mean(out["y"] == want.astype(np.float32)) > 0.97
    int8 = [p["op_type"] for p in profile if "int8 matmul" in p["strategy"]]
    assert int8 == (["QLinearMatMul"] if cpu_has_vnni() else []), profile


@pytest.mark.parametrize("trans_b,bias", [(0, False), (1, True), (0, True)])
def test_qdq_gemm_runs_as_an_int8_library_call(trans_b, bias):
    """A QDQ Linear exported as Gemm (GPT-2's layers; ORT's quantizer writes the bias as int32
    in units of xs * ws, dequantized per column). On a CPU with VNNI it becomes one int8 matmul,
    the bias added to the sums before requantization, B transposed at compile time where transB
    is set; elsewhere an f32 Gemm. Against a float64 reference of the QDQ arithmetic, within
    one quantum."""
    rng = np.random.default_rng(16)
    k, n = 96, 48
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = rng.uniform(0.002, 0.005, n).astype(np.float32)
    xs, ys = np.float32(0.03), np.float32(0.08)
    b = rng.integers(-3000, 3000, n).astype(np.int32)
    arr = numpy_helper.from_array
    dq = lambda i, o, s, z, **a: helper.make_node("DequantizeLinear", [i, s, z], [o], **a)  # noqa: E731
    q = lambda i, o, s, z: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    inputs = ["xd", "w"] + (["b"] if bias else [])
    nodes = [dq("wq", "w", "ws", "wz", axis=0 if trans_b else 1), q("x", "xq", "xs", "xz"),
             dq("xq", "xd", "xs", "xz"), helper.make_node("Gemm", inputs, ["h"], transB=trans_b),
             q("h", "hq", "ys", "yz"), dq("hq", "y", "ys", "yz")]
    initializers = [arr(w.T.copy() if trans_b else w, "wq"), arr(ws, "ws"), arr(np.zeros(n, np.int8), "wz"),
                    arr(np.array(xs), "xs"), arr(np.array(np.uint8(120)), "xz"),
                    arr(np.array(ys), "ys"), arr(np.array(np.uint8(130)), "yz")]
    if bias:
        nodes.insert(0, dq("bq", "b", "bs", "bz", axis=0))
        initializers += [arr(b, "bq"), arr((xs * ws).astype(np.float32), "bs"), arr(np.zeros(n, np.int32), "bz")]
    f32 = TensorProto.FLOAT
    model = make_model(nodes, [helper.make_tensor_value_info("x", f32, [20, k])],
                       [helper.make_tensor_value_info("y", f32, [20, n])], initializers, opset=13)
    x = rng.standard_normal((20, k)).astype(np.float32)

    def fake_quant(v, s, z):
        return (np.clip(np.rint(v / np.float64(s)) + z, 0, 255) - z) * np.float64(s)

    h = fake_quant(x.astype(np.float64), xs, 120) @ (w * ws.astype(np.float64))
    if bias:
        h += b * (xs * ws).astype(np.float32).astype(np.float64)
    want = fake_quant(h, ys, 130)
    out, profile = weft.compile(model.SerializeToString()).profile({"x": x})
    np.testing.assert_allclose(out["y"], want, rtol=0, atol=float(ys) * 1.01)
    assert np.mean(out["y"] == want.astype(np.float32)) > 0.97
    int8 = [p["op_type"] for p in profile if "int8 matmul" in p["strategy"]]
    assert int8 == (["QLinearMatMul"] if cpu_has_vnni() else []), profile


def pack_bits(values, bits):
    """Unsigned "bits"-bit integers packed along the last axis, low bits first (MatMulNBits)."""
    per = 8 // bits
    padded = np.zeros(values.shape[:-1] + (-(-values.shape[-1] // per) * per,), np.uint8)
    padded[..., :values.shape[-1]] = values
    grouped = padded.reshape(values.shape[:-1] + (-1, per)).astype(np.uint8)
    return sum((grouped[..., i] << (bits * i)).astype(np.uint8) for i in range(per)).astype(np.uint8)


def matmul_nbits_case(bits, zero_points, bias, k, n, block, rows_shape, opset, seed=17, accuracy_level=0,
                      int8_reference=False):
    """A MatMulNBits model, its input and the float64 reference of its output (with
    "int8_reference", of ONNX Runtime's accuracy level 4: A quantized to int8 per block)."""
    rng = np.random.default_rng(seed)
    blocks = -(-k // block)
    q = rng.integers(0, 2 ** bits, (n, blocks * block)).astype(np.uint8)
    scales = rng.uniform(0.01, 0.05, (n, blocks)).astype(np.float32)
    zeros = rng.integers(0, 2 ** bits, (n, blocks)).astype(np.uint8) if zero_points else None
    b = rng.standard_normal(n).astype(np.float32)
    arr = numpy_helper.from_array
    inits = [arr(pack_bits(q, bits).reshape(n, blocks, block * bits // 8), "bq"), arr(scales, "scales")]
    names = ["a", "bq", "scales", "zp" if zero_points else "", "", "bias" if bias else ""]
    if zero_points:
        inits.append(arr(pack_bits(zeros, bits), "zp"))
    if bias:
        inits.append(arr(b, "bias"))
    node = helper.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block, accuracy_level=accuracy_level)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, rows_shape + [k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, rows_shape + [n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8 if opset < 21 else 10
    a = rng.standard_normal(rows_shape + [k]).astype(np.float32)
    zero = np.repeat(zeros, block, axis=1) if zero_points else 2 ** (bits - 1)
    w = ((q.astype(np.float64) - zero) * np.repeat(scales.astype(np.float64), block, axis=1))[:, :k]
    if int8_reference:  # symmetric per block (the last may be short), scale max|a| / 127, rounded to even
        dequantized = []
        for part in np.split(a, range(block, k, block), axis=-1):
            amax = np.abs(part).max(-1, keepdims=True)
            inverse = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), np.float32(0))
            dequantized.append(np.rint(part * inverse).astype(np.float64) * (amax / np.float32(127)))
        return model, a, np.concatenate(dequantized, -1) @ w.T + (b if bias else 0)
    return model, a, a.astype(np.float64) @ w.T + (b if bias else 0)


@pytest.mark.parametrize("bits, zero_points, bias, opset", [
    (4, True, True, 17), (4, False, False, 18), (8, True, False, 17),  # quantized before opset 21 too
    (2, True, True, 17), (2, False, False, 21),                          # dequantized at import
])
def test_matmul_nbits_at_any_opset(bits, zero_points, bias, opset):
    """ONNX Runtime's weight-only quantization (MatMulNBitsQuantizer, int4 language models):
    MatMulNBits with B [N, blocks, block_size * bits / 8] packed low bits first, scales per
    block, zero points packed per row of N or 2^(bits - 1), K not a multiple of the block.
    MatMulNBitsQuantizer keeps the model's opset (17 or 18 for PyTorch's exports): 4- and 8-bit
    weights stay quantized there too (Weft's graph takes a blocked DequantizeLinear of u4 at
    any opset); 2-bit ones are dequantized at import. Against a float64 reference (ONNX Runtime
    1.32 gives Weft's outputs bit for bit on its quantizer's models)."""
    model, a, want = matmul_nbits_case(bits, zero_points, bias, 80, 24, 32 if bits == 4 else 16, [3], opset)
    got, profile = weft.compile(model.SerializeToString()).profile({"a": a})
    quantized = [p["strategy"].split(" matrix")[0] for p in profile if "bit weights" in p["strategy"]]
    assert quantized == ([f"Weft {bits}-bit weights"] if bits != 2 else []), profile
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bits, zero_points, k, block, rows_shape", [
    (4, True, 80, 32, [1]),          # K not a multiple of the block: one byte a weight
    (4, False, 256, 32, [1]),        # a decoding step: two weights a byte (on AVX-512)
    (4, True, 256, 64, [1, 1]),
    (4, True, 96, 64, [1]),          # K a multiple of 32 but not of the block: a short last block
    (4, False, 32, 64, [1]),         # K shorter than one block
    (4, False, 256, 32, [3]),        # rows 2-4: each weight read once for all of them
    (4, True, 96, 32, [2, 5]),       # more rows: the weights dequantized once per chunk
    (4, True, 88, 32, [7]),          # and K not a multiple of 16 (the vectors' tails)
    (8, True, 80, 16, [1]),
    (8, False, 128, 32, [6]),
])
def test_matmul_nbits_keeps_its_weights_quantized(bits, zero_points, k, block, rows_shape):
    """MatMulNBits imports as MatMul(A, Transpose(DequantizeLinear(q, scales,
    zero points, blocks along K))) and runs as Weft's weight-only call on the quantized weights
    (weft/library/weight_only_matmul.h), whatever the number of rows."""
    model, a, want = matmul_nbits_case(bits, zero_points, True, k, 40, block, rows_shape, 21)
    got, profile = weft.compile(model.SerializeToString()).profile({"a": a})
    assert [p["strategy"].split(" matrix")[0] for p in profile if p["op_type"] != "Add"] == \
        [f"Weft {bits}-bit weights"], profile
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bits, zero_points, k, block, rows_shape", [
    (4, False, 256, 32, [1]),        # zero points 8 everywhere (GenAI's symmetric int4)
    (4, True, 384, 64, [1]),         # zero points per block; blocks of 64 (two groups of 32)
    (4, True, 640, 32, [3]),         # 3 rows
    (4, False, 1024, 128, [2, 2]),   # 4 rows
    (4, True, 256, 32, [6]),         # a prompt: groups of 4 rows and 2
    (8, False, 256, 32, [1]),        # 8 bits (GenAI's int8): zero points 128
    (8, True, 320, 32, [5]),
    (4, True, 96, 64, [1]),          # a short last block (blocks of 64 over K = 96)
    (8, False, 160, 64, [3]),
])
def test_matmul_nbits_accuracy_level_4_quantizes_the_activations_to_int8(bits, zero_points, k, block, rows_shape):
    """MatMulNBits' accuracy_level 4 (what ONNX Runtime GenAI's builder writes for the CPU):
    with VNNI, the rows of A are quantized to int8 per block, as ONNX Runtime does, and the
    products of 4- or 8-bit weights and int8 activations are integer sums (vpdpbusd), scaled once per
    group of 32. Against a float64 reference of that arithmetic: within 1e-5 where the f32 path
    would differ by the activations' rounding (about 1e-3 of the output)."""
    int8 = has_avx512_vnni()
    model, a, want = matmul_nbits_case(bits, zero_points, True, k, 40, block, rows_shape, 21, accuracy_level=4,
                                       int8_reference=int8)
    got, profile = weft.compile(model.SerializeToString()).profile({"a": a})
    strategy = [p["strategy"] for p in profile if p["op_type"] != "Add"]
    assert len(strategy) == 1 and ("int8 activations" in strategy[0]) == int8, strategy
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("zero_points, block, ids_shape", [(False, 32, (2, 3)), (True, 16, (4,)), (True, 32, (1, 5))])
def test_gather_block_quantized_dequantizes_the_rows_gathered(zero_points, block, ids_shape):
    """ONNX Runtime GenAI's int4 embeddings (often the head's weights, shared): GatherBlockQuantized
    of a uint8 table two 4-bit values a byte, low half first, scales per block along the row,
    zero points packed the same way or 8; against a float64 reference (ONNX Runtime 1.32 gives
    the same bits)."""
    rng = np.random.default_rng(19)
    v, h = 40, 96
    blocks = h // block
    data = rng.integers(0, 256, (v, h // 2)).astype(np.uint8)
    scales = rng.random((v, blocks)).astype(np.float32)
    zeros = rng.integers(0, 256, (v, -(-blocks // 2))).astype(np.uint8)
    arr = numpy_helper.from_array
    inits = [arr(data, "d"), arr(scales, "s")] + ([arr(zeros, "z")] if zero_points else [])
    node = helper.make_node("GatherBlockQuantized", ["d", "ids", "s"] + (["z"] if zero_points else []), ["y"],
                            domain="com.microsoft", bits=4, block_size=block)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, list(ids_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    ids = rng.integers(0, v, ids_shape).astype(np.int64)
    got = weft.compile(model.SerializeToString()).run({"ids": ids})["y"]
    unpack = lambda t: np.stack([t & 15, t >> 4], -1).reshape(t.shape[0], -1).astype(np.float64)  # noqa: E731
    zero = unpack(zeros)[:, :blocks] if zero_points else np.full((v, blocks), 8.0)
    want = ((unpack(data) - np.repeat(zero, block, 1)) * np.repeat(scales.astype(np.float64), block, 1))[ids]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_gather_block_quantized_compiles_once_for_every_length():
    """GenAI's int4 embeddings in a decoding loop: ids [batch, length] of symbolic dims compile
    once with dynamic_shapes. The expansion's CastLike to the scales' type had made it compile
    per shape (its "like" input, read for its type only, was checked as a broadcast operand)."""
    rng = np.random.default_rng(23)
    v, h, block = 40, 96, 32
    data = rng.integers(0, 256, (v, h // 2)).astype(np.uint8)
    scales = rng.random((v, h // block)).astype(np.float32)
    node = helper.make_node("GatherBlockQuantized", ["d", "ids", "s"], ["y"], domain="com.microsoft", bits=4,
                            block_size=block)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(data, "d"), numpy_helper.from_array(scales, "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    unpack = lambda t: np.stack([t & 15, t >> 4], -1).reshape(t.shape[0], -1).astype(np.float64)  # noqa: E731
    table = (unpack(data) - 8) * np.repeat(scales.astype(np.float64), block, 1)
    for shape in [(1, 7), (1, 1), (2, 3)]:
        ids = rng.integers(0, v, shape).astype(np.int64)
        np.testing.assert_allclose(compiled.run({"ids": ids})["y"], table[ids], rtol=1e-6, atol=1e-6)
    assert compiled.compiled_variants == 1


def test_gather_block_quantized_with_a_short_last_block_is_one_clear_error():
    """Rows whose length is not a multiple of block_size (ONNX Runtime's last block is shorter)
    are refused by name, where they had failed in a Reshape of the expansion."""
    node = helper.make_node("GatherBlockQuantized", ["d", "ids", "s"], ["y"], domain="com.microsoft", bits=4,
                            block_size=32, name="embed")
    inits = [numpy_helper.from_array(np.zeros((10, 40), np.uint8), "d"),
             numpy_helper.from_array(np.ones((10, 3), np.float32), "s")]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(weft.WeftError, match=r"node 'embed' .*rows of 80 values in 3 scales' blocks of 32"):
        weft.compile(model.SerializeToString())


def test_quantized_embedding_dequantizes_only_the_rows_gathered():
    """quantize_static's embedding table: Gather(DequantizeLinear(table)), the table too large
    to fold at compile time. Weft gathers the u8 rows first and dequantizes those, instead of
    the whole table at every run; the same values."""
    rng = np.random.default_rng(15)
    table = rng.integers(0, 256, (6000, 64)).astype(np.uint8)  # 384,000 elements: not folded
    arr = numpy_helper.from_array
    nodes = [helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["t"]),
             helper.make_node("Gather", ["t", "ids"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 64])],
                       [arr(table, "tq"), arr(np.array(np.float32(0.05)), "s"), arr(np.array(np.uint8(100)), "z")])
    ids = rng.integers(0, 6000, (2, 5)).astype(np.int64)
    out, profile = weft.compile(model.SerializeToString()).profile({"ids": ids})
    want = (table[ids].astype(np.float32) - 100) * np.float32(0.05)
    np.testing.assert_array_equal(out["y"], want)
    assert all(p["bytes"] < table.size for p in profile), profile  # no pass over the table
