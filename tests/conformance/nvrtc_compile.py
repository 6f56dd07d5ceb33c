"""CUDA code generation in CI, without a GPU: every case of the ONNX backend test data that
passes on the CPU must also have its kernels generated in the CUDA dialect and compiled by
NVRTC for sm_80 and sm_90 (weft test-onnx --device cuda --compile-only). Exits 77 (skipped)
when NVRTC is not installed.

Usage: nvrtc_compile.py WEFT_BINARY [--jobs N]
"""
import argparse
import os
import subprocess
import sys
import time

import run_conformance as conformance


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weft")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    if not os.path.isdir(conformance.DATA):
        print(f"skipped: {conformance.DATA} is missing (Debian's libonnx-testdata)")
        return 77
    probe = subprocess.run([args.weft, "test-onnx", "--device", "cuda", "--compile-only",
                            os.path.join(conformance.DATA, "node", "test_relu")],
                           capture_output=True, text=True)
    if "NVRTC is not available" in probe.stdout:
        print("skipped: " + probe.stdout.splitlines()[0])
        return 77

    expected = conformance.load_expected()
    cpu_passing = [c for c in conformance.cases() if not any(p.match(c) for p, _ in expected)]
    start = time.time()
    results = conformance.run_all(args.weft, cpu_passing, args.jobs,
                                  ["--device", "cuda", "--compile-only", "--arch", "sm_80,sm_90"])
    failures = {c: why for c, why in results.items() if why is not None}
    for case, why in sorted(failures.items()):
        print(f"FAIL {case}: {why[:2000]}")
    print(f"{len(results) - len(failures)} of {len(results)} CPU-passing cases compiled for "
          f"sm_80 and sm_90 by NVRTC in {time.time() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
