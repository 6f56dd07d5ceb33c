"""Quantized models on the CPU: torchvision CNNs quantized by ONNX Runtime's own tool
(quantize_static, int8 weights per output channel, activations calibrated on random images),
in both of its formats: QDQ (its default, uint8 activations), which ONNX Runtime fuses into
int8 convolutions, and QOperator (QLinearConv and its com.microsoft ops, its default int8
activations), which it runs as written. Weft runs the convolutions of both in f32 on weights
dequantized at compile time, with the activations' Q/DQ pairs as generated kernels inside the
channels-last regions (docs/library.md).

"Agrees": Weft's output against ONNX Runtime's with its graph optimizations off (the QDQ
arithmetic as written, in float), and against ONNX Runtime's int8 run, as the largest
difference in quanta of the output's scale (a rounding tie in one activation may fall the
other way and propagate: ONNX Runtime's two runs differ as much from each other). Both
systems alternate over the rounds; each entry is the system's lowest median.

Then transformers quantized by quantize_dynamic (int8 weights, activations at run time).

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/qdq_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/qdq_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from ort_options import session_options
import torch
import torchvision
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms  # noqa: E402
from cnn_bench import timed  # noqa: E402

MODELS = {
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "squeezenet1_1": torchvision.models.squeezenet1_1,
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
    "shufflenet_v2": torchvision.models.shufflenet_v2_x1_0,
}
FORMATS = {"QDQ": QuantFormat.QDQ, "QOperator": QuantFormat.QOperator}


class Images(CalibrationDataReader):
    def __init__(self, name, count=4):
        rng = np.random.default_rng(0)
        self.feeds = iter([{name: rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
                           for _ in range(count)])

    def get_next(self):
        return next(self.feeds, None)


def output_scale(model):
    """The scale of the DequantizeLinear that writes the graph's output, through reshapes and
    means (SqueezeNet's output is the spatial mean of quantized values)."""
    consts = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    n = producer.get(model.graph.output[0].name)
    while n is not None and n.op_type in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                             "ReduceMean", "GlobalAveragePool"):
        n = producer.get(n.input[0])
    return float(consts[n.input[1]]) if n is not None and n.op_type == "DequantizeLinear" else None


def measure(rounds, iters):
    import weft

    torch.manual_seed(0)
    rows, runners = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in MODELS.items():
            float_path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(randomize_batch_norms(make()).eval(), (torch.randn(1, 3, 224, 224),),
                              float_path, external_data=False)
            input_name = onnx.load(float_path).graph.input[0].name
            for fmt, quant_format in FORMATS.items():
                path = os.path.join(tmp, f"{name}_{fmt}.onnx")
                quantize_static(float_path, path, Images(input_name), quant_format=quant_format,
                                per_channel=True)
                with open(path, "rb") as f:
                    data = f.read()
                feed = {input_name: np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)}
                plain = ort.SessionOptions()
                plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                as_written = ort.InferenceSession(data, plain, providers=["CPUExecutionProvider"]).run(None, feed)[0]
                session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
                int8 = session.run(None, feed)[0]
                compiled = weft.compile(data)
                got, profile = compiled.profile(feed)
                got = next(iter(got.values()))
                scale = output_scale(onnx.load(path))
                convolutions = sum(n.op_type in ("Conv", "QLinearConv") for n in onnx.load(path).graph.node)
                rows.append({"model": name, "format": fmt, "output_scale": scale,
                             "int8_convolutions": sum("int8 convolution" in k["strategy"] for k in profile),
                             "convolutions": convolutions,
                             "weft_vs_float_quanta": float(np.abs(got - as_written).max() / scale),
                             "weft_vs_int8_quanta": float(np.abs(got - int8).max() / scale),
                             "int8_vs_float_quanta": float(np.abs(int8 - as_written).max() / scale)})
                runners[name, fmt] = {"weft": lambda c=compiled, f=feed: c.run(f),
                                      "ort": lambda s=session, f=feed: s.run(None, f)}
                print(f"quantized ({fmt}) and checked {name}", flush=True)
        for r in range(rounds):
            for row in rows:
                for system, run in runners[row["model"], row["format"]].items():
                    row.setdefault(system + "_round_ms", []).append(timed(run, iters))
            print(f"round {r + 1}/{rounds}", flush=True)
    for row in rows:
        for system in ("weft", "ort"):
            row[system + "_median_ms"] = min(row[system + "_round_ms"])
    return rows


DYNAMIC = ("bert", "distilbert", "gpt2")


def measure_dynamic(rounds, iters):
    """Hugging Face transformers (hf_bench.py's configurations, random weights) quantized by
    ONNX Runtime's quantize_dynamic (int8 weights; activations quantized at run time by
    DynamicQuantizeLinear, MatMulInteger); the largest difference from ONNX Runtime's run
    of the same quantized model, relative to the output's largest magnitude."""
    import weft
    from hf_bench import models, tensors
    from onnxruntime.quantization import QuantType, quantize_dynamic

    catalog, rows = models(), []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in DYNAMIC:
            make, inputs, what = catalog[name]
            model = make().eval()
            args = inputs(model.config)
            float_path, path = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_int8.onnx")
            with torch.no_grad():
                torch.onnx.export(model, args, float_path, external_data=False)
            quantize_dynamic(float_path, path, weight_type=QuantType.QInt8)
            names = [i.name for i in onnx.load(float_path).graph.input]
            feed = {n: a.numpy() for n, a in zip(names, args)}
            static_path = os.path.join(tmp, name + "_qdq.onnx")
            calibration = [feed] + [{n: (np.random.default_rng(s).integers(0, 1000, v.shape).astype(v.dtype)
                                         if n == "input_ids" else v) for n, v in feed.items()} for s in range(3)]
            quantize_static(float_path, static_path, Feeds(calibration), quant_format=QuantFormat.QDQ,
                            per_channel=True)
            for quantizer, qpath in (("quantize_dynamic", path), ("quantize_static (QDQ)", static_path)):
                options = session_options(threads=2)
                session = ort.InferenceSession(qpath, options, providers=["CPUExecutionProvider"])
                want = session.run(None, feed)[0]
                plain = ort.SessionOptions()
                plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                as_written = ort.InferenceSession(qpath, plain, providers=["CPUExecutionProvider"]).run(None, feed)[0]
                compiled = weft.compile(qpath, threads=2)
                got, profile = compiled.profile(feed)
                got = next(iter(got.values()))
                row = {"model": name, "what": what, "quantizer": quantizer,
                       "max_diff": float(np.abs(got - want).max()),
                       "max_diff_as_written": float(np.abs(got - as_written).max()),
                       "ort_vs_as_written": float(np.abs(want - as_written).max()),
                       "max_abs": float(np.abs(want).max()),
                       "int8_matmuls": sum("int8 matmul" in k["strategy"] for k in profile),
                       "matmuls": sum(n.op_type in ("MatMulInteger", "MatMul", "Gemm")
                                      for n in onnx.load(qpath).graph.node)}
                rows.append(row)
                for _ in range(rounds):
                    row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), iters))
                    row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), iters))
                for system in ("weft", "ort"):
                    row[system + "_median_ms"] = min(row[system + "_round_ms"])
                print(f"{name} ({quantizer}): max diff {row['max_diff']:.2e} of {row['max_abs']:.3g}; Weft "
                      f"{row['weft_median_ms']:.2f} ms, ONNX Runtime {row['ort_median_ms']:.2f} ms", flush=True)
    return rows


class Feeds(CalibrationDataReader):
    """Calibration inputs for quantize_static: the given feeds, once each."""

    def __init__(self, feeds):
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def markdown(r):
    lines = ["## Quantized models on the CPU", "",
             f"`bench/qdq_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: "
             "torchvision's models at batch 1 (224x224, random weights), quantized by ONNX Runtime "
             f"{r['onnxruntime']}'s `quantize_static` (int8 weights per output channel, activations "
             "calibrated on 4 random images), in its two formats: QDQ (its default; uint8 activations), "
             "where ONNX Runtime fuses each DequantizeLinear -> Conv -> QuantizeLinear into an int8 "
             "convolution, and QOperator (QLinearConv and ONNX Runtime's com.microsoft ops; int8 "
             "activations), which ONNX Runtime runs as written and warns is slow on x64. Weft runs "
             "both the same way: on CPUs with VNNI each convolution between a DequantizeLinear and a "
             "QuantizeLinear as a oneDNN int8 convolution (the int8 column counts them, of all the "
             "model's convolutions), the others in f32 on weights dequantized at compile time, the "
             "activations' Q/DQ pairs generated kernels between them, and a MaxPool, Reshape or "
             "Transpose between int8 calls on the 8-bit values (docs/library.md). "
             "Differences are the largest over the output, in quanta of its scale, against ONNX Runtime "
             "with its optimizations off (the QDQ arithmetic as written) and against its int8 run; ONNX "
             "Runtime's two runs differ from each other as much (a rounding tie falls either way). "
             f"The two systems alternate over {r['rounds']} rounds; each entry is the lowest median of "
             f"{r['iters']} runs. ORT / Weft above 1: Weft is faster.", "",
             "| Model | Format | int8 | Weft vs ORT as written | Weft vs ORT int8 | ORT int8 vs as written | Weft | ONNX Runtime | ORT / Weft |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios = []
    for row in r["rows"]:
        q = row["ort_median_ms"] / row["weft_median_ms"]
        ratios.append(q)
        int8 = f"{row['int8_convolutions']} of {row['convolutions']}" if "convolutions" in row else "n/a"
        lines.append(f"| {row['model']} | {row.get('format', 'QDQ')} | {int8} | {row['weft_vs_float_quanta']:.0f} | "
                     f"{row['weft_vs_int8_quanta']:.0f} | "
                     f"{row['int8_vs_float_quanta']:.0f} | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms']:.2f} ms | {q:.2f} |")
    geo = []
    for fmt in FORMATS:
        of = [q for row, q in zip(r["rows"], ratios) if row.get("format", "QDQ") == fmt]
        if of:
            geo.append(f"{fmt} **{float(np.exp(np.mean(np.log(of)))):.2f}**")
    slower = [f"{row['model']} ({row.get('format', 'QDQ')})" for row, q in zip(r["rows"], ratios) if q < 1]
    lines += ["", f"Geomean ONNX Runtime / Weft: {', '.join(geo)}; slower than ONNX Runtime on {len(slower)}"
              + (": " + ", ".join(slower) if slower else "") + ". Every round is in `bench/qdq_results.json`.", ""]
    if r.get("dynamic"):
        lines += ["Transformers quantized by ONNX Runtime's `quantize_dynamic` (int8 weights, activations "
                  "quantized at run time: DynamicQuantizeLinear, MatMulInteger) and by its `quantize_static` "
                  "(QDQ, int8 weights per channel, activations calibrated on 4 random inputs), hf_bench.py's "
                  "configurations with random weights. On CPUs with VNNI Weft runs each MatMulInteger on "
                  "constant weights, and each DequantizeLinear -> MatMul or Gemm -> QuantizeLinear on "
                  "constant weights, as oneDNN's int8 matmul; elsewhere as an f32 oneDNN matmul "
                  "(docs/library.md). The int8 column counts the products that ran as int8 calls, of all "
                  "the model's products (MatMul, MatMulInteger, Gemm): attention's products of two "
                  "activations stay f32. "
                  "Differences are the "
                  "largest over the output, relative to its largest magnitude, against ONNX Runtime's run "
                  "and its run with optimizations off (the graph as written); its two runs differ as much: "
                  "an activation's rounding falls either way, and the next quantization amplifies it.", "",
                  "| Model | What | Quantizer | int8 | Weft vs ORT | Weft vs ORT as written | ORT vs as written | Weft | ONNX Runtime | ORT / Weft |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for row in r["dynamic"]:
            rel = lambda k: row[k] / row["max_abs"]  # noqa: E731
            int8 = f"{row['int8_matmuls']} of {row['matmuls']}" if "matmuls" in row else "n/a"
            lines.append(f"| {row['model']} | {row['what']} | {row.get('quantizer', 'quantize_dynamic')} | "
                         f"{int8} | {rel('max_diff'):.1e} | "
                         f"{rel('max_diff_as_written'):.1e} | {rel('ort_vs_as_written'):.1e} | "
                         f"{row['weft_median_ms']:.2f} ms | {row['ort_median_ms']:.2f} ms | "
                         f"{row['ort_median_ms'] / row['weft_median_ms']:.2f} |")
        lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="store bench/qdq_results.json")
    args = ap.parse_args()
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "threads": torch.get_num_threads(),
         "onnxruntime": ort.__version__, "rounds": args.rounds, "iters": args.iters,
         "rows": measure(args.rounds, args.iters), "dynamic": measure_dynamic(args.rounds, args.iters)}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "qdq_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
