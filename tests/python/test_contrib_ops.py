"""ONNX Runtime's own ops (domain com.microsoft) that its transformer optimizer writes:
Attention, MultiHeadAttention, EmbedLayerNormalization, Gelu, BiasGelu, FastGelu, QuickGelu, BiasAdd, FusedMatMul,
SkipLayerNormalization and SkipSimplifiedLayerNormalization. Each expands at import into ai.onnx ops (weft/onnx/
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


def attend_reference(q, k, v, heads, mask, unidirectional, attention_bias, mask_filter=-10000.0):
    """ONNX Runtime's attention of q [B, S, D], k [B, L, D] and v [B, L, Dv] in float64, as its
    CPU Attention and MultiHeadAttention compute it (checked against ONNX Runtime 1.32 for each
    mask form, with and without unidirectional and attention_bias, where the mask masks a
    query's every key, and where L > S): masked scores get mask_filter added; unidirectional
    leaves the keys after each query but the last out of its softmax."""
    (batch, seq, _), length = q.shape, k.shape[1]
    split = lambda t: t.reshape(batch, t.shape[1], heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if attention_bias is not None:
        s = s + attention_bias
    masked = np.zeros((batch, 1, 1, length), bool)
    if mask is not None and mask.ndim == 1:  # keys from mask[b] on, and before mask[B + b]
        starts = mask[batch:] if len(mask) == 2 * batch else np.zeros(batch)
        keys = np.arange(length)[None, :]
        masked = masked | ((keys >= mask[:batch, None]) | (keys < starts[:, None]))[:, None, None, :]
    elif mask is not None:  # [B, L] or [B, S, L]: 0 or less masks a key
        masked = masked | (mask <= 0).reshape(batch, 1, -1, length)
    s = s + masked * mask_filter
    if unidirectional:  # the keys after each query but the last are left out
        rows, keys = np.arange(seq)[:, None], np.arange(length)[None, :]
        s = np.where((keys > rows) & (rows < seq - 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1)


def attention_reference(x, w, b, heads, mask, unidirectional, attention_bias):
    """ONNX Runtime's Attention: attend_reference of x @ w + b split in three."""
    q, k, v = np.split(x @ w + b, 3, axis=-1)
    return attend_reference(q, k, v, heads, mask, unidirectional, attention_bias)


@pytest.mark.parametrize("mask_form, unidirectional, with_bias",
                         [("none", 0, False), ("none", 1, True), ("B", 0, True), ("B", 1, False),
                          ("2B", 0, False), ("2B", 1, True), ("B,T", 0, False), ("B,T", 1, True), ("B,S,T", 0, True),
                          ("B,S,T", 1, False)])
def test_attention(mask_form, unidirectional, with_bias):
    """ONNX Runtime's fused self-attention (its transformer optimizer's, on BERT-style
    exports), in each of its mask forms: none, [B] (the keys from that position on masked),
    [2B] (also those before the second B positions), [B, T] and [B, S, T] (0 masks a key),
    with and without unidirectional and an attention bias. The mask's rank is the graph
    input's."""
    rng = np.random.default_rng(5)
    batch, seq, hidden, heads = 2, 5, 8, 2
    x = rng.standard_normal((batch, seq, hidden)).astype(np.float32)
    w = (rng.standard_normal((hidden, 3 * hidden)) * 0.5).astype(np.float32)
    b = (rng.standard_normal(3 * hidden) * 0.1).astype(np.float32)
    mask = {"none": None, "B": np.array([seq, 3], np.int32), "2B": np.array([4, 3, 1, 0], np.int32),
            "B,T": np.array([[1] * seq, [1, 1, 1, 0, 0]], np.int32),
            "B,S,T": (rng.random((batch, seq, seq)) > 0.3).astype(np.int32)}[mask_form]
    if mask_form == "B,S,T":
        mask[0, 1] = 0  # (batch 0's second query: every key masked)
    bias = rng.standard_normal((1, heads, seq, seq)).astype(np.float32) if with_bias else None
    names = ["x", "w", "b", "m" if mask is not None else "", "", "ab" if with_bias else ""]
    node = helper.make_node("Attention", names, ["y"], domain=MS, num_heads=heads, unidirectional=unidirectional)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])]
    feeds = {"x": x}
    if mask is not None:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.INT32, list(mask.shape)))
        feeds["m"] = mask
    if with_bias:
        inputs.append(helper.make_tensor_value_info("ab", TensorProto.FLOAT, list(bias.shape)))
        feeds["ab"] = bias
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    got = weft.compile(model.SerializeToString()).run(feeds)["y"]
    want = attention_reference(x.astype(np.float64), w, b, heads, mask, unidirectional,
                               None if bias is None else bias.astype(np.float64))
    # Where the mask masks a query's every key ([2B]: batch 0's first query; [B, S, T]: its
    # second), its scores less 10000 keep about 1e-3 of their f32 precision, in ONNX Runtime too.
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3 if mask_form in ("2B", "B,S,T") else 1e-5)


@pytest.mark.parametrize("with_segments, with_mask, with_positions",
                         [(True, True, False), (False, False, False), (True, False, True)])
def test_embed_layer_normalization_feeds_attention(with_segments, with_mask, with_positions):
    """ONNX Runtime's fused BERT embedding (its optimizer's default for BERT): the word,
    position and segment embeddings summed (output 2) and layer-normalized (output 0), and
    mask_index (output 1), each batch's count of mask's ones (zeros without a mask), which an
    Attention reads as its [B] mask form."""
    rng = np.random.default_rng(6)
    batch, seq, hidden, vocab = 2, 5, 8, 20
    word, pos = rng.standard_normal((vocab, hidden)), rng.standard_normal((16, hidden))
    seg, gamma, beta = rng.standard_normal((2, hidden)), rng.standard_normal(hidden), rng.standard_normal(hidden)
    w = (rng.standard_normal((hidden, 3 * hidden)) * 0.5)
    feeds = {"ids": rng.integers(0, vocab, (batch, seq)).astype(np.int32)}
    if with_segments:
        feeds["seg"] = rng.integers(0, 2, (batch, seq)).astype(np.int32)
    if with_mask:
        feeds["mask"] = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    if with_positions:
        feeds["pos"] = rng.integers(0, 16, (batch, seq)).astype(np.int32)
    names = ["ids", "seg" if with_segments else "", "word", "pos_table", "seg_table" if with_segments else "",
             "gamma", "beta", "mask" if with_mask else "", "pos" if with_positions else ""]
    nodes = [helper.make_node("EmbedLayerNormalization", names, ["e", "mask_index", "sum"], domain=MS,
                              epsilon=1e-12),
             helper.make_node("Attention", ["e", "w", "", "mask_index"], ["y"], domain=MS, num_heads=2)]
    inputs = [helper.make_tensor_value_info(k, TensorProto.INT32, list(v.shape)) for k, v in feeds.items()]
    tables = [("word", word), ("pos_table", pos), ("seg_table", seg), ("gamma", gamma), ("beta", beta), ("w", w)]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                   for o in ("e", "sum", "y")] +
                              [helper.make_tensor_value_info("mask_index", TensorProto.INT32, None)],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in tables
                               if with_segments or k != "seg_table"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    got = weft.compile(model.SerializeToString()).run(feeds)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731  (the tables as stored)
    s = f32(word)[feeds["ids"]] + f32(pos)[feeds.get("pos", np.arange(seq)[None])]
    if with_segments:
        s = s + f32(seg)[feeds["seg"]]
    e = (s - s.mean(-1, keepdims=True)) / np.sqrt(s.var(-1, keepdims=True) + 1e-12) * f32(gamma) + f32(beta)
    mask_index = feeds["mask"].sum(1) if with_mask else np.zeros(batch)
    np.testing.assert_allclose(got["sum"], s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["e"], e, rtol=1e-4, atol=1e-4)
    assert got["mask_index"].dtype == np.int32
    np.testing.assert_array_equal(got["mask_index"], mask_index)
    want = attention_reference(e, f32(w), np.zeros(3 * hidden), 2, mask_index.astype(np.int32), 0, None)
    # (Without a mask, mask_index 0 masks every key, as in ONNX Runtime: scores less 10000.)
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-4 if with_mask else 2e-3)


@pytest.mark.parametrize("length, value_size, mask_form, unidirectional, with_bias",
                         [(4, 8, "none", 0, True), (6, 4, "B,L", 0, True), (6, 8, "B", 0, False),
                          (4, 8, "B,S,L", 1, True), (6, 8, "B,L", 1, False)])
def test_multi_head_attention(length, value_size, mask_form, unidirectional, with_bias):
    """ONNX Runtime's MultiHeadAttention on separate query [B, S, D], key [B, L, D] and value
    [B, L, Dv] with their bias [D + D + Dv], self- (L = S) and cross-attention (L > S, where
    unidirectional leaves the last query every key, as ONNX Runtime computes it), the mask
    forms Attention takes and an attention bias."""
    rng = np.random.default_rng(7)
    batch, seq, d, heads = 2, 4, 8, 2
    feeds = {"q": rng.standard_normal((batch, seq, d)), "k": rng.standard_normal((batch, length, d)),
             "v": rng.standard_normal((batch, length, value_size))}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    bias = rng.standard_normal(2 * d + value_size).astype(np.float32)
    mask = {"none": None, "B": np.array([length, length - 2], np.int32),
            "B,L": np.array([[1] * length, [1] * (length - 2) + [0, 0]], np.int32),
            "B,S,L": (rng.random((batch, seq, length)) > 0.3).astype(np.int32)}[mask_form]
    if mask is not None:
        feeds["m"] = mask
    attention_bias = rng.standard_normal((1, heads, seq, length)).astype(np.float32)
    if with_bias:
        feeds["ab"] = attention_bias
    names = ["q", "k", "v", "b", "m" if mask is not None else "", "ab" if with_bias else ""]
    node = helper.make_node("MultiHeadAttention", names, ["y"], domain=MS, num_heads=heads,
                            unidirectional=unidirectional)
    inputs = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "m" else TensorProto.FLOAT,
                                            list(v.shape)) for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    got = weft.compile(model.SerializeToString()).run(feeds)["y"]
    f64 = {k: v.astype(np.float64) for k, v in feeds.items() if k != "m"}
    b = bias.astype(np.float64)
    want = attend_reference(f64["q"] + b[:d], f64["k"] + b[d:2 * d], f64["v"] + b[2 * d:], heads, mask,
                            unidirectional, f64.get("ab"))
    # ([B, S, L] masks some query's every key: its scores less 10000 keep about 1e-3 of f32.)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3 if mask_form == "B,S,L" else 1e-5)


def test_unknown_onnx_runtime_op_names_the_ones_weft_expands():
    node = helper.make_node("QAttention", ["x"], ["y"], domain=MS, name="attn_0")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    with pytest.raises(weft.WeftError, match=r"QAttention \(domain 'com.microsoft': Weft expands Attention, "
                                             r"BiasAdd, BiasGelu, .* and SkipSimplifiedLayerNormalization from it\)"):
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
    (helper.make_node("Attention", ["x", "g", "", "", "x"], ["y"], num_heads=2, domain=MS), "past, present and past_seq"),
    (helper.make_node("Attention", ["x", "g"], ["y"], domain=MS), "attribute 'num_heads' is required"),
    (helper.make_node("Attention", ["x", "g"], ["y"], num_heads=2, domain=MS), "weights that are not a 2-D constant"),
    (helper.make_node("MultiHeadAttention", ["x"], ["y"], num_heads=2, domain=MS), "packed Q, K and V"),
    (helper.make_node("MatMulNBits", ["x", "x", "s"], ["y"], K=4, N=2, block_size=16, domain=MS),
     "B, scales and zero_points given at run time"),
    (helper.make_node("MatMulNBits", ["x", "z", "s"], ["y"], K=4, N=2, bits=3, block_size=16, domain=MS),
     "bits=3 is not supported"),
    (helper.make_node("MatMulNBits", ["x", "z", "s"], ["y"], K=1 << 40, N=1 << 40, block_size=16, domain=MS),
     "attributes K and N must be positive, K x N weights allocatable"),
    (helper.make_node("MultiHeadAttention", ["x", "x", "x", "", "", "", "x"], ["y"], num_heads=2, domain=MS),
     "past_key, past_value"),
    (helper.make_node("Attention", ["x", "g", "", "z"], ["y"], num_heads=2, qkv_hidden_sizes=[4, 4, 4],
                      domain=MS), r"a mask of rank 0 is not supported \(only \[B\]"),
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
