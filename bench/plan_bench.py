"""Planning time on a synthetic graph of about 10,000 nodes (issue: the fusion planner plans
near-linearly). The graph repeats a transformer-like block of elementwise chains and
reductions written as primitives: LayerNorm, bias + GELU, softmax and a residual add, about
21 nodes each, on [32, 256] activations. Prints each compile phase (weft's info log) of one
fused compile (weft inspect --fusion, which generates no code); "planning" is lowering plus
fusion plus the buffer plan.

Usage: plan_bench.py WEFT [--nodes N ...] [--keep DIR] [--write]
--write stores bench/plan_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from machine_name import machine


def block(i, x):
    """One block reading "x"; returns (nodes, initializers, output name)."""
    from onnx import TensorProto, helper
    p = f"b{i}_"
    n = lambda op, ins, outs, **a: helper.make_node(op, [p + s if not s.startswith("@") else s[1:] for s in ins],
                                                  [p + s for s in outs], name=p + outs[0], **a)
    inits = [helper.make_tensor(p + "gamma", TensorProto.FLOAT, [256], np.full(256, 1.0 + 0.001 * i, np.float32)),
             helper.make_tensor(p + "beta", TensorProto.FLOAT, [256], np.full(256, 0.01, np.float32)),
             helper.make_tensor(p + "bias", TensorProto.FLOAT, [256], np.full(256, 0.02, np.float32)),
             helper.make_tensor(p + "eps", TensorProto.FLOAT, [], [1e-5]),
             helper.make_tensor(p + "half", TensorProto.FLOAT, [], [0.5]),
             helper.make_tensor(p + "one", TensorProto.FLOAT, [], [1.0]),
             helper.make_tensor(p + "rsqrt2", TensorProto.FLOAT, [], [0.70710678])]
    nodes = [
        # LayerNorm as primitives
        n("ReduceMean", ["@" + x], ["mean"], axes=[-1]),
        n("Sub", ["@" + x, "mean"], ["d"]),
        n("Mul", ["d", "d"], ["d2"]),
        n("ReduceMean", ["d2"], ["var"], axes=[-1]),
        n("Add", ["var", "eps"], ["ve"]),
        n("Sqrt", ["ve"], ["sd"]),
        n("Div", ["d", "sd"], ["nrm"]),
        n("Mul", ["nrm", "gamma"], ["sc"]),
        n("Add", ["sc", "beta"], ["ln"]),
        # bias + GELU (erf form)
        n("Add", ["ln", "bias"], ["h"]),
        n("Mul", ["h", "rsqrt2"], ["hs"]),
        n("Erf", ["hs"], ["e"]),
        n("Add", ["e", "one"], ["e1"]),
        n("Mul", ["h", "e1"], ["he"]),
        n("Mul", ["he", "half"], ["g"]),
        # softmax as primitives
        n("ReduceMax", ["g"], ["mx"], axes=[-1]),
        n("Sub", ["g", "mx"], ["gs"]),
        n("Exp", ["gs"], ["ex"]),
        n("ReduceSum", ["ex"], ["sm"], axes=[-1]),
        n("Div", ["ex", "sm"], ["p"]),
        # residual
        n("Add", ["p", "@" + x], ["out"]),
    ]
    return nodes, inits, p + "out"


def make_model(path, target_nodes):
    import onnx
    from onnx import TensorProto, helper
    nodes, inits, x = [], [], "x"
    i = 0
    while len(nodes) < target_nodes:
        bn, bi, x = block(i, x)
        nodes += bn
        inits += bi
        i += 1
    graph = helper.make_graph(nodes, "plan_bench", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 256])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [32, 256])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 8
    onnx.save(model, path)
    return len(nodes)


def measure(weft, directory, target):
    """Phases of one fused compile of a synthetic model of about "target" nodes."""
    path = os.path.join(directory, f"plan_{target}.onnx")
    count = make_model(path, target)
    env = dict(os.environ, WEFT_LOG="info")
    r = subprocess.run([weft, "inspect", "--fusion", path], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"weft inspect failed: {r.stderr.strip()[-2000:]}")
    # The first compile is the fused one (the report compiles again without fusion).
    line = next(l for l in r.stderr.splitlines() if re.search(r"\] compiled ", l))
    phases = {}
    for part in line.split(".onnx:", 1)[1].split(","):
        name, ms, _ = part.strip().rsplit(" ", 2)
        phases[name] = float(ms)
    kernels = re.search(r"== kernels ==\n(\d+) kernels", r.stdout)
    return {"nodes": count, "kernels": int(kernels.group(1)) if kernels else None, "phases_ms": phases,
            "planning_ms": sum(phases.get(k, 0) for k in ("lower", "fuse", "plan")),
            "import_to_plan_ms": sum(phases.values())}


def markdown(r):
    lines = ["## Fusion planning time", "",
             f"`bench/plan_bench.py`, measured {r['date']} on {r['machine']}: a synthetic graph of LayerNorm, bias + GELU, "
             "softmax and residual blocks written as primitives (about 21 nodes each, [32, 256] "
             "activations), planned by `weft inspect --fusion` (no code generated). Planning is "
             "lowering plus fusion plus the buffer plan; import to plan adds parsing, the graph "
             "passes and specialization. Goal: 10,000 nodes planned in under 2 s.", "",
             "| Nodes | Kernels | Graph passes | Specialize | Lower | Fuse | Plan | Planning | Import to plan |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        p = row["phases_ms"]
        lines.append(f"| {row['nodes']} | {row['kernels']} | {p.get('graph passes', 0):.0f} ms | "
                     f"{p.get('specialize', 0):.0f} ms | {p.get('lower', 0):.0f} ms | {p.get('fuse', 0):.0f} ms | "
                     f"{p.get('plan', 0):.0f} ms | **{row['planning_ms'] / 1000:.2f} s** | "
                     f"{row['import_to_plan_ms'] / 1000:.2f} s |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("--nodes", type=int, nargs="+", default=[2500, 5000, 10000, 20000])
    ap.add_argument("--keep", help="write the models here instead of a temporary directory")
    ap.add_argument("--write", action="store_true", help="write bench/plan_results.json")
    a = ap.parse_args()
    directory = a.keep or tempfile.mkdtemp(prefix="weft-plan-")
    os.makedirs(directory, exist_ok=True)
    rows = []
    for n in a.nodes:
        row = measure(a.weft, directory, n)
        rows.append(row)
        print(f"{row['nodes']} nodes, {row['kernels']} kernels: " +
              ", ".join(f"{k} {v:.0f} ms" for k, v in row["phases_ms"].items()) +
              f"; planning {row['planning_ms'] / 1000:.2f} s, import to plan {row['import_to_plan_ms'] / 1000:.2f} s")
    if a.write:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan_results.json"), "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
