"""A row times constant f32 weights (a language model's decoding step at batch 1) runs as Weft's
own matrix-vector call (weft/library/gemv.h), with the bias and the epilogue oneDNN would have
absorbed; against float64 numpy."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft

K, N = 640, 512  # 2^18 + weights: past kGemvMinWeights


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (nodes after "h" = x @ w, which end in "y"; the reference of h; the extra inputs)
EPILOGUES = {
    "none": ([helper.make_node("Identity", ["h"], ["y"])], lambda h, e: h),
    "bias_relu": ([helper.make_node("Add", ["h", "bias"], ["b"]), helper.make_node("Relu", ["b"], ["y"])],
                  lambda h, e: np.maximum(h + e["bias"], 0)),
    "gate_times_up_plus_residual": ([helper.make_node("Mul", ["h", "up"], ["m"]),
                                     helper.make_node("Add", ["m", "residual"], ["y"])],
                                    lambda h, e: h * e["up"] + e["residual"]),
    "leaky_clip": ([helper.make_node("LeakyRelu", ["h"], ["l"], alpha=0.1),
                    helper.make_node("Clip", ["l", "low", "high"], ["y"])],
                   lambda h, e: np.clip(np.where(h > 0, h, 0.1 * h), -0.5, 0.75)),
    "sigmoid_tanh_hardswish": ([helper.make_node("Sigmoid", ["h"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
                                helper.make_node("HardSwish", ["t"], ["y"])],
                               lambda h, e: (lambda t: t * np.clip(t / 6 + 0.5, 0, 1))(np.tanh(sigmoid(h)))),
    "minus_then_over_a_scalar": ([helper.make_node("Sub", ["h", "scalar"], ["d"]),
                                  helper.make_node("Div", ["d", "scalar"], ["y"])],
                                 lambda h, e: (h - e["scalar"]) / e["scalar"]),
}


@pytest.mark.parametrize("rank", [1, 3])
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_a_row_times_constant_weights_runs_as_weft_gemv(epilogue, rank):
    rng = np.random.default_rng(len(epilogue) + rank)
    x_shape = [K] if rank == 1 else [1, 1, K]
    y_shape = [N] if rank == 1 else [1, 1, N]
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    extra = {"bias": rng.standard_normal(N).astype(np.float32),
             "up": rng.standard_normal(y_shape).astype(np.float32),
             "residual": rng.standard_normal(y_shape).astype(np.float32),
             "scalar": np.array(1.5, np.float32), "low": np.array(-0.5, np.float32),
             "high": np.array(0.75, np.float32)}
    nodes, reference = EPILOGUES[epilogue]
    used = {i for n in nodes for i in n.input} & set(extra)
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    feeds.update({k: extra[k] for k in used if k in ("up", "residual")})
    initializers = [numpy_helper.from_array(w, "w")] + [numpy_helper.from_array(extra[k], k) for k in used
                                                        if k not in ("up", "residual")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"])] + nodes, "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), threads=2)
    got, kernels = compiled.profile(feeds)
    assert any(k["strategy"].startswith("Weft matrix-vector product") for k in kernels), \
        [k["strategy"] for k in kernels]
    h = feeds["x"].astype(np.float64).reshape(-1) @ w.astype(np.float64)
    want = reference(h.reshape(y_shape), {k: v.astype(np.float64) for k, v in extra.items()})
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-5)


def test_two_rows_stay_onednn():
    """Two rows read the weights twice in a matrix-vector kernel: oneDNN's matmul."""
    w = np.ones((K, N), np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, N])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    got, kernels = weft.compile(model.SerializeToString()).profile({"x": np.ones((2, K), np.float32)})
    assert not any("matrix-vector" in k["strategy"] for k in kernels)
    np.testing.assert_array_equal(got["y"], np.full((2, N), K, np.float32))


@pytest.mark.parametrize("trans_b, with_c, n", [(1, True, N), (0, False, N), (1, False, N - 1)])
def test_a_row_through_gemm_runs_as_weft_gemv(trans_b, with_c, n):
    """Gemm of one row (a classifier's head, nn.Linear as the TorchScript exporter writes it:
    transB=1): Weft's matrix-vector call, each output a dot product with a row of W when B is
    transposed (eight rows at a time, then the rest: 511 outputs); with C [N] as its bias and a
    Relu after."""
    rng = np.random.default_rng(trans_b + 2 * with_c)
    w = (rng.standard_normal((n, K) if trans_b else (K, n)) / np.sqrt(K)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    inputs = ["x", "w", "c"] if with_c else ["x", "w"]
    graph = helper.make_graph(
        [helper.make_node("Gemm", inputs, ["g"], transB=trans_b), helper.make_node("Relu", ["g"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(c, "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.standard_normal((1, K)).astype(np.float32)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile({"x": x})
    assert [k["strategy"].split(" (")[0] for k in kernels] == [f"Weft matrix-vector product 1x640x{n}"], kernels
    h = x.astype(np.float64) @ (w.T if trans_b else w).astype(np.float64) + (c if with_c else 0)
    np.testing.assert_allclose(got["y"], np.maximum(h, 0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch, rows", [(1, 1), (2, 1), (1, 2)])
def test_one_row_written_transposed(batch, rows):
    """MatMul then Transpose(perm 0, 2, 1), as LFM2's convolution input projection: oneDNN's matmul
    writes through the transpose's strides. One row of one batch (a decoding step at batch 1)
    had its row step equal to its column stride (both 1), which oneDNN refused at execution."""
    rng = np.random.default_rng(rows)
    w = rng.standard_normal((K, N)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Transpose", ["h"], ["y"], perm=[0, 2, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, rows, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((batch, rows, K)).astype(np.float32)
    got = weft.compile(model.SerializeToString()).run({"x": x})["y"]
    np.testing.assert_allclose(got, np.transpose(x.astype(np.float64) @ w, (0, 2, 1)), rtol=1e-4, atol=1e-4)
