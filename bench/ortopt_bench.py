"""Transformers as ONNX Runtime's transformer optimizer writes them: does the model that
onnxruntime.transformers.optimizer makes (its fused com.microsoft ops: EmbedLayerNormalization,
Attention, SkipLayerNormalization, BiasGelu, FastGelu) load in Weft, give ONNX Runtime's
output, and run at least as fast as ONNX Runtime on that same model? Each model is built from
its config (random weights, eager attention, which the optimizer's patterns match), exported
by torch.onnx.export's TorchScript exporter (dynamo=False, opset 17) and optimized with the
optimizer's defaults for its model type. (GPT-2 is not here: this transformers' causal mask
uses aten::diff, which the TorchScript exporter refuses, and the optimizer fuses no
attention in the dynamo exporter's graphs.) Weft runs the optimized model and the export; ONNX
Runtime (CPU execution provider, 2 intra-op threads) the optimized model, in alternating
rounds in this process; an entry is the system's lowest median over the rounds.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/ortopt_bench.py [--rounds 3] [--write]
--write stores bench/ortopt_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import collections
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cnn_bench import timed  # noqa: E402

SEQ = 128


def models():
    """name -> (model factory, optimizer model type, heads, hidden size, what it is)."""
    import transformers as tf

    def eager(config):
        config._attn_implementation = "eager"
        return config

    return {
        "bert": (lambda: tf.BertModel(eager(tf.BertConfig())), "bert", 12, 768, f"BERT-base, {SEQ} tokens"),
        "distilbert": (lambda: tf.DistilBertModel(eager(tf.DistilBertConfig())), "bert", 12, 768,
                       f"DistilBERT, {SEQ} tokens"),
        "roberta": (lambda: tf.RobertaModel(eager(tf.RobertaConfig())), "bert", 12, 768,
                    f"RoBERTa-base, {SEQ} tokens"),
    }


class Hidden(torch.nn.Module):
    """The model's last hidden state alone, from input_ids (and attention_mask)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args):
        return self.model(*args).last_hidden_state


def measure(rounds):
    import weft
    from onnxruntime.transformers import optimizer

    rows = []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, kind, heads, hidden, what) in models().items():
            model = Hidden(make().eval())
            ids = torch.randint(5, 1000, (1, SEQ))
            args = (ids, torch.ones(1, SEQ, dtype=torch.long))
            names = ["input_ids", "attention_mask"]
            path, optimized = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_opt.onnx")
            with torch.no_grad():
                torch.onnx.export(model, args, path, input_names=names, output_names=["out"],
                                  opset_version=17, dynamo=False)
            optimizer.optimize_model(path, model_type=kind, num_heads=heads, hidden_size=hidden,
                                     opt_level=0).save_model_to_file(optimized)
            fused = collections.Counter(n.op_type for n in onnx.load(optimized).graph.node
                                        if n.domain == "com.microsoft")
            row = {"model": name, "what": what, "fused": dict(sorted(fused.items()))}
            rows.append(row)
            options = session_options(threads=2)
            session = ort.InferenceSession(optimized, options, providers=["CPUExecutionProvider"])
            feed = {n: a.numpy() for n, a in zip(names, args)}
            want = session.run(None, feed)[0]
            try:
                compiled = weft.compile(optimized, threads=2)
                exported = weft.compile(path, threads=2)
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            got = compiled.run(feed)["out"]
            row["max_diff"], row["max_abs"] = float(np.abs(got - want).max()), float(np.abs(want).max())
            for _ in range(rounds):
                row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), 20))
                row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), 20))
                row.setdefault("weft_export_round_ms", []).append(timed(lambda: exported.run(feed), 20))
            for system in ("ort", "weft", "weft_export"):
                row[f"{system}_median_ms"] = min(row[f"{system}_round_ms"])
            print(f"{name}: {fused}; max diff {row['max_diff']:.2e} of {row['max_abs']:.3g}; ONNX Runtime "
                  f"{row['ort_median_ms']:.2f} ms, Weft {row['weft_median_ms']:.2f} ms (export: "
                  f"{row['weft_export_median_ms']:.2f} ms)", flush=True)
    return rows


def markdown(r):
    lines = ["## Transformers as ONNX Runtime's optimizer writes them", "",
             f"`bench/ortopt_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: models built from "
             "their configs (random weights, eager attention), exported by `torch.onnx.export(dynamo=False)` "
             f"and optimized by ONNX Runtime {r['onnxruntime']}'s `onnxruntime.transformers.optimizer` with its "
             "defaults, which fuse them into its com.microsoft ops (Weft expands them at import: "
             "docs/onnx-versions.md). Weft runs the optimized model and the export; ONNX Runtime the optimized "
             f"model; alternating over {r['rounds']} rounds in one process, each entry the lowest median of 20 "
             "runs. The difference is Weft's against ONNX Runtime's output on the optimized model, relative "
             "to its largest magnitude. ORT / Weft above 1: Weft is faster.", "",
             "| Model | What | Fused ops | Weft vs ORT | ONNX Runtime | Weft | ORT / Weft | Weft on the export |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        fused = ", ".join(f"{k} {v}" for k, v in row["fused"].items())
        if "error" in row:
            lines.append(f"| {row['model']} | {row['what']} | {fused} | error: {row['error']} | | | | |")
            continue
        lines.append(f"| {row['model']} | {row['what']} | {fused} | {row['max_diff'] / row['max_abs']:.1e} | "
                     f"{row['ort_median_ms']:.2f} ms | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms'] / row['weft_median_ms']:.2f} | {row['weft_export_median_ms']:.2f} ms |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="store bench/ortopt_results.json")
    args = ap.parse_args()
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": ort.__version__,
         "rounds": args.rounds, "rows": measure(args.rounds)}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "ortopt_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
