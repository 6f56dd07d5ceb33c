"""Torchvision's model zoo on the CPU: does each model that PyTorch exports load, match PyTorch,
and run at least as fast as ONNX Runtime? Classification, segmentation and video models beyond
cnn_bench.py's, at batch 1, with random weights (BatchNorm statistics randomized), exported by
torch.onnx.export's defaults (the dynamo exporter). Each model: Weft's output against PyTorch's
(rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude), then Weft's Python module
and ONNX Runtime (CPU execution provider, 2 intra-op threads) timed in alternating rounds in
this process; an entry is the system's lowest median over the rounds. Not in CI: exporting and
compiling the zoo takes about 10 minutes on 2 cores.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/zoo_bench.py [--rounds 2] [--write]
       [MODEL...]
--write stores bench/zoo_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from ort_options import described, session_options
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms, redraw_zero_weights  # noqa: E402
from cnn_bench import timed  # noqa: E402

M = torchvision.models
IMAGE, SEGMENT, CLIP = (1, 3, 224, 224), (1, 3, 256, 256), (1, 3, 8, 112, 112)
MODELS = {
    "alexnet": (M.alexnet, IMAGE),
    "vgg11_bn": (M.vgg11_bn, IMAGE),
    "googlenet": (lambda: M.googlenet(aux_logits=False, init_weights=True), IMAGE),
    "inception_v3": (lambda: M.inception_v3(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "densenet121": (M.densenet121, IMAGE),
    "resnet34": (M.resnet34, IMAGE),
    "resnext50_32x4d": (M.resnext50_32x4d, IMAGE),
    "regnet_x_400mf": (M.regnet_x_400mf, IMAGE),
    "regnet_y_400mf": (M.regnet_y_400mf, IMAGE),
    "mnasnet0_5": (M.mnasnet0_5, IMAGE),
    "mobilenet_v3_small": (M.mobilenet_v3_small, IMAGE),
    "mobilenet_v3_large": (M.mobilenet_v3_large, IMAGE),
    "shufflenet_v2_x0_5": (M.shufflenet_v2_x0_5, IMAGE),
    "squeezenet1_0": (M.squeezenet1_0, IMAGE),
    "efficientnet_v2_s": (M.efficientnet_v2_s, IMAGE),
    "vit_b_32": (M.vit_b_32, IMAGE),
    "swin_t": (M.swin_t, IMAGE),
    "swin_v2_t": (M.swin_v2_t, IMAGE),
    "maxvit_t": (M.maxvit_t, IMAGE),
    "fcn_resnet50": (lambda: M.segmentation.fcn_resnet50(weights_backbone=None, aux_loss=False),
                     SEGMENT),
    "deeplabv3_mobilenet_v3_large": (lambda: M.segmentation.deeplabv3_mobilenet_v3_large(
        weights_backbone=None, aux_loss=False), SEGMENT),
    "lraspp_mobilenet_v3_large": (lambda: M.segmentation.lraspp_mobilenet_v3_large(
        weights_backbone=None), SEGMENT),
    "r3d_18": (M.video.r3d_18, CLIP),
    "mc3_18": (M.video.mc3_18, CLIP),
    "r2plus1d_18": (M.video.r2plus1d_18, CLIP),
    "swin3d_t": (M.video.swin3d_t, CLIP),
    "mvit_v2_s": (M.video.mvit_v2_s, (1, 3, 16, 224, 224)),
}


def measure(names, rounds):
    import weft

    rows = []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, shape = MODELS[name]
            row = {"model": name}
            rows.append(row)
            model = redraw_zero_weights(randomize_batch_norms(make()).eval())
            x = torch.randn(*shape)
            with torch.inference_mode():
                want = model(x)
            want = (want["out"] if isinstance(want, dict) else want).numpy()
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, (x,), path, external_data=False)
            with open(path, "rb") as f:
                data = f.read()
            try:
                compiled = weft.compile(data, threads=2)
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            options = session_options(threads=2)
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
            feed = {session.get_inputs()[0].name: x.numpy()}
            got = next(iter(compiled.run(feed).values()))
            scale = float(np.abs(want).max())
            row["max_diff"] = float(np.abs(got - want).max())
            row["max_abs"] = scale
            row["matches"] = bool(np.allclose(got, want, rtol=1e-3, atol=1e-4 + 1e-5 * scale))
            first = timed(lambda: compiled.run(feed), 3)
            runs = max(3, min(20, int(2000 / first)))
            for _ in range(rounds):
                row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), runs))
                row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), runs))
            row["weft_median_ms"] = min(row["weft_round_ms"])
            row["ort_median_ms"] = min(row["ort_round_ms"])
            print(f"{name}: {'matches' if row['matches'] else 'DIFFERS'} (max diff {row['max_diff']:.2e} "
                  f"of {scale:.3g}); Weft {row['weft_median_ms']:.2f} ms, ONNX Runtime "
                  f"{row['ort_median_ms']:.2f} ms", flush=True)
    return rows


def markdown(r):
    lines = ["## Torchvision's zoo on the CPU", "",
             f"`bench/zoo_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: torchvision "
             "models beyond the suite above (classification at 224x224, Inception at 299x299, "
             "segmentation at 256x256, video clips of 8x112x112, MViT's of 16x224x224), batch 1, random "
             f"weights, exported by PyTorch {r['pytorch']} with `torch.onnx.export`'s defaults. "
             "\"Matches\": Weft's output against PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the "
             f"output's largest magnitude). Weft's Python module and ONNX Runtime {r['onnxruntime']} "
             f"(CPU execution provider, 2 intra-op threads, {described(r)}) alternate over {r['rounds']} rounds; each "
             "entry is the system's lowest median. ORT / Weft above 1: Weft is faster.", "",
             "| Model | Matches PyTorch | Max difference | Weft | ONNX Runtime | ORT / Weft |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    ratios, slower = [], []
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['model']} | fails: {row['error'][:80]} | | | | |")
            continue
        q = row["ort_median_ms"] / row["weft_median_ms"]
        ratios.append(q)
        if q < 1:
            slower.append(f"{row['model']} ({q:.2f})")
        lines.append(f"| {row['model']} | {'yes' if row['matches'] else '**no**'} | "
                     f"{row['max_diff']:.1e} of {row['max_abs']:.2g} | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms']:.2f} ms | {q:.2f} |")
    geo = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    matched = sum(1 for row in r["rows"] if row.get("matches"))
    lines += ["", f"{matched} of {len(r['rows'])} match PyTorch. Geomean ONNX Runtime / Weft **{geo:.2f}**; "
              f"slower than ONNX Runtime on {len(slower)}" + (": " + ", ".join(slower) if slower else "")
              + ". Every round is in `bench/zoo_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/zoo_results.json")
    ap.add_argument("models", nargs="*", help="a subset of the zoo (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    rows = measure(args.models or list(MODELS), args.rounds)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
              "onnxruntime": ort.__version__, "pytorch": torch.__version__, "rounds": args.rounds,
              "rows": rows}
    print("\n".join(markdown(result)))
    if args.write:
        with open(os.path.join(HERE, "zoo_results.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
