"""What a kernel time of `weft bench --kernels` holds, on a GPU, in one run: each case's kernel
time between CUDA events (as gpu_bench.py and gpu_knobs.py report it) beside the kernels' own
durations read by Nsight Compute (ncu's gpu__time_duration: from the kernel's start to its end
on the GPU, caches flushed before each launch), and the fixed costs of the event method itself:
an empty kernel and device-to-device copies of 64 and 256 MiB, timed the same way.

On the GPU machine (a python3 with cupy; ncu where the machine's runtime lets it read the
GPU, else those cells are missing):
    python3 bench/gpu_timing.py --weft $WEFT [--cases a,b] [--out FILE]
Here, to print a results file:
    python3 bench/gpu_timing.py --show FILE
"""
import argparse
import csv
import datetime
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CASES = ("reduce_all_16x1024x1024", "reduce_row_16x1024x1024", "reduce_row_64x262144",
         "reduce_col_12544x2048", "reduce_middle_256x256x256", "reduce_col_524288x32",
         "softmax_4096x1024", "layernorm_4096x1024", "rmsnorm_4096x1024",
         "softmax_8192x4096")
WAIT_CYCLES = 2_000_000  # about 1 ms at 2 GHz, queued before each start event


def event_costs(iters=50):
    """Medians (ms) of the event method (a wait queued, start event, the work, end event) around
    an empty kernel of 1056 blocks of 256 threads, and around copies of 64 and 256 MiB moved
    (half read, half written); and each copy's time when 20 run back to back between two
    events (divided by 20)."""
    import cupy
    busy = cupy.RawKernel(r'''extern "C" __global__ void weft_wait(long long cycles) {
      long long start = clock64();
      while (clock64() - start < cycles) {}
    }''', "weft_wait")
    empty = cupy.RawKernel(r'extern "C" __global__ void weft_empty() {}', "weft_empty")

    def timed(work):
        times = []
        for _ in range(iters):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            busy((1,), (1,), (cupy.int64(WAIT_CYCLES),))
            start.record()
            work()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end))
        return statistics.median(times)

    out = {"empty_kernel_ms": timed(lambda: empty((1056,), (256,), ()))}
    for mib in (64, 256):
        n = (mib << 20) // 2
        src, dst = cupy.ones(n // 4, cupy.float32), cupy.empty(n // 4, cupy.float32)

        def copy():
            dst.data.copy_from_device_async(src.data, n)
        copy()
        out[f"copy_{mib}mib_ms"] = timed(copy)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(20):
            copy()
        end.record()
        end.synchronize()
        out[f"copy_{mib}mib_back_to_back_ms"] = cupy.cuda.get_elapsed_time(start, end) / 20
    return out


def weft_events(weft, model, iters=20):
    r = subprocess.run([weft, "bench", model, "--device", "cuda", "--json", "--kernels", "--iters",
                        str(iters), "--warmup", "3", "--fill", "random"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or f"exit {r.returncode}")[:300]}
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return {"kernels_ms": sum(k["median_ms"] for k in j.get("kernel_profile", [])),
            "count": len(j.get("kernel_profile", []))}


def find_ncu():
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                    "/usr/local/cuda*/nsight-compute*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


UNITS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
         "second": 1e3, "s": 1e3}


def ncu_durations(ncu, weft, model):
    """The median duration (ms) of each of Weft's functions over the launches ncu profiled,
    summed over the functions; or an error text."""
    cmd = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
           "--kernel-name", "regex:^weft_k", "--launch-count", "16", weft, "bench", model,
           "--device", "cuda", "--iters", "5", "--warmup", "1", "--fill", "random"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = [line for line in r.stdout.splitlines() if line.startswith('"')]
    per_function = {}
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = UNITS.get(row.get("Metric Unit", ""), None)
        if scale is None:
            continue
        value = float(row["Metric Value"].replace(",", ""))
        per_function.setdefault(row["Kernel Name"], []).append(value * scale)
    if not per_function:
        return {"error": (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}")[-300:]}
    return {"kernels_ms": sum(statistics.median(v) for v in per_function.values()),
            "launches": sum(len(v) for v in per_function.values())}


def measure(weft, cases, out):
    from gpu_knobs import copy_bandwidth, model_bytes
    result = {"date": datetime.date.today().isoformat(), "copy_gb_s": copy_bandwidth(),
              "rows": {}}
    try:
        import torch
        result["device"] = torch.cuda.get_device_name()
    except (ImportError, RuntimeError, AssertionError):
        result["device"] = "?"
    try:
        result["event_costs"] = event_costs()
    except Exception as e:  # no cupy: the table says n/a
        result["event_costs"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    print(f"copy {result['copy_gb_s']} GB/s; {result['event_costs']}", flush=True)
    ncu = find_ncu()
    result["ncu"] = ncu
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(tmp, "models")
        subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), models, "--gpu"],
                       check=True, capture_output=True, text=True)
        for case in cases:
            model = os.path.join(models, case + ".onnx")
            row = result["rows"][case] = {"bytes": model_bytes(model),
                                          "events": weft_events(weft, model)}
            if ncu:
                row["ncu"] = ncu_durations(ncu, weft, model)
            print(f"{case}: {row}", flush=True)
            if out:
                with open(out, "w") as f:
                    json.dump(result, f, indent=1)
    return result


def table(result):
    copy = result.get("copy_gb_s")
    costs = result.get("event_costs", {})
    lines = [f"Kernel time (ms) and % of the copy bandwidth ({copy or 0:.0f} GB/s: 256 MiB each way, "
             f"20 copies back to back), {result['date']}, {result.get('device', '?')}. The event "
             "method's own costs (ms): " + ", ".join(f"{k} {v:.4f}" for k, v in costs.items()
                                                  if isinstance(v, float)), "",
             "| Case | MB | between events | % of copy | ncu duration | % of copy |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]

    def cell(m, nbytes):
        ms = m.get("kernels_ms") if m else None
        if not ms:
            return "n/a", "n/a"
        return f"{ms:.4f} ms", f"{nbytes / ms / 1e6 / copy:.0%}" if copy else "n/a"
    for case, row in result["rows"].items():
        e, n = cell(row.get("events"), row["bytes"]), cell(row.get("ncu"), row["bytes"])
        lines.append(f"| {case} | {row['bytes'] / 1e6:.1f} | {e[0]} | {e[1]} | {n[0]} | {n[1]} |")
    return "\n".join(lines)


def markdown(result):
    """docs/benchmarks.md's part for bench/gpu_timing_results.json."""
    copy, costs = result.get("copy_gb_s"), result.get("event_costs", {})
    lines = ["### CUDA kernel times: what the event method holds", "",
             "`bench/gpu_timing.py`: each case's kernel time between CUDA events (the method of "
             "the tables above) beside the kernels' durations that Nsight Compute reads "
             "(gpu__time_duration, caches flushed before each launch, clocks left alone), and the "
             "event method applied to an empty kernel and to device-to-device copies.", ""]
    if copy and "copy_64mib_ms" in costs:
        small = 64 * 2**20 / costs["copy_64mib_ms"] / 1e6
        big = 256 * 2**20 / costs["copy_256mib_ms"] / 1e6
        fixed = costs["copy_64mib_ms"] - 64 * 2**20 / big / 1e6
        rows = [r["bytes"] / r["events"]["kernels_ms"] / 1e6 / copy
                for r in result["rows"].values()
                if 60e6 < r["bytes"] < 70e6 and "kernels_ms" in r.get("events", {})]
        share = f" The 64 MB reductions measure {min(rows):.0%} to {max(rows):.0%}." if rows else ""
        lines += [f"An empty launch measures {costs['empty_kernel_ms'] * 1e3:.1f} us between "
                  "events. A copy that moves 64 MiB (32 MiB read, 32 written), timed the same way, "
                  f"runs at {small:.0f} GB/s, {small / copy:.0%} of the copy bandwidth against "
                  f"which every row is taken ({big / copy:.0%} for a copy of 256 MiB): at 64 MB, "
                  f"about {fixed * 1e3:.1f} us of the copy's {costs['copy_64mib_ms'] * 1e3:.1f} us "
                  "are its start and drain, which a 256 MiB copy spreads over four times the bytes."
                  + share, ""]
    return lines + [table(result), "", "Raw results: `bench/gpu_timing_results.json`.", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out")
    ap.add_argument("--show")
    args = ap.parse_args()
    if args.show:
        with open(args.show) as f:
            print(table(json.load(f)))
        return 0
    if not args.weft:
        ap.error("--weft is required to measure")
    print(table(measure(os.path.abspath(args.weft), args.cases.split(","), args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
