"""The CUDA backend without a GPU: generated CUDA kernels run in the emulator
(WEFT_CUDA_EMULATOR=1, docs/cuda-strategies.md) and must match NumPy and the CPU.

1. Reductions big enough to use every strategy's multi-block path (ALL over the grid with
   atomics and the last-block protocol, COLUMN with R split across blocks, group-per-row at
   G = 1, 4, 32 and a block), in f32, f64, i32 and f16, with NaN and -inf where they matter,
   with and without --deterministic.
2. The ONNX backend cases of the reduction and normalization families (and a sample of
   elementwise ones), through weft test-onnx --device cuda, as on the CPU.
3. --deterministic kernels have no atomics; without a driver, --device cuda says so (exit 2).
4. weft tune --device cuda: records of CUDA options that later compiles on the device take.

Usage: cuda_emulator_test.py WEFT_BINARY
With WEFT_CUDA_EMULATOR=0 in the environment, parts 1 and 2 (and the library calls) run on the
real CUDA device instead: the same checks, on a GPU.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "conformance"))
import run_conformance as conformance  # noqa: E402

FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def model(node, x_type, shape, out_shape, path, opset=13):
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, shape)],
                              [helper.make_tensor_value_info("y", x_type, out_shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)


def run(weft, path, x, env, *flags):
    with tempfile.TemporaryDirectory() as out:
        np.save(os.path.join(out, "x.npy"), x)
        r = subprocess.run([weft, "run", path, "--input", "x=" + os.path.join(out, "x.npy"),
                            "--output-dir", out, *flags], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return None, r.stderr.strip()
        return np.load(os.path.join(out, "y.npy")), ""


QUADS = {"WEFT_CUDA_COLUMN_VECTOR": "4"}


def reductions(weft, env, tmp):
    rng = np.random.default_rng(7)
    # (name, op, dtype, shape, axes, numpy reference, values)
    cases = [
        ("all sum f32 (multi-block, atomics)", "ReduceSum", np.float32, (64, 1000), None),
        ("all max f32 with NaN", "ReduceMax", np.float32, (64, 1000), None),
        ("all min f32, all negative", "ReduceMin", np.float32, (8, 3000), None),
        ("all max f32, all -inf", "ReduceMax", np.float32, (4, 2500), None),
        ("all sum f64", "ReduceSum", np.float64, (50, 999), None),
        ("all max f64", "ReduceMax", np.float64, (50, 999), None),
        ("all sum i32", "ReduceSum", np.int32, (70, 1000), None),
        ("all max i32", "ReduceMax", np.int32, (70, 1000), None),
        ("all prod f32 (no atomic: partials)", "ReduceProd", np.float32, (40, 100), None),
        ("column sum f32 (R split)", "ReduceSum", np.float32, (4096, 40), [0]),
        ("column max f32 (R split)", "ReduceMax", np.float32, (4096, 40), [0]),
        ("column max f32, all negative (R split)", "ReduceMax", np.float32, (4096, 40), [0]),
        ("column min f64 (R split)", "ReduceMin", np.float64, (2048, 33), [0]),
        ("column sum f16 (no split)", "ReduceSum", np.float16, (512, 70), [0]),
        ("row sum, 3 per row (G=1)", "ReduceSum", np.float32, (5000, 3), [1]),
        ("row max, 40 per row (G=4)", "ReduceMax", np.float32, (600, 40), [1]),
        ("row sum, 300 per row (G=32)", "ReduceSum", np.float32, (300, 300), [1]),
        ("row mean, 3000 per row (block)", "ReduceMean", np.float32, (20, 3000), [1]),
        ("middle sum", "ReduceSum", np.float32, (6, 500, 40), [1]),
        ("row sum, 3 rows of 40000 (split across blocks)", "ReduceSum", np.float32, (3, 40000),
         [1]),
        ("row max, 2 rows of 20000, all negative (split)", "ReduceMax", np.float32, (2, 20000),
         [1]),
        ("row mean, 4 rows of 17000 f64 (split, epilogue)", "ReduceMean", np.float64,
         (4, 17000), [1]),
        # float4 loads: a remainder after the quads; rows whose starts are not 16-byte aligned
        # (every other row of 1001, rows of 40001 split across blocks) take scalar loads.
        ("all sum f32, 64002 elements (quads, then a remainder)", "ReduceSum", np.float32,
         (2, 32001), None),
        ("row sum, 1001 per row (block; rows off alignment)", "ReduceSum", np.float32,
         (50, 1001), [1]),
        ("row max, 3 rows of 40001 (split; rows off alignment)", "ReduceMax", np.float32,
         (3, 40001), [1]),
        # COLUMN by quads (WEFT_CUDA_COLUMN_VECTOR=4): float4 loads of 4 columns a lane where
        # the quad is whole and aligned; rows of 37 and 30 are off alignment every other row,
        # and their last quad is partial; f64 keeps a column a lane.
        ("column sum f32 by quads (R split)", "ReduceSum", np.float32, (4096, 40), [0], QUADS),
        ("column max f32 with NaN by quads", "ReduceMax", np.float32, (3000, 100), [0], QUADS),
        ("column sum f32 by quads, 37 columns", "ReduceSum", np.float32, (1000, 37), [0], QUADS),
        ("column min f32 by quads, 30 columns, all negative", "ReduceMin", np.float32, (700, 30),
         [0], QUADS),
        ("column min f64, quads asked (none: f64)", "ReduceMin", np.float64, (2048, 33), [0],
         QUADS),
    ]
    for name, op, dtype, shape, axes, *knobs in cases:
        case_env = dict(env, **(knobs[0] if knobs else {}))
        if dtype in (np.int32,):
            x = rng.integers(-1000, 1000, size=shape).astype(dtype)
        elif op == "ReduceProd":
            x = rng.uniform(0.99, 1.01, size=shape).astype(dtype)
        else:
            x = rng.standard_normal(shape).astype(dtype)
        if "NaN" in name:
            x.flat[12345] = np.nan
        if "all negative" in name:
            x = -np.abs(x) - 1
        if "-inf" in name:
            x[:] = -np.inf
        onnx_type = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
                     np.int32: TensorProto.INT32, np.float16: TensorProto.FLOAT16}[dtype]
        attrs = {"keepdims": 0}
        if axes is not None:
            attrs["axes"] = axes
        out_shape = [] if axes is None else [d for i, d in enumerate(shape) if i not in axes]
        node = helper.make_node(op, ["x"], ["y"], **attrs)
        path = os.path.join(tmp, re.sub(r"\W+", "_", name) + ".onnx")
        model(node, onnx_type, list(shape), out_shape, path, opset=11)  # axes as an attribute
        fn = {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min,
              "ReduceMean": np.mean, "ReduceProd": np.prod}[op]
        want = fn(x.astype(np.float64) if dtype != np.int32 else x.astype(np.int64),
                  axis=None if axes is None else tuple(axes))
        for flags in ([], ["--deterministic"]):
            got, err = run(weft, path, x, case_env, "--device", "cuda", *flags)
            label = f"{name}{' ' + flags[0] if flags else ''}"
            if got is None:
                check(False, f"{label}: {err}")
                continue
            if dtype == np.int32:
                ok = np.array_equal(got.astype(np.int64), want.astype(np.int32).astype(np.int64))
            else:
                tol = 2e-2 if dtype == np.float16 else 1e-4
                ok = np.allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 10,
                                 equal_nan=True)
            check(ok, label)
        if name.startswith(("all sum f32", "column sum f32")):
            a, _ = run(weft, path, x, case_env, "--device", "cuda", "--deterministic")
            b, _ = run(weft, path, x, case_env, "--device", "cuda", "--deterministic")
            check(a is not None and b is not None and a.tobytes() == b.tobytes(),
                  f"{name}: --deterministic is bitwise stable")


def attention_softmax(weft, env, tmp):
    """Softmax(x * scale + causal mask) over rows of 128, and its log: the pattern that gave
    zeros, inf and NaN on an H100 while the emulator passed (a row's statistics, stored by one
    lane and loaded by the others, in a buffer marked __restrict__)."""
    shape = [2, 3, 64, 128]
    mask = np.triu(np.full((64, 128), -np.inf, np.float32), k=65)
    for op in ("Softmax", "LogSoftmax"):
        nodes = [helper.make_node("Mul", ["x", "scale"], ["s"]),
                 helper.make_node("Add", ["s", "mask"], ["m"]),
                 helper.make_node(op, ["m"], ["y"], axis=-1)]
        inits = [helper.make_tensor("scale", TensorProto.FLOAT, [], [0.125]),
                 helper.make_tensor("mask", TensorProto.FLOAT, mask.shape, mask.ravel())]
        graph = helper.make_graph(nodes, "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                                  inits)
        path = os.path.join(tmp, op + "_attention.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
        m = x.astype(np.float64) * 0.125 + mask
        e = np.exp(m - m.max(axis=-1, keepdims=True))
        want = e / e.sum(axis=-1, keepdims=True)
        if op == "LogSoftmax":
            with np.errstate(divide="ignore"):
                want = np.log(want)
        got, err = run(weft, path, x, env, "--device", "cuda")
        ok = got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-6)
        check(ok, f"attention {op} {shape} with scale and causal mask {err}")


def row_norms(weft, env, tmp):
    """LayerNormalization and an RMSNorm over rows of 1024: held in registers by quads (float4
    loads and stores of x and y, CudaOptions::vector), with y an output only stored (an H200
    run refused its __restrict__ when the alignment check counted as a load)."""
    f = TensorProto.FLOAT
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 1024)).astype(np.float32)
    g = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    x64 = x.astype(np.float64)
    centered = x64 - x64.mean(axis=-1, keepdims=True)
    layer = centered / np.sqrt((centered ** 2).mean(axis=-1, keepdims=True) + 1e-5) * g + b
    rms = x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-6) * g
    two = helper.make_tensor("two", f, [], [2.0])
    eps = helper.make_tensor("eps", f, [], [1e-6])
    cases = {
        "LayerNormalization": ([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"],
                                                 axis=-1, epsilon=1e-5)], layer, 17),
        "RMSNorm": ([helper.make_node("Pow", ["x", "two"], ["p"]),
                     helper.make_node("ReduceMean", ["p"], ["m"], axes=[-1], keepdims=1),
                     helper.make_node("Add", ["m", "eps"], ["e"]),
                     helper.make_node("Sqrt", ["e"], ["s"]),
                     helper.make_node("Div", ["x", "s"], ["n"]),
                     helper.make_node("Mul", ["n", "g"], ["y"])], rms, 13),
    }
    # Rows that start off 16-byte alignment (a slice of [64, 1025] from column 1): the quads'
    # alignment checks fail, and the element-by-element paths run.
    wide = np.concatenate([rng.standard_normal((64, 1)).astype(np.float32), x], axis=1)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    starts = helper.make_tensor("starts", TensorProto.INT64, [1], [1])
    ends = helper.make_tensor("ends", TensorProto.INT64, [1], [1025])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    cases["Softmax of a slice"] = ([helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"]),
                                    helper.make_node("Softmax", ["s"], ["y"], axis=-1)],
                                   e / e.sum(axis=-1, keepdims=True), 13)
    for name, (nodes, want, opset) in cases.items():
        sliced = name == "Softmax of a slice"
        inits = [helper.make_tensor("g", f, [1024], g), helper.make_tensor("b", f, [1024], b),
                 two, eps] + ([starts, ends, axes] if sliced else [])
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", f, [64, 1025 if sliced else 1024])],
            [helper.make_tensor_value_info("y", f, [64, 1024])], inits)
        path = os.path.join(tmp, name + "_rows.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
        got, err = run(weft, path, wide if sliced else x, env, "--device", "cuda")
        ok = got is not None and np.allclose(got, want, rtol=1e-4, atol=1e-4)
        check(ok, f"{name} over rows of 1024 (by quads) {err}")


def library_calls(weft, env, tmp):
    """MatMul, Gemm and Conv as library calls (Device::gemm and Device::conv: cuBLAS and cuDNN
    on a GPU, the emulator's loops here): operand binding, batch strides, transposes, alpha,
    beta, C's broadcasts, and the convolutions' windows, groups and bias."""
    rng = np.random.default_rng(3)
    f = TensorProto.FLOAT

    def case(label, node, inputs, want, library=True):
        path = os.path.join(tmp, re.sub(r"\W+", "_", label) + ".onnx")
        infos = [helper.make_tensor_value_info(n, f, list(v.shape)) for n, v in inputs.items()]
        graph = helper.make_graph([node], "g", infos,
                                  [helper.make_tensor_value_info("y", f, list(want.shape))])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        with tempfile.TemporaryDirectory() as out:
            args = []
            for n, v in inputs.items():
                np.save(os.path.join(out, n + ".npy"), v)
                args += ["--input", f"{n}={os.path.join(out, n + '.npy')}"]
            r = subprocess.run([weft, "run", path, *args, "--device", "cuda", "--output-dir", out],
                               capture_output=True, text=True, env=dict(env, WEFT_LOG="debug"))
            called = "library call: node" in r.stderr
            ok = r.returncode == 0 and called == library and np.allclose(
                np.load(os.path.join(out, "y.npy")), want, rtol=1e-4, atol=1e-4)
            check(ok, f"{label}{'' if r.returncode == 0 else ': ' + r.stderr.strip()[-300:]}")

    x = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    a, b = x(2, 3, 5, 7), x(7, 4)
    case("MatMul batched x 2-D", helper.make_node("MatMul", ["a", "b"], ["y"]), {"a": a, "b": b},
         a @ b)
    a, b = x(3, 5, 7), x(3, 7, 6)
    case("MatMul batched x batched", helper.make_node("MatMul", ["a", "b"], ["y"]),
         {"a": a, "b": b}, a @ b)
    a, b = x(5, 7), x(2, 7, 6)
    case("MatMul 2-D x batched", helper.make_node("MatMul", ["a", "b"], ["y"]), {"a": a, "b": b},
         a @ b)
    a, b = x(7, 5), x(6, 7)
    for label, c in (("no C", None), ("C [N]", x(6)), ("C [M, 1]", x(5, 1)), ("C [M, N]", x(5, 6))):
        inputs = {"a": a, "b": b} | ({"c": c} if c is not None else {})
        node = helper.make_node("Gemm", list(inputs), ["y"], transA=1, transB=1, alpha=0.5,
                                beta=2.0)
        want = 0.5 * a.T @ b.T + (2.0 * c if c is not None else 0)
        case(f"Gemm A^T B^T alpha beta, {label}", node, inputs, want)

    import torch  # the reference convolution (python3-torch)
    conv = lambda x, w, b, **k: torch.nn.functional.conv2d(  # noqa: E731
        torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b),
        **k).numpy()
    x_, w_, b_ = x(2, 6, 9, 11), x(4, 3, 3, 2), x(4)
    case("Conv 2-D, pads, strides, dilations, 2 groups, bias",
         helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 2, 1, 2], strides=[2, 1],
                          dilations=[1, 2], group=2),
         {"x": x_, "w": w_, "b": b_},
         conv(x_, w_, b_, padding=(1, 2), stride=(2, 1), dilation=(1, 2), groups=2))
    x_, w_ = x(1, 5, 13), x(7, 5, 3)
    case("Conv 1-D, no bias", helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1]),
         {"x": x_, "w": w_}, conv(x_[:, :, None, :], w_[:, :, None, :], None,
                                  padding=(0, 1))[:, :, 0, :])
    x_, w_ = x(1, 4, 8, 8), x(4, 1, 3, 3)
    case("Conv depthwise", helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], group=4),
         {"x": x_, "w": w_}, conv(x_, w_, None, padding=1, groups=4))
    xp = np.pad(x_, ((0, 0), (0, 0), (0, 1), (0, 1)))
    case("Conv with asymmetric pads: generated code",
         helper.make_node("Conv", ["x", "w"], ["y"], pads=[0, 0, 1, 1], group=4),
         {"x": x_, "w": w_}, conv(xp, w_, None, groups=4), library=False)


def half_library_calls(weft, env, tmp):
    """An f16 model's Conv and MatMul as the same library calls, in f32 between Casts
    (graph/passes/narrow_in_f32): TF32 (exact on f16 values, fp32 sums) without allow_tf32,
    against a float64 reference of the f16 values rounded once to f16."""
    rng = np.random.default_rng(5)
    h = TensorProto.FLOAT16
    w = (rng.standard_normal((8, 4, 3, 3)) / 3).astype(np.float16)
    b = (rng.standard_normal(8) / 3).astype(np.float16)
    m = (rng.standard_normal((8 * 6 * 6, 10)) / 10).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "m"], ["y"])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(m, "m"),
             helper.make_tensor("shape", TensorProto.INT64, [2], [1, 8 * 6 * 6])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", h, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", h, [1, 10])], inits)
    path = os.path.join(tmp, "half_calls.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float16)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    c = sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + 6, j:j + 6], w[:, :, i, j].astype(np.float64))
            for i in range(3) for j in range(3)) + b.astype(np.float64).reshape(1, -1, 1, 1)
    c = c.astype(np.float16).astype(np.float64)  # the Conv's f16 result
    want = (c.reshape(1, -1) @ m.astype(np.float64)).astype(np.float16).astype(np.float64)
    y, err = run(weft, path, x, env, "--device", "cuda")
    ok = y is not None and np.allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3)
    check(ok, "f16 Conv and MatMul as library calls" + (f": {err[-300:]}" if err else ""))
    r = subprocess.run([weft, "bench", path, "--device", "cuda", "--fill", "random", "--iters", "1",
                        "--kernels"], capture_output=True, text=True, env=env)
    calls = re.findall(r"(convolution|GEMM) [^\n]*\(TF32\)", r.stdout)
    check(r.returncode == 0 and len(calls) == 2,
          f"the f16 model's convolution and GEMM take TF32 (found {calls})")


def backend_cases(weft, env):
    families = re.compile(r"^test_(reduce|softmax|logsoftmax|layer_norm|argm|mean_variance|"
                          r"instancenorm|hardmax|batchnorm)")
    sample = re.compile(r"^test_(add_bcast|transpose_all_permutations_0|sigmoid|where_example|"
                        r"expand_dim_changed|gather_0|concat_3d_axis_1|slice$|tile$|pow_bcast_array)")
    expected = conformance.load_expected()
    cases = [c for c in conformance.cases() if c.startswith("node/")
             and (families.match(c[5:]) or sample.match(c[5:]))
             and not any(p.match(c) for p, _ in expected)]
    results = conformance.run_all(weft, cases, os.cpu_count() or 2, ["--device", "cuda"])
    failed = {c: why for c, why in results.items() if why}
    for c, why in sorted(failed.items()):
        print(f"FAIL {c}: {why[:500]}")
    check(not failed and len(results) > 100,
          f"{len(results) - len(failed)} of {len(results)} backend cases pass on the emulated "
          f"CUDA device")


def atomics_by_mode(weft, env, tmp):
    """ALL combines blocks with atomics by default, and with partials when deterministic."""
    path = os.path.join(tmp, "all.onnx")
    model(helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0), TensorProto.FLOAT, [4096, 64],
          [], path, opset=11)
    x = np.ones((4096, 64), np.float32)
    for flags, atomics in (([], True), (["--deterministic"], False)):
        with tempfile.TemporaryDirectory() as d:
            got, err = run(weft, path, x, dict(env, WEFT_DUMP_DIR=d), "--device", "cuda", *flags)
            sources = [open(os.path.join(r, f)).read() for r, _, fs in os.walk(d) for f in fs
                       if f == "kernels.cu"]
            # The kernels only, after the prelude (which defines the atomic helpers).
            body = "".join(s.split("// kernel ", 1)[-1] for s in sources)
            ok = (got is not None and float(got) == x.size and bool(sources) and
                  ("weft_atomic_add(" in body) == atomics and ("weft_part_" in body) != atomics)
            check(ok, f"ALL sum {' '.join(flags) or 'by default'}: "
                      f"{'atomics' if atomics else 'partials, no atomics'} {err}")


def tune(weft, env, tmp):
    """weft tune --device cuda: each kernel's CUDA options timed on the device, the fastest in
    the tuning cache under the device's name; later compiles there take the record (kernels.txt
    says "(tuned)", and a record's options change the code), compute the same, and ignore a
    damaged record."""
    import json
    f = TensorProto.FLOAT
    path = os.path.join(tmp, "tune_softmax.onnx")
    model(helper.make_node("Softmax", ["x"], ["y"], axis=-1), f, [64, 1024], [64, 1024], path)
    x = np.random.default_rng(9).standard_normal((64, 1024)).astype(np.float32)
    tuned, plain = os.path.join(tmp, "tuned-cache"), os.path.join(tmp, "plain-cache")
    cli = lambda cache, *args: subprocess.run([weft, *args], capture_output=True, text=True,
                                              env=dict(env, WEFT_CACHE_DIR=cache))
    r = cli(tuned, "tune", path, "--device", "cuda", "--seconds-per-candidate", "0.01")
    progress = re.search(r"\[task 1/1\] best \d+\.\d+ ms .* \| (\d+)/\1 candidates", r.stdout)
    check(r.returncode == 0 and progress is not None and int(progress.group(1)) > 1,
          f"tune --device cuda measures several candidates {r.stderr.strip()[-300:]}")
    records = sorted(os.listdir(os.path.join(tuned, "tuning"))) if r.returncode == 0 else []
    record = {}
    if len(records) == 1:
        with open(os.path.join(tuned, "tuning", records[0])) as fh:
            record = json.load(fh)
    check("lane_elements=" in record.get("cuda", "") and record.get("candidates", 0) > 1,
          f"tune --device cuda stores one record of CUDA options: {record}")
    if not record:
        return

    def dump(cache, name):
        d = os.path.join(tmp, name)
        r = cli(cache, "inspect", path, "--device", "cuda", "--dump-dir", d)
        if r.returncode != 0:
            return "", r.stderr
        with open(os.path.join(d, "kernels.txt")) as a, open(os.path.join(d, "kernels.cu")) as b:
            return a.read(), b.read()

    check("(tuned)" in dump(tuned, "d-tuned")[0] and "(tuned)" not in dump(plain, "d-plain")[0],
          "a compile on the tuned device reads the record")
    outputs = {}
    for cache in (tuned, plain):
        got, err = run(weft, path, x, dict(env, WEFT_CACHE_DIR=cache), "--device", "cuda")
        outputs[cache] = got
    check(all(v is not None for v in outputs.values()) and
          np.allclose(outputs[tuned], outputs[plain], rtol=1e-5, atol=1e-7),
          "the tuned kernel computes what the untuned one does")
    # The record's options are what the code is generated with: 1024 threads a SM asked of
    # the row's function shows in its launch bounds.
    record_path = os.path.join(tuned, "tuning", records[0])
    with open(record_path, "w") as fh:
        json.dump(dict(record, cuda="resident_threads=1024"), fh)
    _, code = dump(tuned, "d-forced")
    _, plain_code = dump(plain, "d-plain2")
    bounds = re.findall(r"__launch_bounds__\((\d+), (\d+)\)", code)
    check(bounds and all(int(b) * int(n) == 1024 for b, n in bounds) and code != plain_code,
          f"a record's options set the generated code: {bounds}")
    with open(record_path, "w") as fh:
        fh.write('{"cuda": "unroll=3"}')
    check("(tuned)" not in dump(tuned, "d-damaged")[0], "a damaged record is ignored")


def bench_device_resident(weft, env, tmp):
    """weft bench --device cuda times device-resident runs apart from the host copies."""
    import json
    path = os.path.join(tmp, "all.onnx")
    r = subprocess.run([weft, "bench", path, "--device", "cuda", "--fill", "ones", "--iters", "3",
                        "--json"], capture_output=True, text=True, env=env)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("device_resident_median_ms", -1) > 0 and "transfer_ms" in j,
          f"bench --device cuda reports device-resident latency and transfers {r.stderr.strip()}")
    # Over symbolic dims (--dynamic-shapes), the device-resident outputs take the run's shapes.
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 16])
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g", [vi("x")],
                              [vi("y")])
    dynamic = os.path.join(tmp, "dynamic_softmax.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), dynamic)
    r = subprocess.run([weft, "bench", dynamic, "--device", "cuda", "--dynamic-shapes", "--shapes",
                        "N=5", "--iters", "2", "--json"], capture_output=True, text=True, env=env)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    check(j.get("device_resident_median_ms", -1) > 0,
          f"bench --device cuda --dynamic-shapes reports device-resident latency {r.stderr.strip()[-300:]}")


def cuda_graphs(weft, env, tmp):
    """CUDA graphs, on by default (WEFT_CUDA_GRAPHS unset or 1): the second of two runs at the
    same addresses is captured as a graph, and the runs after it replay it (bench's host runs
    reuse one arena; its device-resident runs check that the last run's outputs are the
    first's); WEFT_CUDA_GRAPHS=0: none."""
    path = os.path.join(tmp, "all.onnx")
    for graphs in ("1", "0", None):
        run_env = dict(env, WEFT_LOG="debug")
        run_env.pop("WEFT_CUDA_GRAPHS", None)
        if graphs is not None:
            run_env["WEFT_CUDA_GRAPHS"] = graphs
        r = subprocess.run([weft, "bench", path, "--device", "cuda", "--fill", "ones", "--iters",
                            "4", "--warmup", "0"], capture_output=True, text=True, env=run_env)
        captured = r.stderr.count("CUDA graphs: captured")
        replayed = r.stderr.count("CUDA graphs: replayed")
        expected = captured >= 1 and replayed >= 3 if graphs != "0" else captured == replayed == 0
        check(r.returncode == 0 and expected,
              f"WEFT_CUDA_GRAPHS={graphs}: {captured} captures, {replayed} replays "
              f"{r.stderr.strip()[-300:] if r.returncode else ''}")


def repeated_kernels(weft, env, tmp):
    """Two unfused softmaxes of one shape over two inputs: the second kernel launches the
    first's functions (driver/generate_source.cc), each on its own buffers."""
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [8, 32])
    nodes = [helper.make_node("Softmax", ["x"], ["p"], axis=-1),
             helper.make_node("Softmax", ["b"], ["q"], axis=-1), helper.make_node("Sub", ["p", "q"], ["y"])]
    path = os.path.join(tmp, "two_softmaxes.onnx")
    graph = helper.make_graph(nodes, "g", [vi("x"), vi("b")], [vi("y")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    b = 3 * rng.standard_normal((8, 32)).astype(np.float32)
    softmax = lambda v: np.exp(v - v.max(1, keepdims=True)) / np.exp(v - v.max(1, keepdims=True)).sum(1, keepdims=True)
    want = softmax(x.astype(np.float64)) - softmax(b.astype(np.float64))
    np.save(os.path.join(tmp, "b.npy"), b)
    got, err = run(weft, path, x, dict(env, WEFT_LOG="info"), "--device", "cuda", "--no-fusion",
                   "--input", "b=" + os.path.join(tmp, "b.npy"))
    check(got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-6),
          f"two kernels the same but for their names, one set of functions {err}")


def batch_of_one(weft, env, tmp):
    """A batch of 1 through a Concat, an elementwise op over all its channels and a global
    pooling: their statements shared only the batch loop, which isl drops, and ran as one
    function on one thread (poly::ScheduleOptions::min_shared_points)."""
    vi = lambda n, c: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, 8, 8])
    nodes = [helper.make_node("Concat", ["x", "b"], ["c"], axis=1),
             helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("GlobalAveragePool", ["m"], ["p"]),
             helper.make_node("Mul", ["m", "p"], ["y"])]
    path = os.path.join(tmp, "batch_of_one.onnx")
    graph = helper.make_graph(nodes, "g", [vi("x", 3), vi("b", 5)], [vi("y", 8)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    b = rng.standard_normal((1, 5, 8, 8)).astype(np.float32)
    c = np.concatenate([x, b], axis=1).astype(np.float64)
    m = c / (1 + np.exp(-c))
    want = m * m.mean(axis=(2, 3), keepdims=True)
    np.save(os.path.join(tmp, "b.npy"), b)
    got, err = run(weft, path, x, env, "--device", "cuda", "--input",
                   "b=" + os.path.join(tmp, "b.npy"))
    dump = os.path.join(tmp, "batch_of_one")
    r = subprocess.run([weft, "inspect", path, "--device", "cuda", "--dump-dir", dump],
                       capture_output=True, text=True, env=env)
    source = "".join(open(os.path.join(d, f)).read() for d, _, files in os.walk(dump)
                     for f in files if f == "kernels.cu")
    check(got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-6) and
          r.returncode == 0 and source and "// one thread" not in source,
          f"a batch of 1 through Concat, SiLU and pooling: no function on one thread {err}")


def many_parameters(weft, env, tmp):
    """A Concat of 90 Gathers, each with its own index table (SSDLite's postprocessing, a
    class a Gather): one function of more than 64 parameters, which the emulator's launcher
    once refused ("has too many parameters")."""
    n = 90
    rng = np.random.default_rng(13)
    tables = [rng.integers(0, 40, size=(3,)).astype(np.int64) for _ in range(n)]
    nodes, inits = [], []
    for i, t in enumerate(tables):
        inits.append(numpy_helper.from_array(t, f"i{i}"))
        nodes.append(helper.make_node("Gather", ["x", f"i{i}"], [f"g{i}"], axis=0))
    nodes.append(helper.make_node("Concat", [f"g{i}" for i in range(n)], ["y"], axis=0))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [40, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3 * n, 4])],
                              initializer=inits)
    path = os.path.join(tmp, "many_parameters.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    x = rng.standard_normal((40, 4)).astype(np.float32)
    got, err = run(weft, path, x, env, "--device", "cuda")
    want = np.concatenate([x[t] for t in tables])
    check(got is not None and np.array_equal(got, want),
          f"a Concat of {n} Gathers: one function of more than 64 parameters {err}")


def top_k(weft, env, tmp):
    """TopK over axes longer than the generated kernel takes (library/cuda_top_k.cc: a radix
    selection and a bitonic sort per row): many ties (by index), NaN (first, or last for the
    smallest), -0 beside +0 (equal), +-inf, an inner axis (rows strided), K the whole axis.
    Values compared bit for bit, indices exactly, against a stable numpy sort."""
    rng = np.random.default_rng(17)
    x = rng.integers(-20, 20, size=(3, 500)).astype(np.float32)
    x[0, 7], x[1, 3], x[1, 4], x[2, 9], x[2, 10] = np.nan, -0.0, 0.0, -np.inf, np.inf
    cases = [("largest", x, 37, 1, 1), ("smallest", x, 37, 1, 0),
             ("inner_axis", rng.standard_normal((700, 2, 3)).astype(np.float32), 100, 0, 1),
             ("whole_axis", rng.standard_normal((1, 300)).astype(np.float32), 300, 1, 1)]
    for name, x, k, axis, largest in cases:
        out_shape = list(x.shape)
        out_shape[axis] = k
        node = helper.make_node("TopK", ["x", "k"], ["y", "i"], axis=axis, largest=largest)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape),
             helper.make_tensor_value_info("i", TensorProto.INT64, out_shape)],
            initializer=[numpy_helper.from_array(np.array([k], np.int64), "k")])
        path = os.path.join(tmp, f"top_k_{name}.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        rows = np.moveaxis(x, axis, -1)
        want_i = np.empty(rows.shape[:-1] + (k,), np.int64)
        for at in np.ndindex(*rows.shape[:-1]):
            row = rows[at]
            nan = np.isnan(row)
            v = np.where(nan, 0, row)
            want_i[at] = np.lexsort((np.arange(row.size), -v if largest else v,
                                     ~nan if largest else nan))[:k]
        want_v = np.take_along_axis(rows, want_i, -1)
        want_i, want_v = np.moveaxis(want_i, -1, axis), np.moveaxis(want_v, -1, axis)
        with tempfile.TemporaryDirectory() as out:
            np.save(os.path.join(out, "x.npy"), x)
            r = subprocess.run([weft, "run", path, "--device", "cuda", "--input",
                                "x=" + os.path.join(out, "x.npy"), "--output-dir", out],
                               capture_output=True, text=True, env=env)
            err = r.stderr.strip() if r.returncode else ""
            got, got_i = ((np.load(os.path.join(out, "y.npy")), np.load(os.path.join(out, "i.npy")))
                          if r.returncode == 0 else (None, None))
        profile = subprocess.run([weft, "bench", path, "--device", "cuda", "--fill", "random",
                                  "--iters", "1", "--kernels"], capture_output=True, text=True,
                                 env=env).stdout
        check(got is not None and np.array_equal(got_i, want_i) and
              np.array_equal(got.view(np.uint32), want_v.view(np.uint32)) and
              "radix selection" in profile,
              f"TopK {name}: K = {k} of {x.shape[axis]}, as the selection call {err}")


def pooled_grouped_conv(weft, env, tmp):
    """A padded max pooling (its window's bounds move with the point: a thread per point) and
    a depthwise convolution, with cuDNN and with WEFT_CUDA_GROUPED_CONV=generated: both match
    numpy, and the knob takes the convolution off the library."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Conv", ["p", "w"], ["y"], group=6, pads=[1, 1, 1, 1])]
    path = os.path.join(tmp, "pooled_grouped_conv.onnx")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 5, 5])],
        [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    x = rng.standard_normal((1, 6, 10, 10)).astype(np.float32)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    p = np.full((1, 6, 5, 5), -np.inf)
    for i in range(3):
        for j in range(3):
            p = np.maximum(p, padded[:, :, i:i + 9:2, j:j + 9:2])
    p = np.pad(p, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(p[:, :, i:i + 5, j:j + 5] * w[None, :, 0, i, j, None, None]
               for i in range(3) for j in range(3))
    for knob in ("cudnn", "generated"):
        e = dict(env, WEFT_CUDA_GROUPED_CONV=knob)
        got, err = run(weft, path, x, e, "--device", "cuda")
        r = subprocess.run([weft, "bench", path, "--device", "cuda", "--kernels", "--iters", "1",
                            "--warmup", "0"], capture_output=True, text=True, env=e)
        library = "convolution 1x6x5x5" in r.stdout
        check(got is not None and np.allclose(got, want, rtol=1e-5, atol=1e-5) and
              r.returncode == 0 and library == (knob == "cudnn"),
              f"padded MaxPool and a depthwise Conv, WEFT_CUDA_GROUPED_CONV={knob}: match numpy, "
              f"{'cuDNN' if knob == 'cudnn' else 'generated'} {err}")


def conv1x1_as_gemm(weft, env, tmp):
    """1x1 convolutions of stride 1 and one group (2 images with a bias; a 1-D one without) as a
    cuBLAS GEMM batched over the images, and under WEFT_CUDA_CONV1X1=cudnn as cuDNN calls: both
    match numpy. A strided 1x1 convolution stays cuDNN's."""
    rng = np.random.default_rng(12)
    f = TensorProto.FLOAT
    cases = [("2-D, 2 images, bias", (2, 6, 5, 7), (4, 6, 1, 1), {}, True),
             ("1-D, no bias", (1, 6, 9), (5, 6, 1), {}, False),
             ("2-D, stride 2", (1, 6, 5, 7), (4, 6, 1, 1), {"strides": [2, 2]}, True)]
    for label, xs, ws, attrs, with_bias in cases:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32)
        step = attrs.get("strides", [1])[0]
        spatial = (slice(None, None, step),) * (x.ndim - 2)
        xd = x.astype(np.float64)[(slice(None), slice(None)) + spatial]
        want = np.einsum("kc,nc...->nk...", w.reshape(ws[0], ws[1]).astype(np.float64), xd)
        if with_bias:
            want += b.reshape((1, -1) + (1,) * (x.ndim - 2))
        inits = [numpy_helper.from_array(w, "w")]
        inits += [numpy_helper.from_array(b, "b")] if with_bias else []
        node = helper.make_node("Conv", ["x", "w"] + (["b"] if with_bias else []), ["y"], **attrs)
        path = os.path.join(tmp, "conv1x1_" + re.sub(r"\W+", "_", label) + ".onnx")
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", f, list(xs))],
                                  [helper.make_tensor_value_info("y", f, list(want.shape))], inits)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        for knob in ("", "cudnn"):
            e = dict(env, WEFT_CUDA_CONV1X1=knob)
            got, err = run(weft, path, x, e, "--device", "cuda")
            r = subprocess.run([weft, "bench", path, "--device", "cuda", "--kernels", "--iters",
                                "1", "--warmup", "0"], capture_output=True, text=True, env=e)
            gemm = "1x1 convolution as GEMM" in r.stdout
            check(got is not None and np.allclose(got, want, rtol=1e-4, atol=1e-4) and
                  r.returncode == 0 and gemm == (knob == "" and "strides" not in attrs),
                  f"1x1 Conv {label}, WEFT_CUDA_CONV1X1={knob or '(default)'}: matches numpy, "
                  f"{'GEMM' if gemm else 'cuDNN'} {err}")


def replay_check_takes_infinities(weft, env, tmp):
    """bench's check that the last device-resident run gives the first one's outputs: log(0)
    is -inf in both, which is no difference (inf - inf is NaN; it once failed the check)."""
    path = os.path.join(tmp, "log.onnx")
    model(helper.make_node("Log", ["x"], ["y"]), TensorProto.FLOAT, [4, 8], [4, 8], path)
    r = subprocess.run([weft, "bench", path, "--device", "cuda", "--fill", "zeros", "--iters",
                        "4", "--warmup", "0"], capture_output=True, text=True, env=env)
    check(r.returncode == 0 and "device-resident" in r.stdout,
          f"bench --device cuda on outputs of -inf {r.stderr.strip()[-300:]}")


def no_driver(weft, tmp):
    if any(os.path.exists(os.path.join(d, "libcuda.so.1"))
           for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu")):
        print("skip: a CUDA driver is installed")
        return
    env = {k: v for k, v in os.environ.items() if k != "WEFT_CUDA_EMULATOR"}
    path = os.path.join(tmp, "all.onnx")
    r = subprocess.run([weft, "run", path, "--fill", "ones", "--device", "cuda",
                        "--output-dir", tmp], capture_output=True, text=True, env=env)
    check(r.returncode == 2 and "no CUDA driver: libcuda.so.1 was not found" in r.stderr,
          f"--device cuda without a driver: exit 2 and a clear message ({r.stderr.strip()})")


def stub_driver(weft, tmp):
    """The driver API loader against the CUDA toolkit's stub libcuda (every entry point, no
    device): it binds them all, and cuInit's failure is a clear message and exit 2."""
    stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
    if not os.path.exists(stub):
        print("skip: no CUDA stub library")
        return
    lib = os.path.join(tmp, "stub")
    os.makedirs(lib, exist_ok=True)
    os.symlink(stub, os.path.join(lib, "libcuda.so.1"))
    env = {k: v for k, v in os.environ.items() if k != "WEFT_CUDA_EMULATOR"}
    env["LD_LIBRARY_PATH"] = lib
    r = subprocess.run([weft, "run", os.path.join(tmp, "all.onnx"), "--fill", "ones", "--device",
                        "cuda", "--output-dir", tmp], capture_output=True, text=True, env=env)
    check(r.returncode == 2 and "no CUDA device: CUDA_ERROR_STUB_LIBRARY" in r.stderr,
          f"the driver loader against the stub: exit 2 and a clear message ({r.stderr.strip()})")


def main():
    weft = sys.argv[1]
    on_gpu = os.environ.get("WEFT_CUDA_EMULATOR") == "0"
    if not on_gpu:
        os.environ["WEFT_CUDA_EMULATOR"] = "1"  # also for run_conformance's subprocesses
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        reductions(weft, env, tmp)
        atomics_by_mode(weft, env, tmp)
        attention_softmax(weft, env, tmp)
        row_norms(weft, env, tmp)
        tune(weft, env, tmp)
        bench_device_resident(weft, env, tmp)
        cuda_graphs(weft, env, tmp)
        replay_check_takes_infinities(weft, env, tmp)
        repeated_kernels(weft, env, tmp)
        batch_of_one(weft, env, tmp)
        many_parameters(weft, env, tmp)
        top_k(weft, env, tmp)
        pooled_grouped_conv(weft, env, tmp)
        conv1x1_as_gemm(weft, env, tmp)
        library_calls(weft, env, tmp)
        half_library_calls(weft, env, tmp)
        if not on_gpu:
            no_driver(weft, tmp)
            stub_driver(weft, tmp)
    if os.path.isdir(conformance.DATA):
        backend_cases(weft, env)
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
