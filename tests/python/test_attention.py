"""Attention whose scores take 4 MB or more runs on the CPU as one call of Weft's own, a block
of query rows at a time (library/attention_call.h): softmax(Q K^T * scale + mask) V with the
Transposes PyTorch's exporter writes around it, without them, with broadcast batch dims,
cross attention with a partial last block, and masks of every broadcast; against NumPy in
float64."""


import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cli_kernels, make_model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def attention_model(q_shape, k_shape, v_shape, layout, scale=None, mask_shape=None, divide=False):
    """layout "bshd": inputs [B, S, H, D], transposed to [B, H, S, D] and back (PyTorch's
    exports); "bhsd": the product's operands as they are (K given transposed, [B, H, D, S])."""
    nodes, inits = [], []
    if layout == "bshd":
        nodes += [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
                  helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3])]
        q, kt, v = "qt", "kt", "vt"
    else:
        q, kt, v = "q", "k", "v"
    nodes.append(helper.make_node("MatMul", [q, kt], ["s0"]))
    s = "s0"
    if scale is not None:
        inits.append(numpy_helper.from_array(np.array(scale, np.float32), "scale"))
        nodes.append(helper.make_node("Div" if divide else "Mul", [s, "scale"], ["s1"]))
        s = "s1"
    inputs = [f32("q", q_shape), f32("k", k_shape), f32("v", v_shape)]
    if mask_shape is not None:
        nodes.append(helper.make_node("Add", [s, "mask"], ["s2"]))
        inputs.append(f32("mask", mask_shape))
        s = "s2"
    nodes += [helper.make_node("Softmax", [s], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", v], ["o" if layout == "bshd" else "y"])]
    if layout == "bshd":
        nodes.append(helper.make_node("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3]))
    if layout == "bshd":
        out_shape = q_shape[:3] + v_shape[3:]
    else:
        out_shape = [max(a, b) for a, b in zip(q_shape[:-2], v_shape[:-2])] + [q_shape[-2], v_shape[-1]]
    return make_model(nodes, inputs, [f32("y", out_shape)], inits, opset=17)


def reference(q, k, v, layout, scale, mask, divide):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    if layout == "bshd":
        q, k, v = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 3, 1), v.transpose(0, 2, 1, 3)
    s = q @ k
    if scale is not None:
        s = s / scale if divide else s * scale
    if mask is not None:
        s = s + mask
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    y = (p / p.sum(axis=-1, keepdims=True)) @ v
    return y.transpose(0, 2, 1, 3) if layout == "bshd" else y


CASES = [
    # Whisper-like self attention as PyTorch exports it: 4 heads of 600 x 600
    ("bshd", [1, 600, 4, 64], [1, 600, 4, 64], [1, 600, 4, 64], 0.125, None, False),
    # with a causal-style mask over every head, divided by sqrt(d)
    ("bshd", [1, 600, 4, 32], [1, 600, 4, 32], [1, 600, 4, 32], 8.0, [1, 1, 600, 600], True),
    # cross attention: 700 queries (a partial last block) over 1600 keys, a mask per key
    ("bhsd", [2, 2, 700, 48], [2, 2, 48, 1600], [2, 2, 1600, 40], None, [1600], False),
    # a padding mask per batch and key, as BERT's
    ("bhsd", [2, 2, 700, 48], [2, 2, 48, 1600], [2, 2, 1600, 40], None, [2, 1, 1, 1600], False),
    # K and V shared by the heads (batch dims that broadcast), a mask per query row
    ("bhsd", [1, 8, 512, 64], [1, 1, 64, 512], [1, 1, 512, 64], 0.1, [1, 8, 512, 1], False),
]


@pytest.mark.parametrize("layout, q_shape, k_shape, v_shape, scale, mask_shape, divide", CASES)
def test_attention_matches_float64(layout, q_shape, k_shape, v_shape, scale, mask_shape, divide):
    rng = np.random.default_rng(q_shape[1] + k_shape[-1])
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in (q_shape, k_shape, v_shape))
    feeds = {"q": q, "k": k, "v": v}
    mask = None
    if mask_shape is not None:
        mask = rng.standard_normal(mask_shape).astype(np.float32)
        if mask_shape[-1] > 1:  # keys masked out (a large constant over a row would only cost
            mask[rng.random(mask_shape) < 0.2] = -1e4  # f32 digits of the scores)
        feeds["mask"] = mask
    model = attention_model(q_shape, k_shape, v_shape, layout, scale, mask_shape, divide)
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    assert [k["strategy"] for k in kernels if "Weft attention" in k["strategy"]], kernels
    want = reference(q, k, v, layout, scale, mask, divide)
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5)


def test_small_scores_stay_with_the_generated_softmax():
    """128 x 128 scores of 4 heads (256 KB) stay in the cache: no call, the softmax fuses the
    scale."""
    model = attention_model([1, 128, 4, 32], [1, 128, 4, 32], [1, 128, 4, 32], "bshd", 0.2)
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal([1, 128, 4, 32]).astype(np.float32) for n in "qkv"}
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    assert not [k for k in kernels if "Weft attention" in k["strategy"]], kernels
    want = reference(feeds["q"], feeds["k"], feeds["v"], "bshd", 0.2, None, False)
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5)


def test_the_knob_turns_the_call_off(tmp_path):
    """WEFT_ATTENTION=0 (docs/knobs.md): the products and the softmax run as before."""
    model = attention_model([1, 600, 4, 64], [1, 600, 4, 64], [1, 600, 4, 64], "bshd", 0.125)
    path = tmp_path / "attention.onnx"
    path.write_bytes(model.SerializeToString())
    for value, calls in (("1", 1), ("0", 0)):
        out = cli_kernels(path, {"WEFT_ATTENTION": value})
        assert out.count("Weft attention") == calls, out


@pytest.mark.parametrize("causal", [0, 1])
def test_onnx_attention_op_runs_as_the_call(causal):
    """ONNX's Attention (opset 23), as decompose.cc expands it, over 4 heads of 600 x 600:
    the call, causal or not, against NumPy in float64."""
    shape = [1, 4, 600, 64]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=causal)
    graph = helper.make_graph([node], "g", [f32(n, shape) for n in "qkv"], [f32("y", shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10  # (built without the checker: Debian's onnx predates opset 23)
    rng = np.random.default_rng(causal)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    assert [k["strategy"] for k in kernels if "Weft attention" in k["strategy"]], kernels
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(shape[-1])
    if causal:
        s = np.where(np.tril(np.ones((shape[2], shape[2]), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    want = (p / p.sum(axis=-1, keepdims=True)) @ v
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("precision", [2, 7, 17])
def test_softmax_precision_other_than_a_float_is_refused(precision):
    """softmax_precision names FLOAT, FLOAT16, DOUBLE or BFLOAT16; another type (UINT8, INT64,
    FLOAT8E4M3FN) is one clear error, not a softmax in it (found by attribute_oracle.py)."""
    shape = [1, 2, 4, 8]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], softmax_precision=precision)
    graph = helper.make_graph([node], "g", [f32(n, shape) for n in "qkv"], [f32("y", shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    with pytest.raises(weft.WeftError, match="'softmax_precision' must be 1 \\(FLOAT\\)"):
        weft.compile(model.SerializeToString())


def masks(kind, rows, keys):
    """[rows, keys] masks whose keys some or all rows leave out: "causal" (-inf after the row's
    own key), "window" (a sliding window of 100 keys, -inf), "padding" (the last 300 keys at
    float32's lowest, as Hugging Face writes it), "empty_row" (causal at float32's lowest, one
    row masking every key: its softmax is uniform)."""
    low = np.finfo(np.float32).min
    i, j = np.arange(rows)[:, None], np.arange(keys)[None, :]
    if kind == "causal":
        return np.where(j <= i, 0.0, -np.inf).astype(np.float32)
    if kind == "window":
        return np.where((j <= i) & (j > i - 100), 0.0, -np.inf).astype(np.float32)
    if kind == "padding":
        return np.where(j < keys - 300, 0.0, low).astype(np.float32) + np.zeros((rows, 1), np.float32)
    m = np.where(j <= i, 0.0, low).astype(np.float32)
    m[rows // 3] = low
    return m


@pytest.mark.parametrize("kind", ["causal", "window", "padding", "empty_row"])
def test_masked_keys_are_left_out(kind):
    """Keys that every row of a block masks are left out of the products and the softmax
    (attention_call.cc's kept_columns): the result is the whole softmax's, against NumPy (the
    masked scores rounded to float32 as the model adds them, then float64)."""
    rows = keys = 900
    shape = [1, 2, rows, 48]
    model = attention_model(shape, [1, 2, 48, keys], [1, 2, keys, 48], "bhsd", 0.15, [rows, keys])
    rng = np.random.default_rng(7)
    feeds = {"q": rng.standard_normal(shape).astype(np.float32),
             "k": rng.standard_normal([1, 2, 48, keys]).astype(np.float32),
             "v": rng.standard_normal([1, 2, keys, 48]).astype(np.float32),
             "mask": masks(kind, rows, keys)}
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    assert [k["strategy"] for k in kernels if "Weft attention" in k["strategy"]], kernels
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    s = ((q @ k * 0.15).astype(np.float32) + feeds["mask"]).astype(np.float64)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    want = (p / p.sum(axis=-1, keepdims=True)) @ v
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5)


def test_symbolic_dims_run_the_call_at_every_shape():
    """A dynamic-shape compile (batch, queries and keys symbolic) takes the call whatever the
    scores' size, its dims bound at each run: one query (a decoding step), a partial block, a
    causal mask, keys more than queries (a KV cache), a batch of 2, no keys, an empty batch."""
    q_shape, k_shape = ["b", "s", 4, 32], ["b", "t", 4, 32]
    model = attention_model(q_shape, k_shape, k_shape, "bshd", 0.2, ["b", 1, "s", "t"])
    session = weft.compile(model.SerializeToString(), threads=2, dynamic_shapes=True)
    rng = np.random.default_rng(11)
    for b, s, t in ((1, 1, 1), (1, 1, 50), (2, 37, 37), (1, 300, 300), (2, 300, 340), (2, 3, 0),
                    (0, 5, 5)):
        feeds = {"q": rng.standard_normal([b, s, 4, 32]).astype(np.float32),
                 "k": rng.standard_normal([b, t, 4, 32]).astype(np.float32),
                 "v": rng.standard_normal([b, t, 4, 32]).astype(np.float32)}
        i, j = np.arange(s)[:, None] + (t - s), np.arange(t)[None, :]
        feeds["mask"] = np.broadcast_to(np.where(j <= i, 0.0, -np.inf).astype(np.float32),
                                        [b, 1, s, t]).copy()
        got, kernels = session.profile(feeds)
        assert [k["strategy"] for k in kernels if "Weft attention" in k["strategy"]], kernels
        if t == 0:  # no keys: the weighted sum of no values
            np.testing.assert_array_equal(got["y"], np.zeros([b, s, 4, 32], np.float32))
            continue
        want = reference(feeds["q"], feeds["k"], feeds["v"], "bshd", 0.2, feeds["mask"], False)
        np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5, err_msg=f"{b}x{s}x{t}")


@pytest.mark.parametrize("dynamic", [False, True])
def test_pytorch_guard_of_fully_masked_rows(dynamic):
    """PyTorch exports scaled_dot_product_attention with a boolean mask as Add(scores,
    Where(mask, 0, -inf)), Softmax, then Where(IsNaN(p), 0, p), so that a row masking every key
    gives 0 (Hugging Face's sdpa attention): the call absorbs the guard, static and over
    symbolic dims, against NumPy in float64."""
    f = TensorProto.FLOAT
    dims = ["b", 4, "s", 32] if dynamic else [1, 4, 700, 32]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s0"]),
             helper.make_node("Where", ["m", "zero", "minf"], ["mask"]),
             helper.make_node("Add", ["s0", "mask"], ["s1"]),
             helper.make_node("Softmax", ["s1"], ["p"], axis=-1),
             helper.make_node("IsNaN", ["p"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "p"], ["p0"]),
             helper.make_node("MatMul", ["p0", "v"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(-np.inf, np.float32), "minf")]
    inputs = [f32(n, dims) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("m", TensorProto.BOOL, [dims[0], 1, dims[2], dims[2]]))
    model = make_model(nodes, inputs, [f32("y", dims)], inits, opset=17)
    compiled = weft.compile(model.SerializeToString(), threads=2, dynamic_shapes=dynamic)
    rng = np.random.default_rng(5)
    for b, s in ((1, 700), (2, 45)) if dynamic else ((1, 700),):
        shape = [b, 4, s, 32]
        feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
        m = np.tril(np.ones((s, s), bool)) & (rng.random((b, 1, s, s)) < 0.9)
        m[:, :, s // 2] = False  # a row that masks every key
        feeds["m"] = m
        got, kernels = compiled.profile(feeds)
        assert [k["strategy"] for k in kernels if "rows of NaN zeroed" in k["strategy"]], kernels
        q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
        sc = np.where(m, q @ k.transpose(0, 1, 3, 2), -np.inf)
        with np.errstate(invalid="ignore"):
            p = np.exp(sc - sc.max(axis=-1, keepdims=True))
            p = np.nan_to_num(p / p.sum(axis=-1, keepdims=True), nan=0.0)
        np.testing.assert_allclose(got["y"], p @ v, rtol=1e-4, atol=2e-5)
        assert not got["y"][:, :, s // 2].any()


@pytest.mark.parametrize("causal", [0, 1])
def test_onnx_attention_op_with_a_boolean_mask(causal):
    """ONNX's Attention (opset 23) with a boolean attn_mask, as PyTorch exports
    scaled_dot_product_attention at opset 23: decompose.cc's guard, rows whose mask leaves
    out every key give 0, runs in the call; against NumPy in float64."""
    shape = [1, 4, 600, 64]
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], is_causal=causal)
    inputs = [f32(n, shape) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("m", TensorProto.BOOL, [1, 1, 600, 600]))
    graph = helper.make_graph([node], "g", inputs, [f32("y", shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    rng = np.random.default_rng(9 + causal)
    feeds = {n: rng.standard_normal(shape).astype(np.float32) for n in "qkv"}
    m = np.tril(np.ones((600, 600), bool)) & (rng.random((1, 1, 600, 600)) < 0.8)
    m[:, :, 123] = False  # a row that leaves out every key
    feeds["m"] = m
    got, kernels = weft.compile(model.SerializeToString(), threads=2).profile(feeds)
    assert [k["strategy"] for k in kernels if "fully masked rows zeroed" in k["strategy"]], kernels
    q, k, v = (feeds[n].astype(np.float64) for n in "qkv")
    keep = m & np.tril(np.ones((600, 600), bool)) if causal else m
    s = np.where(keep, q @ k.transpose(0, 1, 3, 2) / 8.0, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = np.nan_to_num(p / p.sum(axis=-1, keepdims=True), nan=0.0)
    np.testing.assert_allclose(got["y"], p @ v, rtol=1e-4, atol=2e-5)
    assert not got["y"][:, :, 123].any()


def test_heads_of_no_dims_over_symbolic_dims():
    """Q and K heads of a symbolic size that is 0 at a run: the scores are the mask alone (sgemm
    would leave a product over K = 0 unwritten), against NumPy in float64; and the same model
    at a size of 8."""
    model = attention_model(["b", "s", 2, "d"], ["b", "s", 2, "d"], ["b", "s", 2, 16], "bshd", 0.5,
                            ["b", 1, "s", "s"])
    session = weft.compile(model.SerializeToString(), threads=2, dynamic_shapes=True)
    rng = np.random.default_rng(13)
    for d in (0, 8):
        feeds = {"q": rng.standard_normal([1, 20, 2, d]).astype(np.float32),
                 "k": rng.standard_normal([1, 20, 2, d]).astype(np.float32),
                 "v": rng.standard_normal([1, 20, 2, 16]).astype(np.float32),
                 "mask": rng.standard_normal([1, 1, 20, 20]).astype(np.float32)}
        got, kernels = session.profile(feeds)
        assert [k["strategy"] for k in kernels if "Weft attention" in k["strategy"]], kernels
        want = reference(feeds["q"], feeds["k"], feeds["v"], "bshd", 0.5, feeds["mask"], False)
        np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=2e-5, err_msg=f"d={d}")
