"""Weft beside ONNX Runtime on the same models, in one run, with the machine's memory
bandwidth measured in the same run. Writes bench/results.json and docs/benchmarks.md.

Run through bench/run.sh (it makes the virtual environment with the onnxruntime wheel).
Usage: run_bench.py WEFT MODEL_DIR BANDWIDTH_JSON
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (model, kind, iterations): kind says how bytes moved are counted.
CASES = [
    ("reduce_row_65536x3", "reduction", 50),
    ("reduce_row_64x30000", "reduction", 50),
    ("reduce_col_2048x256", "reduction", 50),
    ("reduce_col_12544x2048", "reduction", 20),
    ("reduce_col_131072x32", "reduction", 20),
    ("reduce_all_9x1024x1024", "reduction", 20),
    ("reduce_row_9x1024x1024", "reduction", 20),
    ("softmax_4096x1024", "read_write", 20),
    ("layernorm_4096x1024", "read_write", 20),
    ("encoder_layer", "model", 10),
    ("resnet18", "model", 3),
]


def ort_median(path, iters):
    options = ort.SessionOptions()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
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
    return statistics.median(times), sizes


def weft_bench(weft, path, iters):
    r = subprocess.run([weft, "bench", path, "--json", "--iters", str(iters), "--warmup", "2"],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), None


def machine():
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def main():
    weft, model_dir, bandwidth_json = sys.argv[1:4]
    with open(bandwidth_json) as f:
        bw = json.load(f)
    rows = []
    for name, kind, iters in CASES:
        path = os.path.join(model_dir, name + ".onnx")
        w, err = weft_bench(weft, path, iters)
        o_ms, (in_bytes, out_bytes) = ort_median(path, iters)
        row = {"case": name, "kind": kind, "ort_median_ms": o_ms, "error": err}
        if w:
            row.update(weft_median_ms=w["median_ms"], weft_compile_ms=w["compile_ms"])
            if kind != "model":
                moved = in_bytes + out_bytes if kind == "reduction" else 2 * in_bytes
                row.update(bytes=moved, weft_gbs=moved / w["median_ms"] / 1e6, ort_gbs=moved / o_ms / 1e6)
        rows.append(row)
        print(json.dumps(row), flush=True)
    date = datetime.date.today().isoformat()
    result = {"date": date, "machine": machine(), "bandwidth": bw, "onnxruntime": ort.__version__, "rows": rows}
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(result, f, indent=2)
    write_markdown(result)


def write_markdown(r):
    bw = r["bandwidth"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {r['date']} on {r['machine']}, by `bench/run.sh` (one command from a fresh clone).",
        f"Memory bandwidth measured in the same run (`bench/bandwidth.cc`, {bw['threads']} threads, "
        f"{bw['bytes'] >> 20} MiB): **read {bw['read_gbs']:.1f} GB/s, copy {bw['copy_gbs']:.1f} GB/s**.",
        f"Peer: ONNX Runtime {r['onnxruntime']} (the PyPI wheel, CPU execution provider, default "
        "options). Medians of steady-state runs; compile time is not included. "
        "Ratio = ONNX Runtime time / Weft time (above 1: Weft is faster).",
        "",
        "This is a first, honest table: Weft's kernels are the isl loop nests with OpenMP on "
        "the parallel loops. The CPU strategies of DESIGN.md (vector accumulators, split-R "
        "for narrow outputs, cascade sums) and oneDNN for Conv/MatMul have not landed, and no "
        "goal is claimed here. The machine is shared, so the numbers are noisy. The fusion "
        "section below compares Weft with itself (`--no-fusion`); the rows above were measured "
        "when its results file was written (see the date), fusion's when `fusion_results.json` "
        "was.",
        "",
        "Inputs smaller than the last-level cache stay cached from run to run, so their GB/s "
        "can exceed the DRAM bandwidth; DESIGN.md's bandwidth goal is for inputs of 64 MB and "
        "more (here reduce_col_12544x2048).",
        "",
        "| Case | Bytes moved | Weft median | ORT median | ORT / Weft | Weft GB/s | % of read BW |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in r["rows"]:
        if row.get("error"):
            lines.append(f"| {row['case']} | | failed: {row['error'][:80]} | {row['ort_median_ms']:.3f} ms | | | |")
            continue
        ratio = row["ort_median_ms"] / row["weft_median_ms"]
        if "bytes" in row:
            lines.append(f"| {row['case']} | {row['bytes'] / 1e6:.1f} MB | {row['weft_median_ms']:.3f} ms | "
                         f"{row['ort_median_ms']:.3f} ms | {ratio:.2f} | {row['weft_gbs']:.1f} | "
                         f"{100 * row['weft_gbs'] / bw['read_gbs']:.0f}% |")
        else:
            lines.append(f"| {row['case']} | | {row['weft_median_ms']:.3f} ms | {row['ort_median_ms']:.3f} ms | "
                         f"{ratio:.2f} | | |")
    kernels = [row["ort_median_ms"] / row["weft_median_ms"] for row in r["rows"]
               if "bytes" in row and not row.get("error")]
    if kernels:
        geomean = float(np.exp(np.mean(np.log(kernels))))
        lines += ["", f"Geomean ONNX Runtime / Weft over the reduction and subgraph rows: **{geomean:.2f}**."]
    lines += ["", "Raw results: `bench/results.json`.", ""]
    fusion_results = os.path.join(HERE, "fusion_results.json")
    if os.path.exists(fusion_results):
        import fusion_bench
        with open(fusion_results) as f:
            lines += fusion_bench.markdown(json.load(f))
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--markdown-only"]:  # rewrite docs/benchmarks.md from results.json
        with open(os.path.join(HERE, "results.json")) as f:
            write_markdown(json.load(f))
    else:
        main()
