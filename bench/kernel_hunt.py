"""Pathological kernels across a directory of models: each model's per-kernel profile
(`weft bench --kernels --json`) taken in several passes over the whole directory, each kernel's
fastest pass kept (a busy spell of the machine's other tenants then spoils one pass, not the
verdict), then every kernel of at least --min-ms that reaches neither --below of the read
bandwidth nor of the matrix-product peak measured in that run, costliest first. How this
session's finds were made: oneDNN's reorder of channels-last [1, 1024, 14, 14] to plain, a
product of constants at every run, a depthwise convolution with a channel multiplier on
oneDNN's generic kernel, Col2Im as a one-hot ConvTranspose (docs/library.md).

Usage: bench/kernel_hunt.py WEFT_BINARY MODEL_DIR [--passes 2] [--min-ms 0.08] [--below 0.3]
       [--threads 2] [--iters 10]
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def profile(weft, model, threads, iters):
    try:
        r = subprocess.run([weft, "bench", model, "--fill", "random", "--threads", str(threads),
                            "--iters", str(iters), "--json", "--kernels"],
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"{os.path.basename(model)}: {e}", file=sys.stderr)
        return None
    if r.returncode != 0:
        print(f"{os.path.basename(model)}: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("model_dir")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--min-ms", type=float, default=0.08)
    ap.add_argument("--below", type=float, default=0.3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    models = sorted(glob.glob(os.path.join(args.model_dir, "*.onnx")))
    best = {}  # (model, kernel, node) -> (kernel profile, run)
    for _ in range(args.passes):
        for m in models:
            run = profile(args.weft, m, args.threads, args.iters)
            for k in (run or {}).get("kernel_profile", []):
                key = (os.path.basename(m), k["kernel"], k["node"])
                if key not in best or k["median_ms"] < best[key][0]["median_ms"]:
                    best[key] = (k, run)
    rows = []
    for (model, name, _), (k, run) in best.items():
        ms = k["median_ms"]
        if ms < args.min_ms:
            continue
        bandwidth = k["bytes"] / ms / 1e6 / run["read_gbs"] if run.get("read_gbs") else 0
        compute = (k.get("flops") or 0) / ms / 1e6 / run["peak_gflops"] if run.get("peak_gflops") else 0
        share = max(bandwidth, compute)
        if share < args.below:
            rows.append((ms * (1 - share), model, name, ms, share, run["median_ms"], k))
    rows.sort(key=lambda r: -r[0])
    for _, model, name, ms, share, total, k in rows:
        print(f"{model[:-5]:24} {name:26} {ms:7.3f} ms of {total:7.2f} ({share:4.0%} of bandwidth "
              f"or peak) | {k['shapes'][:70]} | {k['strategy'][:60]}")
    print(f"{len(rows)} kernels under {args.below:.0%} of bandwidth and peak, of at least "
          f"{args.min_ms} ms, in {len(models)} models ({args.passes} passes)")


if __name__ == "__main__":
    main()
