"""CUDA code generation checked on whole models without a GPU: each model runs twice through
`weft run --fill random` (the same inputs each time), on the CPU and with `--device cuda` on the
CUDA emulator (WEFT_CUDA_EMULATOR=1: the generated CUDA C++ built by the host compiler, blocks'
threads as fibers, library calls on the emulator's reference GEMM and convolution), and every
output of the CUDA run is compared with the CPU's (rtol 1e-3, atol 1e-4 plus 1e-5 of the
output's largest magnitude; f16 and bf16 outputs within 4 of their ulps at 1, plus that share of
the largest magnitude; integer and bool outputs exactly). One line per model; the exit
status is 1 when a model fails to run on one side only or an output differs.

With WEFT_CUDA_EMULATOR=0 in the environment on a machine with a GPU, the same script compares
the GPU against the CPU.

Usage: scripts/emulator-zoo.py WEFT_BINARY MODEL_OR_DIR... [--timeout 900] [--work DIR]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(weft, model, device, out_dir, timeout):
    env = dict(os.environ)
    env.setdefault("WEFT_CUDA_EMULATOR", "1")
    try:
        r = subprocess.run([weft, "run", model, "--device", device, "--fill", "random",
                            "--output-dir", out_dir], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout} s"
    except OSError as e:  # the binary being rebuilt, say
        return f"did not start: {e}"
    if r.returncode != 0:
        return f"exit {r.returncode}: " + " ".join(r.stderr.strip().splitlines()[-1:])
    return None


def differences(cpu_dir, cuda_dir):
    """(description, bad) for each output."""
    rows = []
    for name in sorted(os.listdir(cpu_dir)):
        a, b = np.load(os.path.join(cpu_dir, name)), np.load(os.path.join(cuda_dir, name))
        if a.shape != b.shape:
            rows.append((f"{name} shapes {a.shape} and {b.shape}", True))
        elif a.dtype.kind in "fc" and a.size:
            a64, b64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), \
                b.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            largest = float(np.abs(a64).max())
            err = np.abs(a64 - b64)
            # Half types: the two devices round the same products in another order.
            ulp = {"float16": 2.0**-10, "bfloat16": 2.0**-7}.get(a.dtype.name)
            tol = 4 * ulp * (np.abs(a64) + largest) if ulp else 1e-4 + 1e-3 * np.abs(a64) + 1e-5 * largest
            bad = int(np.sum(~(err <= tol)))
            rows.append((f"{name} max difference {float(err.max()):.2e} of {largest:.2g}"
                         + (f", {bad} outside" if bad else ""), bad > 0))
        else:
            same = np.array_equal(a, b)
            rows.append((f"{name} {'equal' if same else 'differs'}", not same))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weft")
    ap.add_argument("models", nargs="+", help=".onnx files, or directories of them")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run")
    ap.add_argument("--work", help="keep the outputs here (default: a temporary directory)")
    args = ap.parse_args()
    models = []
    for m in args.models:
        models += sorted(glob.glob(os.path.join(m, "*.onnx"))) if os.path.isdir(m) else [m]
    work = args.work or tempfile.mkdtemp(prefix="weft-emulator-zoo-")
    failed = both = 0
    for model in models:
        name = os.path.basename(model)[:-len(".onnx")]
        cpu, cuda = (os.path.join(work, name, d) for d in ("cpu", "cuda"))
        why_cpu = run(args.weft, model, "cpu", cpu, args.timeout)
        why_cuda = run(args.weft, model, "cuda", cuda, args.timeout)
        if why_cpu or why_cuda:
            # A model the CPU refuses too is not the CUDA backend's failure.
            failed += bool(why_cpu) != bool(why_cuda)
            both += bool(why_cpu) and bool(why_cuda)
            print(f"{name}: cpu {why_cpu or 'ran'}; cuda {why_cuda or 'ran'}", flush=True)
            continue
        rows = differences(cpu, cuda)
        failed += any(bad for _, bad in rows)
        print(f"{name}: " + "; ".join(text for text, _ in rows), flush=True)
    print(f"{len(models) - failed - both} of {len(models)} agree"
          + (f"; {both} failed on both devices" if both else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
