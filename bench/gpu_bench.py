"""Weft on an NVIDIA GPU against PyTorch eager, torch.compile and CuPy (CUB) on the same device,
in one run, with the device's copy bandwidth measured in the same run.

On the GPU machine (a python3 with torch, torchvision, onnx and cupy; Weft's CLI from
../shared/tools/gpu-bundle; scripts/gpu-check.sh runs it there):
    python3 bench/gpu_bench.py --weft $WEFT [--cases a,b] [--iters 30] [--no-compile] [--out FILE]
Here, to show a results file as docs/benchmarks.md's section (run_bench.py --markdown-only
includes bench/gpu_results.json when there is one):
    python3 bench/gpu_bench.py --show FILE

The cases are make_models.py's (written into a temporary folder by this machine's PyTorch).
For each:
- Weft, through its CLI: `weft bench --device cuda --json` gives the latency with inputs and
  outputs on the device (the wall clock of a run, its synchronize included) and with host
  inputs and outputs (the difference is the transfer time), and with --kernels each kernel's
  time on the device (between CUDA events around its launches, in runs apart): "kernels" is
  their sum. A second run, with WEFT_CUDA_GRAPHS=1, gives the resident latency with the
  model replayed as a CUDA graph.
- Its output, from `weft run --device cuda` on the case's input, against PyTorch's on the CPU
  (as tests/models_test.py): rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude.
- PyTorch eager and torch.compile (default mode; its compile time not included): the wall clock
  of a call and torch.cuda.synchronize(), and the GPU time between CUDA events around the call.
  TF32 is off on both sides (Weft's default is fp32-exact; PyTorch's cuDNN allows TF32 unless
  told not to).
- CuPy's sum with CUB (CUPY_ACCELERATORS=cub), for the ReduceSum cases.
Bytes moved are the inputs' and outputs' bytes; "% of copy" is the kernels' rate against the
copy bandwidth (bytes read and written per second by a 256 MiB device-to-device copy).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODEL_ROWS = ("encoder_layer", "gpt_block", "resnet18", "mobilenet_v2")
GPU_WAIT_MS = 1.0  # queued before the start event of a peer's GPU time (timed())
# The rows of the goals: 64 MB and more of a canonical reduction, and the fused subgraphs.
NORMALIZATIONS = ("softmax_", "layernorm_", "rmsnorm_")


def case_names(models):
    return sorted(f[:-5] for f in os.listdir(models) if f.endswith(".onnx"))


def weft_json(weft, model, iters, *flags, graphs=False):
    env = dict(os.environ, WEFT_CUDA_GRAPHS="1" if graphs else "0")
    r = subprocess.run([weft, "bench", model, "--device", "cuda", "--json", "--iters", str(iters),
                        "--warmup", "3", *flags], capture_output=True, text=True, timeout=900,
                       env=env)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}")[:400]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def weft_output(weft, model, names, x, tmp):
    """Weft's first output on the GPU for input x (the model's one input), or an error text."""
    x_path, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "out")
    np.save(x_path, x)
    r = subprocess.run([weft, "run", model, "--device", "cuda", "--input", f"{names[0]}={x_path}",
                        "--output-dir", out], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return (r.stderr.strip() or f"exit {r.returncode}")[:400]
    return np.load(os.path.join(out, names[1] + ".npy"))


def io_names(model):
    import onnx
    m = onnx.load(model, load_external_data=False)
    initializers = {t.name for t in m.graph.initializer}
    inputs = [i.name for i in m.graph.input if i.name not in initializers]
    return inputs[0], m.graph.output[0].name


def compare(got, want):
    """None when got matches want, else what differs."""
    if isinstance(got, str):
        return got
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    bad = ~np.isfinite(got)
    if bad.any():
        return f"{int(bad.sum())} non-finite values"
    tol = 1e-4 + 1e-5 * float(np.abs(want).max()) + 1e-3 * np.abs(want)
    err = np.abs(got - want)
    if (err > tol).any():
        return f"max |weft - torch| {err.max():.3g} (largest |torch| {np.abs(want).max():.3g})"
    return None


def timed(torch, fn, iters):
    """(median wall ms of fn() and a synchronize, median ms between CUDA events around fn()).
    The events' runs queue a wait of about 1 ms on the GPU first (torch.cuda._sleep), so that
    the start event is not recorded on an idle stream and the host has queued the call's
    kernels before the device reaches them: the time is the device's, without launch latency
    (as weft bench --kernels times Weft's kernels; 25 us left torch.compile's guards in)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    wall, gpu = [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1e3)
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(GPU_WAIT_MS * 2e6))  # cycles, at about 2 GHz
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        gpu.append(start.elapsed_time(end))
    return statistics.median(wall), statistics.median(gpu)


def copy_bandwidth(torch):
    """GB/s read + written by a 256 MiB device-to-device copy (median of 20)."""
    n = 64 << 20
    src, dst = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
    _, ms = timed(torch, lambda: dst.copy_(src), 20)
    return 2 * n * 4 / ms / 1e6


def nbytes(values):
    if isinstance(values, (list, tuple)):
        return sum(nbytes(v) for v in values)
    return values.numel() * values.element_size()


def measure_case(torch, weft, models, case, iters, with_compile, tmp):
    import torch_peer
    from make_models import REDUCTIONS
    model = os.path.join(models, case + ".onnx")
    row = {"case": case}
    plain = weft_json(weft, model, iters, "--kernels")
    if "error" in plain:
        row["weft_error"] = plain["error"]
    else:
        row["weft_resident_ms"] = plain.get("device_resident_median_ms")
        row["weft_host_io_ms"] = plain["median_ms"]
        row["weft_transfer_ms"] = plain.get("transfer_ms")
        row["weft_compile_ms"] = plain["compile_ms"]
        if "kernel_profile" in plain:
            row["weft_kernels_ms"] = sum(k["median_ms"] for k in plain["kernel_profile"])
            row["weft_kernel_count"] = len(plain["kernel_profile"])
        with_graphs = weft_json(weft, model, iters, graphs=True)
        row["weft_graphs_resident_ms"] = with_graphs.get("device_resident_median_ms")
    fn, inputs = torch_peer.build(torch, case, "cuda")
    with torch.inference_mode():
        want = fn(*inputs)
        row["bytes"] = nbytes(inputs) + nbytes(want)
        names = io_names(model)
        # The reference is PyTorch on the CPU, as tests/models_test.py's: its GPU kernels
        # (the encoder layer's fused attention) differ from it by more than the tolerance.
        ref_fn, ref_inputs = torch_peer.build(torch, case, "cpu")
        reference = ref_fn(*ref_inputs).float().numpy()
        row["check"] = compare(weft_output(weft, model, names, inputs[0].cpu().numpy(), tmp),
                               reference) or "ok"
        row["gpu_wait_ms"] = GPU_WAIT_MS
        row["eager_ms"], row["eager_gpu_ms"] = timed(torch, lambda: fn(*inputs), iters)
        if with_compile:
            try:
                compiled = torch.compile(fn)
                t0 = time.perf_counter()
                compiled(*inputs)
                torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
                row["compile_ms"], row["compile_gpu_ms"] = timed(torch, lambda: compiled(*inputs),
                                                                 iters)
            except Exception as e:  # a torch.compile failure: the table says n/a
                row["compile_error"] = f"{type(e).__name__}: {e}"[:400]
        axes = next((a for name, _, a in REDUCTIONS if name == case), None)
        if axes is not None:
            try:
                os.environ.setdefault("CUPY_ACCELERATORS", "cub")
                import cupy
                x = cupy.from_dlpack(inputs[0])
                row["cub_ms"], row["cub_gpu_ms"] = timed(
                    torch, lambda: cupy.sum(x, axis=tuple(axes)), iters)
            except Exception as e:
                row["cub_error"] = f"{type(e).__name__}: {e}"[:400]
    return row


def measure(weft, cases, iters, with_compile, out=None):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    result = {"date": datetime.date.today().isoformat(), "device": torch.cuda.get_device_name(),
              "reference": "cpu",
              "torch": torch.__version__, "cuda": torch.version.cuda, "iters": iters}
    try:
        import cupy
        result["cupy"] = cupy.__version__
    except ImportError:
        result["cupy"] = None
    result["copy_gb_s"] = copy_bandwidth(torch)
    print(f"copy bandwidth: {result['copy_gb_s']:.0f} GB/s (read + write)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        models = os.path.join(tmp, "models")
        subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), models, "--gpu"], check=True,
                       capture_output=True, text=True)
        result["rows"] = []
        for case in cases or case_names(models):
            started = time.time()
            result["rows"].append(measure_case(torch, weft, models, case, iters, with_compile, tmp))
            print(json.dumps(result["rows"][-1]), f"({time.time() - started:.0f} s)", flush=True)
            if out:  # after every case, so that a run cut short keeps what it measured
                with open(out, "w") as f:
                    json.dump(result, f, indent=2)
    return result


def geomean(values):
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def best_ms(row):
    """Weft's device time for a case: the sum of its kernels' times (CUDA events around each
    launch, queued behind a wait so that launch latency is not timed), else the tightest of
    its wall clocks."""
    if row.get("weft_kernels_ms"):
        return row["weft_kernels_ms"]
    times = [row.get(k) for k in ("weft_resident_ms", "weft_graphs_resident_ms")]
    times = [t for t in times if t]
    return min(times) if times else None


def share_of_copy(row, copy):
    """Bytes moved over best_ms against the copy bandwidth of the row's run."""
    best = best_ms(row)
    if not best or not row.get("bytes"):
        return None
    return row["bytes"] / best / 1e6 / row.get("copy_gb_s", copy)


def is_goal_row(row):
    """The issue's rows: canonical reductions of 64 MB and more, softmax, LayerNorm, RMSNorm."""
    case = row["case"]
    return case.startswith(NORMALIZATIONS) or (case.startswith("reduce_") and
                                               row.get("bytes", 0) >= 64e6)


def markdown(r):
    copy = r["copy_gb_s"]
    lines = ["## CUDA", "",
             f"`bench/gpu_bench.py`, measured {r['date']} on {r['device']} (PyTorch {r['torch']}, "
             f"CUDA {r['cuda']}, CuPy {r['cupy']}); copy bandwidth measured in the same run: "
             f"**{copy:.0f} GB/s** read + write (256 MiB device-to-device). Medians of {r['iters']} "
             "runs. Weft through its CLI: *resident* is a run with inputs and outputs on the device "
             "(wall clock, its synchronize included), *host I/O* the same with host arrays (the "
             "difference is the transfers), *graphs* the resident run replayed as a CUDA graph "
             "(WEFT_CUDA_GRAPHS=1), *kernels* the sum of its kernels' device times "
             "(CUDA events around each launch, queued behind a wait on the GPU so that the launch's "
             "latency is not timed); *% of copy* is the bytes moved over the kernel time against "
             "the copy bandwidth. PyTorch eager, torch.compile and CuPy/CUB: the wall clock of a "
             "call and a synchronize, on device tensors, and the GPU time between CUDA events around "
             "a call queued behind a 1 ms wait. Ratios are peer / Weft resident (above 1: Weft is "
             "faster). TF32 is off on both sides. *Output*: Weft's on the GPU against PyTorch "
             f"{'on the CPU' if r.get('reference') == 'cpu' else 'eager on the GPU'} "
             "(rtol 1e-3, atol 1e-4 plus 1e-5 of the largest magnitude).", "",
             "| Case | MB | Weft kernels | % of copy | Weft resident | graphs | Weft host I/O | "
             "eager | eager / Weft | torch.compile | compile / Weft | CUB | CUB / Weft | output |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| --- |"]
    ms = lambda v: "n/a" if v is None else f"{v:.3f} ms"
    ratio = lambda p, w: None if p is None or not w else p / w
    num = lambda v: "n/a" if v is None else f"{v:.2f}"
    ratios = {"eager": [], "compile": [], "cub": []}
    kernel_ratios = {"eager": [], "compile": []}
    for row in r["rows"]:
        w, k = row.get("weft_resident_ms"), row.get("weft_kernels_ms")
        share = share_of_copy(row, copy)
        cells = []
        for peer in ("eager", "compile", "cub"):
            q = ratio(row.get(peer + "_ms"), w)
            if q and row["case"] not in MODEL_ROWS:
                ratios[peer].append(q)
            cells += [ms(row.get(peer + "_ms")), num(q)]
            # (A wait shorter than the peer's host overhead left that overhead in its GPU time.)
            g = ratio(row.get(peer + "_gpu_ms"), k) if row.get("gpu_wait_ms", 0) >= 1 else None
            if g and peer in kernel_ratios and row["case"] not in MODEL_ROWS:
                kernel_ratios[peer].append(g)
        check = row.get("check", "n/a") if "weft_error" not in row else "failed: " + row["weft_error"]
        mark = " (2nd run)" if row.get("second_run") else ""
        lines.append(f"| {row['case']}{mark} | {row.get('bytes', 0) / 1e6:.1f} | {ms(k)} | "
                     f"{'' if share is None else f'{share * 100:.0f}%'} | {ms(w)} | "
                     f"{ms(row.get('weft_graphs_resident_ms'))} | "
                     f"{ms(row.get('weft_host_io_ms'))} | " + " | ".join(cells) + f" | {check} |")
    lines += ["", "Geomean over the reduction and subgraph rows, resident end to end: eager / Weft "
              f"**{geomean(ratios['eager']):.2f}**, torch.compile / Weft "
              f"**{geomean(ratios['compile']):.2f}**, CUB / Weft **{geomean(ratios['cub']):.2f}** "
              f"(ReduceSum rows); kernel to kernel (PyTorch's GPU time between CUDA events against "
              f"Weft's kernels, rows timed behind a 1 ms wait: {len(kernel_ratios['eager'])}): "
              f"eager / Weft **{geomean(kernel_ratios['eager']):.2f}**, "
              f"torch.compile / Weft **{geomean(kernel_ratios['compile']):.2f}**.", ""]
    goal = [row for row in r["rows"] if is_goal_row(row)]
    low = [f"{row['case']} ({share_of_copy(row, copy) * 100:.0f}%)"
           for row in goal if share_of_copy(row, copy) and share_of_copy(row, copy) < 0.85]
    resnet = next((row for row in r["rows"] if row["case"] == "resnet18"), {})
    if resnet.get("weft_resident_ms") and resnet.get("compile_ms"):
        graphs = resnet.get("weft_graphs_resident_ms")
        lines += [f"ResNet-18 at batch 1, resident: Weft {resnet['weft_resident_ms']:.3f} ms "
                  f"({'n/a' if graphs is None else f'{graphs:.3f} ms'} as a CUDA graph), "
                  f"torch.compile {resnet['compile_ms']:.3f} ms.", ""]
    wrong = [row["case"] for row in r["rows"] if row.get("check", "ok") != "ok" or "weft_error" in row]
    if r.get("note"):
        lines += [r["note"], ""]
    second = r.get("second_run")
    if second:
        lines += [f"(2nd run): {second['what']} ({second['date']}, copy bandwidth "
                  f"{second['copy_gb_s']:.0f} GB/s, against which its rows' % of copy is taken).", ""]
    lines += [f"Under 85% of the copy bandwidth (kernel time; 64 MB+ reductions, softmax, LayerNorm, "
              f"RMSNorm): {', '.join(low) if low else 'none'}. Outputs that differ from PyTorch's "
              f"or failed: {', '.join(wrong) if wrong else 'none'}. Raw results: "
              "`bench/gpu_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", help="the weft CLI (on the GPU machine: $WEFT)")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--show", help="print the markdown of a results file")
    args = ap.parse_args()
    if args.show:
        with open(args.show) as f:
            print("\n".join(markdown(json.load(f))))
        return 0
    if not args.weft:
        ap.error("--weft is required to measure")
    result = measure(os.path.abspath(args.weft), args.cases.split(",") if args.cases else None,
                     args.iters, not args.no_compile, args.out)
    print("\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
