"""Greedy decoding with a KV cache: Hugging Face transformers' GPT-2 (4 layers, its
50,257-token head) and a small Llama (4 layers of width 512, 2 KV heads), their decoder step
exported with dynamic batch, new length and past length (eager attention), run one token a
step from a past that grows by one each step. Weft's one dynamic-shape compile against ONNX
Runtime (2 threads, not spinning) in alternating rounds, each round from a new past, and one
round of Weft compiling per shape; then both and Weft's specialized compile at a fixed past
(128 and 1000). Every step gets fresh numpy inputs, as a decoding loop does. Weft's first
step's logits are checked against ONNX Runtime's.

Usage (bench/.venv, Weft's module on PYTHONPATH):
    PYTHONPATH=build/python bench/.venv/bin/python bench/decode_bench.py [--rounds 3] [--steps 16]
It prints the markdown table that docs/dynamic-shapes.md ("Decoding with a KV cache") holds.
"""
import argparse
import contextlib
import datetime
import io
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
import torch
import transformers as tf

# The dynamic compile's own kernels are measured: no specialized compile in the background.
os.environ["WEFT_SPECIALIZE_AFTER"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from torch_export_test import DecoderStep  # noqa: E402
THREADS = 2


def decoder(name):
    torch.manual_seed(0)
    if name == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=4, attn_implementation="eager")).eval()
    return tf.LlamaForCausalLM(tf.LlamaConfig(
        hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=2, vocab_size=32000, attn_implementation="eager")).eval()


def export(name, tmp):
    model = decoder(name)
    c = model.config
    layers, heads = c.num_hidden_layers, getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    head_size = c.hidden_size // c.num_attention_heads
    example = (torch.randint(5, 995, (2, 3)), torch.ones(2, 8, dtype=torch.long)) + tuple(
        torch.randn(2, heads, 5, head_size) for _ in range(2 * layers))
    dim = torch.export.Dim
    batch, new, past = dim("batch", max=64), dim("new", max=512), dim("past", min=1, max=2048)
    path = os.path.join(tmp, name + ".onnx")
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        torch.onnx.export(DecoderStep(model), example, path, dynamo=True, external_data=False,
                          dynamic_shapes=({0: batch, 1: new}, {0: batch, 1: dim("total", max=4096)},
                                          tuple({0: batch, 2: past} for _ in range(2 * layers))))
    with open(path, "rb") as f:
        return f.read(), layers, heads, head_size


def main():
    import onnx
    import weft

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=16)
    args = ap.parse_args()
    rows = []
    for name in ("gpt2", "llama"):
        with tempfile.TemporaryDirectory() as tmp:
            data, layers, heads, head_size = export(name, tmp)
        names = [i.name for i in onnx.load_from_string(data).graph.input]
        rng = np.random.default_rng(0)

        def inputs(past):
            arrays = (rng.integers(5, 995, (1, 1)), np.ones((1, past + 1), np.int64)) + tuple(
                rng.standard_normal((1, heads, past, head_size), dtype=np.float32) for _ in range(2 * layers))
            return dict(zip(names, arrays))

        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        dynamic = weft.compile(data, threads=THREADS, dynamic_shapes=True)
        systems = {"dynamic": dynamic.run, "ort": lambda f: session.run(None, f)}
        first = inputs(100)
        logits = session.get_outputs()[0].name
        np.testing.assert_allclose(dynamic.run(first)[logits], session.run([logits], first)[0],
                                   rtol=1e-3, atol=1e-4)

        def loop(run, past):
            times = []
            for p in range(past, past + args.steps):
                feed = inputs(p)
                t0 = time.perf_counter()
                run(feed)
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times)

        loops = {k: [] for k in systems}
        for r in range(args.rounds):
            for key, run in systems.items():
                loops[key].append(loop(run, 128 + 40 * r))
        row = {"model": name, **{f"loop_{k}": min(v) for k, v in loops.items()}}
        per_shape = weft.compile(data, threads=THREADS)
        per_shape.run(first)
        row["loop_per_shape"] = loop(per_shape.run, 128)
        systems["specialized"] = per_shape.run
        for past in (128, 1000):
            feed = inputs(past)
            for key, run in systems.items():
                run(feed)
                best = []
                for _ in range(args.rounds):
                    times = []
                    for _ in range(20):
                        t0 = time.perf_counter()
                        run(feed)
                        times.append((time.perf_counter() - t0) * 1e3)
                    best.append(statistics.median(times))
                row[f"steady_{key}_{past}"] = min(best)
        assert dynamic.compiled_variants == 1
        rows.append(row)
        print(f"done: {name}", file=sys.stderr, flush=True)
    print(f"Measured {datetime.date.today()}, {THREADS} threads, {args.steps} steps a loop, best of "
          f"{args.rounds} rounds; ONNX Runtime {ort.__version__}, PyTorch {torch.__version__}, "
          f"transformers {tf.__version__}.\n")
    print("| Model | 16 greedy steps: dynamic | per shape (a compile each step) | ONNX Runtime | "
          "steady at past 128: dynamic / specialized / ONNX Runtime | at past 1000 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        steady = [" / ".join(f"{r[f'steady_{k}_{p}']:.2f}" for k in ("dynamic", "specialized", "ort")) + " ms"
                  for p in (128, 1000)]
        print(f"| {r['model']} | {r['loop_dynamic']:.2f} ms a step | {r['loop_per_shape'] / 1e3:.2f} s a step | "
              f"{r['loop_ort']:.2f} ms | {steady[0]} | {steady[1]} |")


if __name__ == "__main__":
    main()
