"""Weft's CUDA code generation knobs compared on a GPU, in one run: each case's kernel time under
each setting of the WEFT_CUDA_* knobs (docs/knobs.md), rounds alternating over the settings, against the copy bandwidth measured in
the same run.

On the GPU machine (scripts/gpu-check.sh's "knobs" stage runs it there):
    python3 bench/gpu_knobs.py --weft $WEFT [--cases a,b] [--settings "U1:WEFT_CUDA_UNROLL=1;..."]
        [--rounds 2] [--iters 20] [--out FILE]
With --tune S, a setting "tuned" is added: before the rounds, `weft tune --device cuda` (S
seconds a candidate) stores each case's records in that setting's cache, which its runs then
read; the records' options are listed under the table.
Here, to print a results file's table:
    python3 bench/gpu_knobs.py --show FILE

A case's time is the sum of its kernels' device times from `weft bench --device cuda --kernels`
(CUDA events around each launch, queued behind a wait so that launch latency is not timed);
"resident" is the wall clock of a device-resident run (CUDA graphs on). Bytes moved are the
model's inputs and outputs, as in bench/gpu_bench.py. Each setting's functions are also built
for --arch by NVRTC (weft inspect --registers): a cell shows the fewest threads a SM holds of
the case's functions, and their registers.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = ("reduce_all_16x1024x1024", "reduce_row_16x1024x1024", "reduce_row_64x262144",
         "reduce_col_12544x2048", "reduce_middle_256x256x256", "reduce_row_6000000x3",
         "softmax_8192x4096", "layernorm_8192x4096", "rmsnorm_8192x4096",
         "groupnorm_32x64x56x56_g8", "bn_train_32x64x56x56", "softmax_4096x1024",
         "layernorm_4096x1024", "rmsnorm_4096x1024", "reduce_col_524288x32")
# name: environment. "before" is the code generation of 2026-11-27 (no unrolling, no vector
# loads, G for 8 elements a lane, rows in registers at 8 a lane, groups up to 1024, no
# occupancy asked for); "default" is this build's.
SETTINGS = ("before:WEFT_CUDA_UNROLL=1,WEFT_CUDA_VECTOR=1,WEFT_CUDA_LANE_ELEMENTS=8,"
            "WEFT_CUDA_HELD_ELEMENTS=8,WEFT_CUDA_MAX_GROUP=1024,WEFT_CUDA_RESIDENT_THREADS=0;"
            "default:;"
            "scalar:WEFT_CUDA_VECTOR=1;"
            "held8:WEFT_CUDA_HELD_ELEMENTS=8;"
            "group512:WEFT_CUDA_MAX_GROUP=512;"
            "res2048:WEFT_CUDA_RESIDENT_THREADS=2048;"
            "lanes:WEFT_CUDA_COLUMN_VECTOR=1;"
            "rowmem:WEFT_CUDA_ROW_SCALARS=0")


def parse_settings(text):
    settings = []
    for item in filter(None, text.split(";")):
        name, _, env = item.partition(":")
        settings.append((name, dict(kv.split("=", 1) for kv in filter(None, env.split(",")))))
    return settings


def occupancy(weft, model, env, arch, cache=None):
    """Each CUDA function's registers and blocks a SM under "env" (and the tuning records of
    "cache"), from NVRTC's machine code (weft inspect --registers; no GPU needed), or None when
    that fails."""
    e = dict(os.environ, **env, **({"WEFT_CACHE_DIR": cache} if cache else {}))
    r = subprocess.run([weft, "inspect", model, "--device", "cuda", "--registers", arch, "--json"],
                       capture_output=True, text=True, timeout=300, env=e)
    if r.returncode != 0:
        return None
    return [{k: f[k] for k in ("function", "block", "registers", "stack_bytes", "blocks_per_sm")}
            for f in json.loads(r.stdout)["cuda_functions"]]


def tune(weft, model, cache, seconds):
    """`weft tune --device cuda` of "model" into "cache": the records it wrote, or an error."""
    directory = os.path.join(cache, "tuning")

    def stamps():
        return {n: os.stat(os.path.join(directory, n)).st_mtime_ns
                for n in (os.listdir(directory) if os.path.isdir(directory) else [])}

    before = stamps()
    r = subprocess.run([weft, "tune", model, "--device", "cuda", "--fill", "random",
                        "--seconds-per-candidate", str(seconds)], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, WEFT_CACHE_DIR=cache))
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or f"exit {r.returncode}")[-300:]}
    records = []
    for name, stamp in sorted(stamps().items()):
        if before.get(name) == stamp:
            continue
        with open(os.path.join(directory, name)) as f:
            record = json.load(f)
        if "cuda" in record:
            records.append(record)
    return {"records": records, "summary": r.stdout.strip().splitlines()[-2:]}


def bench(weft, model, env, iters, cache):
    e = dict(os.environ, WEFT_CACHE_DIR=cache, **env)
    r = subprocess.run([weft, "bench", model, "--device", "cuda", "--json", "--kernels", "--iters",
                        str(iters), "--warmup", "3", "--fill", "random"], capture_output=True,
                       text=True, timeout=300, env=e)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or f"exit {r.returncode}")[:300]}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return {"kernels_ms": sum(k["median_ms"] for k in j.get("kernel_profile", [])),
            "resident_ms": j.get("device_resident_median_ms"),
            "count": len(j.get("kernel_profile", []))}


def model_bytes(model):
    import onnx
    m = onnx.shape_inference.infer_shapes(onnx.load(model, load_external_data=False))
    initializers = {t.name for t in m.graph.initializer}
    sizes = {1: 4, 10: 2, 11: 8, 16: 2, 7: 8, 6: 4}
    total = 0
    for v in list(m.graph.input) + list(m.graph.output):
        if v.name in initializers:
            continue
        t = v.type.tensor_type
        n = 1
        for d in t.shape.dim:
            n *= d.dim_value
        total += n * sizes.get(t.elem_type, 4)
    return total


def copy_bandwidth():
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    n = 64 << 20
    src, dst = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    return 2 * n * 4 * 20 / start.elapsed_time(end) / 1e6


def measure(weft, cases, settings, rounds, iters, out, arch, tune_seconds=None):
    if tune_seconds:
        settings = settings + [("tuned", {})]
    result = {"date": datetime.date.today().isoformat(), "copy_gb_s": copy_bandwidth(),
              "settings": {name: env for name, env in settings}, "rounds": rounds, "iters": iters,
              "rows": {}}
    try:
        import torch
        result["device"] = torch.cuda.get_device_name()
    except (ImportError, RuntimeError, AssertionError):
        result["device"] = "?"
    print(f"copy bandwidth: {result['copy_gb_s']} GB/s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(tmp, "models")
        subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), models, "--gpu"],
                       check=True, capture_output=True, text=True)
        caches = {name: os.path.join(tmp, "cache-" + name) for name, _ in settings}
        for case in cases:
            model = os.path.join(models, case + ".onnx")
            row = result["rows"][case] = {"bytes": model_bytes(model),
                                          "runs": {name: [] for name, _ in settings}}
            if tune_seconds:
                row["tuned"] = tune(weft, model, caches["tuned"], tune_seconds)
                print(f"tuned {case}: {row['tuned']}", flush=True)
            row["functions"] = {name: occupancy(weft, model, env, arch, caches[name])
                                for name, env in settings}
        for r in range(rounds):
            for case in cases:
                model = os.path.join(models, case + ".onnx")
                for name, env in settings:
                    m = bench(weft, model, env, iters, caches[name])
                    result["rows"][case]["runs"][name].append(m)
                    print(f"round {r + 1} {case} {name}: {m}", flush=True)
                if out:
                    with open(out, "w") as f:
                        json.dump(result, f, indent=1)
    return result


def geomeans(result):
    """Each setting's geomean over the cases of its kernel time / "default"'s (cases that
    every setting ran)."""
    names = list(result["settings"])
    medians = {}
    for case, row in result["rows"].items():
        ks = {n: [m["kernels_ms"] for m in row["runs"][n] if "kernels_ms" in m] for n in names}
        if all(ks.values()):
            medians[case] = {n: statistics.median(v) for n, v in ks.items()}
    out = {}
    for n in names:
        logs = [math.log(m[n] / m["default"]) for m in medians.values()] if medians else []
        out[n] = math.exp(sum(logs) / len(logs)) if logs else None
    return out


def table(result):
    copy = result.get("copy_gb_s")
    names = list(result["settings"])
    lines = [f"Kernel time (ms, median over rounds) and % of the copy bandwidth ({copy and round(copy)} "
             f"GB/s), {result['date']}, {result['device']}", "",
             "| Case | MB | " + " | ".join(names) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in names) + " |"]
    for case, row in result["rows"].items():
        cells = []
        for name in names:
            ks = [m["kernels_ms"] for m in row["runs"][name] if "kernels_ms" in m]
            if not ks:
                cells.append("failed")
                continue
            k = statistics.median(ks)
            share = f" ({row['bytes'] / k / 1e6 / copy * 100:.0f}%)" if copy else ""
            # The fewest threads a SM holds of the case's functions, with their registers.
            functions = (row.get("functions") or {}).get(name)
            held = ""
            if functions:
                f = min(functions, key=lambda f: f["blocks_per_sm"] * f["block"])
                held = f"; {f['blocks_per_sm'] * f['block']} thr/SM at {f['registers']} reg"
            cells.append(f"{k:.4f}{share}{held}")
        lines.append(f"| {case} | {row['bytes'] / 1e6:.1f} | " + " | ".join(cells) + " |")
    g = geomeans(result)
    lines.append("| geomean / default | | " + " | ".join(
        "n/a" if g[n] is None else f"{g[n]:.3f}" for n in names) + " |")
    tuned = [(case, row["tuned"]) for case, row in result["rows"].items() if "tuned" in row]
    if tuned:
        lines += ["", "The records of `weft tune --device cuda` (kernel: options, tune's own times "
                  "default -> best, candidates):", ""]
        for case, t in tuned:
            if "error" in t:
                lines.append(f"- {case}: failed: {t['error']}")
            for rec in t.get("records", []):
                lines.append(f"- {case}, {rec['kernel']}: {rec['cuda']} ({rec['default_ms']:.4f} -> "
                             f"{rec['best_ms']:.4f} ms, {rec['candidates']} candidates)")
    return "\n".join(lines)


def markdown(sweeps):
    """docs/benchmarks.md's part for bench/gpu_knobs_results.json: a list of sweeps, each a
    results file of this script with a "what" line."""
    lines = ["### CUDA code generation: the knobs compared", "",
             "`bench/gpu_knobs.py`: each case's kernel time under each setting of the code "
             "generation knobs (docs/knobs.md), rounds alternating over the settings, in one call; "
             "the defaults were chosen from these ([cuda-strategies.md](cuda-strategies.md)). One "
             "round: differences under about 5% are within the noise of repeated cells; two or "
             "three: about 2%.", ""]
    for sweep in sweeps:
        lines += [sweep["what"][0].upper() + sweep["what"][1:] + ".", "",
                  "Settings: " + "; ".join(f"*{name}*: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                                          or "this build's defaults")
                                           for name, env in sweep["settings"].items())
                  + f"; {sweep['rounds']} round(s) of {sweep['iters']} runs.", "",
                  table(sweep), ""]
    return lines + ["Raw results: `bench/gpu_knobs_results.json`.", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--settings", default=SETTINGS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--arch", default="sm_90", help="the GPU architecture whose registers and "
                    "occupancy are read (weft inspect --registers)")
    ap.add_argument("--tune", type=float, metavar="S", help="add the setting \"tuned\": each "
                    "case tuned first by weft tune --device cuda, S seconds a candidate")
    ap.add_argument("--show")
    ap.add_argument("--best-env", help="write the environment of the setting with the lowest "
                    "geomean kernel time here (KEY=VALUE lines)")
    args = ap.parse_args()
    if args.show:
        with open(args.show) as f:
            print(table(json.load(f)))
        return 0
    if not args.weft:
        ap.error("--weft is required to measure")
    result = measure(os.path.abspath(args.weft), args.cases.split(","),
                     parse_settings(args.settings), args.rounds, args.iters, args.out, args.arch,
                     args.tune)
    print(table(result))
    if args.best_env:
        g = {n: v for n, v in geomeans(result).items() if v is not None}
        best = min(g, key=g.get) if g else "default"
        print(f"best: {best}")
        with open(args.best_env, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in result["settings"][best].items())
    return 0


if __name__ == "__main__":
    sys.exit(main())
