"""Weft beside its CPU peers on the same models, in one run, with the machine's memory
bandwidth measured in the same run: ONNX Runtime and PyTorch, eager and torch.compile (both
from PyPI, in this virtual environment; PyTorch through bench/torch_peer.py), and oneDNN
primitives for the memory-bound cases (bench/dnnl_peer.cc, built by run.sh). Writes
bench/results.json and docs/benchmarks.md.

Run through bench/run.sh (it makes the virtual environment with the PyPI wheels).
Usage: run_bench.py WEFT MODEL_DIR BANDWIDTH_JSON [DNNL_PEER]
           [--cases A,B,...] [--iters N] [--rounds N] [--print-only]
       run_bench.py --markdown-only     (docs/benchmarks.md again from bench/results.json)
DNNL_PEER defaults to build/bench/dnnl_peer; a peer that is missing or fails shows as "n/a".
--cases and --iters run a subset with fewer iterations; --print-only prints the rows and the
markdown instead of writing results.json and docs/benchmarks.md (for trying changes out).
--rounds N (default 3): the suite runs N times, every system on every case in each round (the
machine is shared, and its other tenants come and go); a row keeps each system's lowest median,
and every round's.
"""
import argparse
import ast
import datetime
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort
from machine_name import machine
from ort_options import described, session_options

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TORCH_PYTHON = sys.executable  # run.sh runs this file with bench/.venv's Python, which has torch
PEER_TIMEOUT_S = 1800
# torch.compile builds C++ on its first call: 20-40 s per case, cold, on a loaded 2-core machine
# (resnet18 the longest); the limit leaves room for a slower or busier one without hanging.
TORCH_COMPILE_TIMEOUT_S = 600

# (model, kind, iterations): kind says how bytes moved are counted: reduction, the inputs and
# outputs once each; read_write (an output the size of the input), twice the inputs (constant
# parameters, initializers, are not counted); model, none (no GB/s).
CASES = [
    ("reduce_row_65536x3", "reduction", 50),
    ("reduce_row_64x30000", "reduction", 50),
    ("reduce_col_2048x256", "reduction", 50),
    ("reduce_col_12544x2048", "reduction", 20),
    ("reduce_col_131072x32", "reduction", 20),
    ("reduce_all_9x1024x1024", "reduction", 20),
    ("reduce_row_9x1024x1024", "reduction", 20),
    ("reduce_middle_64x1024x64", "reduction", 20),
    ("reduce_middle_512x16x512", "reduction", 20),
    ("reduce_row_6000000x3", "reduction", 10),
    ("reduce_row_64x262144", "reduction", 10),
    ("reduce_row_16x1024x1024", "reduction", 10),
    ("reduce_col_524288x32", "reduction", 10),
    ("reduce_all_16x1024x1024", "reduction", 10),
    ("reduce_middle_256x256x256", "reduction", 10),
    ("logsumexp_4096x1024", "reduction", 20),
    ("softmax_4096x1024", "read_write", 20),
    ("attention_softmax_8x8x256x256", "read_write", 20),
    ("layernorm_4096x1024", "read_write", 20),
    ("rmsnorm_4096x1024", "read_write", 20),
    ("bias_gelu_4096x1024", "read_write", 20),
    ("bn_train_32x64x56x56", "read_write", 20),
    ("groupnorm_32x64x56x56_g8", "read_write", 20),
    ("encoder_layer", "model", 10),
    ("gpt_block", "model", 10),
    ("resnet18", "model", 3),
]


def ort_median(path, iters):
    """({"median_ms", "bytes": (input bytes, output bytes)}, None), or (None, reason)."""
    try:
        return ort_run(path, iters), None
    except Exception as e:  # onnxruntime raises its own classes; the row then says why
        return None, str(e)[-300:]


def ort_run(path, iters):
    session = ort.InferenceSession(path, session_options(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in session.get_inputs()}
    for _ in range(2):
        session.run(None, feeds)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    sizes = sum(v.nbytes for v in feeds.values()), sum(o.nbytes for o in session.run(None, feeds))
    return {"median_ms": statistics.median(times), "bytes": sizes}


def reductions():
    """make_models.py's REDUCTIONS (name -> (shape, axes)), read without importing it: it needs
    onnx, which this virtual environment does not have."""
    with open(os.path.join(HERE, "make_models.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REDUCTIONS" for t in node.targets):
            return {name: (shape, axes) for name, shape, axes in ast.literal_eval(node.value)}
    return {}


def dnnl_spec(case):
    """dnnl_peer's OP DIMS AXES for a case, or None where oneDNN has no single primitive computing
    the same (the model rows; attention softmax with its scale and mask, RMSNorm, bias+GELU,
    GroupNorm and logsumexp in oneDNN 2.6). Softmax and layernorm cases are named by their shape
    and work on the last axis, bn_train cases by their NCHW shape (make_models.py)."""
    red = reductions()
    if case in red:  # ReduceSum
        shape, axes = red[case]
        return "sum", "x".join(map(str, shape)), ",".join(map(str, axes))
    for prefix, op in (("softmax_", "softmax"), ("layernorm_", "layernorm")):
        if case.startswith(prefix):
            dims = case[len(prefix):].split("x")
            return op, "x".join(dims), str(len(dims) - 1)
    if case.startswith("bn_train_"):  # statistics over every axis but the channels, 1
        dims = case[len("bn_train_"):].split("x")
        return "batchnorm", "x".join(dims), ",".join(map(str, [0, *range(2, len(dims))]))
    return None


def peer_json(argv, timeout=PEER_TIMEOUT_S):
    """Runs a peer program that prints one JSON line; (result, None) or (None, reason)."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    except OSError as e:
        return None, str(e)
    lines = r.stdout.strip().splitlines()
    try:
        out = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        out = {}
    if r.returncode != 0 or "median_ms" not in out:
        return None, out.get("error") or r.stderr.strip()[-300:] or f"exit status {r.returncode}"
    return out, None


def torch_median(case, iters, mode):
    """mode: eager or compile (torch_peer.py's MODE); threads: all cores, torch_peer's default."""
    return peer_json([TORCH_PYTHON, os.path.join(HERE, "torch_peer.py"), case, str(iters),
                      str(os.cpu_count()), mode],
                     TORCH_COMPILE_TIMEOUT_S if mode == "compile" else PEER_TIMEOUT_S)


def dnnl_median(dnnl_peer, case, iters):
    spec = dnnl_spec(case)
    if spec is None:
        return None, None  # not a oneDNN primitive: "n/a" without an error
    if not dnnl_peer or not os.path.exists(dnnl_peer):
        return None, f"{dnnl_peer} not built"
    return peer_json([dnnl_peer, *spec, str(iters)])


def weft_bench(weft, path, iters):
    r = subprocess.run([weft, "bench", path, "--json", "--iters", str(iters), "--warmup", "2"],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), None


def measure_round(args, name, path, iters):
    """One round: every system once, one after the other; {system: (result, error)}."""
    return {"weft": weft_bench(args.weft, path, iters),
            "ort": ort_median(path, iters),
            "torch": torch_median(name, iters, "eager"),
            "torch_compile": torch_median(name, iters, "compile"),
            "onednn": dnnl_median(args.dnnl_peer, name, iters)}


def combine_rounds(name, kind, rounds):
    """A case's row from its rounds: each system's lowest median over the rounds (the run least
    disturbed by the machine's other tenants), and every round's median beside it; a system
    that failed in every round keeps its last error. Also returns the peers' versions seen."""
    def best(system):
        done = [r[system][0] for r in rounds if r[system][0]]
        errors = [r[system][1] for r in rounds if r[system][1]]
        return (min(done, key=lambda d: d["median_ms"]) if done else None,
                errors[-1] if errors and not done else None,
                [d["median_ms"] for d in done])

    found = {}
    w, err, w_all = best("weft")
    o, o_err, o_all = best("ort")
    row = {"case": name, "kind": kind, "rounds": len(rounds), "error": err,
           "ort_median_ms": o["median_ms"] if o else None, "ort_round_ms": o_all}
    if o_err:
        row["ort_error"] = o_err
    t, t_err, t_all = best("torch")
    if t:
        row.update(torch_median_ms=t["median_ms"], torch_round_ms=t_all)
        found.update(pytorch=t["torch"], pytorch_threads=t["threads"], pytorch_blas=t.get("blas"))
    else:
        row["torch_error"] = t_err
    t, t_err, t_all = best("torch_compile")
    if t:
        row.update(torch_compile_median_ms=t["median_ms"], torch_compile_s=t["compile_s"],
                   torch_compile_round_ms=t_all)
        found["pytorch_compile"] = t["torch"]
    else:
        row["torch_compile_error"] = t_err
    d, d_err, d_all = best("onednn")
    if d:
        row.update(onednn_median_ms=d["median_ms"], onednn_impl=d["impl"], onednn_iters=d["iters"],
                   onednn_round_ms=d_all)
        found["onednn"] = d["onednn"]
    elif d_err:
        row["onednn_error"] = d_err
    if w:
        row.update(weft_median_ms=w["median_ms"], weft_compile_ms=w["compile_ms"], weft_round_ms=w_all)
        if kind != "model" and o:
            in_bytes, out_bytes = o["bytes"]
            moved = in_bytes + out_bytes if kind == "reduction" else 2 * in_bytes
            row.update(bytes=moved, weft_gbs=moved / w["median_ms"] / 1e6,
                       ort_gbs=moved / o["median_ms"] / 1e6)
    return row, found


def main():
    parser = argparse.ArgumentParser(description="Weft beside its CPU peers.")
    parser.add_argument("weft")
    parser.add_argument("model_dir")
    parser.add_argument("bandwidth_json")
    parser.add_argument("dnnl_peer", nargs="?", default=os.path.join(ROOT, "build", "bench", "dnnl_peer"))
    parser.add_argument("--cases", help="comma-separated subset of the cases")
    parser.add_argument("--iters", type=int, help="iterations for every case (default: per case)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times the suite runs, every system on every case each time; the table "
                             "shows each system's lowest median (default: 3)")
    parser.add_argument("--print-only", action="store_true",
                        help="print rows and markdown; write neither results.json nor docs/benchmarks.md")
    args = parser.parse_args()
    with open(args.bandwidth_json) as f:
        bw = json.load(f)
    cases = CASES
    if args.cases:
        wanted = args.cases.split(",")
        unknown = set(wanted) - {name for name, _, _ in CASES}
        if unknown:
            parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
        cases = [c for c in CASES if c[0] in wanted]
    rows = []
    python = TORCH_PYTHON[len(ROOT) + 1:] if TORCH_PYTHON.startswith(ROOT + os.sep) else TORCH_PYTHON
    peers = {"pytorch": None, "pytorch_python": python, "pytorch_threads": None, "pytorch_blas": None,
             "pytorch_compile": None, "onednn": None}
    # Rounds over the whole suite, so that a case's runs lie minutes apart: a busy spell of the
    # machine's other tenants then spoils one of them, not all.
    measured = {name: [] for name, _, _ in cases}
    for r in range(args.rounds):
        for name, _, iters in cases:
            path = os.path.join(args.model_dir, name + ".onnx")
            measured[name].append(measure_round(args, name, path, args.iters or iters))
            print(f"round {r + 1}/{args.rounds}: {name}", flush=True)
    for name, kind, _ in cases:
        row, found = combine_rounds(name, kind, measured[name])
        for key in ("pytorch", "pytorch_threads", "pytorch_blas", "pytorch_compile", "onednn"):
            if found.get(key):
                peers[key] = found[key]
        rows.append(row)
        print(json.dumps(row), flush=True)
    date = datetime.date.today().isoformat()
    result = {"date": date, "machine": machine(), "bandwidth": bw, "onnxruntime": ort.__version__,
              "ort_threads_parked": True,
              **peers, "rows": rows}
    if args.print_only:
        print(markdown(result))
        return
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(result, f, indent=2)
    write_markdown(result)


def ms(value):
    return "n/a" if value is None else f"{value:.3f} ms"


def ratio(peer, weft):
    return "n/a" if peer is None or weft is None else f"{peer / weft:.2f}"


def geomean(values):
    return float(np.exp(np.mean(np.log(values))))


def is_ref(row):
    """oneDNN ran its reference implementation (ref:any) for this row."""
    return str(row.get("onednn_impl", "")).startswith("ref")


def peer_notes(r):
    """What the peer columns are, from what the run recorded (older results.json files lack the
    PyTorch and oneDNN fields: those columns then say n/a)."""
    notes = [f"Peers, in the same run: ONNX Runtime {r['onnxruntime']} (the PyPI wheel, CPU execution "
             f"provider, {described(r)})"]
    # Results files from before torch.compile was measured lack pytorch_python: they ran
    # Debian's PyTorch under /usr/bin/python3.
    python = r.get("pytorch_python", "/usr/bin/python3")
    source = " from PyPI" if ".venv" in python else ""
    compile_s = [row["torch_compile_s"] for row in r["rows"] if row.get("torch_compile_s") is not None]
    low, high = (f"{min(compile_s):.0f}", f"{max(compile_s):.0f}") if compile_s else ("?", "?")
    took = (low if low == high else f"{low}-{high}") + " s"
    if r.get("pytorch") and r.get("pytorch_compile"):
        notes.append(f"PyTorch {r['pytorch']}{source}, eager and `torch.compile` (`bench/torch_peer.py` under "
                     f"`{python}`, `torch.inference_mode()`, {r.get('pytorch_threads')} threads; torch.compile "
                     f"in its default mode, Inductor, whose CPU backend generates C++: compiling took {took} "
                     "per case, on a first untimed call, less where Inductor's on-disk cache held an earlier "
                     "run's code)")
    elif r.get("pytorch"):
        notes.append(f"PyTorch {r['pytorch']}{source} eager (`bench/torch_peer.py` under `{python}`, "
                     f"`torch.inference_mode()`, {r.get('pytorch_threads')} threads; `torch.compile`: n/a, "
                     "not measured in this run)")
    else:
        notes.append("PyTorch eager and `torch.compile` (`bench/torch_peer.py`; n/a: not measured in this run)")
    if r.get("onednn"):
        notes.append(f"oneDNN {r['onednn']} primitives called directly (`bench/dnnl_peer.cc`: reduction, "
                     "softmax, layer normalization, batch normalization in training; Debian's `libdnnl-dev`)")
    else:
        notes.append("oneDNN primitives (`bench/dnnl_peer.cc`; n/a: not measured in this run)")
    rounds = max((row.get("rounds", 1) for row in r["rows"]), default=1)
    timing = ("Medians of steady-state runs" if rounds == 1 else
              f"The suite ran {rounds} times in a row, each time every system on every case (Weft, "
              "ONNX Runtime, PyTorch eager, torch.compile, oneDNN), so that a case's runs lie minutes "
              "apart; the table shows each system's lowest median, the run least disturbed by the "
              "machine's other tenants (every round's median is in the results file)")
    text = "; ".join(notes) + (f". {timing}; compile time is not included. "
                               "Each ratio = peer time / Weft time (above 1: Weft is faster).")
    caveats = []
    blas = r.get("pytorch_blas")
    if blas:
        caveats.append(f"PyTorch's MatMuls go to its BLAS (`{blas}`); its convolutions go through oneDNN.")
    if r.get("pytorch_compile") and any(row["case"] == "encoder_layer" for row in r["rows"]):
        caveats.append("The eval-mode TransformerEncoderLayer (encoder_layer) takes PyTorch's fused fast "
                       "path (`torch._transformer_encoder_layer_fwd`), which `torch.compile` keeps as one "
                       "external call, so there eager and torch.compile run the same kernels.")
    if r.get("onednn"):
        caveats.append("oneDNN is timed one primitive at a time, so the model rows say n/a in its columns; "
                       "there ONNX Runtime's own optimized CPU kernels and PyTorch (whose convolutions "
                       "are oneDNN's) are the library baselines.")
    if any(is_ref(row) for row in r["rows"]):
        caveats.append("Where oneDNN picked its unoptimized reference implementation (`ref:any`: this "
                       "version has no JIT kernel for that reduction) the time is marked (ref); such runs "
                       "stop after 10 s of timing, with at least 3 runs.")
    return [text, "", " ".join(caveats)] if caveats else [text]


def markdown(r):
    bw = r["bandwidth"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {r['date']} on {r['machine']}, by `bench/run.sh` (one command from a fresh clone: it installs the dependencies and builds Weft first where that was not done).",
        f"Memory bandwidth measured in the same run (`bench/bandwidth.cc`, {bw['threads']} threads, "
        f"{bw['bytes'] >> 20} MiB): **read {bw['read_gbs']:.1f} GB/s, copy {bw['copy_gbs']:.1f} GB/s**.",
        *peer_notes(r),
        "",
        "Weft's CPU strategies and library calls are described in docs/cpu-strategies.md and "
        "docs/library.md; the Goals section below checks the issue's goals against this run. The machine "
        "is shared, so the numbers are noisy. "
        "The fusion section below compares Weft with itself (`--no-fusion`); the rows above were "
        "measured when its results file was written (see the date), each section below on the "
        "machine and date it names.",
        "",
        "Inputs smaller than the last-level cache stay cached from run to run, so their GB/s "
        "can exceed the DRAM bandwidth; DESIGN.md's bandwidth goal is for inputs of 64 MB and "
        "more, which the suite has of every canonical form (ROW with tiny, long and 1024-wide "
        "rows, COLUMN wide and narrow, MIDDLE, ALL). Even those can run above the measured read "
        "bandwidth: part of each stays in the cache between runs, and the 512 MiB bandwidth "
        "figure itself moves from run to run on a shared machine. Weft's tensors of 2 MiB and "
        "more are on huge pages (docs/architecture.md); ONNX Runtime's and PyTorch's are on "
        "the 4 KiB pages of their default allocators (PyTorch opts in with "
        "`THP_MEM_ALLOC_ENABLE=1`), and the inputs each system is timed on are its own.",
        "",
        "| Case | Bytes moved | Weft median | ORT median | ORT / Weft | PyTorch eager median "
        "| PyTorch eager / Weft | torch.compile median | torch.compile / Weft "
        "| oneDNN median | oneDNN / Weft | Weft GB/s | % of read BW |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in r["rows"]:
        weft = None if row.get("error") else row.get("weft_median_ms")
        torch_ms, dnnl_ms = row.get("torch_median_ms"), row.get("onednn_median_ms")
        compiled_ms = row.get("torch_compile_median_ms")  # absent from older results: n/a
        dnnl_cell = ms(dnnl_ms) + (" (ref)" if is_ref(row) else "")
        weft_cell = f"failed: {row['error'][:80]}" if row.get("error") else ms(weft)
        moved = f"{row['bytes'] / 1e6:.1f} MB" if "bytes" in row and weft else ""
        gbs = f"{row['weft_gbs']:.1f}" if "bytes" in row and weft else ""
        pct = f"{100 * row['weft_gbs'] / bw['read_gbs']:.0f}%" if "bytes" in row and weft else ""
        lines.append(f"| {row['case']} | {moved} | {weft_cell} | {ms(row['ort_median_ms'])} | "
                     f"{ratio(row['ort_median_ms'], weft)} | {ms(torch_ms)} | {ratio(torch_ms, weft)} | "
                     f"{ms(compiled_ms)} | {ratio(compiled_ms, weft)} | "
                     f"{dnnl_cell} | {ratio(dnnl_ms, weft)} | {gbs} | {pct} |")
    kernels = [row for row in r["rows"] if "bytes" in row and not row.get("error")]
    summary = []
    for key, peer in (("ort_median_ms", "ONNX Runtime"), ("torch_median_ms", "PyTorch eager"),
                      ("torch_compile_median_ms", "torch.compile"), ("onednn_median_ms", "oneDNN")):
        ratios = [row[key] / row["weft_median_ms"] for row in kernels if row.get(key) is not None]
        if ratios:
            some = "" if len(ratios) == len(kernels) else f" ({len(ratios)} of {len(kernels)} rows)"
            summary.append(f"{peer} / Weft **{geomean(ratios):.2f}**{some}")
    jit = [row["onednn_median_ms"] / row["weft_median_ms"] for row in kernels
           if row.get("onednn_median_ms") is not None and not is_ref(row)]
    if jit and any(is_ref(row) for row in kernels):
        summary.append(f"oneDNN / Weft without its (ref) rows **{geomean(jit):.2f}** ({len(jit)} of {len(kernels)} rows)")
    if summary:
        lines += ["", "Geomean over the reduction and subgraph rows: " + ", ".join(summary) + "."]
    lines += ["", "Raw results: `bench/results.json`.", ""]
    lines += goals(r)
    # The other scripts' sections, each from its results file when there is one.
    for script, results in (("fusion_bench", "fusion_results.json"), ("tune_bench", "tune_results.json"),
                            ("compile_bench", "compile_results.json"),
                            ("onnx_ops_bench", "onnx_ops_results.json"), ("math_bench", "math_results.json"),
                            ("dynamic_bench", "dynamic_results.json"), ("cnn_bench", "cnn_results.json"),
                            ("sequence_bench", "sequence_results.json"),
                            ("recurrent_bench", "recurrent_results.json"),
                            ("yolo_bench", "yolo_results.json"), ("image_bench", "image_results.json"),
                            ("diffusion_bench", "diffusion_results.json"),
                            ("zoo_bench", "zoo_results.json"), ("det_bench", "det_results.json"),
                            ("qdq_bench", "qdq_results.json"), ("half_bench", "half_results.json"),
                            ("hf_bench", "hf_results.json"), ("hf_zoo", "hf_zoo_results.json"),
                            ("timm_zoo", "timm_zoo_results.json"), ("idle_gap", "idle_gap_results.json"),
                            ("ortopt_bench", "ortopt_results.json"), ("genai_bench", "genai_results.json"),
                            ("moe_bench", "moe_results.json"), ("tabular_bench", "tabular_results.json"),
                            ("plan_bench", "plan_results.json"), ("gpu_bench", "gpu_results.json"),
                            ("gpu_knobs", "gpu_knobs_results.json"),
                            ("gpu_timing", "gpu_timing_results.json")):
        path = os.path.join(HERE, results)
        if os.path.exists(path):
            with open(path) as f:
                lines += importlib.import_module(script).markdown(json.load(f))
    return "\n".join(lines)


# Why a goal is not met, for the rows that miss it; mechanisms, measured with `weft bench
# --kernels`, perf and dumped kernels (docs/cpu-strategies.md, docs/fusion.md).
WHY = {
    "attention_softmax": "compute-bound when the shared machine's cores are busy: in L2, on one "
                         "thread, the kernel takes 0.08 ms per 512 rows of 256 in quiet periods and 0.11 ms "
                         "in busy ones (an exp-free variant: 0.045 and 0.06 ms), i.e. 1.3-1.8 ms per thread "
                         "at this size beside 1.5 ms of memory traffic. Since the run of 2026-11-21 before "
                         "this one (1.26x of the bound), the row passes prefetch 2 rows ahead and the output "
                         "for writing, the max ignores NaN (one vmaxps) and exp skips its overflow check: "
                         "2.16 -> 1.88 ms in alternating runs on a busy machine",
    "rmsnorm": "one statistics pass over the row in cache, then the normalized write, which prefetches "
               "the next row's input (1.85 -> 1.45 ms) and output (1.65 -> 1.55 ms on a busy machine; "
               "alternating runs)",
    "softmax": "a tie with ONNX Runtime (its rounds 1.51/0.86/1.05 ms, Weft's 0.96/0.94/0.87 on "
               "2026-11-22); four passes over each row (max from DRAM; exp, sum and normalize in cache); compute the "
               "memory stream does not hide: in L2, on one thread, the kernel takes 0.13 ms per 256 rows "
               "(0.5 ns per element), about 1.0 ms per thread at this size beside 1.6 ms of traffic. "
               "The lanes run as 4 independent chains and the max tree is "
               "branch-free (2.45 -> 2.2 ms), and tensors are 64-byte aligned. The exp pass prefetches "
               "the next row's output for writing (1.78 -> 1.54 ms on a busy machine, alternating runs)",
    "layernorm": "a tie with torch.compile, whose rounds overlap Weft's (Weft 1.16/1.26/1.43 ms, "
                 "torch.compile 1.40/1.53/1.15 here; 1.28/1.11/1.05/1.30/2.08 against "
                 "1.58/1.40/1.20/1.31/1.53 in a 5-round `--cases` run after it). "
                 "Two statistics passes over the row in cache, then the normalized write; the "
                 "variance pass prefetches the next row (1.85 -> 1.34 ms in alternating runs). Its "
                 "33.6 MB of input and output are about the L3's size, so its time depends on what the "
                 "cache holds: its median was 0.97, 1.34 and 0.97 ms in the three full runs of "
                 "2026-11-22 (0.86-1.33x of the bound), 0.43 ms in a `--cases` run, and `weft bench` "
                 "alone took 0.78 and 1.15 ms in two runs a minute apart. With input and output in cache (a kernel harness), it takes "
                 "0.53-0.64 ms against 0.30 ms for a copy kernel: the two reductions per row of 1024 "
                 "(64 lanes and their trees) cost compute that the memory stream hides only in part",
    "groupnorm": "one kernel: two statistics passes over each 100 KB group row in L2, then the "
                 "write, whose rows of 56 run as planes of 3136 (coalesced) and whose 25.7 MB output, "
                 "3/4 of the L3 or more, goes out in streaming stores (docs/cpu-strategies.md): no read "
                 "for ownership, and the input is not evicted, so part of it is still in the L3 at the "
                 "next run (1.02 ms, 51 GB/s moved against 33 GB/s of copy bandwidth, in the first full run "
                 "with it; 1.50 ms in the next). Alternating `weft bench` runs: 2.02/2.21/2.38 -> "
                 "1.08/1.41/1.99 ms (2026-11-22)",
    "bn_train": "split_moments computes per-row moments over H and W (two passes "
                "over each row in cache) and combines them across N (Chan's update), so the input is "
                "read twice instead of three times (4.6 -> 3.9 ms in alternating runs); its 25.7 MB "
                "output goes out in streaming stores, as GroupNorm's (within the noise in alternating "
                "runs: 1.37-2.36 against 1.05-2.00 ms)",
    "bias_gelu": "erf is compute-bound even as two plain polynomials (no exp: the kernel went from 4.2 "
                 "to 2.9 ms with them); x / sqrt(2) is a product with 1/sqrt(2), as "
                 "in PyTorch's and ONNX Runtime's GELU (2.77 -> 2.50 ms), and tensors are 64-byte aligned "
                 "(3.5 -> 3.2 ms, alternating runs)",
    "reduce_middle_512x16x512": "the reduction accumulates straight into the output in one parallel "
                                "region, 64 columns at a time in registers over the 16 rows (0.57 -> "
                                "0.47 ms in alternating runs); its 16.8 MB input stays partly in the "
                                "L3 between runs, so its time is cache bandwidth; torch.compile's median "
                                "moved between 0.49 and 0.67 ms between runs on 2026-11-22, and its rounds were "
                                "0.38/0.20/0.14 and 0.44/0.15/0.30 ms in the two after (Weft 0.23/0.15/0.16 and "
                                "0.17/0.17/0.25)",
    "reduce_row_9x1024x1024": "its 37.8 MB input is about the size of the L3 (32 MB here), so every "
                              "system's median depends on what the cache holds (0.37-0.95 ms for Weft "
                              "across the runs of 2026-11-22, 0.49-1.31 for PyTorch eager). Its [9, 1024] rows "
                              "are one parallel loop (collapse). In alternating runs of the kernel alone "
                              "against a hand-written 4-chain AVX-512 row sum, each took 0.5-1.5 ms "
                              "(2026-11-22): the machine's noise is larger than any gap between them. "
                              "In a 5-round `--cases` run after this one: Weft 0.63/0.67/0.98/0.85/0.36 ms, "
                              "ONNX Runtime 0.89/0.81/0.98/0.75/0.68, PyTorch eager 0.75/1.13/1.25/0.95/1.00. "
                              "Huge pages (docs/architecture.md) were within the noise here: alternating "
                              "`weft bench` with 4 KiB and 2 MiB pages gave 0.44-0.56 against 0.53-0.92 ms, "
                              "then 0.65-0.73 against 0.50-0.66 ms",
    "reduce_row_64x262144": "one streaming pass per row (64 lanes in 4 chains of 16, cascade "
                            "blocks of 8192), rows over the threads, on huge pages (2 MiB: 1.6-2.4 "
                            "against 2.2-3.5 ms on 4 KiB pages, alternating `weft bench`); every system "
                            "runs at about the memory's speed and the rounds overlap. In a 5-round "
                            "`--cases` run after this one: Weft 2.54/2.17/2.10/2.51/2.12 ms, ONNX Runtime "
                            "2.58/2.07/2.08/2.48/1.23, PyTorch eager 2.66/1.98/2.03/1.98/1.64; so the "
                            "table's lowest median picks the peer's one quiet round. In the run of "
                            "2026-11-22 before huge pages, Weft 1.87/2.50/2.40 ms, "
                            "PyTorch eager 2.38/1.61/1.91, oneDNN 1.70/2.07/1.95, and in a `--cases` "
                            "run the same day Weft 1.59/2.68/2.67, eager 1.52/1.81/1.81. In "
                            "alternating runs of the kernel alone against a one-accumulator `omp "
                            "simd` row sum (2026-11-22), 1.43-2.07 against 1.22-1.89 ms; the inner "
                            "loops are 4 and 1 `vaddps` from memory per iteration",
    "reduce_row_16x1024x1024": "reduce_row_9x1024x1024's ROW at 67 MB: rows of 1024, the [16, 1024] "
                               "rows one parallel loop, on huge pages "
                               "(alternating `weft bench`: 1.18-2.35 ms against 2.15-3.52 on 4 KiB pages). "
                               "In the run of 2026-11-22 before huge pages, the rounds overlapped and the lowest medians were slower than "
                               "PyTorch eager's (Weft 2.65/2.14/2.30 ms, eager 2.55/1.63/1.87); its 0.87 ms "
                               "round here, 77 GB/s, means much of the input was in the cache",
    "reduce_middle_64x1024x64": "not analysed yet; its median moves between runs on this shared machine "
                                "(0.4-0.9 ms on the same day)",
    "reduce_col_12544x2048": "COLUMN with K split over the threads: each cascade block of 128 rows "
                             "sums 2048 columns through an L1 buffer; the narrow-column register "
                             "blocks stop at 256 columns (with 2048 columns read 64 at a time per 1 MB "
                             "block it slowed from 4.9 to 5.4 ms)",
    "reduce_col_2048x256": "a 2 MB input in cache: each cascade block of 128 rows accumulates in "
                           "registers, 64 columns at a time (0.028 -> 0.018 ms in alternating runs, "
                           "2026-11-22); the run's fixed costs (two OpenMP regions) are a third of it",
    "reduce_row_65536x3": "a 1 MB reduction (0.02 ms): the run's fixed costs (the OpenMP region, "
                          "output allocation) weigh as much as the kernel",
    "reduce_all_9x1024x1024": "one pass over 37.7 MB, about the L3's size, as the ROW case: "
                              "Weft's rounds took 0.37-1.22 ms across the runs of 2026-11-22, "
                              "PyTorch eager's 0.54-0.83; in alternating runs of `weft bench` and torch.sum, "
                              "0.42/0.78/0.97 ms against 0.50/0.79/0.97 ms",
    "encoder_layer": "the MatMuls (oneDNN 2.6 brgemm, weights packed at compile time, [4, 128, K] "
                     "activations folded into one 512-row GEMM with its bias) are about 85% of the "
                     "time, at 190-220 GFLOP/s of the 2 cores' ~200-230; the memory-bound kernels are "
                     "under 0.5 ms together; PyTorch's eval-mode layer is one fused native call "
                     "(torch._transformer_encoder_layer_fwd)",
    "gpt_block": "the same: its MatMuls (oneDNN, packed weights, rows folded) are most of the time; "
                 "attention's q and k Transposes and scale run inside the matmul",
    "resnet18": "the convolutions (oneDNN) are nearly all of the time; Weft's and ONNX Runtime's "
                "medians move by 10-90% between rounds (Weft 18.7/23.9/35.5 ms, ORT "
                "18.8/22.5/19.7 ms in one run of 2026-11-22; 20.1/23.8/20.5 and 18.3/18.7/21.3 in "
                "the next); not one of the issue's goals",
}


def why(case):
    for key, text in WHY.items():
        if case.startswith(key) or case == key:
            return text
    return ""


def rounds(row, key, peer):
    """Weft's and the peer's median in each round, e.g. "Weft 1.43/1.81/2.26 ms, PyTorch eager
    1.29/2.87/2.49 ms": on a shared machine, whether a miss is the machine shows here."""
    def each(k):
        return "/".join(f"{t:.2f}" for t in row.get(k.replace("_median_ms", "_round_ms"), []))
    if not row.get("weft_round_ms"):
        return ""
    return f"rounds: Weft {each('weft_median_ms')} ms, {peer} {each(key)} ms"


def goals(r):
    """The issue's goals, each met or missed, with by how much and why."""
    bw = r["bandwidth"]
    rows = {row["case"]: row for row in r["rows"] if not row.get("error") and row.get("weft_median_ms")}
    lines = ["## Goals", "",
             "Computed from the table above by `bench/run_bench.py`.", ""]
    big = [row for row in rows.values() if row["kind"] == "reduction" and row.get("bytes", 0) >= 64e6]
    if big:
        each = []
        for row in big:
            pct = 100 * row["weft_gbs"] / bw["read_gbs"]
            miss = "" if pct >= 90 else " (**not met**" + (f"; why: {why(row['case'])}" if why(row["case"]) else "") + ")"
            each.append(f"{row['case']} {pct:.0f}%{miss}")
        met = all(100 * row["weft_gbs"] / bw["read_gbs"] >= 90 for row in big)
        lines.append(f"- **Reductions of 64 MB and more at 90% of read bandwidth** "
                     f"({'met' if met else 'not met'}): " + ", ".join(each) + ".")
    for case in ("softmax_4096x1024", "attention_softmax_8x8x256x256", "layernorm_4096x1024", "rmsnorm_4096x1024"):
        row = rows.get(case)
        if not row or "bytes" not in row:
            continue
        bound = row["bytes"] / (bw["copy_gbs"] * 1e6)  # ms: one read and one write at copy bandwidth
        x = row["weft_median_ms"] / bound
        met = x <= 1.25
        lines.append(f"- **{case} within 1.25x of its read + write traffic bound** ({bound:.2f} ms at "
                     f"the copy bandwidth): {x:.2f}x ({'met' if met else 'not met'})"
                     + ("" if met or not why(case) else f"; why: {why(case)}") + ".")
    kernels = [row for row in rows.values() if "bytes" in row]
    for key, peer in (("ort_median_ms", "ONNX Runtime"), ("torch_median_ms", "PyTorch eager"),
                      ("torch_compile_median_ms", "torch.compile")):
        ratios = {row["case"]: row[key] / row["weft_median_ms"] for row in kernels if row.get(key)}
        if not ratios:
            continue
        g = geomean(list(ratios.values()))
        slower = sorted((v, c) for c, v in ratios.items() if v < 1)
        lines.append(f"- **Geomean at least 1.5x over {peer}, no case slower**: {g:.2f}x "
                     f"({'met' if g >= 1.5 else 'not met'}); "
                     + (f"slower on {len(slower)}: " + ", ".join(
                         f"{c} ({v:.2f}; {rounds(rows[c], key, peer)})" for v, c in slower)
                        if slower else "no case slower") + ".")
    for case in ("encoder_layer", "gpt_block"):
        row = rows.get(case)
        if row and row.get("ort_median_ms"):
            x = row["ort_median_ms"] / row["weft_median_ms"]
            lines.append(f"- **{case} faster than ONNX Runtime**: {x:.2f}x ({'met' if x > 1 else 'not met'})"
                         + ("" if x > 1 else f"; {rounds(row, 'ort_median_ms', 'ONNX Runtime')}; "
                            f"why: {why(case)}") + ".")
    missed = sorted(c for c in rows if why(c))
    if missed:
        lines += ["", "Why, case by case (the rows that miss a goal, are slower than a peer, or "
                  "moved):", ""]
        lines += [f"- {c}: {why(c)}." for c in missed]
    return lines + [""]


def write_markdown(r):
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
        f.write(markdown(r))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--markdown-only"]:  # rewrite docs/benchmarks.md from results.json
        with open(os.path.join(HERE, "results.json")) as f:
            write_markdown(json.load(f))
    else:
        main()
