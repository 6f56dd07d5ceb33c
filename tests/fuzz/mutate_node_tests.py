"""Mutation fuzzing of whole runs: the ONNX node tests' models (libonnx-testdata), each with one
mutation, through `weft run --fill random`. A run may fail, with exit status 1 or 2, but never
crash (a signal), hang (60 s) or exit otherwise. Mutations: an attribute's value (out of range,
huge, negative, NaN, another type), an input's dtype, rank or dims, an input name left empty,
an extra input. Models that crash are kept in OUT for a regression (tests/fuzz/regressions/run).

Usage: mutate_node_tests.py WEFT [--count N] [--seed S] [--out DIR] [--data DIR] [--device D]
(exit 1 on a crash)
CI runs 300 mutations of seed 1; longer runs with other seeds find more.
"""
import argparse
import glob
import os
import random
import shutil
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

DATA = "/usr/share/libonnx-testdata/data/node"
INTS = [-3, -2, -1, 0, 1, 2, 3, 5, 7, 64, 2**31 - 1, -2**31, 2**40]
TYPES = [TensorProto.INT32, TensorProto.FLOAT16, TensorProto.BOOL, TensorProto.DOUBLE,
         TensorProto.UINT8, TensorProto.INT64, TensorProto.FLOAT, TensorProto.BFLOAT16,
         TensorProto.INT8, TensorProto.STRING, TensorProto.COMPLEX64, 17,
         TensorProto.UINT64, 0, 99]


def mutate_attribute(rng, node):
    a = rng.choice(list(node.attribute))
    if rng.random() < 0.2:  # another type
        node.attribute.remove(a)
        node.attribute.append(helper.make_attribute(
            a.name, rng.choice([1.5, [1, 2, 3], "x", [0.5, 2.0], -1])))
    elif a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(INTS)
    elif a.type == onnx.AttributeProto.INTS:
        if a.ints and rng.random() < 0.5:
            a.ints[rng.randrange(len(a.ints))] = rng.choice(INTS)
        elif rng.random() < 0.5:
            a.ints.append(rng.choice(INTS))
        elif a.ints:
            del a.ints[-1]
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf")])
    elif a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", b"NOTSET", b"SAME_UPPER", b"VALID"])


def mutate(rng, model):
    g = model.graph
    node = rng.choice(list(g.node))
    inputs = list(g.input)
    kind = rng.randrange(6)
    if kind == 0 and node.attribute:
        mutate_attribute(rng, node)
    elif kind == 1 and inputs:  # dtype
        rng.choice(inputs).type.tensor_type.elem_type = rng.choice(TYPES)
    elif kind == 2 and inputs:  # rank or a dim
        dims = rng.choice(inputs).type.tensor_type.shape.dim
        r = rng.random()
        if dims and r < 0.3:
            del dims[rng.randrange(len(dims))]
        elif dims and r < 0.7:
            dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 2, 3, 7])
        else:
            dims.add().dim_value = rng.choice([1, 2, 3])
    elif kind == 3 and node.input:  # an input name left empty
        node.input[rng.randrange(len(node.input))] = ""
    elif kind == 4 and inputs:  # an extra input
        node.input.append(rng.choice(inputs).name)
    elif node.attribute:
        mutate_attribute(rng, node)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cpu", help="cuda: on a GPU, or the emulator with "
                    "WEFT_CUDA_EMULATOR=1")
    ap.add_argument("--data", default=DATA,
                    help="a folder of node tests (e.g. .cache/onnx-1.23.2/node for today's ops)")
    args = ap.parse_args()
    cases = sorted(glob.glob(os.path.join(args.data, "*", "model.onnx")))
    if not cases:
        print(f"SKIP: {args.data} is missing (scripts/setup.sh installs libonnx-testdata)")
        return 77
    rng = random.Random(args.seed)
    crashes = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or os.path.join(tmp, "found")
        os.makedirs(out, exist_ok=True)
        for i in range(args.count):
            source = rng.choice(cases)
            try:
                model = onnx.load(source)
            except Exception:  # external data that is not there
                continue
            if not model.graph.node:
                continue
            mutate(rng, model)
            path = os.path.join(tmp, "mutant.onnx")
            try:
                onnx.save(model, path)
            except Exception:  # a mutation protobuf cannot hold
                continue
            try:
                r = subprocess.run([args.weft, "run", path, "--fill", "random", "--device",
                                    args.device, "--output-dir", os.path.join(tmp, "out")],
                                   capture_output=True, text=True, timeout=60)
                crashed = r.returncode < 0 or r.returncode > 2
                what = f"exit {r.returncode}: {r.stderr.strip()[-200:]}"
            except subprocess.TimeoutExpired:
                crashed, what = True, "no answer in 60 s"
            if crashed:
                kept = os.path.join(out, f"{args.seed}_{i}_{os.path.basename(os.path.dirname(source))}.onnx")
                shutil.copy(path, kept)
                crashes.append(f"{kept} ({what})")
                print("CRASH", crashes[-1], flush=True)
        print(f"{args.count} mutations of seed {args.seed}: {len(crashes)} crashed")
        if crashes and not args.out:
            print("(rerun with --out DIR to keep them)")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
