"""Fuzzing of dynamic-shape compiles: each ONNX node test's model with every input dim made a
symbol of its own, compiled once with dynamic_shapes=True, then run on the test's inputs and on
inputs with one dim changed (to 0, 1, one more or less, or larger). Each run must give what a
compile for that run's shapes gives with the same inputs (equal outputs, or an error from
both), and never crash or hang. Each model runs in a child process of this script.

With --device cuda the compile over symbols is for CUDA and its runs are device-resident
(inputs as CUDA tensors, outputs Weft's DeviceArrays), against the CPU's per-shape compile: on a
GPU (PyTorch's tensors), or on the emulator with WEFT_CUDA_EMULATOR=1 (numpy arrays described
as CUDA tensors). A model whose input values decide shapes runs from host arrays there.

With --oracle ort each run's per-shape result is also compared with ONNX Runtime's (where it
is installed: bench/.venv), which catches what both of Weft's compiles get wrong alike (a
LayerNormalization scale of [1, 5] for [4, 5] was read past its end by both). Where ONNX Runtime
refuses or fails and Weft runs, that is not counted; nor where it differs and onnx's reference
implementation (onnx.reference) gives Weft's result (ONNX Runtime is the one that is off in
some: its float8 Casts, cubic Resize with align_corners, DFT's precision). It runs some inputs
that Weft refuses as the spec does (repeated reduction axes, Concat parts that differ off the
axis where one is empty, a loss's target of another shape): each ORT-DIFFERENT or ONLY-ORT-RAN
is a lead to check.

Usage: dynamic_node_tests.py [--data DIR] [--count N] [--seed S] [--runs R] [--device cuda]
                             [--oracle ort]
(needs the weft module on PYTHONPATH; exit 1 on a failure)
ctest runs 400 models of seed 1 (about 2 min); `--count 0` takes all 1,800 (about 8 min).
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
DATA = os.path.join(os.path.dirname(__file__), "..", "..", ".cache", "onnx-1.23.2", "node")
# Ops whose outputs are random: two compiles need not agree.
RANDOM = ("bernoulli", "dropout", "random")


def load_tensor(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


# Relative tolerances of results computed in these dtypes (inputs' or outputs'): a unit of their
# last place or two, of the value or of the output's largest (where a sum cancels), as CUDA
# and the CPU round on other paths; 1e-4 otherwise.
TOLERANCES = {"float16": 2e-3, "bfloat16": 1.6e-2}


def expected_outputs(case, names):
    """The node test's first data set's outputs by name."""
    sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    try:
        outs = [load_tensor(p) for p in sorted(glob.glob(os.path.join(sets[0], "output_*.pb")))]
    except (ValueError, TypeError, IndexError):
        return {}
    return dict(zip(names, outs)) if len(outs) == len(names) else {}


def tolerance_of(arrays):
    return max([TOLERANCES.get(np.asarray(a).dtype.name, 1e-4) for a in arrays], default=1e-4)


def same(a, b, tolerance=1e-4):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "biuOSU":
        return np.array_equal(a, b)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64  # (float8, bfloat16 too)
    scale = np.abs(b.astype(wide)).max(initial=0) if tolerance > 1e-4 else 0.1
    scale = scale if np.isfinite(scale) else 0.1
    return np.allclose(a.astype(wide), b.astype(wide), rtol=tolerance, atol=tolerance * scale,
                       equal_nan=True)


def changed_input(rng, feeds):
    """The feeds with one input's dim changed, and a description; None when none can be."""
    names = [n for n, v in feeds.items() if v.ndim > 0 and v.dtype.kind in "fiub"]
    if not names:
        return None
    name = rng.choice(names)
    v = feeds[name]
    shape = list(v.shape)
    axis = rng.randrange(v.ndim)
    shape[axis] = rng.choice([0, 1, shape[axis] + 1, max(shape[axis] - 1, 0), 3 * shape[axis] + 2])
    nrng = np.random.default_rng(rng.randrange(2**32))
    if v.dtype.kind == "f":
        new = nrng.standard_normal(shape).astype(v.dtype)
    elif v.dtype == bool:
        new = nrng.integers(0, 2, shape).astype(bool)
    else:  # small integers: valid as indices, axes and counts more often than not
        new = nrng.integers(0, 3, shape).astype(v.dtype)
    return dict(feeds, **{name: new}), f"{name} {shape}"


def plain_dtype(dtype):
    """Does __cuda_array_interface__'s typestr name this dtype (not ml_dtypes' types)?"""
    try:
        return np.dtype(dtype.str) == dtype
    except TypeError:
        return False


def device_run(model, feeds):
    """A device-resident run of a CUDA compile: its outputs as numpy arrays. A model whose
    input values decide shapes (or outputs' shapes) runs from host arrays."""
    import weft
    from emulated_cuda import EmulatedCudaArray, read_device
    emulated = os.environ.get("WEFT_CUDA_EMULATOR") == "1"
    if emulated and not all(plain_dtype(v.dtype) for v in feeds.values()):
        return model.run(feeds)  # bfloat16, float8: no __cuda_array_interface__ type
    if emulated:
        given = {n: EmulatedCudaArray(v) for n, v in feeds.items()}
    else:
        import torch
        given = {n: torch.from_numpy(np.array(v, order="C")).cuda() for n, v in feeds.items()}
    try:
        out = model.run(given)
    except weft.WeftError as e:
        if "host tensors" not in str(e):
            raise
        return model.run(feeds)
    host = {}
    for name, value in out.items():
        if isinstance(value, np.ndarray):  # a model without inputs runs on the host
            host[name] = value
            continue
        if not emulated:
            import torch
            host[name] = torch.from_dlpack(value).cpu().numpy()
            continue
        host[name] = read_device(value)
    return host


def ort_run(model_bytes, feeds):
    """ONNX Runtime's outputs by name, or None where it refuses or fails."""
    import onnxruntime
    try:
        sess = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(None, feeds)))
    except Exception:  # noqa: BLE001 (a refusal of ONNX Runtime's is no finding here)
        return None


def onnxruntime_missing():
    """The oracles' SKIP line (their exit 77) where onnxruntime is not installed, else None."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "SKIP: onnxruntime is not installed (scripts/requirements.txt)"
    return None


def node_tests(data):
    """The node tests' folders under "data", without those of random ops."""
    return sorted(c for c in glob.glob(os.path.join(data, "test_*"))
                  if not any(r in os.path.basename(c) for r in RANDOM))


def sampled_node_tests(data, count, rng):
    """"count" of the node tests under "data" drawn by rng (all where count is 0); empty
    where "data" is missing."""
    cases = node_tests(data)
    return rng.sample(cases, min(count, len(cases))) if count and cases else cases


def load_case(case):
    """A node test's model and its first data set's inputs by name; the inputs are None where
    there are none, or where one is not a tensor (a sequence, an optional, strings)."""
    import onnx
    model = onnx.load(os.path.join(case, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    if not sets:
        return model, None
    try:
        feeds = [load_tensor(p) for p in sorted(glob.glob(os.path.join(sets[0], "input_*.pb")))]
    except (ValueError, TypeError):  # a sequence or an optional: not a tensor
        return model, None
    if len(feeds) != len(inputs) or any(f.dtype == object for f in feeds):
        return model, None
    return model, dict(zip(inputs, feeds))


def reference_agrees(model_bytes, feeds, ours, tolerance):
    """Does onnx's reference implementation (onnx.reference, NumPy) give Weft's outputs? For the
    leads where ONNX Runtime and Weft differ: False where it fails or differs."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    try:
        model = onnx.ModelProto()
        model.ParseFromString(model_bytes)
        names = [o.name for o in model.graph.output]
        theirs = dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))
    except Exception:  # noqa: BLE001 (no verdict)
        return False
    return all(k not in theirs or same(v, theirs[k], tolerance) for k, v in ours.items())


def oracle_children(cases, command_of):
    """Runs each case's child (its command, command_of(case)), whose JSON lines are {"mutant",
    "result", "message"} with "started" before each run of Weft's, as attribute_oracle.py's and
    dtype_oracle.py's are. Returns (failures, refusals of Weft's where the oracle ran, mutants as
    the oracle, leads: where onnx.reference or the node test sides with Weft against ONNX
    Runtime, where onnx.reference, the oracle where ONNX Runtime has no kernel, differs, or
    where the spec leaves the mutant's result undefined)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    failures, refused, compared, leads = [], [], 0, []
    for case in cases:
        name = os.path.basename(case)
        try:
            p = subprocess.run(command_of(case), capture_output=True, text=True, timeout=300,
                               env=env)
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: no answer in 300 s")
            continue
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode != 0 and lines and lines[-1]["result"] == "started":
            failures.append(f"{name}: {lines[-1]['mutant']}: exit {p.returncode} in Weft's run: "
                            f"{p.stderr.strip()[-300:]}")
        for x in lines:
            if x["result"] == "DIFFERENT":
                failures.append(f"{name}: {x['mutant']}: DIFFERENT ({x['message']})")
            elif x["result"].startswith("only-"):  # only-ort-ran, only-reference-ran
                refused.append(f"{name}: {x['mutant']}: {x['result']}: {x['message']}")
            elif x["result"] in ("ort-off", "reference-differs", "known-ort-error", "undefined"):
                leads.append(f"{name}: {x['mutant']}: {x['result']}: {x['message']}")
            compared += x["result"] == "same"
    for r in leads:
        print("LEAD", r)
    for r in refused:
        print("REFUSED", r)
    for f in failures:
        print("FAIL", f)
    return failures, refused, compared, leads


def child(case, seed, runs, device, oracle=None):
    """Prints one JSON line per run: {"run", "result"}, result one of same, both-failed,
    DIFFERENT, ONLY-DYNAMIC-RAN, ONLY-PER-SHAPE-RAN (with the messages); with an oracle, also
    ORT-DIFFERENT (Weft's per-shape result against ONNX Runtime's) or ONLY-ORT-RAN."""
    import onnx
    import weft
    model, feeds = load_case(case)
    if feeds is None:
        return
    per_shape = onnx.ModelProto()  # no input shape: compiles for the first run's
    per_shape.CopyFrom(model)
    for k, (i, j) in enumerate(zip(model.graph.input, per_shape.graph.input)):
        if i.name in feeds and i.type.tensor_type.HasField("shape"):
            for n, d in enumerate(i.type.tensor_type.shape.dim):
                d.ClearField("dim_value")
                d.dim_param = f"s{k}_{n}"
            j.type.tensor_type.ClearField("shape")
    for m in (model, per_shape):
        for o in m.graph.output:
            o.type.tensor_type.ClearField("shape")
        del m.graph.value_info[:]
    try:
        dynamic = weft.compile(model.SerializeToString(), dynamic_shapes=True, device=device)
    except weft.WeftError as e:  # a clean refusal: not what this fuzzer looks for
        print(json.dumps({"run": "compile", "result": "refused", "message": str(e)[:200]}))
        return
    rng = random.Random(seed)
    run_feeds = [(feeds, "the test's inputs")]
    for _ in range(runs):
        changed = changed_input(rng, feeds)
        if changed:
            run_feeds.append(changed)
    for f, what in run_feeds:
        print(json.dumps({"run": what, "result": "started"}), flush=True)
        results = []
        runs_of = (lambda: device_run(dynamic, f) if device == "cuda" else dynamic.run(f),
                   lambda: weft.compile(per_shape.SerializeToString()).run(f))
        for run in runs_of:
            try:
                results.append(("ran", run()))
            except weft.WeftError as e:
                results.append(("failed", str(e)[:200]))
        (a, ra), (b, rb) = results
        if a == b == "failed":
            result = "both-failed"
        elif a == b:
            tolerance = tolerance_of(list(f.values()) + list(rb.values()))
            result = "same" if ra.keys() == rb.keys() and all(
                same(ra[k], rb[k], tolerance) for k in ra) else "DIFFERENT"
        else:
            result = "ONLY-DYNAMIC-RAN" if a == "ran" else "ONLY-PER-SHAPE-RAN"
        message = rb if b == "failed" else ra if a == "failed" else ""
        print(json.dumps({"run": what, "result": result, "message": message}), flush=True)
        if oracle == "ort" and result in ("same", "both-failed"):
            print(json.dumps({"run": what + " (ONNX Runtime)", "result": "started"}), flush=True)
            theirs = ort_run(per_shape.SerializeToString(), f)
            if theirs is None:
                continue
            if b == "failed":
                result, message = "ONLY-ORT-RAN", rb
            else:
                tolerance = tolerance_of(list(f.values()) + list(theirs.values()))
                result = "same-as-ort" if all(
                    k not in theirs or same(v, theirs[k], tolerance) for k, v in rb.items()
                ) else "ORT-DIFFERENT"
                message = ""
                if result == "ORT-DIFFERENT" and reference_agrees(
                        per_shape.SerializeToString(), f, rb, tolerance):
                    result = "ort-off"  # Weft's is onnx.reference's
            print(json.dumps({"run": what + " (ONNX Runtime)", "result": result,
                              "message": message}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--count", type=int, default=400, help="models to take; 0: all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=4, help="runs with a changed dim per model")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--oracle", choices=["ort"], help="compare with ONNX Runtime too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.seed, args.runs, args.device, args.oracle)
        return 0
    rng = random.Random(args.seed)
    cases = sampled_node_tests(args.data, args.count, rng)
    if not cases:
        print(f"SKIP: {args.data} is missing (scripts/setup.sh writes it)")
        return 77
    env = dict(os.environ, OMP_NUM_THREADS="1")
    failures = []
    for case in cases:
        name = os.path.basename(case)
        cmd = [sys.executable, __file__, "--child", case, "--seed", str(rng.randrange(2**32)),
               "--runs", str(args.runs), "--device", args.device]
        if args.oracle:
            cmd += ["--oracle", args.oracle]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
            lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
            ort_crashed = lines and lines[-1]["run"].endswith("(ONNX Runtime)")
            if p.returncode != 0 and not ort_crashed:  # (ONNX Runtime aborts on some inputs)
                last = lines[-1]["run"] if lines else "compile"
                failures.append(f"{name}: {last}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
            failures += [f"{name}: {x['run']}: {x['result']} {x['message']}" for x in lines
                         if x["result"].isupper()]
        except subprocess.TimeoutExpired:
            failures.append(f"{name}: no answer in 300 s")
        except json.JSONDecodeError as e:
            failures.append(f"{name}: unreadable output ({e})")
    for f in failures:
        print("FAIL", f)
    print(f"{len(cases)} models of seed {args.seed}, {args.runs} changed runs each: "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
