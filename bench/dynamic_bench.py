"""Dynamic shapes: one compile for every shape (the Python module's dynamic_shapes=True)
against one compile per shape (specialized), and against ONNX Runtime, at three shapes per
model: memory-bound subgraphs over [N, T, 256] and attention scores [N, 4, T, T], a
TransformerEncoderLayer and a GPT-2-style block exported by PyTorch with a dynamic batch and
length, ResNet-18 over lines of text [N, 3, 48, T] (dynamic batch and width), and Hugging
Face transformers' BERT, GPT-2 and Llama (token ids [N, T]; their attention masks computed
from T). Each round times every system on
every model and shape; an entry is its lowest median over the rounds. A shape's first run is
timed apart, in the first round: for the dynamic compile (made once, at a shape not timed) it
builds no kernel, only its oneDNN calls' primitives.

Usage (bench/.venv, Weft's module on PYTHONPATH):
    PYTHONPATH=build/python bench/.venv/bin/python bench/dynamic_bench.py [--rounds 3] [--write]
--write stores bench/dynamic_results.json, which run_bench.py puts in docs/benchmarks.md.
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
import onnx
import onnxruntime as ort
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

# The dynamic compile's own kernels are what is measured: no specialized compile for shapes
# run often (docs/dynamic-shapes.md), which would otherwise serve the later rounds.
os.environ["WEFT_SPECIALIZE_AFTER"] = "0"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms  # noqa: E402
from torch_export_test import GPT2Block  # noqa: E402

SHAPES = [(1, 128), (8, 128), (4, 512)]
ITERS = 20
DIM = 256


HEADS = 4


def subgraph(name):
    """[N, T, 256] f32 through Mul, Add, then Softmax ("softmax") or LayerNormalization
    ("layernorm") or a sum over the last axis ("row_sum") or over T ("column_sum"); or
    attention scores [N, 4, T, T] scaled, then a softmax over the last axis, of extent T
    ("attention_softmax")."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(DIM).astype(np.float32), n)
             for n in ("scale", "shift", "gamma", "beta")]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["m"]), helper.make_node("Add", ["m", "shift"], ["a"])]
    shape = ["N", "T", DIM]
    out = shape
    if name == "softmax":
        nodes.append(helper.make_node("Softmax", ["a"], ["y"], axis=-1))
    elif name == "layernorm":
        nodes.append(helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["y"], axis=-1))
    elif name in ("row_sum", "column_sum"):
        axis = -1 if name == "row_sum" else 1
        inits.append(numpy_helper.from_array(np.array([axis], np.int64), "axes"))
        nodes.append(helper.make_node("ReduceSum", ["a", "axes"], ["y"], keepdims=0))
        out = ["N", "T"] if name == "row_sum" else ["N", DIM]
    else:
        inits = [numpy_helper.from_array(np.array(0.125, np.float32), "scale")]
        nodes = [helper.make_node("Mul", ["x", "scale"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
        shape = out = ["N", HEADS, "T", "T"]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def input_shape(name, n, t):
    if name == "resnet18_width":
        return (n, 3, 48, t)  # T is the width of a line of text
    return (n, HEADS, t, t) if name == "attention_softmax" else (n, t, DIM)


def exported(module, tmp, name):
    torch.manual_seed(0)
    batch, length = torch.export.Dim("batch", max=64), torch.export.Dim("length", min=32, max=1024)
    path = os.path.join(tmp, name + ".onnx")
    input_name = "src" if name == "encoder_layer" else "x"
    dynamic = {0: batch, 3 if name == "resnet18_width" else 1: length}
    torch.onnx.export(module.eval(), (torch.randn(*input_shape(name, 2, 64)),), path, external_data=False,
                      dynamic_shapes={input_name: dynamic})
    with open(path, "rb") as f:
        return f.read()


def transformers_models(tmp):
    """Hugging Face transformers models from their configs (4-layer BERT and GPT-2, a 2-layer
    Llama of width 256), exported with a dynamic batch and length: (name, model bytes)."""
    import transformers as tf
    torch.manual_seed(0)
    configs = {
        "bert": (tf.BertModel(tf.BertConfig(num_hidden_layers=4)), 2),
        "gpt2": (tf.GPT2Model(tf.GPT2Config(n_layer=4, use_cache=False)), 1),
        "llama": (tf.LlamaModel(tf.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                               num_attention_heads=8, num_key_value_heads=2, vocab_size=1000,
                                               use_cache=False)), 1),
    }
    batch, length = torch.export.Dim("batch", max=64), torch.export.Dim("length", min=2, max=512)
    for name, (model, inputs) in configs.items():
        path = os.path.join(tmp, name + ".onnx")
        example = (torch.randint(5, 1000, (2, 16)), torch.ones(2, 16, dtype=torch.long))[:inputs]
        torch.onnx.export(model.eval(), example, path, external_data=False,
                          dynamic_shapes=tuple({0: batch, 1: length} for _ in example))
        with open(path, "rb") as f:
            yield name, f.read()


def feed(session, name, n, t):
    """The inputs of model "name" at N x T: token ids (and a mask of ones) for the
    transformers models, standard normal floats for the others."""
    rng = np.random.default_rng(1)
    if name in TRANSFORMERS:
        return {i.name: (rng.integers(5, 1000, (n, t)) if k == 0 else np.ones((n, t))).astype(np.int64)
                for k, i in enumerate(session.get_inputs())}
    return {session.get_inputs()[0].name: rng.standard_normal(input_shape(name, n, t)).astype(np.float32)}


TRANSFORMERS = ("bert", "gpt2", "llama")


def models(tmp):
    yield from ((name, subgraph(name))
                for name in ("softmax", "layernorm", "row_sum", "column_sum", "attention_softmax"))
    yield "encoder_layer", exported(torch.nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, batch_first=True), tmp,
                                    "encoder_layer")
    yield "gpt_block", exported(GPT2Block(DIM, 4), tmp, "gpt_block")
    yield "resnet18_width", exported(randomize_batch_norms(torchvision.models.resnet18()), tmp, "resnet18_width")
    yield from transformers_models(tmp)


def median_ms(run):
    times = []
    for _ in range(ITERS):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def first_ms(run):
    t0 = time.perf_counter()
    run()
    return (time.perf_counter() - t0) * 1e3


def ort_session(data):
    """ONNX Runtime without spinning threads: they share this process with Weft's OpenMP
    threads, and spinning ones take the cores the other's runs need."""
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def measure(rounds):
    import weft  # only to measure: run_bench.py imports this file for markdown() alone

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        built = list(models(tmp))
    dynamics = {}  # one compile per model for every round, made at a shape not timed
    for name, data in built:
        dynamics[name] = weft.compile(data, dynamic_shapes=True)
        dynamics[name].run(feed(ort_session(data), name, 2, 16))
    for r in range(rounds):
        for name, data in built:
            dynamic = dynamics[name]
            session = ort_session(data)
            for n, t in SHAPES:
                x = feed(session, name, n, t)
                row = rows.setdefault(f"{name} {n}x{t}", {"model": name, "shape": f"{n}x{t}", "rounds": []})
                specialized = weft.compile(data)
                got = {"first_specialized_ms": first_ms(lambda: specialized.run(x)),
                       "first_dynamic_ms": first_ms(lambda: dynamic.run(x))}
                want = session.run(None, x)[0]
                err = float(np.abs(dynamic.run(x)[session.get_outputs()[0].name] - want).max())
                got.update(specialized_ms=median_ms(lambda: specialized.run(x)),
                           dynamic_ms=median_ms(lambda: dynamic.run(x)),
                           ort_ms=median_ms(lambda: session.run(None, x)), max_error_vs_ort=err)
                row["rounds"].append(got)
            assert dynamic.compiled_variants == 1, f"{name}: {dynamic.compiled_variants} dynamic compiles"
            print(f"round {r + 1}/{rounds}: {name}", flush=True)
    for row in rows.values():
        for key in ("specialized_ms", "dynamic_ms", "ort_ms"):
            row[key] = min(g[key] for g in row["rounds"])
        # A new shape: the first round's (later rounds find the dynamic call's primitives kept).
        row["first_specialized_ms"] = row["rounds"][0]["first_specialized_ms"]
        row["first_dynamic_ms"] = row["rounds"][0]["first_dynamic_ms"]
        row["max_error_vs_ort"] = max(g["max_error_vs_ort"] for g in row["rounds"])
    return list(rows.values())


def markdown(r):
    lines = ["## Dynamic shapes: one compile against one per shape", "",
             f"`bench/dynamic_bench.py`, measured {r['date']} on {r['machine']}, ONNX Runtime "
             f"{r['onnxruntime']} (in the same process, its threads not spinning), PyTorch "
             f"{r['pytorch']} (the exporter): each model compiled once by "
             "the Python module with `dynamic_shapes=True` (and `WEFT_SPECIALIZE_AFTER=0`: no specialized "
             "compile for shapes run often) and run at three shapes, against a compile per "
             "shape (specialized) and ONNX Runtime (whose kernels take any shape). Steady times are the "
             f"lowest median of {ITERS} runs over {r['rounds']} rounds; a new shape's first run is the "
             "specialized compile (kernels from the cache) against the dynamic run (its oneDNN calls build "
             "their primitives). The issue's goals: dynamic within 10% of specialized, and no slower "
             "than ONNX Runtime.", "",
             "| Model | N x T | specialized | dynamic | dynamic / specialized | ONNX Runtime | ORT / dynamic "
             "| new shape: specialized | new shape: dynamic |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        lines.append(f"| {row['model']} | {row['shape']} | {row['specialized_ms']:.3f} ms | "
                     f"{row['dynamic_ms']:.3f} ms | {row['dynamic_ms'] / row['specialized_ms']:.2f} | "
                     f"{row['ort_ms']:.3f} ms | {row['ort_ms'] / row['dynamic_ms']:.2f} | "
                     f"{row['first_specialized_ms']:.0f} ms | {row['first_dynamic_ms']:.1f} ms |")
    ratios = [row["dynamic_ms"] / row["specialized_ms"] for row in r["rows"]]
    worse = [row for row in r["rows"] if row["dynamic_ms"] / row["specialized_ms"] > 1.10]
    slower = [row for row in r["rows"] if row["ort_ms"] < row["dynamic_ms"]]
    geo = float(np.exp(np.mean(np.log(ratios))))
    lines += ["", f"Dynamic / specialized: geomean {geo:.2f}; above 1.10 on {len(worse)} of {len(ratios)}"
              + (": " + ", ".join(f"{w['model']} {w['shape']}" for w in worse) if worse else "")
              + f". Slower than ONNX Runtime on {len(slower)} of {len(ratios)}"
              + (": " + ", ".join(f"{w['model']} {w['shape']}" for w in slower) if slower else "")
              + ". Every dynamic output matched ONNX Runtime's within "
              f"{max(row['max_error_vs_ort'] for row in r['rows']):.1e}.", "",
              "A decoding loop with a KV cache (a new past length at each step) is measured in "
              "[dynamic-shapes.md](dynamic-shapes.md#transformers-exports).", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="store bench/dynamic_results.json")
    args = ap.parse_args()
    rows = measure(args.rounds)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "onnxruntime": ort.__version__, "pytorch": torch.__version__, "rounds": args.rounds,
              "rows": rows}
    print("\n".join(markdown(result)))
    if args.write:
        with open(os.path.join(HERE, "dynamic_results.json"), "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
