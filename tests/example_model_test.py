"""examples/attention_block.onnx through `weft run`, against a float64 NumPy reference of the
same computation (MatMul, Split, Reshape, Transpose, Softmax, LayerNormalization, ReduceSum).

Usage: example_model_test.py WEFT_BINARY
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "examples", "attention_block.onnx")


def reference(x, w):
    x, w = x.astype(np.float64), {k: v.astype(np.float64) for k, v in w.items()}
    b, t, d = x.shape
    heads = 4
    q, k, v = np.split(x @ w["w_qkv"], 3, axis=-1)
    split = lambda a: a.reshape(b, t, heads, d // heads)
    q, k, v = split(q).transpose(0, 2, 1, 3), split(k).transpose(0, 2, 3, 1), split(v).transpose(0, 2, 1, 3)
    s = (q @ k) * w["scale"]
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    res = (p @ v).transpose(0, 2, 1, 3).reshape(b, t, d) + x
    mean = res.mean(-1, keepdims=True)
    var = ((res - mean) ** 2).mean(-1, keepdims=True)
    y = (res - mean) / np.sqrt(var + 1e-5) * w["ln_scale"] + w["ln_bias"]
    return y, y.sum(-1)


def main():
    weft = sys.argv[1]
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(MODEL).graph.initializer}
    x = np.random.default_rng(1).standard_normal((2, 128, 64)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        r = subprocess.run([weft, "run", MODEL, "--input", "x=" + os.path.join(tmp, "x.npy"),
                            "--output-dir", tmp], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        y, row_sum = np.load(os.path.join(tmp, "y.npy")), np.load(os.path.join(tmp, "row_sum.npy"))
    y_ref, row_sum_ref = reference(x, weights)
    np.testing.assert_allclose(y, y_ref, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(row_sum, row_sum_ref, rtol=1e-3, atol=1e-3)
    print(f"ok: max |y - ref| = {np.abs(y - y_ref).max():.2e}")


if __name__ == "__main__":
    main()
