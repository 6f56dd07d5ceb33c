"""compile(allow_bf16=True) on the CPU: f32 convolutions and MatMuls multiply their operands
rounded to bf16 and sum in f32 (graph/passes/products_in_bf16.h), as oneDNN's bf16 calls where
the CPU multiplies bf16 natively (AVX512-BF16, AMX); elsewhere the option changes nothing.
Against float64 references of both arithmetics: with the option, the outputs are those of the
rounded operands; without it, those of f32."""

import os
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model
from test_half_models import conv, cpu_has_bf16, rounded


pytestmark = pytest.mark.skipif(not cpu_has_bf16(), reason="the CPU does not multiply bf16")

bf16 = lambda a: rounded(a, TensorProto.BFLOAT16)
f32 = lambda a: a.astype(np.float32).astype(np.float64)


def network(rng):
    """Conv 3x3 -> Relu -> a -> Conv 1x1 -> y1; Reshape to [64, 16] -> MatMul by constant
    weights -> y2, by itself transposed (a product of two activations) -> y3, and Gemm by
    constant weights (transposed) and a bias -> y4. Returns the model, an input, and a
    reference given a rounding of the products' operands and the run's outputs: each product
    reads the run's own f32 operands (a, y1), so that a rounding of one that falls the other
    way in f32 does not pass on to the bf16 one."""
    w1, b1 = rng.standard_normal((16, 8, 3, 3)) / 5, rng.standard_normal(16) / 5
    w2, b2 = rng.standard_normal((16, 16, 1, 1)) / 4, rng.standard_normal(16) / 5
    wm = rng.standard_normal((16, 12)) / 4
    wg, bg = rng.standard_normal((10, 16)) / 4, rng.standard_normal(10) / 5
    x = f32(rng.standard_normal((1, 8, 8, 8)))
    inits = [numpy_helper.from_array(v.astype(np.float32), name) for name, v in
             [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("wm", wm), ("wg", wg), ("bg", bg)]]
    inits.append(numpy_helper.from_array(np.array([16, 64], np.int64), "shape"))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["a"]),
             helper.make_node("Conv", ["a", "w2", "b2"], ["y1"]),
             helper.make_node("Reshape", ["y1", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["rt"], perm=[1, 0]),
             helper.make_node("MatMul", ["rt", "wm"], ["y2"]),
             helper.make_node("MatMul", ["rt", "r"], ["y3"]),
             helper.make_node("Gemm", ["rt", "wg", "bg"], ["y4"], transB=1)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                       [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 16, 8, 8]),
                        helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, 16, 8, 8]),
                        helper.make_tensor_value_info("y2", TensorProto.FLOAT, [64, 12]),
                        helper.make_tensor_value_info("y3", TensorProto.FLOAT, [64, 64]),
                        helper.make_tensor_value_info("y4", TensorProto.FLOAT, [64, 10])], inits)

    def reference(r, got):
        a = np.maximum(conv(r(x), r(f32(w1)), f32(b1), 1), 0)
        y1 = conv(r(got["a"].astype(np.float64)), r(f32(w2)), f32(b2), 0)
        rt = got["y1"].astype(np.float64).reshape(16, 64).T
        return {"a": a, "y1": y1, "y2": r(rt) @ r(f32(wm)), "y3": r(rt) @ r(rt.T),
                "y4": r(rt) @ r(f32(wg)).T + f32(bg)}
    return model, x, reference


def largest_difference(got, want):
    return np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()


@pytest.mark.parametrize("allow_bf16", [True, False])
def test_products_round_their_operands_only_when_allowed(allow_bf16):
    model, x, reference = network(np.random.default_rng(5))
    got = weft.compile(model.SerializeToString(), allow_bf16=allow_bf16).run(
        {"x": x.astype(np.float32)})
    want, other = reference(bf16, got), reference(f32, got)
    if not allow_bf16:
        want, other = other, want
    for name in ("a", "y1", "y2", "y3", "y4"):
        # Only the order of the f32 sums differs (about 1e-6).
        assert largest_difference(got[name], want[name]) < 2e-5, name
        assert largest_difference(got[name], other[name]) > 3e-4, name  # the other arithmetic


def test_the_kernel_table_shows_bf16_products(tmp_path):
    model, _, _ = network(np.random.default_rng(5))
    path = tmp_path / "bf16_products.onnx"
    path.write_bytes(model.SerializeToString())
    cli = os.environ.get("WEFT_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                  "tools", "weft", "weft"))
    table = lambda *flags: subprocess.run(
        [cli, "bench", str(path), "--fill", "random", "--iters", "1", "--kernels", *flags],
        capture_output=True, text=True, check=True).stdout
    with_bf16 = table("--allow-bf16")
    # Both convolutions (the first through the Transpose of its source to channels-last), both
    # MatMuls and the Gemm.
    assert with_bf16.count("bf16 products") == 5, with_bf16
    assert "bf16 products" not in table(), table()
