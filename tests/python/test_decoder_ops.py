"""ONNX Runtime's decoder-LLM ops (domain com.microsoft), as its GenAI model builder writes
Llama, Mistral, Phi, Qwen and Gemma: GroupQueryAttention (a KV cache, rotary embedding, local
windows, softcap, sinks) and RotaryEmbedding. Each expands at import into ai.onnx ops
(weft/onnx/contrib_decoder_ops.cc); against float64 numpy references of ONNX Runtime's
definitions, which matched ONNX Runtime 1.32's CPU kernels on these same cases."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft
from models import has_avx512_vnni

MS = "com.microsoft"
F = TensorProto.FLOAT


def rotate(x, cos, sin, interleaved):
    """x [B, N, S, H] with its first R channels rotated by cos, sin [B, S, R / 2]."""
    half = cos.shape[-1]
    c, s = cos[:, None], sin[:, None]
    out = x.copy()
    if interleaved:
        a, b = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        out[..., 0:2 * half:2], out[..., 1:2 * half:2] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., :half], x[..., half:2 * half]
        out[..., :half], out[..., half:2 * half] = a * c - b * s, b * c + a * s
    return out


def gqa_reference(q, k, v, past_k, past_v, seqlens, heads, kv_heads, cos=None, sin=None, scale=None,
                  window=-1, softcap=0.0, interleaved=False, smooth=False, sink=None, bias=None,
                  positions=None):
    """Output, present key and present value (the past, then the new ones, which batch b also
    has at its positions past_b = seqlens[b] + 1 - S on)."""
    q = q.astype(np.float64)
    batch, length, _ = q.shape
    if k is None:  # packed
        size = q.shape[2] // (heads + 2 * kv_heads)
        x = q.reshape(batch, length, heads + 2 * kv_heads, size).transpose(0, 2, 1, 3)
        qh, kh, vh = x[:, :heads], x[:, heads:heads + kv_heads], x[:, heads + kv_heads:]
    else:
        size = q.shape[2] // heads
        qh = q.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)
        kh = k.astype(np.float64).reshape(batch, length, kv_heads, size).transpose(0, 2, 1, 3)
        vh = v.astype(np.float64).reshape(batch, length, kv_heads, size).transpose(0, 2, 1, 3)
    total = seqlens.astype(np.int64) + 1
    past = np.maximum(total - length, 0)
    own = past[:, None] + np.arange(length)[None]
    if cos is not None:
        at = own if positions is None else positions
        c, s = cos.astype(np.float64)[at], sin.astype(np.float64)[at]
        qh, kh = rotate(qh, c, s, interleaved), rotate(kh, c, s, interleaved)
    keys = np.concatenate([past_k, kh], 2) if past_k is not None else kh.copy()
    values = np.concatenate([past_v, vh], 2) if past_v is not None else vh.copy()
    for b in range(batch):
        keys[b, :, past[b]:past[b] + length] = kh[b]
        values[b, :, past[b]:past[b] + length] = vh[b]
    group = heads // kv_heads
    scores = qh @ np.repeat(keys, group, axis=1).transpose(0, 1, 3, 2)
    scores *= 1 / np.sqrt(size) if scale is None else scale
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    if bias is not None:
        scores = scores + bias
    j = np.arange(keys.shape[2])[None, None]
    seen = (j <= own[:, :, None]) & (j < total[:, None, None])
    if window > 0:
        seen &= j > own[:, :, None] - window
    scores = np.where(seen[:, None], scores, -np.inf)
    extra = None if sink is None and not smooth else (
        np.zeros((1, heads, 1, 1)) if sink is None else sink.reshape(1, -1, 1, 1).astype(np.float64))
    top = scores.max(-1, keepdims=True) if extra is None else np.maximum(scores.max(-1, keepdims=True), extra)
    e = np.exp(scores - top)
    probs = e / (e.sum(-1, keepdims=True) + (0 if extra is None else np.exp(extra - top)))
    out = (probs @ np.repeat(values, group, axis=1)).transpose(0, 2, 1, 3).reshape(batch, length, heads * size)
    return out, keys, values


def gqa_model(heads, kv_heads, packed, with_past, rotary, extra_inputs=(), opset=22, shapes=None, **attrs):
    names = ["q", "" if packed else "k", "" if packed else "v", "pk" if with_past else "",
             "pv" if with_past else "", "seqlens", "total", "cos" if rotary else "", "sin" if rotary else ""]
    names += list(extra_inputs)
    node = helper.make_node("GroupQueryAttention", names, ["y", "present_k", "present_v"], domain=MS,
                            num_heads=heads, kv_num_heads=kv_heads, do_rotary=int(rotary), **attrs)
    shapes = shapes or {}
    types = {"seqlens": TensorProto.INT32, "total": TensorProto.INT32, "pos": TensorProto.INT64}
    inputs = [helper.make_tensor_value_info(n, types.get(n, F), [] if n == "total" else shapes.get(n))
              for n in names if n]
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info(n, F, None) for n in ["y", "present_k", "present_v"]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


# (batch, new tokens, past length or None, seqlens_k, options)
FORMS = {
    "prompt": (1, 5, None, [4], {}),
    "prompt_after_an_empty_past": (1, 5, 0, [4], {}),
    "right_padded_prompt": (2, 5, None, [4, 2], {"packed": False}),
    "decode_lengths_differ": (2, 1, 5, [5, 3], {}),
    "decode_into_a_longer_buffer": (2, 1, 16, [5, 3], {}),
    "second_chunk_of_a_prompt": (1, 3, 4, [6], {}),
    "unpacked_without_rotary": (2, 1, 4, [4, 2], {"packed": False, "rotary": False}),
    "interleaved_partial_rotary": (1, 4, 3, [6], {"rotary_interleaved": 1, "half": 4}),
    "local_window": (1, 6, 2, [7], {"local_window_size": 3}),
    "softcap_and_scale": (1, 4, 3, [6], {"softcap": 2.0, "scale": 0.3}),
    "smooth_softmax": (1, 4, 3, [6], {"smooth_softmax": 1}),
    "head_sink": (1, 4, 3, [6], {"sink": True}),
    "attention_bias": (1, 4, 3, [6], {"bias": True}),
    "position_ids": (1, 4, 3, [6], {"positions": True}),
}


@pytest.mark.parametrize("form", FORMS)
def test_group_query_attention(form):
    batch, length, past, seqlens, options = FORMS[form]
    options = dict(options)
    packed, rotary = options.pop("packed", True), options.pop("rotary", True)
    half = options.pop("half", 8)
    heads, kv_heads, size = 4, 2, 16
    rng = np.random.default_rng(len(form))
    width = (heads + 2 * kv_heads) * size if packed else heads * size
    feeds = {"q": rng.standard_normal((batch, length, width)).astype(np.float32),
             "seqlens": np.array(seqlens, np.int32),
             "total": np.array(max(seqlens) + 1, np.int32)}
    if not packed:
        for name in "kv":
            feeds[name] = rng.standard_normal((batch, length, kv_heads * size)).astype(np.float32)
    if past is not None:
        for name in ["pk", "pv"]:
            feeds[name] = rng.standard_normal((batch, kv_heads, past, size)).astype(np.float32)
    if rotary:
        for name in ["cos", "sin"]:
            feeds[name] = rng.standard_normal((32, half)).astype(np.float32)
    # position_ids, attention_bias and head_sink: inputs 9, 10 and 11
    optional = {"positions": ("pos", rng.integers(0, 32, (batch, length)).astype(np.int64)),
                "bias": ("bias", rng.standard_normal((1, heads, length, (past or 0) + length)).astype(np.float32)),
                "sink": ("sink", rng.standard_normal(heads).astype(np.float32))}
    slots, reference = [], {}
    for key, (name, value) in optional.items():
        given = options.pop(key, False)
        slots.append(name if given else "")
        if given:
            feeds[name] = reference[key] = value
    while slots and not slots[-1]:
        slots.pop()
    model = gqa_model(heads, kv_heads, packed, past is not None, rotary, slots, **options)
    got = weft.compile(model.SerializeToString()).run(feeds)
    want = gqa_reference(feeds["q"], feeds.get("k"), feeds.get("v"), feeds.get("pk"), feeds.get("pv"),
                         feeds["seqlens"], heads, kv_heads, feeds.get("cos"), feeds.get("sin"),
                         scale=options.get("scale"), window=options.get("local_window_size", -1),
                         softcap=options.get("softcap", 0.0),
                         interleaved=bool(options.get("rotary_interleaved", 0)),
                         smooth=bool(options.get("smooth_softmax", 0)), **reference)
    np.testing.assert_allclose(got["y"], want[0], rtol=1e-4, atol=1e-5)
    for name, expected in zip(["present_k", "present_v"], want[1:]):
        assert got[name].shape == expected.shape
        for b, n in enumerate(seqlens):  # past the batch's tokens a buffer holds anything
            np.testing.assert_allclose(got[name][b, :, :n + 1], expected[b, :, :n + 1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sink", [False, True], ids=["plain", "head_sink"])
def test_group_query_attention_decode_loop_compiles_once(sink):
    """A greedy decode loop whose past grows by one token a step: with dynamic_shapes, one
    compile serves every past length (the cache update is a Concat and a ScatterND over the
    symbolic length). With GPT-OSS's head_sink too (its softmax's extra column was sliced off
    to a length unknown over symbols: a compile at every step)."""
    heads, kv_heads, size = 4, 2, 16
    shapes = {"q": ["batch", "seq", (heads + 2 * kv_heads) * size],
              "pk": ["batch", kv_heads, "past", size], "pv": ["batch", kv_heads, "past", size],
              "seqlens": ["batch"], "cos": [64, 8], "sin": [64, 8], "sink": [heads]}
    model = gqa_model(heads, kv_heads, True, True, True, ("", "", "sink") if sink else (), shapes=shapes)
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(3)
    cos, sin = (rng.standard_normal((64, 8)).astype(np.float32) for _ in range(2))
    sinks = rng.standard_normal(heads).astype(np.float32)
    pk = pv = np.zeros((2, kv_heads, 0, size), np.float32)
    length = 6
    for step in range(4):
        q = rng.standard_normal((2, length if step == 0 else 1, (heads + 2 * kv_heads) * size)).astype(np.float32)
        total = length + step
        feeds = {"q": q, "pk": pk, "pv": pv, "seqlens": np.full(2, total - 1, np.int32),
                 "total": np.array(total, np.int32), "cos": cos, "sin": sin, **({"sink": sinks} if sink else {})}
        got = compiled.run(feeds)
        want = gqa_reference(q, None, None, pk, pv, feeds["seqlens"], heads, kv_heads, cos, sin,
                             sink=sinks if sink else None)
        np.testing.assert_allclose(got["y"], want[0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got["present_k"], want[1], rtol=1e-5, atol=1e-6)
        pk, pv = got["present_k"], got["present_v"]
    assert pk.shape == (2, kv_heads, length + 3, size)
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("batch, lengths", [(1, [3, 1, 1, 1, 1, 1, 3, 1, 2]), (2, [5, 1, 1, 1, 1, 1])])
def test_group_query_attention_sliding_window_cache(batch, lengths, monkeypatch):
    """sliding_window_cache (Gemma 3's and GPT-OSS's local layers, as GenAI's builder writes
    them): past and present are buffers of the window's length w, holding the last min(tokens,
    w) tokens from their start and zeros after; attention sees the last w tokens. Against the
    reference of the growing cache (the whole sequence), whose last w tokens the buffer must
    hold; each step is fed Weft's own present (ONNX Runtime 1.32 gave the same presents and
    outputs on these steps). The decoding steps' shapes repeat: no specialized compile for them
    here (WEFT_SPECIALIZE_AFTER=0), so that one compile is seen serving them all."""
    monkeypatch.setenv("WEFT_SPECIALIZE_AFTER", "0")
    heads, kv_heads, size, window = 4, 2, 16, 4
    shapes = {"q": ["batch", "seq", (heads + 2 * kv_heads) * size],
              "pk": ["batch", kv_heads, "past", size], "pv": ["batch", kv_heads, "past", size],
              "seqlens": ["batch"], "cos": [64, 8], "sin": [64, 8]}
    model = gqa_model(heads, kv_heads, True, True, True, shapes=shapes, local_window_size=window,
                      sliding_window_cache=1)
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(5)
    cos, sin = (rng.standard_normal((64, 8)).astype(np.float32) for _ in range(2))
    pk = pv = np.zeros((batch, kv_heads, window, size), np.float32)
    whole_k = whole_v = np.zeros((batch, kv_heads, 0, size))
    total = 0
    for length in lengths:
        q = rng.standard_normal((batch, length, (heads + 2 * kv_heads) * size)).astype(np.float32)
        total += length
        seqlens = np.full(batch, total - 1, np.int32)
        got = compiled.run({"q": q, "pk": pk, "pv": pv, "seqlens": seqlens, "total": np.array(total, np.int32),
                            "cos": cos, "sin": sin})
        out, whole_k, whole_v = gqa_reference(q, None, None, whole_k, whole_v, seqlens, heads, kv_heads, cos,
                                              sin, window=window)
        np.testing.assert_allclose(got["y"], out, rtol=1e-4, atol=1e-5)
        kept = min(total, window)
        for name, whole in (("present_k", whole_k), ("present_v", whole_v)):
            want = np.zeros((batch, kv_heads, window, size))
            want[:, :, :kept] = whole[:, :, total - kept:total]
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)
        pk, pv = got["present_k"], got["present_v"]
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("length, kernel, activation, bias, past", [
    (5, 3, "none", False, True),     # LFM2's: a prompt after a state
    (1, 3, "silu", True, True),      # Qwen 3.5's: a decoding step
    (4, 4, "silu", True, False),     # no state: zeros before the input
    (3, 1, "none", False, True),     # K = 1: an empty state
])
def test_causal_conv_with_state(length, kernel, activation, bias, past):
    """CausalConvWithState (LFM2's and Qwen 3.5's short convolutions, GenAI's builder): input
    [B, C, S] convolved per channel over the past state [B, C, K - 1] then the input, plus bias,
    then silu or nothing; the present state is the last K - 1 columns. Against a float64
    reference (ONNX Runtime 1.32 gave the same within 5e-7)."""
    rng = np.random.default_rng(kernel + length)
    batch, channels = 2, 6
    x = rng.standard_normal((batch, channels, length)).astype(np.float32)
    w = rng.standard_normal((channels, 1, kernel)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    state = rng.standard_normal((batch, channels, kernel - 1)).astype(np.float32)
    names = ["x", "w", "b" if bias else "", "p" if past else ""]
    node = helper.make_node("CausalConvWithState", names, ["y", "present"], domain=MS, ndim=1, activation=activation)
    inits = [helper.make_tensor("w", F, w.shape, w.ravel())] + ([helper.make_tensor("b", F, b.shape, b)] if bias else [])
    inputs = [helper.make_tensor_value_info("x", F, ["B", channels, "S"])]
    if past:
        inputs.append(helper.make_tensor_value_info("p", F, ["B", channels, kernel - 1]))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(n, F, None) for n in ("y", "present")],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    feeds = {"x": x, **({"p": state} if past else {})}
    got = weft.compile(model.SerializeToString()).run(feeds)
    joined = np.concatenate([state if past else np.zeros_like(state), x], 2).astype(np.float64)
    want = sum(w[None, :, 0, j, None] * joined[:, :, j:j + length] for j in range(kernel)) + (b[:, None] if bias else 0)
    if activation == "silu":
        want = want / (1 + np.exp(-want))
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["present"], joined[:, :, joined.shape[2] - (kernel - 1):].astype(np.float32))


def int8_blocks(a, block):
    """"a" as ONNX Runtime's int8 activations see it: quantized per block of "block" (symmetric,
    scale max|a| / 127, rounded to even), in float64."""
    parts = []
    for part in np.split(a.astype(np.float32), range(block, a.shape[-1], block)):
        amax = np.abs(part).max()
        parts.append(np.rint(part * (np.float32(127) / amax)).astype(np.float64) * (amax / np.float32(127))
                     if amax > 0 else np.zeros(part.shape))
    return np.concatenate(parts)


def moe_reference(x, logits, w1, b1, w2, b2, k, activation, normalize, limit=None, alpha=1.0, beta=0.0,
                  int8_block=None):
    """Each token through its top k experts (float64), mixed by the softmax of their k logits
    (normalize) or of all; SwiGLU's gate and linear halves interleaved in fc1's output. With
    "int8_block", each expert's fc1 and fc2 see their inputs as int8 per block (int8_blocks)."""
    seen = (lambda a: int8_blocks(a, int8_block)) if int8_block else (lambda a: a)
    out = np.zeros(x.shape)
    for t in range(x.shape[0]):
        row = logits[t].astype(np.float64)
        top = np.argsort(-row, kind="stable")[:k]
        p = np.exp(row - row.max())
        weights = p[top] / p[top].sum() if normalize else (p / p.sum())[top]
        for e, weight in zip(top, weights):
            h = w1[e].astype(np.float64) @ seen(x[t]) + (0 if b1 is None else b1[e])
            if activation == "swiglu":
                gate, linear = h[0::2], h[1::2]
                if limit is not None:
                    gate, linear = np.minimum(gate, limit), np.clip(linear, -limit, limit)
                a = gate / (1 + np.exp(-alpha * gate)) * (linear + beta)
            elif activation == "relu":
                a = np.maximum(h, 0)
            elif activation == "silu":
                a = h / (1 + np.exp(-h))
            else:  # gelu, tanh's approximation
                a = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
            out[t] += weight * (w2[e].astype(np.float64) @ seen(a) + (0 if b2 is None else b2[e]))
    return out


def moe_strategies(profile):
    """The strategies of a profile's kernels for MoE: Weft's call, or none (the dense form)."""
    return [p["strategy"] for p in profile if p["strategy"].startswith("Weft mixture of experts")]


@pytest.mark.parametrize("library", [True, False], ids=["call", "expanded"])
@pytest.mark.parametrize("activation, k, normalize, bias, attrs, shape", [
    ("swiglu", 2, 1, True, {"swiglu_limit": 7.0, "activation_alpha": 1.702, "activation_beta": 1.0}, [5]),  # GPT-OSS
    ("swiglu", 2, 0, True, {"swiglu_limit": 0.5, "activation_alpha": 1.702, "activation_beta": 1.0}, [1, 5]),
    ("swiglu", 4, 1, False, {}, [5]),     # every expert; alpha 1, beta 0 and no limit by default
    ("relu", 1, 1, True, {}, [2, 3]),
    ("gelu", 2, 0, True, {}, [5]),
    ("silu", 3, 1, False, {}, [5]),
])
def test_mixture_of_experts(activation, k, normalize, bias, attrs, shape, library, monkeypatch):
    """MoE (com.microsoft; GPT-OSS from GenAI's builder): each token through its top k of 4
    experts, against a float64 reference (ONNX Runtime 1.32's CPU kernel gave the same within
    4e-6 on these forms; its GELU is tanh's approximation). On the CPU Weft's call runs only the
    chosen experts; without library calls (WEFT_ONEDNN=0, as on CUDA) the dense form runs."""
    if not library:
        monkeypatch.setenv("WEFT_ONEDNN", "0")
    rng = np.random.default_rng(k + len(activation))
    tokens, hidden, inner, experts = int(np.prod(shape)), 16, 8, 4
    fused = 2 * inner if activation == "swiglu" else inner
    x = (2 * rng.standard_normal(shape + [hidden])).astype(np.float32)
    logits = rng.standard_normal((tokens, experts)).astype(np.float32)
    w1 = (0.5 * rng.standard_normal((experts, fused, hidden))).astype(np.float32)
    w2 = (0.5 * rng.standard_normal((experts, hidden, inner))).astype(np.float32)
    b1, b2 = (rng.standard_normal(s).astype(np.float32) for s in ((experts, fused), (experts, hidden)))
    extra = {"swiglu_fusion": 1} if activation == "swiglu" else {}
    node = helper.make_node("MoE", ["x", "r", "w1", "b1" if bias else "", "w2", "b2" if bias else ""], ["y"],
                            domain=MS, k=k, activation_type=activation, normalize_routing_weights=normalize,
                            **extra, **attrs)
    inits = [helper.make_tensor(n, F, v.shape, v.ravel()) for n, v in (("w1", w1), ("w2", w2))]
    if bias:
        inits += [helper.make_tensor(n, F, v.shape, v.ravel()) for n, v in (("b1", b1), ("b2", b2))]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, shape + [hidden]),
                                            helper.make_tensor_value_info("r", F, [tokens, experts])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    got, profile = weft.compile(model.SerializeToString()).profile({"x": x, "r": logits})
    got = got["y"]
    assert moe_strategies(profile) == (["Weft mixture of experts, 4 experts, top {}, {} (f32 weights)".format(
        k, activation)] if library else [])
    want = moe_reference(x.reshape(tokens, hidden), logits, w1, b1 if bias else None, w2, b2 if bias else None, k,
                         activation, normalize, attrs.get("swiglu_limit"), attrs.get("activation_alpha", 1.0),
                         attrs.get("activation_beta", 0.0))
    assert got.shape == x.shape
    np.testing.assert_allclose(got.reshape(tokens, hidden), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("library", [True, False], ids=["call", "expanded"])
@pytest.mark.parametrize("bits, block, opset", [(4, 32, 21), (4, 16, 21), (4, 0, 21), (8, 32, 21), (4, 32, 17)])
def test_quantized_mixture_of_experts(bits, block, opset, library, monkeypatch):
    """QMoE (GPT-OSS in int4 from GenAI's builder): MoE with symmetric 4- or 8-bit weights
    packed low bits first along K, scales per block (or per row with block_size 0). The weights
    stay quantized at any opset (DequantizeLinear in blocks), and on the CPU Weft's call
    multiplies them so. Against the float64 reference
    on the dequantized weights (ONNX Runtime's 4-bit kernels matched it within 1e-6). ONNX
    Runtime's 8-bit kernels quantize the activations to int8 per block (about 0.4% off it), and
    so does Weft's call where the CPU has VNNI: against the float64 reference of that arithmetic.
    Without library calls, the dense form."""
    if not library:
        monkeypatch.setenv("WEFT_ONEDNN", "0")
    rng = np.random.default_rng(bits + block)
    tokens, hidden, inner, experts, k = 5, 64, 32, 4, 2
    attrs = {"swiglu_limit": 7.0, "activation_alpha": 1.702, "activation_beta": 1.0}

    def quantized(n, width):
        q = rng.integers(0, 2 ** bits, (experts, n, width)).astype(np.uint8)
        scales = rng.uniform(0.01, 0.05, (experts, n, width // block) if block else (experts, n)).astype(np.float32)
        packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8) if bits == 4 else q
        w = (q.astype(np.float64) - 2 ** (bits - 1)) * (np.repeat(scales, block, -1) if block else scales[..., None])
        return packed, scales, w

    q1, s1, w1 = quantized(2 * inner, hidden)
    q2, s2, w2 = quantized(hidden, inner)
    b1, b2 = (rng.standard_normal(s).astype(np.float32) for s in ((experts, 2 * inner), (experts, hidden)))
    node = helper.make_node("QMoE", ["x", "r", "q1", "s1", "b1", "q2", "s2", "b2"], ["y"], domain=MS, k=k,
                            activation_type="swiglu", swiglu_fusion=1, normalize_routing_weights=1,
                            expert_weight_bits=bits, **({"block_size": block} if block else {}), **attrs)
    inits = [helper.make_tensor(n, TensorProto.UINT8 if n[0] == "q" else F, v.shape, v.ravel().tobytes(), raw=True)
             for n, v in (("q1", q1), ("s1", s1), ("b1", b1), ("q2", q2), ("s2", s2), ("b2", b2))]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [tokens, hidden]),
                                            helper.make_tensor_value_info("r", F, [tokens, experts])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    x = rng.standard_normal((tokens, hidden)).astype(np.float32)
    logits = rng.standard_normal((tokens, experts)).astype(np.float32)
    got, profile = weft.compile(model.SerializeToString()).profile({"x": x, "r": logits})
    got = got["y"]
    weights = "{}-bit weights".format(bits) + (", int8 activations" if bits == 8 and has_avx512_vnni() else "")
    assert moe_strategies(profile) == (["Weft mixture of experts, 4 experts, top 2, swiglu ({})".format(
        weights)] if library else [])
    int8 = bits == 8 and library and has_avx512_vnni()
    want = moe_reference(x, logits, w1, b1, w2, b2, k, "swiglu", True, 7.0, 1.702, 1.0, block if int8 else None)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("library", [True, False], ids=["call", "expanded"])
def test_mixture_of_experts_over_symbolic_tokens(library, monkeypatch):
    """One dynamic compile of QMoE (its router a MatMul of the hidden states, as in GPT-OSS)
    serves a prompt and decoding steps (tokens from 1 to 40, 16 experts, top 4: some experts get
    no token, some many), each against the float64 reference. (The dense form's TopK over
    symbolic rows compiles per shape.)"""
    if not library:
        monkeypatch.setenv("WEFT_ONEDNN", "0")
    rng = np.random.default_rng(5)
    hidden, inner, experts, k = 64, 32, 16, 4

    def quantized(n, width):
        q = rng.integers(0, 16, (experts, n, width)).astype(np.uint8)
        scales = rng.uniform(0.01, 0.05, (experts, n, width // 32)).astype(np.float32)
        w = (q.astype(np.float64) - 8) * np.repeat(scales, 32, -1)
        return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8), scales, w

    q1, s1, w1 = quantized(2 * inner, hidden)
    q2, s2, w2 = quantized(hidden, inner)
    router = rng.standard_normal((hidden, experts)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "router"], ["r"])]
    nodes += [helper.make_node("QMoE", ["x", "r", "q1", "s1", "", "q2", "s2"], ["y"], domain=MS, k=k,
                            activation_type="swiglu", swiglu_fusion=1, normalize_routing_weights=1,
                            expert_weight_bits=4, block_size=32, swiglu_limit=7.0, activation_alpha=1.702,
                            activation_beta=1.0)]
    inits = [helper.make_tensor(n, TensorProto.UINT8 if n[0] == "q" else F, v.shape, v.ravel().tobytes(), raw=True)
             for n, v in (("q1", q1), ("s1", s1), ("q2", q2), ("s2", s2), ("router", router))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, ["batch", "tokens", hidden])],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    for tokens in (40, 1, 1, 3):
        x = rng.standard_normal((1, tokens, hidden)).astype(np.float32)
        got = compiled.run({"x": x})["y"]
        logits = x[0].astype(np.float64) @ router
        want = moe_reference(x[0], logits, w1, None, w2, None, k, "swiglu", True, 7.0, 1.702, 1.0)
        assert got.shape == x.shape
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert compiled.compiled_variants == (1 if library else 3)


@pytest.mark.parametrize("w1, w2, attrs, logits, message", [
    ((4, 6, 8), (4, 8, 4), {}, 4, r"fc1's F must be twice fc2's I \(SwiGLU's two halves\)"),
    ((4, 6, 8), (4, 8, 4), {"activation_type": "relu"}, 4, "fc1's F must be fc2's I"),
    ((4, 8, 5), (4, 8, 4), {}, 4, r"fc1 \[E, F, H\] and fc2 \[E, H, I\] must read and write the rows' H"),
    ((4, 8, 8), (4, 8, 4), {"k": 5}, 4, "k=5 of 4 experts"),
    ((4, 8, 8), (4, 8, 4), {}, 3, "the router's logits and the experts' weights differ in their count of experts"),
    ((8, 8), (4, 8, 4), {}, 4, r"needs the rows \[T, H\], the router's logits \[T, E\]"),
])
def test_moe_of_inconsistent_shapes_is_one_clear_error(w1, w2, attrs, logits, message):
    """Experts' weights that do not fit the rows, the router or each other: one message naming
    what, at compile time (not an inner MatMul's)."""
    rng = np.random.default_rng(0)
    weights = {n: rng.standard_normal(s).astype(np.float32) for n, s in (("w1", w1), ("w2", w2))}
    attrs = {"k": 2, "activation_type": "swiglu", **attrs}
    if attrs["activation_type"] == "swiglu":
        attrs["swiglu_fusion"] = 1
    node = helper.make_node("MoE", ["x", "r", "w1", "", "w2"], ["y"], domain=MS, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [3, 8]),
                                            helper.make_tensor_value_info("r", F, [3, logits])],
                              [helper.make_tensor_value_info("y", F, None)],
                              [helper.make_tensor(n, F, v.shape, v.ravel()) for n, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    with pytest.raises(weft.WeftError, match=message):
        weft.compile(model.SerializeToString())


def test_a_models_own_nodes_of_wefts_domain_are_refused():
    """weft.MoE is what the import of MoE and QMoE makes (domain "weft"); a model may not name
    that domain itself."""
    node = helper.make_node("MoE", ["x", "x", "x", "", "x"], ["y"], domain="weft", name="mine")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [2, 4])],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("weft", 1)])
    with pytest.raises(weft.WeftError, match="node 'mine': domain 'weft' is Weft's own"):
        weft.compile(model.SerializeToString())


# (input shape, position_ids shape, R, attributes)
ROTARY_FORMS = {
    "3d_one_head_per_cache_width": ((2, 5, 64), (2, 5), 16, {}),
    "3d_partial_of_each_head": ((2, 5, 64), (2, 5), 8, {"num_heads": 4, "rotary_embedding_dim": 8}),
    "3d_interleaved": ((2, 5, 64), (2, 5), 16, {"interleaved": 1}),
    "4d": ((2, 4, 5, 16), (2, 5), 16, {}),
    "4d_offset_interleaved": ((2, 4, 5, 16), (1,), 16, {"interleaved": 1}),
    "3d_offset": ((2, 5, 64), (1,), 16, {}),
}


@pytest.mark.parametrize("form", ROTARY_FORMS)
def test_rotary_embedding(form):
    shape, pos_shape, width, attrs = ROTARY_FORMS[form]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    pos = rng.integers(0, 20, pos_shape).astype(np.int64) if len(pos_shape) == 2 else np.array([5], np.int64)
    cos, sin = (rng.standard_normal((40, width // 2)).astype(np.float32) for _ in range(2))
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", F, list(shape)),
        helper.make_tensor_value_info("pos", TensorProto.INT64, list(pos_shape)),
        helper.make_tensor_value_info("cos", F, [40, width // 2]),
        helper.make_tensor_value_info("sin", F, [40, width // 2])], [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    got = weft.compile(model.SerializeToString()).run({"x": x, "pos": pos, "cos": cos, "sin": sin})["y"]
    batch, length = shape[0], shape[1] if len(shape) == 3 else shape[2]
    x4 = x.astype(np.float64)
    if len(shape) == 3:
        size = shape[2] // attrs["num_heads"] if "num_heads" in attrs else width
        x4 = x4.reshape(batch, length, -1, size).transpose(0, 2, 1, 3)
    at = pos if len(pos_shape) == 2 else pos[0] + np.arange(length)[None].repeat(batch, 0)
    want = rotate(x4, cos.astype(np.float64)[at], sin.astype(np.float64)[at], attrs.get("interleaved", 0))
    if len(shape) == 3:
        want = want.transpose(0, 2, 1, 3).reshape(shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("node, message", [
    (helper.make_node("GroupQueryAttention", ["x", "", "", "", "", "s", "t"], ["y"], num_heads=4, domain=MS),
     "attributes 'num_heads' and 'kv_num_heads' are required"),
    (helper.make_node("GroupQueryAttention", ["x", "", "", "", "", "s", "t"], ["y"], num_heads=4, kv_num_heads=3,
                      domain=MS), "attributes .* num_heads a multiple of kv_num_heads"),
    (helper.make_node("GroupQueryAttention", ["x"], ["y"], num_heads=4, kv_num_heads=2, domain=MS),
     "inputs 'seqlens_k' and 'total_sequence_length' are required"),
    (helper.make_node("GroupQueryAttention", ["x", "x", "", "", "", "s", "t"], ["y"], num_heads=4, kv_num_heads=2,
                      domain=MS), "key and value, past_key and past_value"),
    (helper.make_node("GroupQueryAttention", ["x", "", "", "", "", "s", "t"], ["y"], num_heads=4, kv_num_heads=2,
                      do_rotary=1, domain=MS), "do_rotary needs cos_cache and sin_cache"),
    (helper.make_node("GroupQueryAttention", ["x", "", "", "", "", "s", "t"], ["y", "k", "v", "qk"], num_heads=4,
                      kv_num_heads=2, domain=MS), "output_qk is not supported"),
    (helper.make_node("RotaryEmbedding", ["x", "s", "x", "x"], ["y"], is_packed_batching=1, domain=MS),
     "is_packed_batching"),
    (helper.make_node("RotaryEmbedding", ["x", "u", "x", "x"], ["y"], domain=MS), "needs the ranks of input"),
    (helper.make_node("GroupQueryAttention", ["x", "", "", "x", "x", "s", "t"], ["y"], num_heads=4, kv_num_heads=2,
                      sliding_window_cache=1, domain=MS), "sliding_window_cache needs local_window_size"),
    (helper.make_node("CausalConvWithState", ["x", "x"], ["y"], activation="relu", domain=MS),
     "activation 'relu' is not supported"),
    (helper.make_node("CausalConvWithState", ["x", "x"], ["y"], state_window=4, domain=MS),
     "state_window is not supported"),
    (helper.make_node("CausalConvWithState", ["x", "x"], ["y"], domain=MS), r"weight must be a constant \[C, 1, K\]"),
    (helper.make_node("MoE", ["x", "x", "x", "", "x"], ["y"], activation_type="swiglu", swiglu_fusion=2, domain=MS),
     "only swiglu_fusion=1"),
    (helper.make_node("MoE", ["x", "x", "x", "", "x", "", "x"], ["y"], domain=MS), "fc3 is not supported"),
    (helper.make_node("MoE", ["x", "x", "x"], ["y"], domain=MS), "input 'fc2_experts_weights' is required"),
    (helper.make_node("MoE", ["x", "x", "x", "", "x"], ["y"], activation_type="tanh", domain=MS),
     "activation_type 'tanh' is not supported"),
    (helper.make_node("QMoE", ["x", "x", "x", "x", "", "x", "x", "", "", "", "", "x"], ["y"], domain=MS),
     "fc3, zero points and router weights are not supported"),
    (helper.make_node("QMoE", ["x", "x", "x", "x", "", "x", "x"], ["y"], expert_weight_bits=2, domain=MS),
     "expert_weight_bits must be 4 or 8"),
    (helper.make_node("QMoE", ["x", "x", "x", "x", "", "x", "x"], ["y"], domain=MS),
     "expert weights and scales given at run time are not supported"),
])
def test_malformed_decoder_ops_are_one_clear_error(node, message):
    node.name = "bad"
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F, [2, 4]),
                                            helper.make_tensor_value_info("s", TensorProto.INT32, [2]),
                                            helper.make_tensor_value_info("t", TensorProto.INT32, []),
                                            helper.make_tensor_value_info("u", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    with pytest.raises(weft.WeftError, match=rf"node 'bad' \(com.microsoft.{node.op_type}\): ({message})"):
        weft.compile(model.SerializeToString())


def tiny_language_model(vocabulary=50, hidden=32, heads=4, kv_heads=2):
    """A one-layer decoder shaped as GenAI's builder writes it: input_ids and attention_mask,
    past_key_values.0.key/value in, logits and present.0.key/value out, GroupQueryAttention
    with packed QKV and rotary embedding, seqlens_k and total_sequence_length from the mask."""
    from onnx import numpy_helper
    rng = np.random.default_rng(11)
    size = hidden // heads
    arr = lambda v, n: numpy_helper.from_array(v.astype(np.float32), n)  # noqa: E731
    positions = np.arange(64)[:, None] / 10000 ** (np.arange(size // 2) / (size // 2))
    inits = [arr(rng.standard_normal((vocabulary, hidden)), "embed"),
             arr(0.3 * rng.standard_normal((hidden, (heads + 2 * kv_heads) * size)), "wqkv"),
             arr(0.3 * rng.standard_normal((hidden, vocabulary)), "head"),
             arr(np.cos(positions), "cos"), arr(np.sin(positions), "sin"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    nodes = [helper.make_node("Gather", ["embed", "input_ids"], ["x"]),
             helper.make_node("MatMul", ["x", "wqkv"], ["qkv"]),
             helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["count"], keepdims=0),
             helper.make_node("Sub", ["count", "one"], ["seqlens64"]),
             helper.make_node("Cast", ["seqlens64"], ["seqlens"], to=TensorProto.INT32),
             helper.make_node("Shape", ["attention_mask"], ["mask_shape"], start=1, end=2),
             helper.make_node("Squeeze", ["mask_shape"], ["total64"]),
             helper.make_node("Cast", ["total64"], ["total"], to=TensorProto.INT32),
             helper.make_node("GroupQueryAttention", ["qkv", "", "", "past_key_values.0.key",
                                                      "past_key_values.0.value", "seqlens", "total", "cos", "sin"],
                              ["attended", "present.0.key", "present.0.value"], domain=MS, num_heads=heads,
                              kv_num_heads=kv_heads, do_rotary=1),
             helper.make_node("MatMul", ["attended", "head"], ["logits"])]
    past = ["batch_size", kv_heads, "past_sequence_length", size]
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]),
         helper.make_tensor_value_info("past_key_values.0.key", F, past),
         helper.make_tensor_value_info("past_key_values.0.value", F, past)],
        [helper.make_tensor_value_info(n, F, None) for n in ("logits", "present.0.key", "present.0.value")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    config = {"model": {"decoder": {"head_size": size}, "vocab_size": vocabulary}}
    return model.SerializeToString(), config


def test_the_generation_example_matches_recomputing_without_a_cache():
    """examples/generate.py's greedy loop (docs/language-models.md) on a tiny decoder of the
    builder's form: one dynamic compile serves every step, and each token equals the argmax of
    the whole sequence run again from an empty cache (so the loop carries the state right)."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "generate", os.path.join(os.path.dirname(__file__), "..", "..", "examples", "generate.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    data, config = tiny_language_model()
    model = weft.compile(data, dynamic_shapes=True)
    prompt = np.array([[3, 14, 15, 9, 2, 6]], np.int64)
    tokens = example.generate(model.run, model.inputs, config, prompt, 5)
    assert model.compiled_variants == 1
    sequence = prompt
    for token in tokens[0]:
        fresh = example.generate(model.run, model.inputs, config, sequence, 1)
        assert fresh[0, 0] == token
        sequence = np.concatenate([sequence, fresh], 1)
