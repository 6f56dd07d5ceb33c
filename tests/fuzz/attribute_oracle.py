"""Fuzzing of attribute values against ONNX Runtime: each ONNX node test's model with one
attribute changed to another plausible value (an axis within the rank, a neighbouring int, a
permutation, a mode that other node tests use with the same attribute name, a nearby float, a
flag flipped), run by Weft and by ONNX Runtime on the test's own inputs. Where ONNX Runtime
runs, Weft must give what it gives (within the tolerance of dynamic_node_tests.py, that of
the narrowest float type a Cast makes where one does) or refuse
with an error; a crash or hang of Weft is a failure too. Unlike mutate_node_tests.py, whose
mutants are mostly invalid, these are mostly valid models, so wrong results show.

ONNX Runtime is not always the one that is right: where onnx's reference implementation
(onnx.reference) gives Weft's result, the mutant counts as ONNX Runtime's error (seed 3: float8
Casts, DFT, MaxUnpool and ConvTranspose strides, tf_crop_and_resize with nearest, Attention's
qk_matmul_output_mode), and so does it where ONNX Runtime fails the unchanged node test
(MaxUnpool with output_shape); each other DIFFERENT is a lead, to check against the spec. Weft's
refusals where ONNX Runtime ran (flags other than 0 and 1, unknown reduction modes) are listed,
not counted; so are the mutants whose result the spec leaves undefined on the test's inputs
(loss labels that are neither a class nor the mutated ignore_index). Needs onnxruntime
(scripts/requirements.txt) and the weft module on PYTHONPATH; exits 77 without onnxruntime.

Usage: attribute_oracle.py [--data DIR] [--count N] [--seed S] [--per-model M]
(exit 1 on a failure)
"""
import argparse
import json
import os
import random
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dynamic_node_tests import (DATA, expected_outputs, load_case, node_tests,  # noqa: E402
                                onnxruntime_missing, oracle_children, ort_run, reference_agrees,
                                same, tolerance_of)


# The attributes that are flags (0 or 1; Weft refuses other values): a mutant flips them.
FLAGS = {"align_corners", "allowzero", "antialias", "ceil_mode", "center_point_box",
         "count_include_pad", "detect_negative", "detect_positive", "exclude_outside",
         "exclusive", "fmod", "input_forget", "interleaved", "inverse", "is_causal", "is_test",
         "keepdims", "largest", "linear_before_reset", "noop_with_empty_axes",
         "normalize_routing_weights", "onesided", "periodic", "reverse", "saturate",
         "select_last_index", "sorted", "training_mode", "transA", "transB", "upper"}


def string_values(cases):
    """Every value each string attribute takes across the node tests, by attribute name."""
    import onnx
    values = {}
    for case in cases:
        model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
        for node in model.graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.STRING:
                    values.setdefault(a.name, set()).add(a.s)
    return {k: sorted(v) for k, v in values.items()}


def mutated(rng, model, strings):
    """The model with one attribute of one node changed, and a description; None if it has
    none to change."""
    import onnx
    nodes = [n for n in model.graph.node if n.attribute]
    if not nodes:
        return None
    node = rng.choice(nodes)
    a = rng.choice(list(node.attribute))
    rank = max((len(i.type.tensor_type.shape.dim) for i in model.graph.input), default=2)
    if a.type == onnx.AttributeProto.INT and a.name in FLAGS:
        a.i = 1 - a.i if a.i in (0, 1) else rng.choice([0, 1])
        new = a.i
    elif a.type == onnx.AttributeProto.INT:
        a.i = rng.choice(list(range(-rank, rank)) + [a.i + 1, max(a.i - 1, 0)])
        new = a.i
    elif a.type == onnx.AttributeProto.INTS and a.ints:
        ints = list(a.ints)
        if sorted(ints) == list(range(len(ints))):  # a permutation
            rng.shuffle(ints)
        else:
            k = rng.randrange(len(ints))
            ints[k] = max(ints[k] + rng.choice([-1, 1, 2]), 0 if min(ints) >= 0 else -rank)
        del a.ints[:]
        a.ints.extend(ints)
        new = ints
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([0.0, 0.5, 1.0, 2.0, a.f * 0.5, -a.f])
        new = a.f
    elif a.type == onnx.AttributeProto.STRING and len(strings.get(a.name, [])) > 1:
        a.s = rng.choice([s for s in strings[a.name] if s != a.s])
        new = a.s.decode(errors="replace")
    else:
        return None
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    del model.graph.value_info[:]
    return model, f"{node.op_type}.{a.name} = {new}"


def undefined(model, feeds):
    """Why the spec leaves the mutant's result undefined on the test's inputs, or None: a loss
    whose labels hold values that are neither a class nor its (mutated) ignore_index."""
    for node in model.graph.node:
        if node.op_type not in ("SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"):
            continue
        scores = next(iter(feeds.values()))  # [N, C, ...], the tests' first input
        labels = feeds.get(node.input[1]) if len(node.input) > 1 else None
        if labels is None or scores.ndim < 2:
            continue
        ignore = next((a.i for a in node.attribute if a.name == "ignore_index"), None)
        invalid = (labels < 0) | (labels >= scores.shape[1])
        if ignore is not None:
            invalid &= labels != ignore
        if np.any(invalid):
            return f"{node.op_type}'s labels hold {labels[invalid][0]}: neither a class nor ignore_index"
    return None


def cast_tolerance(model):
    """The tolerance of the narrowest float type the graph's Casts compute in (a Cast.to made
    float16 rounds a float64 test's values on the way)."""
    import onnx
    types = []
    for a in (a for n in model.graph.node if n.op_type == "Cast" for a in n.attribute):
        try:
            types.append(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(a.i)))
        except (KeyError, TypeError, ValueError):  # not a type (ONNX Runtime refuses it)
            pass
    return tolerance_of([np.zeros(0, t) for t in types if t.kind == "f"])


def child(case, seed, per_model, strings_path):
    """One JSON line per mutant: {"mutant", "result", "message"}."""
    import onnx
    import onnxruntime
    import weft
    with open(strings_path) as f:
        strings = {k: [s.encode() for s in v] for k, v in json.load(f).items()}
    base, feeds = load_case(case)
    if feeds is None:
        return
    # Where ONNX Runtime fails the node test itself (MaxUnpool: it reads the indices in
    # output_shape's grid, not the unpooled one's), its differences on the mutants are leads.
    expected = expected_outputs(case, [o.name for o in base.graph.output])
    theirs = ort_run(base.SerializeToString(), feeds)
    ort_fails_test = bool(expected) and theirs is not None and not all(
        k in theirs and same(theirs[k], v, tolerance_of([v])) for k, v in expected.items())
    rng = random.Random(seed)
    for _ in range(per_model):
        model = onnx.ModelProto()
        model.CopyFrom(base)
        m = mutated(rng, model, strings)
        if not m:
            return
        model, what = m
        data = model.SerializeToString()
        try:
            sess = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
            theirs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        except Exception:  # noqa: BLE001 (an invalid mutant: nothing to compare)
            continue
        print(json.dumps({"mutant": what, "result": "started", "message": ""}), flush=True)
        try:
            ours = weft.compile(data).run(feeds)
        except weft.WeftError as e:
            print(json.dumps({"mutant": what, "result": "only-ort-ran", "message": str(e)[:200]}),
                  flush=True)
            continue
        tolerance = max(tolerance_of(list(feeds.values()) + list(theirs.values())),
                        cast_tolerance(model))
        differs = [k for k, v in ours.items() if k in theirs and not same(v, theirs[k], tolerance)]
        result = "DIFFERENT" if differs else "same"
        why = undefined(model, feeds) if differs else None
        if why:
            result, differs = "undefined", [why]
        elif differs and reference_agrees(data, feeds, ours, tolerance):
            result = "ort-off"  # Weft's is onnx.reference's
        elif differs and ort_fails_test:
            result, differs = "ort-off", differs + ["ONNX Runtime fails the unchanged node test"]
        print(json.dumps({"mutant": what, "result": result, "message": ", ".join(differs)}),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--count", type=int, default=300, help="models to take; 0: all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-model", type=int, default=3, help="mutants per model")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--strings", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.seed, args.per_model, args.strings)
        return 0
    cases = node_tests(args.data)
    if not cases or onnxruntime_missing():
        print(onnxruntime_missing() or f"SKIP: {args.data} is missing (scripts/setup.sh writes it)")
        return 77
    strings_path = os.path.join(tempfile.gettempdir(), f"weft-strings-{os.getpid()}.json")
    with open(strings_path, "w") as f:
        json.dump({k: [s.decode(errors="replace") for s in v]
                   for k, v in string_values(cases).items()}, f)
    rng = random.Random(args.seed)
    if args.count:
        cases = rng.sample(cases, min(args.count, len(cases)))
    failures, refused, compared, ort_off = oracle_children(cases, lambda case: [
        sys.executable, __file__, "--child", case, "--seed", str(rng.randrange(2**32)),
        "--per-model", str(args.per_model), "--strings", strings_path])
    os.remove(strings_path)
    print(f"{len(cases)} models of seed {args.seed}: {compared} mutants as ONNX Runtime, "
          f"{len(ort_off)} as onnx.reference where ONNX Runtime differs, {len(refused)} refused "
          f"where it ran, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
