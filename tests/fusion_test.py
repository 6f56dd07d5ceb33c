"""Fusion (issue 5): the kernel counts of the memory-bound subgraphs of docs/fusion.md, and
the same outputs with and without fusion. Counts come from `weft inspect --json` (the plan),
outputs from `weft run` with and without --no-fusion, on random inputs.

Usage: fusion_test.py WEFT_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper

WEFT = None
DATA = "/usr/share/libonnx-testdata/data/node"


def save(directory, name, nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(directory, name + ".onnx")
    onnx.save(model, path)
    return path


def f32(name, shape):
    return helper.make_tensor_value_info(name, T.FLOAT, shape)


def const(name, values, shape=None, dtype=T.FLOAT):
    values = list(np.asarray(values).ravel())
    return helper.make_tensor(name, dtype, [len(values)] if shape is None else shape, values)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def subgraphs(d):
    """(name, model path, most kernels allowed)."""
    rng = np.random.default_rng(0)
    out = []
    out.append(("softmax op", save(d, "softmax", [node("Softmax", ["x"], ["y"], axis=-1)],
                                   [f32("x", [64, 128])], [f32("y", [64, 128])]), 1))
    out.append(("layernorm op", save(d, "layernorm",
                                     [node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)],
                                     [f32("x", [64, 128])], [f32("y", [64, 128])],
                                     [const("g", rng.random(128)), const("b", rng.random(128))],
                                     opset=17), 1))
    for case in sorted(os.listdir(DATA)):
        if case.endswith("_expanded") and case.startswith(("test_softmax", "test_logsoftmax",
                                                           "test_layer_normalization")):
            out.append((case, os.path.join(DATA, case, "model.onnx"), 1))
    out.append(("rmsnorm", save(d, "rmsnorm", [
        node("Mul", ["x", "x"], ["sq"]), node("ReduceMean", ["sq"], ["ms"], axes=[-1]),
        node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
        node("Div", ["x", "rms"], ["n"]), node("Mul", ["n", "w"], ["y"])],
        [f32("x", [64, 256])], [f32("y", [64, 256])],
        [const("eps", [1e-6], []), const("w", rng.random(256))]), 1))
    out.append(("bn-train stats + normalize", save(d, "bn_train", [
        node("ReduceMean", ["x"], ["mean"], axes=[0, 2, 3]), node("Sub", ["x", "mean"], ["dev"]),
        node("Mul", ["dev", "dev"], ["dev2"]), node("ReduceMean", ["dev2"], ["var"], axes=[0, 2, 3]),
        node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]),
        node("Div", ["dev", "sd"], ["y"])],
        [f32("x", [8, 16, 14, 14])], [f32("y", [8, 16, 14, 14])], [const("eps", [1e-5], [])]), 1))
    out.append(("groupnorm", save(d, "groupnorm", [
        node("Reshape", ["x", "s1"], ["xr"]), node("ReduceMean", ["xr"], ["mean"], axes=[2]),
        node("Sub", ["xr", "mean"], ["dev"]), node("Mul", ["dev", "dev"], ["dev2"]),
        node("ReduceMean", ["dev2"], ["var"], axes=[2]), node("Add", ["var", "eps"], ["ve"]),
        node("Sqrt", ["ve"], ["sd"]), node("Div", ["dev", "sd"], ["n"]),
        node("Reshape", ["n", "s0"], ["nr"]), node("Mul", ["nr", "g"], ["ng"]),
        node("Add", ["ng", "b"], ["y"])],
        [f32("x", [4, 32, 8, 8])], [f32("y", [4, 32, 8, 8])],
        [const("s1", [4, 8, -1], dtype=T.INT64), const("s0", [4, 32, 8, 8], dtype=T.INT64),
         const("eps", [1e-5], []), const("g", rng.random(32), [32, 1, 1]),
         const("b", rng.random(32), [32, 1, 1])]), 1))
    # GroupNorm as torch.onnx exports it: InstanceNormalization over the groups between two
    # Reshapes, then the per-channel affine. Expanded into primitives, it is one kernel.
    out.append(("groupnorm (InstanceNormalization)", save(d, "groupnorm_in", [
        node("Reshape", ["x", "s1"], ["xr"]),
        node("InstanceNormalization", ["xr", "ones", "zeros"], ["n"], epsilon=1e-5),
        node("Reshape", ["n", "s0"], ["nr"]), node("Mul", ["nr", "g"], ["ng"]),
        node("Add", ["ng", "b"], ["y"])],
        [f32("x", [4, 32, 8, 8])], [f32("y", [4, 32, 8, 8])],
        [const("s1", [4, 8, -1], dtype=T.INT64), const("s0", [4, 32, 8, 8], dtype=T.INT64),
         const("ones", np.ones(8)), const("zeros", np.zeros(8)),
         const("g", rng.random(32), [32, 1, 1]), const("b", rng.random(32), [32, 1, 1])]), 1))
    # Elementwise on both sides of a Reshape: one kernel over the common refinement [4, 2, 3]
    # of [4, 6] and [4, 2, 3]; none exists for [6, 4] and [4, 6], so two kernels there.
    out.append(("elementwise through a reshape", save(d, "through_reshape", [
        node("Exp", ["x"], ["e"]), node("Reshape", ["e", "s"], ["r"]),
        node("Add", ["r", "c"], ["y"])],
        [f32("x", [4, 6])], [f32("y", [4, 2, 3])],
        [const("s", [4, 2, 3], dtype=T.INT64), const("c", rng.random(2), [2, 1])]), 1))
    out.append(("elementwise through a crossing reshape", save(d, "crossing_reshape", [
        node("Relu", ["x"], ["e"]), node("Reshape", ["e", "s"], ["r"]),
        node("Mul", ["r", "c"], ["y"])],
        [f32("x", [6, 4])], [f32("y", [4, 6])],
        [const("s", [4, 6], dtype=T.INT64), const("c", rng.random(6))]), 2))
    # The library call is the MatMul; bias + GELU (erf form) after it is one kernel.
    out.append(("bias + gelu after matmul", save(d, "bias_gelu", [
        node("MatMul", ["x", "w"], ["mm"]), node("Add", ["mm", "bias"], ["h"]),
        node("Div", ["h", "sqrt2"], ["hs"]), node("Erf", ["hs"], ["e"]),
        node("Add", ["e", "one"], ["e1"]), node("Mul", ["h", "e1"], ["he"]),
        node("Mul", ["he", "half"], ["y"])],
        [f32("x", [32, 64])], [f32("y", [32, 128])],
        [const("w", rng.random(64 * 128) * 0.1, [64, 128]), const("bias", rng.random(128)),
         const("sqrt2", [2 ** 0.5], []), const("one", [1.0], []), const("half", [0.5], [])]), 1))
    # A Reshape of a Reshape of a stitched kernel's output: both bind after that kernel.
    out.append(("aliases of aliases", save(d, "aliases", [
        node("Relu", ["x"], ["r"]), node("ReduceSum", ["r", "axes"], ["s"], keepdims=1),
        node("Reshape", ["s", "s1"], ["a1"]), node("Reshape", ["a1", "s2"], ["a2"]),
        node("Add", ["a2", "one"], ["y"])],
        [f32("x", [4, 8])], [f32("y", [4])],
        [const("axes", [1], dtype=T.INT64), const("s1", [4, 1], dtype=T.INT64),
         const("s2", [4], dtype=T.INT64), const("one", [1.0], [])]), 2))
    # PyTorch's head split (nn.MultiheadAttention): the input projection's [S, B, 3 * E] seen
    # as [S, B, 3, E], moved to [3, S, B, E], q, k and v selected, each seen as
    # [S, B * H, D] and moved to [B * H, S, D] (k to [B * H, D, S]): each read straight from
    # the projection, one pass.
    s, b, h, dh = 64, 2, 4, 16
    split_nodes = [node("Reshape", ["x", "s4"], ["r"]),
                   node("Transpose", ["r"], ["t"], perm=[2, 0, 1, 3])]
    for i, (name, perm) in enumerate((("q", [1, 0, 2]), ("k", [1, 2, 0]), ("v", [1, 0, 2]))):
        split_nodes += [node("Gather", ["t", f"i{i}"], [name + "_sel"], axis=0),
                        node("Reshape", [name + "_sel", "s3"], [name + "_heads"]),
                        node("Transpose", [name + "_heads"], [name], perm=perm)]
    out.append(("PyTorch's head split", save(d, "head_split", split_nodes,
        [f32("x", [s, b, 3 * h * dh])],
        [f32("q", [b * h, s, dh]), f32("k", [b * h, dh, s]), f32("v", [b * h, s, dh])],
        [const("s4", [s, b, 3, h * dh], dtype=T.INT64), const("s3", [s, b * h, dh], dtype=T.INT64)]
        + [const(f"i{i}", [i], [], dtype=T.INT64) for i in range(3)]), 1))
    # Small independent kernels share one launch (horizontal fusion).
    out.append(("small independent reductions", save(d, "horizontal", [
        node("Relu", ["x"], ["a"]), node("ReduceSum", ["a"], ["y"], keepdims=0),
        node("Exp", ["z"], ["b"]), node("ReduceMax", ["b"], ["w"], keepdims=0)],
        [f32("x", [16, 16]), f32("z", [8, 8])], [f32("y", []), f32("w", [])], opset=12), 1))
    return out


def plan(path, *flags):
    r = subprocess.run([WEFT, "inspect", path, "--json", *flags], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def run_outputs(path, directory, *flags):
    out = os.path.join(directory, "out" + "".join(flags))
    r = subprocess.run([WEFT, "run", path, "--fill", "random", "--output-dir", out, *flags],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return {f: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}


FULL_SIZE = {"bn-train stats + normalize": 8 * 16 * 14 * 14 * 4, "groupnorm": 4 * 32 * 8 * 8 * 4,
             "groupnorm (InstanceNormalization)": 4 * 32 * 8 * 8 * 4,
             "rmsnorm": 64 * 256 * 4, "PyTorch's head split": 64 * 2 * 192 * 4}


def check_subgraphs(d):
    failures = []
    for name, path, most in subgraphs(d):
        j = plan(path)
        fusion = j["fusion"]
        kernels = [k for k in j["kernels"] if "MatMul" not in k["op_type"]]
        if len(kernels) > most:
            failures.append(f"{name}: {len(kernels)} memory-bound kernels, at most {most} "
                            f"expected: {[k['op_type'] for k in kernels]}")
        # Normalizations read their input and write their output once: no intermediate of
        # full size crosses memory (the squared deviation is inlined into its reduction).
        if name in FULL_SIZE and fusion["bytes_moved"] > 2 * FULL_SIZE[name] + 4096:
            failures.append(f"{name}: {fusion['bytes_moved']} bytes moved, more than the input "
                            f"and the output ({FULL_SIZE[name]} bytes each)")
        if fusion["bytes_moved"] > fusion["bytes_moved_without_fusion"]:
            failures.append(f"{name}: fusion moves more bytes ({fusion})")
        # --fill random is seeded: both runs see the same inputs.
        fused, unfused = run_outputs(path, d), run_outputs(path, d, "--no-fusion")
        for k in unfused:
            if not np.allclose(fused[k], unfused[k], rtol=1e-5, atol=1e-6, equal_nan=True):
                failures.append(f"{name}: output {k} differs with fusion")
        print(f"{name}: {len(kernels)} kernel(s) (at most {most}), "
              f"{fusion['kernels_without_fusion']} without fusion; bytes "
              f"{fusion['bytes_moved']} vs {fusion['bytes_moved_without_fusion']}")
    return failures


def check_encoder_layer(d):
    """A TransformerEncoderLayer: memory-bound kernels at most 1.5x its library calls."""
    try:
        import torch
    except ImportError:
        print("skipped the encoder layer: no torch")
        return []
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512,
                                             batch_first=True, activation="gelu").eval()
    path = os.path.join(d, "encoder.onnx")
    torch.onnx.export(layer, torch.randn(2, 32, 128), path, opset_version=14)
    kernels = plan(path)["kernels"]
    library = [k for k in kernels if any(op in k["op_type"] for op in ("MatMul", "Gemm"))]
    memory = [k for k in kernels if k not in library]
    print(f"encoder layer: {len(memory)} memory-bound kernels, {len(library)} library calls")
    if len(memory) > 1.5 * len(library):
        return [f"encoder layer: {len(memory)} memory-bound kernels > 1.5 x {len(library)} "
                f"library calls: {[k['op_type'] for k in memory]}"]
    return []


def check_batch_statistics(d):
    """BN-train's statistics through split_moments (per-row moments, then combined) against
    numpy in float64, on data whose mean is far from zero (where a one-pass E[x^2] - E[x]^2
    would lose the variance)."""
    path = save(d, "batch_stats", [
        node("ReduceMean", ["x"], ["mean"], axes=[0, 2, 3]), node("Sub", ["x", "mean"], ["dev"]),
        node("Mul", ["dev", "dev"], ["dev2"]),
        node("ReduceMean", ["dev2"], ["var"], axes=[0, 2, 3], keepdims=0)],
        [f32("x", [8, 16, 14, 14])], [f32("mean", [1, 16, 1, 1]), f32("var", [16])])
    r = subprocess.run([WEFT, "inspect", path, "--after", "split_moments"], capture_output=True,
                       text=True, timeout=600)
    if "ReduceMean(%x) {axes=[2, 3]" not in r.stdout:
        return [f"batch statistics: split_moments did not split the variance:\n{r.stdout}"]
    rng = np.random.default_rng(3)
    spread = 1 + np.arange(8).reshape(8, 1, 1, 1)
    x = 1000 + np.arange(16).reshape(1, 16, 1, 1) * 10 + rng.standard_normal((8, 16, 14, 14)) * spread
    x = x.astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "stats_out")
    r = subprocess.run([WEFT, "run", path, "--input", "x=" + os.path.join(d, "x.npy"),
                        "--output-dir", out], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return [f"batch statistics: weft run failed: {r.stderr}"]
    x64 = x.astype(np.float64)
    want_mean = x64.mean(axis=(0, 2, 3), keepdims=True)
    want_var = ((x64 - want_mean) ** 2).mean(axis=(0, 2, 3))
    got_mean = np.load(os.path.join(out, "mean.npy"))
    got_var = np.load(os.path.join(out, "var.npy"))
    failures = []
    if not np.allclose(got_mean, want_mean, rtol=1e-6, atol=0):
        failures.append(f"batch statistics: mean off by {np.abs(got_mean - want_mean).max()}")
    if not np.allclose(got_var, want_var, rtol=1e-5, atol=0):
        failures.append(f"batch statistics: variance off by {np.abs(got_var / want_var - 1).max()} "
                        "(relative)")
    print(f"batch statistics: variance within {np.abs(got_var / want_var - 1).max():.2e} of float64")
    return failures


def main():
    global WEFT
    WEFT = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as d:
        failures = check_subgraphs(d) + check_batch_statistics(d) + check_encoder_layer(d)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
