"""Mixtures of experts as ONNX Runtime GenAI's builder writes them (GPT-OSS): one com.microsoft
MoE (f32 weights) or QMoE (4- or 8-bit weights in blocks of 32, the builder's int4 form) layer
of GPT-OSS-20b's routing (32 experts, top 4, SwiGLU with its limit, alpha and beta, biases) at
a smaller width, Weft beside ONNX Runtime's own CPU kernels for those ops. A decoding step is
one token, a prompt 32; the runs cycle through 16 inputs, so that the experts chosen change
from run to run (their weights, 25-400 MB in all, mostly not in cache) as in a model. Weft runs its call that routes each token to its experts only
(library/moe_call.h); before it, Weft ran every expert on every token (the dense form it still
has without library calls). Each case checks Weft's output against ONNX Runtime's first. The
two alternate over the rounds in this process (2 threads each); an entry is the system's lowest
median of 50 runs.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/moe_bench.py [--rounds 3] [--write]
--write stores bench/moe_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort
from ort_options import session_options
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
EXPERTS, TOP, HIDDEN, INNER = 32, 4, 1024, 1024
MS = "com.microsoft"
F = TensorProto.FLOAT


def model(bits):
    """A MoE (bits None) or QMoE layer: x [T, H], router logits [T, E] -> [T, H]."""
    rng = np.random.default_rng(0)
    attrs = dict(k=TOP, activation_type="swiglu", swiglu_fusion=1, normalize_routing_weights=1,
                 swiglu_limit=7.0, activation_alpha=1.702, activation_beta=1.0)
    b1 = rng.standard_normal((EXPERTS, 2 * INNER)).astype(np.float32)
    b2 = rng.standard_normal((EXPERTS, HIDDEN)).astype(np.float32)
    inits = [helper.make_tensor("b1", F, b1.shape, b1.tobytes(), raw=True),
             helper.make_tensor("b2", F, b2.shape, b2.tobytes(), raw=True)]
    shapes = {"1": (EXPERTS, 2 * INNER, HIDDEN), "2": (EXPERTS, HIDDEN, INNER)}
    if bits is None:
        for i, shape in shapes.items():
            w = (rng.standard_normal(shape) / np.sqrt(shape[2])).astype(np.float32)
            inits.append(helper.make_tensor("w" + i, F, w.shape, w.tobytes(), raw=True))
        node = helper.make_node("MoE", ["x", "r", "w1", "b1", "w2", "b2"], ["y"], domain=MS, **attrs)
    else:
        for i, (e, n, k) in shapes.items():
            q = rng.integers(0, 2 ** bits, (e, n, k)).astype(np.uint8)
            packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8) if bits == 4 else q
            scales = (rng.uniform(0.5, 1.5, (e, n, k // 32)) / (2 ** bits * np.sqrt(k))).astype(np.float32)
            inits += [helper.make_tensor("q" + i, TensorProto.UINT8, packed.shape, packed.tobytes(), raw=True),
                      helper.make_tensor("s" + i, F, scales.shape, scales.tobytes(), raw=True)]
        node = helper.make_node("QMoE", ["x", "r", "q1", "s1", "b1", "q2", "s2", "b2"], ["y"], domain=MS,
                                expert_weight_bits=bits, block_size=32, **attrs)
    graph = helper.make_graph([node], "moe", [helper.make_tensor_value_info("x", F, ["T", HIDDEN]),
                                              helper.make_tensor_value_info("r", F, ["T", EXPERTS])],
                              [helper.make_tensor_value_info("y", F, ["T", HIDDEN])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                             ir_version=10).SerializeToString()


def timed(fn, inputs, iters=50):
    """The median of "iters" calls of fn, each on the next of "inputs" in turn."""
    for feeds in inputs[:3]:
        fn(feeds)
    times = []
    for i in range(iters):
        feeds = inputs[i % len(inputs)]
        t0 = time.perf_counter()
        fn(feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure(rounds):
    import weft
    rows = []
    for name, bits in (("MoE f32", None), ("QMoE int4", 4), ("QMoE int8", 8)):
        data = model(bits)
        options = session_options(threads=2)
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        compiled = weft.compile(data, dynamic_shapes=True)
        for tokens in (1, 32):
            rng = np.random.default_rng(tokens)
            inputs = [{"x": rng.standard_normal((tokens, HIDDEN)).astype(np.float32),
                       "r": rng.standard_normal((tokens, EXPERTS)).astype(np.float32)} for _ in range(16)]
            feeds = inputs[0]
            want = session.run(None, feeds)[0]
            got, profile = compiled.profile(feeds)
            strategy = [p["strategy"] for p in profile if p["strategy"].startswith("Weft mixture")]
            row = {"case": name, "tokens": tokens, "max_abs": float(np.abs(want).max()),
                   "max_diff": float(np.abs(got["y"] - want).max()), "strategy": strategy[0] if strategy else "",
                   "weft_ms": [], "ort_ms": []}
            for _ in range(rounds):
                row["weft_ms"].append(timed(compiled.run, inputs))
                row["ort_ms"].append(timed(lambda f: session.run(None, f), inputs))
            row["weft_median_ms"], row["ort_median_ms"] = min(row["weft_ms"]), min(row["ort_ms"])
            print(row, flush=True)
            rows.append(row)
    return rows


def markdown(r):
    lines = ["## Mixtures of experts (GPT-OSS's MoE and QMoE)", "",
             f"`bench/moe_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: one com.microsoft MoE "
             f"(f32) or QMoE (4- or 8-bit weights in blocks of 32) layer with GPT-OSS-20b's routing ({EXPERTS} "
             f"experts, top {TOP}, SwiGLU with limit 7, alpha 1.702, beta 1, biases) at width {HIDDEN} "
             f"(inner {INNER}), against ONNX Runtime {r['onnxruntime']}'s CPU kernels for them; one token (a "
             "decoding step) and 32 (a prompt), the runs cycling through 16 inputs (the experts chosen change). Weft compiles once with dynamic_shapes and runs its call that "
             "routes each token to its experts only. Alternating over "
             f"{r['rounds']} rounds in one process, each entry the lowest median of 50 runs. The difference is "
             "Weft's output against ONNX Runtime's, relative to its largest magnitude (ONNX Runtime's 8-bit "
             "kernel quantizes the activations to int8 per block, and so does Weft's call on this CPU). "
             "ORT / Weft above 1: Weft is faster.", "",
             "| Layer | Tokens | Weft vs ORT | ONNX Runtime | Weft | ORT / Weft |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        lines.append(f"| {row['case']} | {row['tokens']} | {row['max_diff'] / row['max_abs']:.1e} | "
                     f"{row['ort_median_ms']:.2f} ms | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms'] / row['weft_median_ms']:.2f} |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="store bench/moe_results.json")
    args = ap.parse_args()
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": ort.__version__,
         "rounds": args.rounds, "rows": measure(args.rounds)}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "moe_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
