"""Fused against --no-fusion, on the memory-bound subgraphs of docs/fusion.md at benchmark
sizes: kernels, bytes moved (weft inspect --json) and median latency (weft bench --json).
Writes bench/fusion_results.json; run_bench.py puts it in docs/benchmarks.md.

Usage: fusion_bench.py WEFT MODEL_DIR
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

from machine_name import machine

HERE = os.path.dirname(os.path.abspath(__file__))


def node(op, ins, outs, **attrs):
    from onnx import helper
    return helper.make_node(op, ins, outs, **attrs)


def const(name, values, shape=None, dtype=1):  # 1: TensorProto.FLOAT
    from onnx import helper
    values = list(np.asarray(values).ravel())
    return helper.make_tensor(name, dtype, [len(values)] if shape is None else shape, values)


def save(directory, name, nodes, x_shape, y_shape, inits=(), opset=13):
    # onnx comes from Debian's python3-onnx; run_bench.py imports this file only for markdown().
    import onnx
    from onnx import TensorProto as T
    from onnx import helper
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", T.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", T.FLOAT, y_shape)],
                              initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = os.path.join(directory, name + ".onnx")
    onnx.save(model, path)
    return path


def models(d):
    from onnx import TensorProto as T
    rng = np.random.default_rng(0)
    rows, cols = 4096, 1024
    eps = const("eps", [1e-5], [])
    yield "softmax (expanded)", save(d, "softmax_expanded", [
        node("ReduceMax", ["x"], ["m"], axes=[1]), node("Sub", ["x", "m"], ["d"]),
        node("Exp", ["d"], ["e"]), node("ReduceSum", ["e", "axes"], ["s"]),
        node("Div", ["e", "s"], ["y"])], [rows, cols], [rows, cols],
        [const("axes", [1], dtype=T.INT64)])
    yield "layernorm (expanded)", save(d, "layernorm_expanded", [
        node("ReduceMean", ["x"], ["mean"], axes=[1]), node("Sub", ["x", "mean"], ["dev"]),
        node("Mul", ["dev", "dev"], ["dev2"]), node("ReduceMean", ["dev2"], ["var"], axes=[1]),
        node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
        node("Div", ["dev", "sd"], ["n"]), node("Mul", ["n", "g"], ["ng"]),
        node("Add", ["ng", "b"], ["y"])], [rows, cols], [rows, cols],
        [eps, const("g", rng.random(cols)), const("b", rng.random(cols))])
    yield "rmsnorm", save(d, "rmsnorm", [
        node("Mul", ["x", "x"], ["sq"]), node("ReduceMean", ["sq"], ["ms"], axes=[1]),
        node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
        node("Div", ["x", "rms"], ["n"]), node("Mul", ["n", "w"], ["y"])],
        [rows, cols], [rows, cols], [eps, const("w", rng.random(cols))])
    yield "bn-train stats + normalize", save(d, "bn_train", [
        node("ReduceMean", ["x"], ["mean"], axes=[0, 2, 3]), node("Sub", ["x", "mean"], ["dev"]),
        node("Mul", ["dev", "dev"], ["dev2"]), node("ReduceMean", ["dev2"], ["var"], axes=[0, 2, 3]),
        node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
        node("Div", ["dev", "sd"], ["y"])], [32, 64, 28, 28], [32, 64, 28, 28], [eps])
    yield "bias + gelu after matmul", save(d, "bias_gelu", [
        node("MatMul", ["x", "w"], ["mm"]), node("Add", ["mm", "bias"], ["h"]),
        node("Div", ["h", "sqrt2"], ["hs"]), node("Erf", ["hs"], ["e"]),
        node("Add", ["e", "one"], ["e1"]), node("Mul", ["h", "e1"], ["he"]),
        node("Mul", ["he", "half"], ["y"])], [256, 256], [256, 1024],
        [const("w", rng.random(256 * 1024) * 0.1, [256, 1024]), const("bias", rng.random(1024)),
         const("sqrt2", [2 ** 0.5], []), const("one", [1.0], []), const("half", [0.5], [])])


def run(weft, *args):
    r = subprocess.run([weft, *args], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)


def main():
    weft, model_dir = sys.argv[1:3]
    os.makedirs(model_dir, exist_ok=True)
    rows = []
    for name, path in models(model_dir):
        fusion = run(weft, "inspect", path, "--json")["fusion"]
        fused = run(weft, "bench", path, "--json", "--iters", "20", "--warmup", "2")
        unfused = run(weft, "bench", path, "--json", "--iters", "20", "--warmup", "2",
                      "--no-fusion")
        row = {"case": name, "kernels": fusion["kernels"],
               "kernels_unfused": fusion["kernels_without_fusion"],
               "bytes": fusion["bytes_moved"], "bytes_unfused": fusion["bytes_moved_without_fusion"],
               "median_ms": fused["median_ms"], "median_ms_unfused": unfused["median_ms"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(HERE, "fusion_results.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "machine": machine(), "rows": rows}, f,
                  indent=2)


def markdown(r):
    rows = r["rows"]
    lines = ["## Fusion: fused against `--no-fusion`", "",
             f"`bench/fusion_bench.py`, measured {r['date']} on {r['machine']}. Kernel counts and bytes are "
             "exact; the machine is shared, so the medians are noisy. Bytes moved are the sum "
             "over kernels of the buffers each reads and writes, each counted once (a stitched "
             "kernel's intermediates are temporaries: with loop fusion a row of them is "
             "written and read while in cache, docs/fusion.md). Speedup = unfused median / "
             "fused median.", "",
             "| Subgraph | Kernels | Unfused | Bytes moved | Unfused | Median | Unfused | Speedup |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['kernels']} | {r['kernels_unfused']} | "
                     f"{r['bytes'] / 1e6:.1f} MB | {r['bytes_unfused'] / 1e6:.1f} MB | "
                     f"{r['median_ms']:.2f} ms | {r['median_ms_unfused']:.2f} ms | "
                     f"{r['median_ms_unfused'] / r['median_ms']:.2f} |")
    return lines + [""]


if __name__ == "__main__":
    main()
