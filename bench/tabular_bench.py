"""Classic machine-learning models as scikit-learn's (skl2onnx), LightGBM's and XGBoost's
exporters write them: ai.onnx.ml TreeEnsembleClassifier/Regressor and SVMClassifier, which
Weft expands at import (weft/onnx/ml_tree_ops.h, ml_svm_ops.h), against ONNX Runtime's own
kernels for those ops. The models are random, of the exporters' shapes: a random forest
(complete trees, every leaf weighing every class, NONE), gradient boosting (a tree per class
and round, SOFTMAX over base_values), a gradient-boosted regressor, and an RBF SVC (one-vs-one).
Splits are drawn at the features' quantiles so that every path is taken. One row (an online
request) and 1000 (a batch); each case checks Weft's outputs against ONNX Runtime's first. The
two alternate over the rounds in this process (2 threads each); an entry is the system's
lowest median of 50 runs.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/tabular_bench.py [--rounds 3] [--write]
--write stores bench/tabular_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import sys
from statistics import NormalDist

import numpy as np
import onnxruntime as ort
from moe_bench import timed  # the median of 50 runs over a cycle of inputs
from ort_options import session_options
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ML = "ai.onnx.ml"
FEATURES = 20


def trees(rng, count, depth, classes, per_class, samples=None):
    """Node and weight attributes of "count" trees: complete ones of "depth" levels, or, given
    "samples", grown as scikit-learn grows a forest's without a depth limit: each node splits
    its samples at a uniformly drawn point until one is left, a leaf per sample, about 30
    levels at most for 3,500 samples, and its node ids in depth-first order. Its split sends
    that share of the inputs (standard normal features) to the left, as a trained tree routes
    its data. Each leaf weighs every class (per_class) or the tree's own class, tree t % classes."""
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
                         "nodes_values", "nodes_truenodeids", "nodes_falsenodeids")}
    w = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}

    def add(t, i, leaf, true_id, false_id, split=None):
        for k, v in (("nodes_treeids", t), ("nodes_nodeids", i),
                     ("nodes_featureids", 0 if leaf else int(rng.integers(FEATURES))),
                     ("nodes_modes", "LEAF" if leaf else "BRANCH_LEQ"),
                     ("nodes_values", 0.0 if leaf else split if split is not None else float(rng.normal(0, 0.5))),
                     ("nodes_truenodeids", true_id), ("nodes_falsenodeids", false_id)):
            a[k].append(v)
        if leaf:
            for c in (range(classes) if per_class else [t % classes]):
                for k, v in (("treeids", t), ("nodeids", i), ("ids", c),
                             ("weights", float(rng.uniform(0, 1 / count) if per_class else rng.normal(0, 0.1)))):
                    w[k].append(v)

    for t in range(count):
        if samples is None:
            for i in range(2 ** (depth + 1) - 1):  # heap order: children 2i + 1 and 2i + 2
                leaf = i >= 2 ** depth - 1
                add(t, i, leaf, 0 if leaf else 2 * i + 1, 0 if leaf else 2 * i + 2)
            continue
        # Depth first: a node of n samples has 2n - 1 nodes below it, itself included.
        stack = [(samples, 0)]
        while stack:
            n, i = stack.pop()
            if n == 1:
                add(t, i, True, 0, 0)
                continue
            left = int(rng.integers(1, n))
            add(t, i, False, i + 1, i + 2 * left, NormalDist().inv_cdf(left / n))
            stack += [(n - left, i + 2 * left), (left, i + 1)]
    return a, w


def model(node, outputs):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", FEATURES])],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return m.SerializeToString()


CLASSIFIED = [("label", TensorProto.INT64), ("probabilities", TensorProto.FLOAT)]


def classifier(count, depth, classes, per_class, samples=None):
    rng = np.random.default_rng(count + depth)
    a, w = trees(rng, count, depth, classes, per_class, samples)
    extra = {} if per_class else {"post_transform": "SOFTMAX", "base_values": [0.1] * classes}
    node = helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"], domain=ML,
                            classlabels_int64s=list(range(classes)), **a,
                            **{"class_" + k: v for k, v in w.items()}, **extra)
    return model(node, CLASSIFIED)


def regressor(count, depth):
    a, w = trees(np.random.default_rng(count), count, depth, 1, False)
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["variable"], domain=ML, n_targets=1,
                            base_values=[0.5], **a, **{"target_" + k: v for k, v in w.items()})
    return model(node, [("variable", TensorProto.FLOAT)])


def svc(vectors, classes):
    rng = np.random.default_rng(vectors)
    per_class = [vectors // classes] * classes
    node = helper.make_node(
        "SVMClassifier", ["X"], ["label", "probabilities"], domain=ML, kernel_type="RBF",
        kernel_params=[1.0 / FEATURES, 0.0, 3.0], support_vectors=rng.standard_normal(vectors * FEATURES).tolist(),
        coefficients=rng.uniform(-1, 1, (classes - 1) * vectors).tolist(),
        rho=rng.uniform(-0.1, 0.1, classes * (classes - 1) // 2).tolist(), vectors_per_class=per_class,
        classlabels_ints=list(range(classes)))
    return model(node, CLASSIFIED)


CASES = {
    "Random forest, 100 trees of depth 10, 3 classes": lambda: classifier(100, 10, 3, True),
    "Random forest, 100 trees grown without a depth limit (7,000 nodes each), 3 classes":
        lambda: classifier(100, 0, 3, True, samples=3500),
    "Gradient boosting, 3 classes x 100 trees of depth 3": lambda: classifier(300, 3, 3, False),
    "Gradient-boosted regressor, 300 trees of depth 6": lambda: regressor(300, 6),
    "RBF SVC, 600 support vectors, 3 classes": lambda: svc(600, 3),
}


def measure(rounds):
    import weft
    rows = []
    for name, make in CASES.items():
        data = make()
        session = ort.InferenceSession(data, session_options(threads=2), providers=["CPUExecutionProvider"])
        compiled = weft.compile(data)
        for n in (1, 1000):
            rng = np.random.default_rng(n)
            inputs = [{"X": rng.standard_normal((n, FEATURES)).astype(np.float32)} for _ in range(8)]
            want = session.run(None, inputs[0])
            got = compiled.run(inputs[0])
            scores, scores_name = want[-1], session.get_outputs()[-1].name
            row = {"case": name, "rows": n, "max_abs": float(np.abs(scores).max()),
                   "max_diff": float(np.abs(got[scores_name] - scores).max()), "weft_ms": [], "ort_ms": []}
            if len(want) == 2:
                row["labels_equal"] = bool(np.array_equal(got["label"], want[0]))
            for _ in range(rounds):
                row["weft_ms"].append(timed(compiled.run, inputs))
                row["ort_ms"].append(timed(lambda f: session.run(None, f), inputs))
            row["weft_median_ms"], row["ort_median_ms"] = min(row["weft_ms"]), min(row["ort_ms"])
            print(row, flush=True)
            rows.append(row)
    return rows


def markdown(r):
    lines = ["## Classic machine learning on the CPU (trees and SVMs)", "",
             f"`bench/tabular_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: random models of "
             "the shapes skl2onnx, LightGBM's and XGBoost's exporters write (ai.onnx.ml "
             "TreeEnsembleClassifier/Regressor, SVMClassifier; "
             f"{FEATURES} features), which Weft expands at import, against ONNX Runtime {r['onnxruntime']}'s "
             "own kernels for those ops. One row (an online request) and 1000 (a batch), each run on "
             f"the next of 8 inputs. Alternating over {r['rounds']} rounds in one process, each entry the "
             "lowest median of 50 runs. The difference is of the scores, relative to the largest; the labels "
             "are compared for equality. ORT / Weft above 1: Weft is faster.", "",
             "| Model | Rows | Weft vs ORT | ONNX Runtime | Weft | ORT / Weft |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        check = f"{row['max_diff'] / row['max_abs']:.1e}"
        if "labels_equal" in row:
            check += ", labels " + ("equal" if row["labels_equal"] else "DIFFER")
        lines.append(f"| {row['case']} | {row['rows']} | {check} | {row['ort_median_ms']:.3f} ms | "
                     f"{row['weft_median_ms']:.3f} ms | {row['ort_median_ms'] / row['weft_median_ms']:.2f} |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="store bench/tabular_results.json")
    args = ap.parse_args()
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": ort.__version__,
         "rounds": args.rounds, "rows": measure(args.rounds)}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "tabular_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
