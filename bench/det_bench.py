"""Torchvision's detection models on the CPU: backbone, heads and postprocessing (TopK,
NonMaxSuppression, RoiAlign, the data-dependent counts between them) in one ONNX model, as
torch.onnx.export's TorchScript exporter writes them (its dynamo exporter does not export
these models' data-dependent control flow). Random weights, score thresholds at 0 so every
image keeps its full quota of detections; 320x320 images (the models resize them: the
ResNet-50 ones to 800x800 inside the graph).

The outputs are checked on 4 images (one random image and 3 noisy copies). "Equal to ORT":
images on which Weft's outputs equal ONNX Runtime's (rtol 1e-4, atol 1e-4 of the largest
magnitude); "Same scores": images on which the sorted score lists agree within 1e-3 (random
weights make the class scores nearly uniform, ~1/91 each, so detections whose scores differ
by less than the two systems' rounding swap places, and the last of a quota may differ).
Every timed run is on an image no run has seen, as in deployment: the stages after the
data-dependent ops compile once, over symbols, and Mask and Keypoint R-CNN's pasting loops
(whose shapes the boxes decide) run on the host.
Weft's Python module
(its ONNX Runtime-compatible InferenceSession) and ONNX Runtime (CPU execution provider, 2
intra-op threads) alternate over rounds; an entry is the system's lowest median. Not in CI.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/det_bench.py [--rounds 2] [--write]
       [MODEL...]
--write stores bench/det_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
from ort_options import session_options
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
D = torchvision.models.detection
MODELS = {
    "ssdlite320_mobilenet_v3_large": (D.ssdlite320_mobilenet_v3_large, {"score_thresh": 0.0}),
    "ssd300_vgg16": (D.ssd300_vgg16, {"score_thresh": 0.0}),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (D.fasterrcnn_mobilenet_v3_large_320_fpn,
                                              {"box_score_thresh": 0.0}),
    "fasterrcnn_resnet50_fpn": (D.fasterrcnn_resnet50_fpn, {"box_score_thresh": 0.0}),
    "retinanet_resnet50_fpn": (D.retinanet_resnet50_fpn, {"score_thresh": 0.0}),
    "fcos_resnet50_fpn": (D.fcos_resnet50_fpn, {"score_thresh": 0.0}),
    "maskrcnn_resnet50_fpn": (D.maskrcnn_resnet50_fpn, {"box_score_thresh": 0.0}),
    "keypointrcnn_resnet50_fpn": (D.keypointrcnn_resnet50_fpn, {"box_score_thresh": 0.0}),
}


def fresh_median(run, images, name, iters, seed):
    """The median over "iters" runs, each on an image no run has seen (a noisy copy of one of
    "images"), as in deployment: a stage compiled per content cannot come from a cache."""
    rng = np.random.default_rng(seed)
    times = []
    for i in range(iters + 1):  # the first is a warm-up
        x = np.clip(images[i % len(images)] + rng.normal(0, 0.01, images[0].shape), 0, 1)
        feed = {name: x.astype(np.float32)}
        t0 = time.perf_counter()
        run(feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[1:])


def agree(a, b):
    """(equal, same scores) of two output lists; scores are the 1-D float output."""
    if [x.shape for x in a] != [y.shape for y in b]:
        return False, False
    equal = all(np.allclose(x, y, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(x).max(initial=0))))
                for x, y in zip(a, b))
    scores = [i for i, x in enumerate(a) if x.ndim == 1 and x.dtype.kind == "f"]
    same = bool(scores) and all(np.allclose(np.sort(a[i]), np.sort(b[i]), rtol=1e-3, atol=1e-7)
                                for i in scores)
    return equal, same or equal


def measure(names, rounds):
    import weft

    rows = []
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    image = rng.random((3, 320, 320)).astype(np.float32)
    images = [image] + [np.clip(image + rng.normal(0, 0.05 * k, image.shape), 0, 1).astype(np.float32)
                        for k in (1, 2, 3)]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, kw = MODELS[name]
            row = {"model": name}
            rows.append(row)
            model = make(weights=None, weights_backbone=None, **kw).eval()
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, ([torch.from_numpy(image)],), path, dynamo=False, opset_version=18)
            options = session_options(threads=2)
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            feeds = [{session.get_inputs()[0].name: x} for x in images]
            try:
                t0 = time.perf_counter()
                wopts = weft.SessionOptions()
                wopts.intra_op_num_threads = 2
                compiled = weft.InferenceSession(path, wopts)
                got = [compiled.run(None, feed) for feed in feeds]
                row["weft_first_s"] = time.perf_counter() - t0
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            want = [session.run(None, feed) for feed in feeds]
            checks = [agree(w, g) for w, g in zip(want, got)]
            row["images"] = len(images)
            row["equal"] = sum(e for e, _ in checks)
            row["same_scores"] = sum(s for _, s in checks)
            row["detections"] = int(want[0][0].shape[0])
            name_in = session.get_inputs()[0].name
            first = fresh_median(lambda f: session.run(None, f), images, name_in, 2, 99)
            iters = max(4, min(20, int(4000 / first)))
            for r in range(rounds):  # both systems see the same new images in a round
                row.setdefault("weft_round_ms", []).append(
                    fresh_median(lambda f: compiled.run(None, f), images, name_in, iters, r))
                row.setdefault("ort_round_ms", []).append(
                    fresh_median(lambda f: session.run(None, f), images, name_in, iters, r))
            row["weft_median_ms"] = min(row["weft_round_ms"])
            row["ort_median_ms"] = min(row["ort_round_ms"])
            print(f"{name}: equal {row['equal']}/{len(images)}, same scores {row['same_scores']}/"
                  f"{len(images)}; Weft {row['weft_median_ms']:.1f} ms, ONNX Runtime "
                  f"{row['ort_median_ms']:.1f} ms (first runs {row['weft_first_s']:.1f} s)", flush=True)
    return rows


def markdown(r):
    lines = ["## Torchvision's detection models on the CPU", "",
             f"`bench/det_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: torchvision's "
             "detection models with their postprocessing (TopK, NonMaxSuppression, RoiAlign and the "
             "data-dependent counts between them), random weights and score thresholds of 0, exported "
             f"by PyTorch {r['pytorch']}'s TorchScript exporter (opset 18) for a 320x320 image (the "
             "ResNet-50 models resize it to 800x800 in the graph). Every timed run is on an image no run "
             "has seen, as in deployment: the stages after the data-dependent ops compile once, over "
             "symbols, and Mask and Keypoint R-CNN's pasting loops (whose shapes the boxes decide) run "
             "on the host ([data-dependent-shapes.md](data-dependent-shapes.md#detection-models)). "
             "\"Equal\": of 4 images, those on which Weft's outputs equal ONNX Runtime's; "
             "\"same scores\": those whose sorted scores agree within 1e-3 (random weights make the "
             "class scores nearly uniform, so detections whose scores differ by less than the "
             "rounding swap places, and the last of a quota may differ). Weft's "
             f"`InferenceSession` and ONNX Runtime {r['onnxruntime']} (CPU execution provider, 2 "
             f"intra-op threads) alternate over {r['rounds']} rounds; each entry is the system's lowest "
             "median. \"First runs\": Weft's compile and its first run of each image (the stages after "
             "the data-dependent ops compile there). ORT / Weft above 1: Weft is faster.", "",
             "| Model | Detections | Equal to ORT | Same scores | Weft | ONNX Runtime | ORT / Weft | Weft's first runs |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios, slower = [], []
    for row in r["rows"]:
        if "error" in row:
            why = row["error"].split(".onnx: ")[-1]  # without the temporary path
            lines.append(f"| {row['model']} | fails: {why[:90]} | | | | | | |")
            continue
        q = row["ort_median_ms"] / row["weft_median_ms"]
        ratios.append(q)
        if q < 1:
            slower.append(f"{row['model']} ({q:.2f})")
        lines.append(f"| {row['model']} | {row['detections']} | {row['equal']} of {row['images']} | "
                     f"{row['same_scores']} of {row['images']} | {row['weft_median_ms']:.1f} ms | "
                     f"{row['ort_median_ms']:.1f} ms | {q:.2f} | {row['weft_first_s']:.1f} s |")
    geo = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    if r.get("note"):
        lines += ["", r["note"][0].upper() + r["note"][1:] + "."]
    lines += ["", f"Geomean ONNX Runtime / Weft **{geo:.2f}**; slower than ONNX Runtime on {len(slower)}"
              + (": " + ", ".join(slower) if slower else "") + ". Every round is in "
              "`bench/det_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/det_results.json")
    ap.add_argument("models", nargs="*", help="a subset (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    rows = measure(args.models or list(MODELS), args.rounds)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "onnxruntime": ort.__version__, "pytorch": torch.__version__, "rounds": args.rounds,
              "rows": rows}
    print("\n".join(markdown(result)))
    if args.write:
        with open(os.path.join(HERE, "det_results.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
