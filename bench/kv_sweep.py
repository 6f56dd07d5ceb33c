"""Decoder families of Hugging Face transformers with a KV cache, on one dynamic-shape
compile: each model from a small config (2 layers, width 128, 1,000 tokens, eager
attention), its decoding step exported as in decode_bench.py (dynamic batch, new length and
past length), run at five steps of different shapes against ONNX Runtime on the same export.
A model whose compile does not take every shape compiles per shape (the count says so).

Usage (bench/.venv, Weft's module on PYTHONPATH):
    PYTHONPATH=build/python bench/.venv/bin/python bench/kv_sweep.py [NAME...]
It prints the table that docs/dynamic-shapes.md ("Decoding with a KV cache") holds.
"""
import contextlib
import io
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import torch
import transformers as tf

os.environ["WEFT_SPECIALIZE_AFTER"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from torch_export_test import DecoderStep  # noqa: E402
SMALL = dict(vocab_size=1000, attn_implementation="eager", pad_token_id=0, bos_token_id=1, eos_token_id=2)
LLAMA_LIKE = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, **SMALL)
SHAPES = ((1, 1, 5), (1, 1, 6), (2, 1, 30), (1, 4, 9), (3, 7, 1))  # batch, new, past


def configs():
    yield "GPT-2", tf.GPT2LMHeadModel, tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, **SMALL)
    for name in ("Llama", "Qwen2", "Mistral", "Qwen3", "Phi3", "StableLm", "Olmo", "Starcoder2", "Cohere",
                 "Granite", "SmolLM3"):
        yield name, getattr(tf, name + "ForCausalLM"), getattr(tf, name + "Config")(**LLAMA_LIKE)
    for name in ("Gemma", "Gemma2"):
        yield name, getattr(tf, name + "ForCausalLM"), getattr(tf, name + "Config")(**{**LLAMA_LIKE, "head_dim": 32})
    plain = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, **SMALL)
    yield "Phi", tf.PhiForCausalLM, tf.PhiConfig(intermediate_size=256, **plain)
    yield "GPT-NeoX", tf.GPTNeoXForCausalLM, tf.GPTNeoXConfig(intermediate_size=256, **plain)
    yield "Falcon", tf.FalconForCausalLM, tf.FalconConfig(**plain)
    yield "OPT", tf.OPTForCausalLM, tf.OPTConfig(ffn_dim=256, word_embed_proj_dim=128, **plain)
    yield "BLOOM", tf.BloomForCausalLM, tf.BloomConfig(hidden_size=128, n_layer=2, n_head=4, **SMALL)
    for name in ("GPTJ", "CodeGen"):
        yield name, getattr(tf, name + "ForCausalLM"), getattr(tf, name + "Config")(
            n_embd=128, n_layer=2, n_head=4, rotary_dim=16, n_positions=512, **SMALL)


def check(model_class, config):
    """(largest difference from ONNX Runtime, largest magnitude, compiles)."""
    import weft

    torch.manual_seed(0)
    model = model_class(config).eval()
    with torch.no_grad():  # the cache's layout: heads and sizes of keys and values
        cache = model(input_ids=torch.randint(5, 995, (1, 5)), use_cache=True).past_key_values
    keys, values = cache.layers[0].keys.shape, cache.layers[0].values.shape
    layers = len(cache.layers)

    def make(n, t, p):
        return (torch.randint(5, 995, (n, t)), torch.ones(n, p + t, dtype=torch.long)) + tuple(
            torch.randn(n, keys[1], p, (keys if k % 2 == 0 else values)[3]) for k in range(2 * layers))

    dim = torch.export.Dim
    batch = dim("batch", max=64)
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        path = os.path.join(tmp, "step.onnx")
        torch.onnx.export(DecoderStep(model), make(2, 3, 5), path, dynamo=True, external_data=False,
                          dynamic_shapes=({0: batch, 1: dim("new", max=512)}, {0: batch, 1: dim("total", max=4096)},
                                          tuple({0: batch, 2: dim("past", min=1, max=2048)}
                                                for _ in range(2 * layers))))
        with open(path, "rb") as f:
            data = f.read()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    compiled = weft.compile(data, dynamic_shapes=True)
    worst = scale = 0.0
    for n, t, p in SHAPES:
        feed = {i.name: x.numpy() for i, x in zip(session.get_inputs(), make(n, t, p))}
        want, got = session.run(None, feed), list(compiled.run(feed).values())
        worst = max([worst] + [float(np.abs(a - b).max()) for a, b in zip(got, want)])
        scale = max([scale] + [float(np.abs(b).max()) for b in want])
    return worst, scale, compiled.compiled_variants


def main():
    only = set(sys.argv[1:])
    print(f"transformers {tf.__version__}, PyTorch {torch.__version__}, ONNX Runtime {ort.__version__}\n")
    print("| Model | Compiles for 5 shapes | Max difference from ONNX Runtime |")
    print("| --- | ---: | ---: |")
    for name, model_class, config in configs():
        if only and name not in only:
            continue
        try:
            worst, scale, compiles = check(model_class, config)
            print(f"| {name} | {compiles} | {worst:.1e} of {scale:.2g} |", flush=True)
        except Exception as e:  # noqa: BLE001 (a row per model, whatever fails)
            print(f"| {name} | failed: {type(e).__name__}: {str(e)[:200]} | |", flush=True)


if __name__ == "__main__":
    main()
