"""Real models on the CPU, Weft beside ONNX Runtime, PyTorch eager and torch.compile in one run:
torchvision's MobileNetV2, ShuffleNetV2, SqueezeNet 1.1, EfficientNet-B0, ResNet-18, ResNet-50
and ConvNeXt-Tiny at batch 1 (224x224), a U-Net-style segmenter (ConvTranspose and Resize
upsampling), a byte-level 1-D convolutional text classifier, a TransformerEncoderLayer and a
GPT-2-style block. Random weights (BatchNorm statistics randomized), exported with
torch.onnx.export's defaults. Weft runs through its Python module (in this process; its output
checked against PyTorch's first, rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude); each round times every system on every
model, and an entry is the system's lowest median over the rounds.

Each model's arithmetic floor: the FLOPs of its convolutions and matrix products (2 per
multiply-add, as direct convolutions) at the machine's measured f32 peak, both from
`weft bench --kernels --json` (the CLI next to the Python module, or $WEFT_CLI): how close the
fastest possible run of those FLOPs is to each system's time.

MobileNetV2's depthwise convolutions are also timed alone, in Weft's kernel profile, against the
read bandwidth measured in the same run (bench/bandwidth.cc); --depthwise measures only those.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/cnn_bench.py [--rounds 2] [--iters 20] [--write [--beside]]
           [--depthwise] [--models NAME...]
--write stores bench/cnn_results.json, which run_bench.py puts in docs/benchmarks.md; with
--beside, the stored run stays and this one goes beside it, as the run on this CPU's vector ISA
(the suite's rows on AVX2 and on AVX-512: oneDNN's kernels and Weft's Winograd choices differ).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import subprocess
import tempfile
import time

import numpy as np
import onnxruntime as ort
from ort_options import described, session_options
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms  # noqa: E402
from torch_export_test import GPT2Block  # noqa: E402


class UNet(torch.nn.Module):
    """Two levels down (strided convolutions), back up by ConvTranspose and by Resize."""

    def __init__(self, c=32):
        super().__init__()
        block = lambda i, o, s=1: torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, s, 1), torch.nn.BatchNorm2d(o),
                                                      torch.nn.ReLU())
        self.enc1, self.enc2, self.enc3 = block(3, c), block(c, 2 * c, 2), block(2 * c, 4 * c, 2)
        self.up1 = torch.nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.dec1 = block(4 * c, 2 * c)
        self.dec2 = block(3 * c, c)
        self.head = torch.nn.Conv2d(c, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        e3 = self.enc3(e2)
        d1 = self.dec1(torch.cat([self.up1(e3), e2], 1))
        up = torch.nn.functional.interpolate(d1, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.head(self.dec2(torch.cat([up, e1], 1)))


class ByteClassifier(torch.nn.Module):
    """Bytes -> embedding -> 1-D convolutions with long kernels -> max over time -> classes."""

    def __init__(self, dim=64, classes=10):
        super().__init__()
        self.embed = torch.nn.Embedding(256, dim)
        self.convs = torch.nn.Sequential(torch.nn.Conv1d(dim, 128, 15, padding=7), torch.nn.ReLU(),
                                         torch.nn.Conv1d(128, 128, 15, padding=7), torch.nn.ReLU())
        self.out = torch.nn.Linear(128, classes)

    def forward(self, x):
        h = self.convs(self.embed(x).transpose(1, 2))
        return self.out(h.amax(dim=2))


def image():
    return torch.randn(1, 3, 224, 224)


MODELS = {
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), image),
    "shufflenet_v2": (lambda: torchvision.models.shufflenet_v2_x1_0(), image),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), image),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(), image),
    "resnet18": (lambda: torchvision.models.resnet18(), image),
    "resnet50": (lambda: torchvision.models.resnet50(), image),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(), image),
    "unet": (lambda: UNet(), lambda: torch.randn(1, 3, 256, 256)),
    "byte_cnn": (lambda: ByteClassifier(), lambda: torch.randint(0, 256, (1, 4096))),
    "encoder_layer": (lambda: torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
                      lambda: torch.randn(4, 128, 256)),
    "gpt_block": (lambda: GPT2Block(256, 4), lambda: torch.randn(4, 128, 256)),
}


def weft_cli():
    """Weft's CLI: $WEFT_CLI, the build's (beside build/python), or weft on the PATH; None
    without one."""
    import weft
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(weft.__file__))))
    for cli in (os.environ.get("WEFT_CLI"), os.path.join(build, "tools", "weft", "weft"), shutil.which("weft")):
        if cli and os.path.isfile(cli):
            return cli
    return None


def arithmetic(path):
    """(FLOPs of the library calls, the machine's f32 peak in GFLOP/s) from Weft's CLI;
    (None, None) without one."""
    cli = weft_cli()
    if not cli:
        return None, None
    out = subprocess.run([cli, "bench", path, "--json", "--kernels", "--iters", "3"], capture_output=True,
                         text=True, check=True).stdout
    r = json.loads(out)
    return sum(k.get("flops", 0) for k in r["kernel_profile"]), r["peak_gflops"]


def read_bandwidth():
    """The machine's read bandwidth (GB/s, all threads) from bench/bandwidth.cc, built as
    bench/run.sh builds it."""
    binary = os.path.join(tempfile.gettempdir(), "weft_bench_bandwidth")
    subprocess.run(["c++", "-O3", "-march=native", "-fopenmp", "-o", binary, os.path.join(HERE, "bandwidth.cc")],
                   check=True)
    return json.loads(subprocess.run([binary], capture_output=True, text=True, check=True).stdout)["read_gbs"]


def depthwise(rounds, iters):
    """MobileNetV2's depthwise convolutions in Weft's kernel profile (`weft bench --kernels`),
    each one's GB/s (lowest median of the rounds), beside the read bandwidth measured between
    the rounds (the highest)."""
    torch.manual_seed(0)
    model = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mobilenet_v2.onnx")
        torch.onnx.export(model, (image(),), path, external_data=False)
        bandwidths, best = [], {}
        for _ in range(rounds):
            bandwidths.append(read_bandwidth())
            out = subprocess.run([weft_cli(), "bench", path, "--json", "--kernels", "--iters", str(iters)],
                                 capture_output=True, text=True, check=True).stdout
            for k in json.loads(out)["kernel_profile"]:
                dims = [d[d.index("[") + 1:].split(",") for d in k.get("shapes", "").split("]")[:2] if "[" in d]
                # [N, H, W, C] activations and [C, 1, kh, kw] weights: one channel per group.
                if not k["op_type"].startswith("Conv") or len(dims) < 2 or len(dims[1]) != 4 \
                        or dims[1][1] != "1" or dims[1][0] != dims[0][-1]:
                    continue
                if k["median_ms"] < best.get(k["kernel"], {"median_ms": float("inf")})["median_ms"]:
                    best[k["kernel"]] = {key: k[key] for key in ("kernel", "shapes", "bytes", "median_ms",
                                                                 "GB/s", "strategy")}
    return {"date": datetime.date.today().isoformat(), "read_gbs": max(bandwidths),
            "read_rounds_gbs": bandwidths, "rounds": rounds, "iters": iters,
            "convolutions": sorted(best.values(), key=lambda k: int(k["kernel"][4:].split("_")[0]))}


def depthwise_markdown(d):
    share = [c["GB/s"] / d["read_gbs"] for c in d["convolutions"]]
    lines = ["", f"MobileNetV2's depthwise convolutions (`cnn_bench.py --depthwise`, {d['date']}, 2 threads): "
             f"{len(share)} calls, each its lowest median over {d['rounds']} rounds of `weft bench --kernels` "
             f"({d['iters']} runs), against the read bandwidth measured between the rounds "
             f"({d['read_gbs']:.1f} GB/s, the highest of " + ", ".join(f"{b:.1f}" for b in d["read_rounds_gbs"])
             + "). The activations (0.4-6 MB a call) partly stay in the cache, so a call can move more than "
             f"the DRAM's read bandwidth. {sum(s >= 0.6 for s in share)} of {len(share)} move at least 60% "
             f"of it (lowest {100 * min(share):.0f}%, median {100 * statistics.median(share):.0f}%). Each ran as "
             + " or ".join(sorted({c["strategy"] for c in d["convolutions"]})) + "; Weft's generated "
             "depthwise kernels (`WEFT_DEPTHWISE=generated`) are not the default yet "
             "([library.md](library.md)).", "",
             "| Kernel | Shapes | Bytes | ms | GB/s | % of read bandwidth |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for c, s in zip(d["convolutions"], share):
        lines.append(f"| {c['kernel']} | {c['shapes']} | {c['bytes'] / 1e6:.2f} MB | {c['median_ms']:.4f} | "
                     f"{c['GB/s']:.1f} | {100 * s:.0f}% |")
    return lines


def timed(fn, iters):
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure(rounds, iters, only=None, models=None):
    """Each model of "models" (default MODELS; name -> (make, example input or a tuple of them)) checked and timed."""
    import weft

    systems = {"weft": {}, "ort": {}, "torch": {}, "torch_compile": {}}
    errors, runners, flops, peaks = {}, {}, {}, []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, example) in (models or MODELS).items():
            if only and name not in only:
                continue
            model = randomize_batch_norms(make()).eval()
            x = example()  # one input, or a tuple of them
            xs = x if isinstance(x, tuple) else (x,)
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, xs, path, external_data=False)
            with open(path, "rb") as f:
                data = f.read()
            compiled = weft.compile(data)
            session = ort.InferenceSession(data, session_options(), providers=["CPUExecutionProvider"])
            feed = {i.name: v.numpy() for i, v in zip(session.get_inputs(), xs)}
            with torch.inference_mode():
                want = model(*xs).numpy()
            got = next(iter(compiled.run(feed).values()))
            # Deep random networks reach outputs in the hundreds: a tolerance of their scale.
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 + 1e-5 * np.abs(want).max(),
                                       err_msg=name)
            flops[name], peak = arithmetic(path)
            if peak:
                peaks.append(peak)
            fast = torch.compile(model)
            runners[name] = {"weft": lambda c=compiled, f=feed: c.run(f),
                             "ort": lambda s=session, f=feed: s.run(None, f),
                             "torch": lambda m=model, v=xs: m(*v), "torch_compile": lambda m=fast, v=xs: m(*v)}
            print(f"exported and checked {name}", flush=True)
        for r in range(rounds):
            for name, runs in runners.items():
                for system, run in runs.items():
                    try:
                        with torch.inference_mode():
                            systems[system].setdefault(name, []).append(timed(run, iters))
                    except Exception as e:  # the row then says why
                        errors[f"{system}/{name}"] = str(e)[-300:]
                print(f"round {r + 1}/{rounds}: {name}", flush=True)
    rows = []
    for name in runners:
        row = {"model": name}
        if flops[name] is not None:
            row["gflop"] = flops[name] / 1e9
        for system, medians in systems.items():
            if name in medians:
                row[system + "_median_ms"] = min(medians[name])
                row[system + "_round_ms"] = medians[name]
            elif f"{system}/{name}" in errors:
                row[system + "_error"] = errors[f"{system}/{name}"]
        rows.append(row)
    return rows, max(peaks, default=None)


def peer_table(r, results_file):
    """The lines of a table of "r"'s rows (measure's): Weft, ONNX Runtime, eager and
    torch.compile, their ratios to Weft and the geomeans (sequence_bench.py, yolo_bench.py)."""
    lines = ["| Model | Weft | ONNX Runtime | ORT / Weft | PyTorch eager | eager / Weft | torch.compile "
             "| compile / Weft |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    by = {"ort": [], "torch": [], "torch_compile": []}
    for row in r["rows"]:
        w = row.get("weft_median_ms")
        cells = []
        for system in by:
            p = row.get(system + "_median_ms")
            if p is None or w is None:
                cells += ["n/a", "n/a"]
                continue
            by[system].append(p / w)
            cells += [f"{p:.2f} ms", f"{p / w:.2f}"]
        lines.append(f"| {row['model']} | " + (f"{w:.2f} ms" if w else "failed") + " | " + " | ".join(cells) + " |")
    geo = lambda v: float(np.exp(np.mean(np.log(v)))) if v else float("nan")
    lines += ["", f"Geomean: ONNX Runtime / Weft **{geo(by['ort']):.2f}**, eager / Weft **{geo(by['torch']):.2f}**, "
              f"torch.compile / Weft **{geo(by['torch_compile']):.2f}**. Every round is in "
              f"`bench/{results_file}`." + (f" {r['note']}" if r.get("note") else ""), ""]
    return lines


def with_stored(result, stored, beside):
    """What --write stores in "stored" for "result": with "beside", the stored run with "result"
    beside it as the run of this CPU's vector ISA (replacing an earlier one of that ISA);
    otherwise "result", keeping a stored run of the other ISA beside it."""
    if not os.path.exists(stored):
        return result
    with open(stored) as f:
        main_run = json.load(f)
    others = [b for b in main_run.get("beside", []) if b.get("avx512") != result["avx512"]]
    if beside:
        main_run["beside"] = others + [result]
        return main_run
    if others:
        result["beside"] = others
    return result


def table_main(models, markdown, results_file):
    """The command line of sequence_bench.py, yolo_bench.py and recurrent_bench.py: "models"
    measured, the result printed through "markdown", and stored in bench/"results_file" with
    --write (--beside: beside the stored run, as cnn_bench.py's)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--write", action="store_true", help=f"store bench/{results_file}")
    ap.add_argument("--beside", action="store_true",
                    help="with --write, keep the stored run and store this one beside it, as the run on "
                         "this CPU's vector ISA (AVX2 or AVX-512), replacing an earlier one of that ISA")
    args = ap.parse_args()
    rows, _ = measure(args.rounds, args.iters, models=models)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
              "onnxruntime": ort.__version__, "pytorch": torch.__version__, "threads": torch.get_num_threads(),
              "rounds": args.rounds, "iters": args.iters, "avx512": has_avx512(), "rows": rows}
    stored = os.path.join(HERE, results_file)
    if args.write:
        result = with_stored(result, stored, args.beside)
    print("\n".join(markdown(result)))
    if args.write:
        with open(stored, "w") as f:
            json.dump(result, f, indent=2)


def has_avx512():
    """Whether this CPU has AVX-512 (oneDNN's brgemm and Winograd f32 kernels need it)."""
    with open("/proc/cpuinfo") as f:
        return "avx512f" in next((l for l in f if l.startswith("flags")), "").split()


def isa(r):
    """The CPU's vector ISA as the table states it, where the run recorded it."""
    if "avx512" not in r or "AVX" in r["machine"]:  # (machine() names it since 2026-12-06)
        return ""
    return " (AVX-512)" if r["avx512"] else " (AVX2, no AVX-512)"


def markdown(r):
    lines = ["## Real models on the CPU", "",
             f"`bench/cnn_bench.py`, measured {r['date']} on {r['machine']}{isa(r)}, {r['threads']} threads: "
             "torchvision's models at batch 1 (224x224), a U-Net-style segmenter (256x256, ConvTranspose "
             "and Resize), a byte-level 1-D convolutional classifier (4,096 bytes), a TransformerEncoderLayer "
             "and a GPT-2-style block (4x128x256); random weights, exported by PyTorch "
             f"{r['pytorch']}. Weft's Python module, ONNX Runtime {r['onnxruntime']} (CPU execution "
             f"provider, {described(r)}), PyTorch eager and `torch.compile` (compile time not included), "
             f"all in one process; {r['rounds']} rounds, each entry the system's lowest median of "
             f"{r['iters']} runs. Weft's output matched PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the "
             "output's largest magnitude) before timing. "
             "Ratios are peer time / Weft time (above 1: Weft is faster). Floor: the model's convolution "
             "and matrix-product FLOPs (2 per multiply-add, counted as direct convolutions) at the machine's "
             + (f"f32 peak, {r['peak_gflops']:.0f} GFLOP/s (the highest of Weft's measurements during the "
                "run: oneDNN's matrix product); floor / ORT and floor / Weft: the share of that peak each "
                "reaches over the whole model (Winograd convolutions do fewer FLOPs, and can exceed 100%). "
                "A system at x% of the floor can be beaten by at most 100/x, without Winograd."
                if r.get("peak_gflops") else "f32 peak (not measured in this run).") + "", "",
             "| Model | GFLOP | Floor | Weft | floor / Weft | ONNX Runtime | floor / ORT | ORT / Weft "
             "| PyTorch eager | eager / Weft | torch.compile | compile / Weft |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    cell = lambda v: "n/a" if v is None else f"{v:.2f} ms"
    ratio = lambda p, w: None if p is None or w is None else p / w
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"
    by = {"ort": [], "torch": [], "torch_compile": []}
    pct = lambda f, t: "n/a" if f is None or not t else f"{100 * f / t:.0f}%"
    for row in r["rows"]:
        w = row.get("weft_median_ms")
        floor = row["gflop"] / r["peak_gflops"] * 1e3 if r.get("peak_gflops") and "gflop" in row else None
        cells = []
        for system in ("ort", "torch", "torch_compile"):
            p = row.get(system + "_median_ms")
            q = ratio(p, w)
            if q:
                by[system].append(q)
            cells += [cell(p)] + ([pct(floor, p)] if system == "ort" else []) + [fmt(q)]
        gflop = f"{row['gflop']:.2f}" if "gflop" in row else "n/a"
        lines.append(f"| {row['model']} | {gflop} | {cell(floor)} | {cell(w) if w else 'failed'} | "
                     f"{pct(floor, w)} | " + " | ".join(cells) + " |")
    geo = lambda v: float(np.exp(np.mean(np.log(v)))) if v else float("nan")
    slower = [row["model"] for row in r["rows"]
              if row.get("weft_median_ms") and row.get("ort_median_ms")
              and row["ort_median_ms"] < row["weft_median_ms"]]
    beyond = [f"{row['model']} ({150 * row['gflop'] / r['peak_gflops'] * 1e3 / row['ort_median_ms']:.0f}%)"
              for row in r["rows"] if r.get("peak_gflops") and "gflop" in row and row.get("ort_median_ms")
              and 1.5 * row["gflop"] / r["peak_gflops"] * 1e3 > row["ort_median_ms"]]
    if beyond:
        lines += ["", "Being 1.5x faster than ONNX Runtime takes more than the machine's peak (the share of "
                  "it such a run would reach) on " + ", ".join(beyond) + ": only doing fewer FLOPs gets "
                  "there, as Winograd's 3x3 convolutions do (docs/library.md: oneDNN's with AVX-512 from "
                  "32 channels, Weft's own on AVX2 from 16, and from 32 at stride 2), and Weft's 1-D "
                  "Winograd kernel for the byte-level classifier's 15 taps (half the products); the "
                  "matrix products and the 1x1 convolutions have no such shortcut."]
    # The geomean were every row at its floor (or as measured, where Winograd took it past that).
    ceiling = [row["ort_median_ms"] / min(row["weft_median_ms"], row["gflop"] / r["peak_gflops"] * 1e3)
               for row in r["rows"] if r.get("peak_gflops") and "gflop" in row
               and row.get("ort_median_ms") and row.get("weft_median_ms")]
    if ceiling:
        lines += ["", "Were Weft at the floor on every row where it is slower than that (and as measured "
                  "where Winograd takes it past), ONNX Runtime / Weft would be "
                  f"**{geo(ceiling):.2f}** in geomean: the most these rows allow at the f32 peak without "
                  "doing fewer FLOPs."]
    lines += ["", f"Geomean: ONNX Runtime / Weft **{geo(by['ort']):.2f}**, eager / Weft "
              f"**{geo(by['torch']):.2f}**, torch.compile / Weft **{geo(by['torch_compile']):.2f}**. "
              f"Slower than ONNX Runtime on {len(slower)} of {len(r['rows'])}"
              + (": " + ", ".join(slower) if slower else "") + ". Every round is in `bench/cnn_results.json`."]
    if r.get("depthwise"):
        lines += depthwise_markdown(r["depthwise"])
    for b in r.get("beside", []):
        lines += beside_markdown(b)
    return lines + [""]


def beside_markdown(b):
    """A run on a CPU of the other vector ISA (`--write --beside`), in short."""
    lines = ["", f"The same suite on {b['machine']}{isa(b)}, {b['threads']} threads, {b['date']} "
             f"({b['rounds']} rounds of {b['iters']} runs, f32 peak {b['peak_gflops']:.0f} GFLOP/s):", "",
             "| Model | Weft | floor / Weft | ONNX Runtime | ORT / Weft | torch.compile | compile / Weft |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios = {"ort": [], "torch_compile": []}
    slower = []
    for row in b["rows"]:
        w = row.get("weft_median_ms")
        floor = row["gflop"] / b["peak_gflops"] * 1e3
        cells = []
        for system in ("ort", "torch_compile"):
            p = row.get(system + "_median_ms")
            cells += ["n/a" if p is None else f"{p:.2f} ms", "n/a" if p is None or not w else f"{p / w:.2f}"]
            if p and w:
                ratios[system].append(p / w)
        if w and row.get("ort_median_ms") and row["ort_median_ms"] < w:
            slower.append(row["model"])
        lines.append(f"| {row['model']} | " + (f"{w:.2f} ms | {100 * floor / w:.0f}%" if w else "failed | n/a")
                     + " | " + " | ".join(cells) + " |")
    geo = lambda v: float(np.exp(np.mean(np.log(v)))) if v else float("nan")
    return lines + ["", f"Geomean: ONNX Runtime / Weft **{geo(ratios['ort']):.2f}**, torch.compile / Weft "
                    f"**{geo(ratios['torch_compile']):.2f}**. Slower than ONNX Runtime on {len(slower)} of "
                    f"{len(b['rows'])}" + (": " + ", ".join(slower) if slower else "") + "."]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="store bench/cnn_results.json")
    ap.add_argument("--depthwise", action="store_true",
                    help="measure only MobileNetV2's depthwise convolutions against the read bandwidth "
                         "(kept in cnn_results.json beside the models' last run)")
    ap.add_argument("--models", nargs="+", choices=list(MODELS),
                    help="only these models (not with --write: the stored run covers every model)")
    ap.add_argument("--beside", action="store_true",
                    help="with --write, keep the stored run and store this one beside it, as the run on "
                         "this CPU's vector ISA (AVX2 or AVX-512), replacing an earlier one of that ISA")
    args = ap.parse_args()
    if args.models and args.write:
        ap.error("--write stores a run of every model; leave out --models")
    stored = os.path.join(HERE, "cnn_results.json")
    if args.depthwise:
        with open(stored) as f:
            result = json.load(f)
        result["depthwise"] = depthwise(max(args.rounds, 3), args.iters)
    else:
        rows, peak = measure(args.rounds, args.iters, args.models)
        from run_bench import machine
        result = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
                  "onnxruntime": ort.__version__, "pytorch": torch.__version__,
                  "threads": torch.get_num_threads(), "rounds": args.rounds, "iters": args.iters,
                  "avx512": has_avx512(), "peak_gflops": peak, "rows": rows}
        if not args.beside:
            result["depthwise"] = depthwise(max(args.rounds, 3), args.iters)
    if args.write:
        result = with_stored(result, stored, args.beside)
    print("\n".join(markdown(result)))
    if args.write:
        with open(stored, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
