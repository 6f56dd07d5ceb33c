"""Half-precision models on the CPU: torchvision's models and the GPT-2-style block of
cnn_bench.py exported in f16 (model.half(), an f16 input) and in bf16 (the f16 export's weights and types rewritten to bf16, which ONNX Runtime's
CPU provider does not run), Weft beside ONNX Runtime on the same file and PyTorch eager on the
model in that type (channels-last where the input is an image, its fastest form on the CPU), at
batch 1. Weft runs f16 and bf16 convolutions, products and poolings as oneDNN's f32 calls between
Casts (graph/passes/narrow_in_f32.h), as ONNX Runtime inserts the same Casts, and bf16
convolutions and matrix products as oneDNN's bf16 calls where the CPU multiplies bf16 natively
(docs/library.md). Each model: the largest
difference of Weft's output from ONNX Runtime's (f16) and from PyTorch's f32 model (both), as a
share of the output's largest magnitude; then the systems alternate over the rounds, an entry
being the system's lowest median. Not in CI.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/half_bench.py [--rounds 3] [--write]
       [MODEL...]
--write stores bench/half_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import copy
import datetime
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from ort_options import described, session_options
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms, redraw_zero_weights  # noqa: E402
from cnn_bench import timed  # noqa: E402
from torch_export_test import GPT2Block  # noqa: E402

M = torchvision.models
image = lambda: torch.randn(1, 3, 224, 224)
# name -> (model factory, example input)
MODELS = {"resnet18": (M.resnet18, image), "resnet50": (M.resnet50, image),
          "mobilenet_v2": (M.mobilenet_v2, image), "efficientnet_b0": (M.efficientnet_b0, image),
          "convnext_tiny": (M.convnext_tiny, image), "vit_b_32": (M.vit_b_32, image),
          "gpt_block": (lambda: GPT2Block(256, 4), lambda: torch.randn(4, 128, 256))}


def as_bf16(path, to):
    """The f16 model at "path" with every f16 initializer, constant and type made bf16 (rounded
    half to even from the f16 values, which bf16 holds within its precision), saved at "to"."""
    m = onnx.load(path)
    f16, bf16 = onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16

    def convert(t):
        if t.data_type != f16:
            return
        a = onnx.numpy_helper.to_array(t).astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = ((a + 0x7FFF + ((a >> 16) & 1)) >> 16).astype(np.uint16)
        t.CopyFrom(onnx.helper.make_tensor(t.name, bf16, list(t.dims), bits.tobytes(), raw=True))

    for t in m.graph.initializer:
        convert(t)
    for n in m.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                convert(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == f16:
                a.i = bf16
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if v.type.tensor_type.elem_type == f16:
            v.type.tensor_type.elem_type = bf16
    onnx.save(m, to)


ALLOW_BF16 = "f32, allow_bf16"


def eager_runner(model, x, dtype):
    """PyTorch eager on a copy of "model" in "dtype" (ALLOW_BF16: f32 under bf16 autocast),
    channels-last for an image."""
    t = {"f16": torch.float16, "bf16": torch.bfloat16}.get(dtype, torch.float32)
    m, given = copy.deepcopy(model).to(t), x.to(t)
    if given.dim() == 4:
        m, given = m.to(memory_format=torch.channels_last), given.to(memory_format=torch.channels_last)

    def run():
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=dtype == ALLOW_BF16):
            return m(given)
    return run


def measure(names, rounds):
    import weft

    rows = []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, example = MODELS[name]
            model = redraw_zero_weights(randomize_batch_norms(make()).eval())
            x = example()
            with torch.inference_mode():
                want = model(x).numpy().astype(np.float64)
            half = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(copy.deepcopy(model).half(), (x.half(),), half, external_data=False)
            brain = os.path.join(tmp, name + "_bf16.onnx")
            as_bf16(half, brain)
            full = os.path.join(tmp, name + "_f32.onnx")
            torch.onnx.export(model, (x,), full, external_data=False)
            scale = float(np.abs(want).max())
            for dtype, path, given in (("f16", half, x.half().numpy()), ("bf16", brain, x.numpy()),
                                       (ALLOW_BF16, full, x.numpy())):
                row = {"model": name, "dtype": dtype}
                rows.append(row)
                with open(path, "rb") as f:
                    data = f.read()
                try:
                    compiled = weft.compile(data, threads=2, allow_bf16=dtype == ALLOW_BF16)
                except Exception as e:  # the row says why
                    row["error"] = str(e)[-300:]
                    print(f"{name} {dtype}: {row['error']}", flush=True)
                    continue
                feed = {onnx.load(path).graph.input[0].name: given}
                got = next(iter(compiled.run(feed).values())).astype(np.float64)
                row["vs_f32"] = float(np.abs(got - want).max()) / scale
                runners = {"weft": lambda c=compiled, f=feed: c.run(f),
                           "eager": eager_runner(model, x, dtype)}
                if dtype == "f16":
                    session = ort.InferenceSession(data, session_options(threads=2),
                                                   providers=["CPUExecutionProvider"])
                    feed_ort = {session.get_inputs()[0].name: given}
                    theirs = session.run(None, feed_ort)[0].astype(np.float64)
                    row["vs_ort"] = float(np.abs(got - theirs).max()) / scale
                    row["ort_vs_f32"] = float(np.abs(theirs - want).max()) / scale
                    runners["ort"] = lambda s=session, f=feed_ort: s.run(None, f)
                for _ in range(rounds):
                    for system, run in runners.items():
                        row.setdefault(f"{system}_round_ms", []).append(timed(run, 10))
                for system in runners:
                    row[f"{system}_median_ms"] = min(row[f"{system}_round_ms"])
                print(f"{name} {dtype}: " + ", ".join(f"{k} {v:.3g}" for k, v in row.items()
                                                      if isinstance(v, float)), flush=True)
    return rows


def markdown(r):
    lines = ["## Half-precision models on the CPU", "",
             f"`bench/half_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: torchvision's "
             "models at batch 1 (224x224) and the GPT-2-style block of the suite above (4x128x256), "
             f"random weights, exported by PyTorch {r['pytorch']} in f16 "
             "(`model.half()`), and the same files made bf16. Weft's Python module and ONNX Runtime "
             f"{r['onnxruntime']} (CPU execution provider, 2 intra-op threads, {described(r)}; it has no "
             "bf16 convolutions) on the same file, and PyTorch eager on the model in that type "
             "(channels-last for images, its fastest form here), alternating over "
             f"{r['rounds']} rounds of 10 runs; each entry is the system's lowest median. "
             "Differences: the largest, as a share of the output's largest magnitude, from ONNX "
             "Runtime's f16 output and from PyTorch's f32 model (whose weights the file rounds). "
             "Where the CPU multiplies bf16 natively (here: AMX), Weft's bf16 convolutions and "
             "matrix products are oneDNN's bf16 calls ([library.md](library.md)). Rows `f32, allow_bf16`: "
             "the f32 export compiled with `allow_bf16=True` (products of operands rounded to bf16), "
             "beside PyTorch eager on the f32 model under `torch.autocast(\"cpu\", torch.bfloat16)`.", "",
             "| Model | Type | Weft | ONNX Runtime | ORT / Weft | PyTorch eager | eager / Weft | "
             "Weft vs ORT | Weft vs f32 | ORT vs f32 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios = []
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['model']} | {row['dtype']} | fails: {row['error'][:80]} | | | | | | | |")
            continue
        w, o, e = row["weft_median_ms"], row.get("ort_median_ms"), row.get("eager_median_ms")
        if o:
            ratios.append(o / w)
        cell = lambda v, f: "n/a" if v is None else f.format(v)
        lines.append(f"| {row['model']} | {row['dtype']} | {w:.2f} ms | {cell(o, '{:.2f} ms')} | "
                     f"{cell(o and o / w, '{:.2f}')} | {cell(e, '{:.2f} ms')} | "
                     f"{cell(e and e / w, '{:.2f}')} | {cell(row.get('vs_ort'), '{:.1e}')} | "
                     f"{row['vs_f32']:.1e} | {cell(row.get('ort_vs_f32'), '{:.1e}')} |")
    geo = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    slower = [f"{row['model']} ({row['ort_median_ms'] / row['weft_median_ms']:.2f})" for row in r["rows"]
              if row.get("ort_median_ms") and row["ort_median_ms"] < row["weft_median_ms"]]
    eager = {t: [row["eager_median_ms"] / row["weft_median_ms"] for row in r["rows"]
                 if row["dtype"] == t and row.get("eager_median_ms")] for t in ("f16", "bf16", ALLOW_BF16)}
    geo_eager = {t: float(np.exp(np.mean(np.log(v)))) if v else float("nan") for t, v in eager.items()}
    lines += ["", f"Geomean ONNX Runtime / Weft over the f16 rows: **{geo:.2f}**; slower than ONNX Runtime "
              f"on {len(slower)}" + (": " + ", ".join(slower) + " (Weft rounds each convolution's "
                                   "result to f16 in a pass of its own, as the model says, where "
                                   "ONNX Runtime drops the Casts between its f32 nodes: "
                                   "[library.md](library.md))" if slower else "") + ". Geomean PyTorch eager / Weft: "
              f"**{geo_eager['f16']:.2f}** over the f16 rows, **{geo_eager['bf16']:.2f}** over the bf16 "
              f"rows, **{geo_eager[ALLOW_BF16]:.2f}** over the allow_bf16 rows. Every round is in "
              "`bench/half_results.json`.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="store bench/half_results.json")
    ap.add_argument("models", nargs="*", help="a subset (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    rows = measure(args.models or list(MODELS), args.rounds)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
              "onnxruntime": ort.__version__, "pytorch": torch.__version__, "rounds": args.rounds,
              "rows": rows}
    print("\n".join(markdown(result)))
    if args.write:
        with open(os.path.join(HERE, "half_results.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
