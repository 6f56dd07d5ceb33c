"""Runs that follow an idle gap, as a server's sporadic requests do, against runs back to back:
Weft's Python module (with and without its worker placement, WEFT_WORKER_AFFINITY=0) and ONNX
Runtime (CPU execution provider, 2 intra-op threads, its threads parked after each run), 2
threads each, on two small Hugging Face models (Qwen3 and LeViT, from hf_zoo.py's configs) and
torchvision's MobileNetV2 and ResNet-18, random weights, batch 1. Each system runs in a process
of its own per round (the placement knob is read once per process); the rounds alternate them.
An entry is the range of the system's medians over the rounds (the wake-up stalls this measures
come and go by process): of 20 runs each after --gap-ms of sleep, and of 50 runs back to back.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/idle_gap.py [--rounds 3]
       [--gap-ms 50] [--write]
--write stores bench/idle_gap_results.json, which run_bench.py puts in docs/benchmarks.md.
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
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODELS = ("qwen3", "levit", "mobilenet_v2", "resnet18")
SYSTEMS = {"weft": {}, "weft_unplaced": {"WEFT_WORKER_AFFINITY": "0"}, "ort": {}}


def export(directory):
    import torch
    import torchvision
    from hf_zoo import models

    zoo = models()
    torch.manual_seed(0)
    for name in MODELS:
        if name in zoo:
            make, inputs = zoo[name]
            model, args = make().eval(), inputs()
        else:
            model, args = getattr(torchvision.models, name)().eval(), (torch.randn(1, 3, 224, 224),)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, args, os.path.join(directory, name + ".onnx"), external_data=False)


def feeds(path):
    import numpy as np
    import onnx

    feed, rng = {}, np.random.default_rng(0)
    for i in onnx.load(path, load_external_data=False).graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value or 1 for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.INT64:
            feed[i.name] = rng.integers(5, 995, shape).astype(np.int64)
        else:
            feed[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


def measure(directory, system, gap_s):
    """One system's medians (ms) per model, in this process."""
    out = {}
    for name in MODELS:
        path = os.path.join(directory, name + ".onnx")
        feed = feeds(path)
        if system == "ort":
            import onnxruntime as ort
            from ort_options import session_options

            session = ort.InferenceSession(path, session_options(threads=2), providers=["CPUExecutionProvider"])
            run = lambda: session.run(None, feed)  # noqa: E731
        else:
            import weft

            compiled = weft.compile(path, threads=2)
            run = lambda: compiled.run(feed)  # noqa: E731
        for _ in range(3):
            run()
        after_gap, back_to_back = [], []
        for _ in range(20):
            time.sleep(gap_s)
            t0 = time.perf_counter()
            run()
            after_gap.append((time.perf_counter() - t0) * 1e3)
        for _ in range(50):
            t0 = time.perf_counter()
            run()
            back_to_back.append((time.perf_counter() - t0) * 1e3)
        out[name] = {"after_gap_ms": statistics.median(after_gap),
                     "back_to_back_ms": statistics.median(back_to_back)}
    return out


def markdown(r):
    lines = ["## Runs after an idle gap on the CPU", "",
             f"`bench/idle_gap.py`, measured {r['date']} on {r['machine']}, 2 threads: each model run "
             f"20 times after {r['gap_ms']} ms of sleep each, as a server's sporadic requests are, and 50 "
             "times back to back; Weft's Python module with its worker placement (the default: "
             "docs/api.md), Weft without it (WEFT_WORKER_AFFINITY=0), and ONNX Runtime "
             f"{r['onnxruntime']} (CPU execution provider, 2 intra-op threads, its threads parked after "
             "each run: bench/ort_options.py), each in a process of its own per round (Weft's with the "
             "GOMP_SPINCOUNT=10000 that `import weft` sets), alternating over "
             f"{r['rounds']} rounds; an entry is the range of the rounds' medians. Qwen3 and LeViT are "
             "hf_zoo.py's configs, MobileNetV2 and ResNet-18 torchvision's, random weights, batch 1.", "",
             "| Model | Weft after a gap | Weft back to back | Weft unplaced after a gap | "
             "Weft unplaced back to back | ORT after a gap | ORT back to back |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in r["models"]:
        cells = []
        for system in SYSTEMS:
            for key in ("after_gap_ms", "back_to_back_ms"):
                medians = [rd[system][name][key] for rd in r["round_results"]]
                cells.append(f"{min(medians):.3f}-{max(medians):.3f} ms")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Every round is in `bench/idle_gap_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gap-ms", type=float, default=50)
    ap.add_argument("--write", action="store_true", help="store bench/idle_gap_results.json")
    ap.add_argument("--measure", nargs=2, metavar=("DIR", "SYSTEM"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1], args.gap_ms / 1e3)))
        return
    import onnxruntime as ort
    from run_bench import machine

    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        export(tmp)
        for k in range(args.rounds):
            result = {}
            for system, env in SYSTEMS.items():
                child = subprocess.run(
                    [sys.executable, __file__, "--gap-ms", str(args.gap_ms), "--measure", tmp, system],
                    env=dict(os.environ, **env), check=True, capture_output=True, text=True)
                result[system] = json.loads(child.stdout.strip().splitlines()[-1])
                print(f"round {k + 1} {system}: " + ", ".join(
                    f"{m} {v['after_gap_ms']:.3f}/{v['back_to_back_ms']:.3f} ms" for m, v in result[system].items()),
                    flush=True)
            rounds.append(result)
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": ort.__version__,
         "gap_ms": args.gap_ms, "rounds": args.rounds, "models": list(MODELS), "round_results": rounds}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "idle_gap_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
