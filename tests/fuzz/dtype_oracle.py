"""Fuzzing of element types against ONNX Runtime: each ONNX node test's model with its float32
tensors made float64 or float16 (graph inputs and outputs, initializers, Constant and
ConstantOfShape values, Cast and EyeLike targets, in subgraphs too; for float64 also the
normalizations' stash_type, which ONNX Runtime's function bodies follow), run by Weft and by
ONNX Runtime on the test's inputs so converted. Where ONNX Runtime runs, Weft must give what
it gives (within a few units of the type's last place, of the output's largest value) or
refuse with an error; a crash or hang of Weft is a failure too. The node tests cover float32
far more than other types: this checks the float64 and float16 paths of lowering, the
kernels' vector forms and the library calls against another implementation.

Where ONNX Runtime has no kernel for the type (float64 LayerNormalization, most float16 ops),
onnx.reference is the oracle; its differences are leads (LEAD, not counted: it casts
out-of-range floats to 2-bit integers as 0, and runs some invalid mutants, such as a
TfIdfVectorizer declared float64). Where ONNX Runtime and Weft differ and Weft's output is
onnx.reference's (or for float16, the node test's own float32 output within 1e-2), the
mutant is a lead too (ONNX Runtime's Attention in float64 computes in float32), and so are
the errors of ONNX Runtime's that onnx.reference shares, in KNOWN. Weft's refusals where the
oracle ran are listed, not counted. Needs onnxruntime (scripts/requirements.txt) and the weft
module on PYTHONPATH; exits 77 without onnxruntime.

Usage: dtype_oracle.py [--data DIR] [--count N] [--seed S] [--types float64,float16]
(exit 1 on a failure)
"""
import argparse
import json
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dynamic_node_tests import (DATA, expected_outputs, load_case,  # noqa: E402
                                onnxruntime_missing, oracle_children, reference_agrees, same,
                                sampled_node_tests)

# Relative tolerances of results computed in these types, of the output's largest magnitude: a
# few units of the last place (float64 sums in another order; float16 rounds each op's result,
# where one implementation may keep float32 between ops); 1e-4 for other floats (a float16
# test's float32 parts).
TOLERANCE = {"float64": 1e-9, "float16": 4e-3}


# ONNX Runtime's errors that onnx.reference shares, by node test name prefix and type.
KNOWN = {
    # 0.5 x (1 + tanh(u)) cancels below x = -5: off by up to 6e-9 (Weft's x sigmoid(2u) is
    # within 7e-15 of a 50-digit mpmath).
    ("test_gelu_tanh", "float64"),
}


def tolerance_of(arrays):
    """The loosest tolerance of the floats among arrays."""
    return max([TOLERANCE.get(a.dtype.name, 1e-4) for a in arrays if a.dtype.kind == "f"],
               default=1e-9)


def retype_tensor(t, elem):
    """A float32 TensorProto made elem (in place)."""
    import onnx
    from onnx import numpy_helper
    if t.data_type != onnx.TensorProto.FLOAT:
        return
    array = numpy_helper.to_array(t).astype(onnx.helper.tensor_dtype_to_np_dtype(elem))
    t.CopyFrom(numpy_helper.from_array(array, t.name))


def retype_graph(graph, elem):
    """Every float32 of the graph made elem, in place; the number of changes."""
    import onnx
    FLOAT, DOUBLE = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    changed = 0
    for v in list(graph.input) + list(graph.output) + list(graph.value_info):
        t = v.type.tensor_type
        if v.type.HasField("tensor_type") and t.elem_type == FLOAT:
            t.elem_type = elem
            changed += 1
    for t in graph.initializer:
        changed += t.data_type == FLOAT
        retype_tensor(t, elem)
    for node in graph.node:
        normalization = node.op_type in ("LayerNormalization", "GroupNormalization",
                                         "RMSNormalization")
        if normalization and not any(a.name == "stash_type" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("stash_type", FLOAT))
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and node.op_type in ("Constant",
                                                                           "ConstantOfShape"):
                changed += a.t.data_type == FLOAT
                retype_tensor(a.t, elem)
            elif a.type == onnx.AttributeProto.INT and a.i == FLOAT and (
                    (node.op_type == "Cast" and a.name == "to")
                    or (node.op_type == "EyeLike" and a.name == "dtype")
                    or (normalization and a.name == "stash_type" and elem == DOUBLE)):
                a.i = elem  # (a normalization's statistics in float64 for float64, not float16)
                changed += 1
            elif a.type == onnx.AttributeProto.GRAPH:
                changed += retype_graph(a.g, elem)
            elif a.type == onnx.AttributeProto.GRAPHS:
                changed += sum(retype_graph(g, elem) for g in a.graphs)
    return changed


def reference_run(model_bytes, feeds):
    """onnx.reference's outputs by name, or None where it fails."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    try:
        model = onnx.ModelProto()
        model.ParseFromString(model_bytes)
        names = [o.name for o in model.graph.output]
        return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))
    except Exception:  # noqa: BLE001 (no verdict)
        return None


def child(case, types):
    """One JSON line per type: {"mutant", "result", "message"}."""
    import onnx
    import weft
    from dynamic_node_tests import ort_run
    base, feeds = load_case(case)
    if feeds is None:
        return
    expected = expected_outputs(case, [o.name for o in base.graph.output])
    case_name = os.path.basename(case)
    for name in types:
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(name))
        model = onnx.ModelProto()
        model.CopyFrom(base)
        if not retype_graph(model.graph, elem):
            return
        data = model.SerializeToString()
        given = {k: v.astype(name) if v.dtype == np.float32 else v for k, v in feeds.items()}
        theirs, oracle = ort_run(data, given), "ort"
        if theirs is None:  # no kernel of ONNX Runtime's for this type: onnx.reference's
            theirs, oracle = reference_run(data, given), "reference"
        if theirs is None:
            continue
        print(json.dumps({"mutant": name, "result": "started", "message": ""}), flush=True)
        try:
            ours = weft.compile(data).run(given)
        except weft.WeftError as e:
            print(json.dumps({"mutant": name, "result": f"only-{oracle}-ran",
                              "message": str(e)[:200]}), flush=True)
            continue
        tolerance = tolerance_of(list(given.values()) + list(theirs.values()))
        differs = [k for k, v in ours.items() if k in theirs and not same(v, theirs[k], tolerance)]
        result = "DIFFERENT" if differs else "same"
        if differs and oracle == "reference":
            result = "reference-differs"
        elif differs and any(case_name.startswith(p) and t == name for p, t in KNOWN):
            result = "known-ort-error"
        elif differs and (reference_agrees(data, given, ours, tolerance) or (
                name == "float16" and all(
                    k in expected and same(ours[k].astype(np.float32), expected[k], 1e-2)
                    for k in differs if ours[k].dtype.kind == "f"))):
            result = "ort-off"
        print(json.dumps({"mutant": name, "result": result, "message": ", ".join(differs)}),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--count", type=int, default=300, help="models to take; 0: all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--types", default="float64,float16")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    types = args.types.split(",")
    if args.child:
        child(args.child, types)
        return 0
    rng = random.Random(args.seed)
    cases = sampled_node_tests(args.data, args.count, rng)
    if not cases or onnxruntime_missing():
        print(onnxruntime_missing() or f"SKIP: {args.data} is missing (scripts/setup.sh writes it)")
        return 77
    failures, refused, compared, leads = oracle_children(
        cases, lambda case: [sys.executable, __file__, "--child", case, "--types", args.types])
    print(f"{len(cases)} models of seed {args.seed}: {compared} retyped models as the oracle, "
          f"{len(leads)} leads (LEAD), {len(refused)} refused where the oracle ran, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
