"""The fused operators of current ONNX, Weft beside ONNX Runtime, PyTorch eager and torch.compile
in one run: Gelu (opset 20, exact and tanh), RMSNormalization, RotaryEmbedding and Attention
(opset 23, plain and causal, and causal over 2,048 tokens). Each case is one node, written with
onnx 1.23.2; PyTorch runs the same computation (F.gelu, F.rms_norm, the rotation written out,
F.scaled_dot_product_attention).
The suite runs --rounds times, every system on every case each round; a system's entry is its
lowest median (the round least disturbed by the machine's other tenants), every round beside it.

Usage: bench/.venv/bin/python bench/onnx_ops_bench.py WEFT [--rounds 3] [--iters 20] [--write]
--write stores bench/onnx_ops_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
F = torch.nn.functional
EPS = 1e-6


def rotary(x, cos, sin):
    """RotaryEmbedding-23 on [B, H, S, D], not interleaved, cos/sin [B, S, D/2]."""
    half = x.shape[-1] // 2
    cos, sin = cos[:, None], sin[:, None]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


# name: (op, opset, attributes, input shapes, the same computation in PyTorch)
CASES = {
    "gelu_4096x1024": ("Gelu", 20, {}, [[4096, 1024]], lambda x: F.gelu(x)),
    "gelu_tanh_4096x1024": ("Gelu", 20, {"approximate": "tanh"}, [[4096, 1024]],
                            lambda x: F.gelu(x, approximate="tanh")),
    "rmsnorm_4096x1024": ("RMSNormalization", 23, {"epsilon": EPS}, [[4096, 1024], [1024]],
                          lambda x, s: F.rms_norm(x, [x.shape[-1]], s, EPS)),
    "rotary_4x8x512x64": ("RotaryEmbedding", 23, {}, [[4, 8, 512, 64], [4, 512, 32], [4, 512, 32]],
                          rotary),
    "attention_4x8x256x64": ("Attention", 23, {}, [[4, 8, 256, 64]] * 3,
                             lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
    "attention_causal_4x8x256x64": ("Attention", 23, {"is_causal": 1}, [[4, 8, 256, 64]] * 3,
                                    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    "attention_causal_1x8x2048x64": ("Attention", 23, {"is_causal": 1}, [[1, 8, 2048, 64]] * 3,
                                     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
}


def model(op, opset, attrs, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], op,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def inputs(shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def timed(fn, iters):
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def weft_ms(weft, path, iters):
    r = subprocess.run([weft, "bench", path, "--json", "--iters", str(iters), "--warmup", "2"],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-300:])
    return json.loads(r.stdout)["median_ms"]


def ort_ms(path, xs, iters):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(session.get_inputs(), xs)}
    return timed(lambda: session.run(None, feeds), iters)


def torch_ms(fn, xs, iters):
    ts = [torch.from_numpy(x) for x in xs]
    with torch.inference_mode():
        return timed(lambda: fn(*ts), iters)


def compiled(fn):
    c = torch.compile(fn)
    return lambda *ts: c(*ts)


def check(name, path, xs, fn):
    """Weft's output against PyTorch's before timing (rtol 1e-3, atol 1e-4)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.argv[1], "run", path, "--output-dir", tmp]
        for i, x in enumerate(xs):
            np.save(os.path.join(tmp, f"x{i}.npy"), x)
            args += ["--input", f"x{i}={os.path.join(tmp, f'x{i}.npy')}"]
        subprocess.run(args, check=True, capture_output=True)
        got = np.load(os.path.join(tmp, "y.npy"))
    with torch.inference_mode():
        want = fn(*[torch.from_numpy(x) for x in xs]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)


def measure(weft, rounds, iters, model_dir):
    systems = {"weft": {}, "ort": {}, "torch": {}, "torch_compile": {}}
    errors = {}
    for r in range(rounds):
        for name, (op, opset, attrs, shapes, fn) in CASES.items():
            path = os.path.join(model_dir, name + ".onnx")
            xs = inputs(shapes)
            if r == 0:
                onnx.save(model(op, opset, attrs, shapes), path)
                check(name, path, xs, fn)
            runs = {"weft": lambda: weft_ms(weft, path, iters), "ort": lambda: ort_ms(path, xs, iters),
                    "torch": lambda: torch_ms(fn, xs, iters),
                    "torch_compile": lambda: torch_ms(compiled(fn), xs, iters)}
            for system, run in runs.items():
                try:
                    systems[system].setdefault(name, []).append(run())
                except Exception as e:  # the row then says why
                    errors[f"{system}/{name}"] = str(e)[-300:]
            print(f"round {r + 1}/{rounds}: {name}", flush=True)
    rows = []
    for name, (op, opset, _, shapes, _) in CASES.items():
        moved = 4 * (sum(int(np.prod(s)) for s in shapes) + int(np.prod(shapes[0])))
        row = {"case": name, "op": f"{op}-{opset}", "bytes": moved}
        for system, medians in systems.items():
            if name in medians:
                row[system + "_median_ms"] = min(medians[name])
                row[system + "_round_ms"] = medians[name]
            elif f"{system}/{name}" in errors:
                row[system + "_error"] = errors[f"{system}/{name}"]
        rows.append(row)
    return rows


def markdown(r):
    lines = ["## The fused operators of current ONNX", "",
             f"`bench/onnx_ops_bench.py`, measured {r['date']} on {r['machine']}: one node each, "
             f"written at its opset with onnx 1.23.2, beside ONNX Runtime {r['onnxruntime']} "
             f"(CPU execution provider, default options) and PyTorch {r['pytorch']} eager and "
             "`torch.compile` (default mode, compile time not included), "
             f"{r['threads']} threads; "
             "f32, inputs standard normal; Weft's output checked against PyTorch's first. "
             f"{r['rounds']} rounds of every system on every case; each entry is the system's lowest "
             f"median of {r['iters']} runs. Ratios are peer time / Weft time (above 1: Weft is faster). "
             "Bytes are the inputs plus the output.", "",
             "| Case | Op | Bytes | Weft | ONNX Runtime | ORT / Weft | PyTorch eager | eager / Weft "
             "| torch.compile | compile / Weft | Weft GB/s |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    cell = lambda v: "n/a" if v is None else f"{v:.3f} ms"
    ratio = lambda p, w: "n/a" if p is None or w is None else f"{p / w:.2f}"
    for row in r["rows"]:
        w = row.get("weft_median_ms")
        o, e, c = row.get("ort_median_ms"), row.get("torch_median_ms"), row.get("torch_compile_median_ms")
        gbs = f"{row['bytes'] / w / 1e6:.1f}" if w else ""
        lines.append(f"| {row['case']} | {row['op']} | {row['bytes'] / 1e6:.1f} MB | "
                     f"{cell(w) if w else 'failed: ' + row.get('weft_error', '')[:60]} | {cell(o)} | "
                     f"{ratio(o, w)} | {cell(e)} | {ratio(e, w)} | {cell(c)} | {ratio(c, w)} | {gbs} |")
    lines += ["", "Every round's median is in `bench/onnx_ops_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="store bench/onnx_ops_results.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as model_dir:
        rows = measure(args.weft, args.rounds, args.iters, model_dir)
    sys.path.insert(0, HERE)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "onnxruntime": ort.__version__, "pytorch": torch.__version__,
              "threads": torch.get_num_threads(), "rounds": args.rounds, "iters": args.iters, "rows": rows}
    for row in rows:
        print(json.dumps(row))
    print("\n".join(markdown(result)))
    if args.write:
        with open(os.path.join(HERE, "onnx_ops_results.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
