"""The Python module `weft`, used as a user would: compile, run, metadata, errors, zero-copy
outputs, new shapes, concurrent runs, profiles and dumps. Run by ctest with
PYTHONPATH=build/python; against numpy references."""

import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model, softmax_model


def softmax_reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def softmax_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "softmax.onnx"
    onnx.save(softmax_model(), path)
    return path


@pytest.fixture(scope="module")
def softmax(softmax_path):
    return weft.compile(softmax_path)


def test_new_shapes_compile_from_the_first_import(tmp_path):
    """Each new input shape compiles again, from a clone of the graph that weft.compile's
    import and graph passes made, not from the model again: the file may go once
    weft.compile returns (an in-memory model's bytes are not kept either)."""
    path = tmp_path / "softmax.onnx"
    onnx.save(softmax_model(), path)
    models = [weft.compile(path), weft.compile(softmax_model().SerializeToString())]
    path.unlink()
    rng = np.random.default_rng(1)
    for m in models:
        for n in (3, 5, 9):
            x = rng.standard_normal((n, 16)).astype(np.float32)
            np.testing.assert_allclose(m.run({"x": x})["y"], softmax_reference(x), rtol=1e-5, atol=1e-7)
        assert m.compiled_variants == 3


def test_compiles_for_new_shapes_share_packed_weights(tmp_path):
    """oneDNN's packed copy of a weight is made once for all the compiles of a model (each
    held its own: a model run at 8 shapes held 8 copies of its weights besides the graph's)."""
    w = np.random.default_rng(2).standard_normal((256, 256)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 256])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 256])],
                       [numpy_helper.from_array(w, "w")])
    path = tmp_path / "matmul.onnx"
    onnx.save(model, path)
    script = ("import weft, numpy as np; m = weft.compile(%r)\n"
              "for n in (4, 8, 16):\n"
              "    x = np.ones((n, 256), np.float32); y = m.run({'x': x})['y']\n"
              "    assert np.allclose(y, x @ np.load(%r), rtol=1e-4, atol=1e-3)\n"
              "assert m.compiled_variants == 3") % (str(path), str(tmp_path / "w.npy"))
    np.save(tmp_path / "w.npy", w)
    done = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, WEFT_LOG="debug"),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("oneDNN") >= 3, done.stderr
    assert done.stderr.count("shares the packed copy of an earlier call") == 2, done.stderr


def test_compile_from_path_str_and_bytes(softmax_path):
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    for source in (softmax_path, str(softmax_path), softmax_path.read_bytes()):
        out = weft.compile(source).run({"x": x})
        np.testing.assert_allclose(out["y"], softmax_reference(x), rtol=1e-5, atol=1e-6)


def test_metadata(softmax):
    (x,) = softmax.inputs
    assert (x.name, x.dtype, x.shape) == ("x", "float32", ["N", 16])
    assert [(o.name, o.dtype, o.shape) for o in softmax.outputs] == [
        ("y", "float32", ["N", 16]), ("s", "float32", ["N"])]


def test_run_new_shapes(softmax):
    rng = np.random.default_rng(1)
    for n in (1, 7, 64, 7):
        x = (rng.standard_normal((n, 16)) * 10).astype(np.float32)
        out = softmax.run({"x": x})
        assert set(out) == {"y", "s"}
        assert out["y"].shape == (n, 16) and out["y"].dtype == np.float32
        np.testing.assert_allclose(out["y"], softmax_reference(x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["s"], np.ones(n), rtol=1e-5)


def test_outputs_are_zero_copy(softmax):
    x = np.ones((3, 16), np.float32)
    first = softmax.run({"x": x})["y"]
    assert not first.flags.owndata                  # a view ...
    assert type(first.base).__name__ == "PyCapsule"  # ... of memory Weft allocated
    assert first.flags.c_contiguous and first.flags.writeable
    second = softmax.run({"x": x})["y"]
    assert first.ctypes.data != second.ctypes.data  # each run has its own outputs
    first[...] = 0                                  # and they stay valid and independent
    np.testing.assert_allclose(second, np.full((3, 16), 1 / 16), rtol=1e-6)


def test_outputs_that_view_computed_values(tmp_path):
    """An output that only reshapes a computed value is that value's memory (the kernel writes
    it there: no copy); a second view of it, a view of an input and a later reader of it
    still see their own values, run after run, static and over symbols."""
    shape_flat = numpy_helper.from_array(np.array([-1], np.int64), "flat")
    shape_two = numpy_helper.from_array(np.array([2, -1], np.int64), "two")
    model = make_model(
        [helper.make_node("Mul", ["x", "x"], ["a"]),
         helper.make_node("Reshape", ["a", "flat"], ["a1"]),
         helper.make_node("Reshape", ["a1", "two"], ["y1"]),
         helper.make_node("Reshape", ["a", "flat"], ["y2"]),
         helper.make_node("Reshape", ["x", "flat"], ["y3"]),
         helper.make_node("Add", ["a", "x"], ["s"]),
         helper.make_node("Reshape", ["s", "flat"], ["y4"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2, "M"])] +
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["K"]) for n in ("y2", "y3", "y4")],
        [shape_flat, shape_two])
    rng = np.random.default_rng(4)
    for dynamic in (False, True):
        compiled = weft.compile(model.SerializeToString(), dynamic_shapes=dynamic)
        for n in (2, 6, 2):
            x = rng.standard_normal((n, 4)).astype(np.float32)
            first = compiled.run({"x": x})
            again = compiled.run({"x": x + 1})
            for out, x_ in ((first, x), (again, x + 1)):
                np.testing.assert_array_equal(out["y1"], (x_ * x_).reshape(2, -1))
                np.testing.assert_array_equal(out["y2"], (x_ * x_).reshape(-1))
                np.testing.assert_array_equal(out["y3"], x_.reshape(-1))
                np.testing.assert_allclose(out["y4"], (x_ * x_ + x_).reshape(-1), rtol=1e-6)
            assert first["y1"].ctypes.data != first["y2"].ctypes.data


def test_non_contiguous_input_is_read_correctly(softmax):
    x = np.random.default_rng(2).standard_normal((16, 6)).astype(np.float32).T  # (6, 16) view
    assert not x.flags.c_contiguous
    np.testing.assert_allclose(softmax.run({"x": x})["y"], softmax_reference(x), rtol=1e-5, atol=1e-6)


def expect_error(fragment, f):
    with pytest.raises(weft.WeftError) as info:
        f()
    message = str(info.value)
    assert message.startswith("error: ") and "\n" not in message
    assert fragment in message, message
    return message


def test_errors(softmax, tmp_path):
    expect_error("missing.onnx: no such file", lambda: weft.compile(tmp_path / "missing.onnx"))
    expect_error("<model bytes>", lambda: weft.compile(b"\x08\x01garbage"))
    expect_error("device 'cuda' is not available", lambda: weft.compile(softmax_model().SerializeToString(), device="cuda"))
    unsupported = make_model([helper.make_node("StringNormalizer", ["x"], ["y"], name="words_1")],
                             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=15)
    expect_error("StringNormalizer (opset 15) at node 'words_1'",
                 lambda: weft.compile(unsupported.SerializeToString()))
    x = np.ones((2, 16), np.float32)
    expect_error("missing input 'x'", lambda: softmax.run({}))
    expect_error("unknown input 'z'; the model's inputs are 'x'", lambda: softmax.run({"x": x, "z": x}))
    expect_error("input 'x' must be float32, got float64", lambda: softmax.run({"x": x.astype(np.float64)}))
    expect_error("'x'", lambda: softmax.run({"x": np.ones((2, 3), np.float32)}))


def test_concurrent_runs(softmax):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (2, 9, 33, 2, 9, 33, 4, 8)]

    def check(x):
        for _ in range(20):
            np.testing.assert_allclose(softmax.run({"x": x})["y"], softmax_reference(x), rtol=1e-5, atol=1e-6)
        return True

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(check, xs))


def test_concurrent_library_calls():
    # oneDNN calls keep their memory objects and scratchpad from run to run
    # (library/dnnl_kernel.h), one set per run in flight: concurrent runs of matrix products
    # and a convolution with a residual, each with its own inputs, against NumPy in float64.
    rng = np.random.default_rng(5)
    w1, w2 = (rng.standard_normal((64, 64)).astype(np.float32) / 8 for _ in range(2))
    wc = rng.standard_normal((16, 16, 1, 1)).astype(np.float32) / 4
    model = make_model(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"]),
         helper.make_node("Conv", ["i", "wc"], ["c"]), helper.make_node("Add", ["c", "i"], ["z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 64]),
         helper.make_tensor_value_info("i", TensorProto.FLOAT, [1, 16, 24, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 64]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 16, 24, 24])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(wc, "wc")])
    compiled = weft.compile(model.SerializeToString(), threads=2)

    def check(seed):
        r = np.random.default_rng(seed)
        x = r.standard_normal((3, 64)).astype(np.float32)
        i = r.standard_normal((1, 16, 24, 24)).astype(np.float32)
        y = np.maximum(x.astype(np.float64) @ w1, 0) @ w2
        z = np.einsum("oc,nchw->nohw", wc[:, :, 0, 0].astype(np.float64), i) + i
        for _ in range(60):  # (1 in 10 runs of this test failed with a shared scratchpad)
            got = compiled.run({"x": x, "i": i})
            np.testing.assert_allclose(got["y"], y, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(got["z"], z, rtol=1e-4, atol=1e-4)
        return True

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(check, range(16)))


def test_other_dtypes():
    # int64 and bool through Cast, Where and Add; a bf16 output comes back as float32.
    model = make_model(
        [helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Where", ["c", "f", "zero"], ["w"]),
         helper.make_node("Cast", ["w"], ["b"], to=TensorProto.BFLOAT16),
         helper.make_node("Add", ["i", "i"], ["twice"])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [4]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [4])],
        [helper.make_tensor_value_info("w", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [4]),
         helper.make_tensor_value_info("twice", TensorProto.INT64, [4])],
        [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    m = weft.compile(model.SerializeToString())
    assert [o.dtype for o in m.outputs] == ["float32", "bfloat16", "int64"]
    out = m.run({"i": np.array([1, 2, 3, 1 << 40]), "c": np.array([True, False, True, True])})
    np.testing.assert_array_equal(out["w"], [1, 0, 3, float(1 << 40)])
    assert out["b"].dtype == np.float32
    np.testing.assert_array_equal(out["b"], [1, 0, 3, float(1 << 40)])
    np.testing.assert_array_equal(out["twice"], [2, 4, 6, 1 << 41])


def test_fusion_can_be_turned_off(softmax_path):
    x = np.random.default_rng(4).standard_normal((8, 16)).astype(np.float32)
    fused, unfused = weft.compile(softmax_path), weft.compile(softmax_path, fusion=False)
    _, fused_kernels = fused.profile({"x": x})
    out, unfused_kernels = unfused.profile({"x": x})
    assert len(fused_kernels) < len(unfused_kernels)  # softmax and its row sum: one kernel
    np.testing.assert_allclose(out["y"], fused.run({"x": x})["y"], rtol=1e-6)


def test_profile_has_one_entry_per_kernel(softmax_path):
    x = np.ones((128, 16), np.float32)
    out, kernels = weft.compile(softmax_path, fusion=False).profile({"x": x})
    np.testing.assert_allclose(out["s"], np.ones(128), rtol=1e-5)
    assert len(kernels) >= 2
    assert {k["op_type"] for k in kernels} == {"Softmax", "ReduceSum"}
    reduce = next(k for k in kernels if k["op_type"] == "ReduceSum")
    assert reduce["strategy"] == "reduce ROW sum"
    assert reduce["shapes"] == "f32[128,16] -> f32[128]"
    assert reduce["bytes"] == (128 * 16 + 128) * 4
    assert all(k["us"] >= 0 for k in kernels)


def test_dump_dir_and_repro_command(softmax_path, tmp_path):
    dump = tmp_path / "dump"
    m = weft.compile(softmax_path, dump_dir=dump)
    m.run({"x": np.ones((4, 16), np.float32)})
    names = sorted(p.name for p in dump.iterdir())
    for expected in ("00_import.txt", "kernels.cc", "kernels.txt", "build.sh"):
        assert expected in names, names
    assert any(n.endswith("_specialize.txt") for n in names)
    assert "f32[4,16]" in (dump / "kernels.txt").read_text()
    # The repro command rebuilds the dumped source into a library with every kernel.
    subprocess.run(["sh", str(dump / "build.sh")], check=True)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(dump / "kernels.so")],
                             check=True, capture_output=True, text=True).stdout
    source = (dump / "kernels.cc").read_text()
    kernels = [line.split()[-1] for line in source.splitlines() if line.startswith("// kernel ")]
    assert kernels and all("weft_" + k in symbols for k in kernels), (kernels, symbols)


def test_import_sets_a_shorter_openmp_spin_unless_the_user_did():
    """import weft sets GOMP_SPINCOUNT=10000 before the OpenMP runtime loads (docs/api.md), as
    the runtime itself reports (OMP_DISPLAY_ENV); the user's GOMP_SPINCOUNT or OMP_WAIT_POLICY
    stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}

    def spin_counts(**extra):
        done = subprocess.run([sys.executable, "-c", "import weft"], capture_output=True, text=True,
                              check=True, env=dict(env, OMP_DISPLAY_ENV="verbose", **extra))
        return [line.split("'")[1] for line in (done.stdout + done.stderr).splitlines()
                if line.strip().startswith("GOMP_SPINCOUNT =")]

    assert spin_counts() == ["10000"]
    assert spin_counts(GOMP_SPINCOUNT="5") == ["5"]
    assert spin_counts(OMP_WAIT_POLICY="passive") == ["0"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not os.path.isdir("/proc/self/task"),
                    reason="one CPU: one thread either way")
def test_one_thread_compiles_and_runs_on_the_calling_thread_alone(tmp_path):
    """threads=1: no OpenMP worker is started, neither by the compile (whose oneDNN primitives
    fix their thread count when they are created: MobileNetV2's 1x1 convolutions ran on 2 threads
    in a threads=1 model) nor by its runs; a threads=0 model then starts one per other core."""
    w = np.random.default_rng(0).standard_normal((64, 32, 1, 1)).astype(np.float32)
    model = make_model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 56, 56])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])],
                       [numpy_helper.from_array(w, "w")])
    path = tmp_path / "conv.onnx"
    onnx.save(model, path)
    script = ("import os, numpy as np, weft\n"
              "tasks = lambda: set(os.listdir('/proc/self/task'))\n"
              "before = tasks()\n"
              "x = {'x': np.ones((1, 32, 56, 56), np.float32)}\n"
              "one = weft.compile(%r, threads=1)\n"
              "for _ in range(3): one.run(x)\n"
              "print(len(tasks() - before))\n"
              "every = weft.compile(%r)\n"
              "for _ in range(3): every.run(x)\n"
              "print(len(tasks() - before))\n") % (str(path), str(path))
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "WEFT_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script], env=dict(env, WEFT_LOG="info"),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    added_by_one, added_by_both = map(int, done.stdout.split())
    assert added_by_one == 0
    if "1 threads by default" not in done.stderr:  # a container's CPU quota of one CPU
        assert added_by_both >= 1


def test_runs_keep_their_openmp_threads_across_reductions_of_different_sizes(tmp_path):
    """Two sums of a whole tensor, one split 3 ways, one 8 (chunks of 16,384 elements), on 8
    threads: every run keeps the same OpenMP threads. libgomp ends the pool's threads beyond a
    smaller team and starts new ones for a larger one, so teams of the chunk count made new
    threads every run (~110 clone() calls a run with 64 threads)."""
    model = make_model([helper.make_node("ReduceSum", ["a"], ["sa"], keepdims=0),
                        helper.make_node("ReduceSum", ["b"], ["sb"], keepdims=0)],
                       [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3 * 16384]),
                        helper.make_tensor_value_info("b", TensorProto.FLOAT, [8 * 16384 * 4])],
                       [helper.make_tensor_value_info("sa", TensorProto.FLOAT, []),
                        helper.make_tensor_value_info("sb", TensorProto.FLOAT, [])])
    path = tmp_path / "sums.onnx"
    onnx.save(model, path)
    script = ("import os, numpy as np, weft\n"
              "tasks = lambda: sorted(os.listdir('/proc/self/task'))\n"
              "m = weft.compile(%r, threads=8)\n"
              "x = {'a': np.ones(3 * 16384, np.float32), 'b': np.full(8 * 16384 * 4, 0.5, np.float32)}\n"
              "y = m.run(x)\n"
              "first = tasks()\n"
              "for _ in range(10): y = m.run(x)\n"
              "print(len(first), len(set(tasks()) - set(first)), float(y['sa']), float(y['sb']))\n") % str(path)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    threads, started, sa, sb = done.stdout.split()
    assert int(threads) >= 8  # the caller and its 7 workers, at least
    assert int(started) == 0
    assert float(sa) == 3 * 16384 and float(sb) == 8 * 16384 * 2


def test_thread_counts_out_of_range_are_errors(softmax_path, monkeypatch):
    """threads= and WEFT_NUM_THREADS take 0 (the default) to 1024: a count libgomp cannot start
    (100,000 overflowed its stack) or a WEFT_NUM_THREADS that is not a number is an error when
    the model is made, not a crash or a silent default."""
    monkeypatch.delenv("WEFT_NUM_THREADS", raising=False)
    for threads in (-1, 1025):
        with pytest.raises(weft.WeftError, match=f"threads is {threads}: a thread count is a whole "
                                                 "number from 1 to 1024"):
            weft.compile(str(softmax_path), threads=threads)
    monkeypatch.setenv("WEFT_NUM_THREADS", "lots")
    with pytest.raises(weft.WeftError, match="WEFT_NUM_THREADS is 'lots'"):
        weft.compile(str(softmax_path))
    assert weft.compile(str(softmax_path), threads=2)  # threads= wins over it


def test_weft_dump_dir_environment(softmax_path, tmp_path):
    script = ("import weft, numpy as np; m = weft.compile(%r); m.run({'x': np.ones((2, 16), np.float32)})"
              % str(softmax_path))
    env = dict(os.environ, WEFT_DUMP_DIR=str(tmp_path), WEFT_LOG="info")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    (dump,) = list(tmp_path.iterdir())
    assert dump.name.startswith("softmax-")
    assert (dump / "kernels.cc").exists() and (dump / "build.sh").exists()
    assert "[weft] kernel cache" in done.stderr and "[weft] dumped" in done.stderr


def test_cuda_device_through_the_emulator(softmax, monkeypatch):
    """device="cuda" runs the CUDA backend; without a GPU, on its host emulator
    (WEFT_CUDA_EMULATOR=1): symbolic shapes, several runs, results as on the CPU."""
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    gpu = weft.compile(softmax_model().SerializeToString(), device="cuda")
    for n in (3, 70):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        for _ in range(2):
            out = gpu.run({"x": x})
            np.testing.assert_allclose(out["y"], softmax_reference(x), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["s"], np.ones(n), rtol=1e-5)


def test_dynamic_shapes_compile_once():
    """dynamic_shapes: one compile serves every extent of the symbolic dims."""
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T", 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(5)
    for n, t in [(1, 1), (3, 7), (2, 50), (5, 3)]:
        x = rng.standard_normal((n, t, 16)).astype(np.float32)
        e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
        y = compiled.run({"x": x})["y"]
        np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert compiled.compiled_variants == 1


def test_dynamic_shapes_conv_transpose_and_resize_over_a_symbolic_batch():
    """The R-CNN keypoint head over a count of detections: a ConvTranspose whose batch is a
    symbol knows its spatial dims (a oneDNN deconvolution built per batch), and a Resize that
    doubles the static spatial dims is a kernel over the symbolic batch. One compile, against
    onnx's reference implementation."""
    ReferenceEvaluator = pytest.importorskip("onnx.reference").ReferenceEvaluator  # onnx 1.13+
    rng = np.random.default_rng(8)
    weights = helper.make_tensor("w", TensorProto.FLOAT, [8, 4, 2, 2],
                                 rng.standard_normal(128).astype(np.float32))
    bias = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32))
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["t"], strides=[2, 2],
                          kernel_shape=[2, 2]),
         helper.make_node("Relu", ["t"], ["r"]),
         helper.make_node("Resize", ["r", "", "scales"], ["y"], mode="linear",
                          coordinate_transformation_mode="half_pixel")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", "W"])],
        initializer=[weights, bias,
                     helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    reference = ReferenceEvaluator(model)
    for n in (3, 1, 6):
        x = rng.standard_normal((n, 8, 14, 14)).astype(np.float32)
        np.testing.assert_allclose(compiled.run({"x": x})["y"], reference.run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-5)
    assert compiled.compiled_variants == 1


def dynamic_against_specialized(model, feeds, tol=1e-6):
    """"model" compiled once over its symbols, each feed run on it against a compile for that
    feed's shapes (outputs within "tol"); returns the dynamic compile."""
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    for feed in feeds:
        got = compiled.run(feed)
        for name, want in weft.compile(model.SerializeToString()).run(feed).items():
            np.testing.assert_allclose(got[name], want, rtol=tol, atol=tol,
                                       err_msg=f"{name} at {[v.shape for v in feed.values()]}")
    return compiled


@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.25]])
@pytest.mark.parametrize("mode, coordinates", [
    ("nearest", "asymmetric"), ("nearest", "half_pixel"), ("linear", "half_pixel"),
    ("linear", "pytorch_half_pixel"), ("cubic", "half_pixel"), ("linear", "align_corners")])
def test_dynamic_shapes_resize_of_a_symbolic_plane(mode, coordinates, scales):
    """A U-Net's upsampling over a dynamic image: Resize by 2 and 3 along symbolic H and W, and
    `interpolate(scale_factor=0.5)`'s downsampling by 2 and 4 (to floor(H / 2), floor(W / 4)),
    compiles once in every mode (align_corners reads the extents, at run time); each run
    against a compile for its shapes."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                          coordinate_transformation_mode=coordinates)],
        [helper.make_tensor_value_info("x", f, ["N", 2, "H", "W"])],
        [helper.make_tensor_value_info("y", f, ["N", 2, None, None])],
        [helper.make_tensor("scales", f, [4], scales)])
    rng = np.random.default_rng(9)
    feeds = [{"x": rng.standard_normal((n, 2, h, w)).astype(np.float32)}
             for n, h, w in ((1, 5, 7), (2, 1, 3), (1, 16, 9), (1, 9, 17))]
    # (The specialized compile's linear half_pixel runs oneDNN's resampling, within 1.5e-6 of
    # ONNX's reference at 9x17; the dynamic one Weft's resize call, within 2.4e-7.)
    assert dynamic_against_specialized(model, feeds, tol=1e-5).compiled_variants == 1


RESIZE_FORMS = [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_ceil"),
                ("nearest", "tf_half_pixel_for_nn", "ceil"), ("linear", "half_pixel", "floor"),
                ("linear", "pytorch_half_pixel", "floor"), ("linear", "align_corners", "floor"),
                ("cubic", "half_pixel", "floor"), ("cubic", "asymmetric", "floor")]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("mode, coordinates, nearest", RESIZE_FORMS)
def test_dynamic_shapes_resize_to_another_inputs_dims(mode, coordinates, nearest, dtype):
    """`interpolate(x, size=y.shape[-2:]) + y` (an FPN's top-down path, a segmentation head):
    the sizes come from Shape(y), and over symbols they make the scales each run's extents'
    ratio, down as well as up, to a plane of 1 and to the same extents. Compiles once; each
    run against a compile for its shapes. Also cubic with exclude_outside, which reads the
    input's extent. f32 runs Weft's resize call, built per run's extents; f16 the generated
    kernel, which reads the extents."""
    f = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}[dtype]
    i64 = TensorProto.INT64
    model = make_model(
        [helper.make_node("Shape", ["y"], ["hw"], start=2),
         helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
         helper.make_node("Resize", ["x", "", "", "sizes"], ["r"], mode=mode,
                          coordinate_transformation_mode=coordinates, nearest_mode=nearest,
                          exclude_outside=int(mode == "cubic")),
         helper.make_node("Add", ["r", "y"], ["z"])],
        [helper.make_tensor_value_info("x", f, [1, 2, "H", "W"]),
         helper.make_tensor_value_info("y", f, [1, 2, "P", "Q"])],
        [helper.make_tensor_value_info("z", f, [1, 2, None, None])],
        [helper.make_tensor("nc", i64, [2], [1, 2])], opset=15)
    rng = np.random.default_rng(3)
    feeds = [{"x": rng.standard_normal((1, 2, h, w)).astype(dtype),
              "y": rng.standard_normal((1, 2, p, q)).astype(dtype)}
             for (h, w), (p, q) in (((4, 5), (9, 13)), ((8, 6), (3, 6)), ((3, 3), (1, 7)),
                                    ((5, 1), (5, 4)), ((2, 3), (2, 3)))]
    assert dynamic_against_specialized(model, feeds).compiled_variants == 1


@pytest.mark.parametrize("op, kernel, pads, once", [
    ("MaxPool", 3, 0, True), ("MaxPool", 3, 1, True), ("AveragePool", 2, 0, True),
    ("AveragePool", 3, 1, True), ("MaxPool", 2, 1, False)])
def test_dynamic_shapes_pooling_with_ceil_mode(op, kernel, pads, once):
    """ceil_mode pooling over a symbolic plane (torchvision's SqueezeNet and GoogLeNet pool so):
    its output extent is ceil((H + pads - k) / 2) + 1, a quotient over H, where the stride is at
    most the window less the end padding (no window can start past the input); otherwise the
    model compiles per shape. Each run against a compile for its shapes, odd and even extents."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node(op, ["x"], ["y"], kernel_shape=[kernel, kernel], strides=[2, 2],
                          pads=[pads] * 4, ceil_mode=1)],
        [helper.make_tensor_value_info("x", f, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", f, [1, 3, None, None])])
    rng = np.random.default_rng(5)
    feeds = [{"x": rng.standard_normal((1, 3, h, w)).astype(np.float32)}
             for h, w in ((17, 20), (8, 9), (5, 6), (32, 31))]
    assert (dynamic_against_specialized(model, feeds).compiled_variants == 1) == once


def test_dynamic_shapes_flip_of_a_symbolic_axis():
    """torch.flip over a dynamic length, as PyTorch exports it (Slice from -1 by -1 to
    INT64_MIN), beside a static axis sliced by 2: compiles once; against NumPy."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    model = make_model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
        [helper.make_tensor_value_info("x", f, ["N", "T", 6])],
        [helper.make_tensor_value_info("y", f, ["N", "T", 3])],
        [helper.make_tensor("starts", i64, [2], [-1, 0]),
         helper.make_tensor("ends", i64, [2], [-(2 ** 63), 6]),
         helper.make_tensor("axes", i64, [2], [1, 2]),
         helper.make_tensor("steps", i64, [2], [-1, 2])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(8)
    for n, t in ((2, 5), (1, 1), (3, 12)):
        x = rng.standard_normal((n, t, 6)).astype(np.float32)
        np.testing.assert_array_equal(compiled.run({"x": x})["y"], x[:, ::-1, ::2])
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_dynamic_shapes_pad_modes_over_symbolic_axes(mode):
    """Reflect and edge padding of a symbolic time axis and plane (an audio model's reflect pad
    before its convolutions, an STFT's centering): each output reads the input at a position
    computed from the run's extent. Compiles once; against NumPy's pad at each shape."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    model = make_model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
        [helper.make_tensor_value_info("x", f, [1, "T", "W"])],
        [helper.make_tensor_value_info("y", f, [1, None, None])],
        [helper.make_tensor("pads", i64, [6], [0, 2, 1, 0, 3, 2])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(6)
    for t, w in ((5, 4), (9, 3), (4, 7)):
        x = rng.standard_normal((1, t, w)).astype(np.float32)
        np.testing.assert_array_equal(compiled.run({"x": x})["y"],
                                      np.pad(x, ((0, 0), (2, 3), (1, 2)), mode=mode))
    assert compiled.compiled_variants == 1


def test_reflect_pads_reaching_past_the_far_border():
    """Reflect pads of the extent or more reflect again and again, as ONNX's reference reads
    them (numpy's pad; ONNX Runtime refuses them, and Weft had clamped the positions): in
    static compiles, and in a dynamic one, whose runs at such extents compile for their own
    shapes (a run limit: the dynamic kernel mirrors once)."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    model = make_model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
        [helper.make_tensor_value_info("x", f, [1, "T", "W"])],
        [helper.make_tensor_value_info("y", f, [1, None, None])],
        [helper.make_tensor("pads", i64, [6], [0, 2, 1, 0, 3, 5])])
    rng = np.random.default_rng(9)
    for dynamic in (False, True):
        compiled = weft.compile(model.SerializeToString(), dynamic_shapes=dynamic)
        for t, w in ((2, 1), (3, 2), (1, 3), (4, 6), (6, 7)):
            x = rng.standard_normal((1, t, w)).astype(np.float32)
            np.testing.assert_array_equal(compiled.run({"x": x})["y"],
                                          np.pad(x, ((0, 0), (2, 3), (1, 5)), mode="reflect"),
                                          err_msg=f"{t}x{w}, dynamic {dynamic}")
        if dynamic:  # the last two extents hold the limits: the dynamic compile
            assert compiled.compiled_variants == 4


@pytest.mark.parametrize("mode, coordinates, nearest", RESIZE_FORMS)
def test_dynamic_shapes_resize_to_constant_sizes(mode, coordinates, nearest):
    """A dynamic image resized to a fixed 6x4 plane (a classifier's input stage): constant sizes
    over symbolic input extents, whose ratio each run computes. Compiles once."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    model = make_model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                          coordinate_transformation_mode=coordinates, nearest_mode=nearest)],
        [helper.make_tensor_value_info("x", f, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", f, [None] * 4)],
        [helper.make_tensor("sizes", i64, [4], [1, 3, 6, 4])])
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal((1, 3, h, w)).astype(np.float32)}
             for h, w in ((12, 8), (5, 9), (6, 4), (1, 1))]
    assert dynamic_against_specialized(model, feeds).compiled_variants == 1


def test_dynamic_shapes_positions_and_masks_over_the_length():
    """The subgraphs transformers' exports build from the length T of [N, T] token ids compile
    once: a Range to T, a position table's first T rows, Slices and a Concat along T, a CumSum
    over T and a GatherND of (n, t) tuples. A length past the table compiles for its shape."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["t"], start=1, end=2),
        helper.make_node("Squeeze", ["t"], ["ts"]),
        helper.make_node("Range", ["zero", "ts", "one"], ["pos"]),
        helper.make_node("Slice", ["table", "zero1", "t", "one1"], ["prefix"]),
        helper.make_node("Cast", ["pos"], ["pos_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["prefix", "pos_f"], ["positions"]),
        helper.make_node("Slice", ["ids", "zero1", "one1", "one1"], ["first"]),
        helper.make_node("Concat", ["first", "ids"], ["cat"], axis=1),
        helper.make_node("Add", ["one1", "t"], ["t1"]),
        helper.make_node("Slice", ["cat", "one1", "t1", "one1"], ["shifted"]),
        helper.make_node("Slice", ["cat", "zero1", "t", "one1"], ["previous"]),
        helper.make_node("Sub", ["shifted", "previous"], ["step"]),
        helper.make_node("CumSum", ["step", "one"], ["runs"]),
        helper.make_node("Unsqueeze", ["ids", "minus1"], ["tuple_t"]),
        helper.make_node("Mod", ["tuple_t", "two"], ["tuple_m"]),
        helper.make_node("Concat", ["tuple_m", "tuple_m"], ["tuples"], axis=-1),
        helper.make_node("GatherND", ["runs", "tuples"], ["picked"]),
    ]
    table = np.arange(8, dtype=np.float32).reshape(1, 8) * 10
    inits = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
             (("zero", 0), ("one", 1), ("zero1", [0]), ("one1", [1]), ("minus1", [-1]), ("two", 2))]
    inits.append(numpy_helper.from_array(table, "table"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "T"])],
        [helper.make_tensor_value_info(v, t, None) for v, t in
         (("positions", TensorProto.FLOAT), ("runs", TensorProto.INT64), ("picked", TensorProto.INT64))],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(2)
    for n, t in [(1, 1), (2, 5), (3, 8), (1, 2)]:
        ids = rng.integers(0, 5, (n, t)).astype(np.int64)
        out = compiled.run({"ids": ids})
        np.testing.assert_array_equal(out["positions"], table[:, :t] + np.arange(t, dtype=np.float32))
        cat = np.concatenate([ids[:, :1], ids], axis=1)
        runs = np.cumsum(cat[:, 1:] - cat[:, :-1], axis=1)
        np.testing.assert_array_equal(out["runs"], runs)
        m = ids % 2  # rows and columns < 2 (T >= 2 where a tuple names column 1)
        if t >= 2 and n >= 2:
            np.testing.assert_array_equal(out["picked"], runs[m, m])
    assert compiled.compiled_variants == 1
    # Past the table, the dynamic compile's limit does not hold: the run compiles for its shape,
    # where ONNX clamps the Slice to 8 positions, which the Add cannot take with 9.
    with pytest.raises(weft.WeftError, match=r"\(Add, opset 17\): shapes \[1,8\]\[9\] cannot be broadcast"):
        compiled.run({"ids": np.zeros((1, 9), np.int64)})


def test_dynamic_shapes_kv_cache_concat():
    """A decoder's KV cache: past keys [N, P, 4] and new ones [N, T, 4] concatenated along the
    length, [N, P+T, 4], then reduced over it, compile once for every P and T, an empty past
    (the first step) included."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past", "new"], ["cache"], axis=1),
         helper.make_node("ReduceMax", ["cache", "one"], ["m"], keepdims=0),
         helper.make_node("Shape", ["cache"], ["s"])], "g",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, ["N", "P", 4]),
         helper.make_tensor_value_info("new", TensorProto.FLOAT, ["N", "T", 4])],
        [helper.make_tensor_value_info(v, t, None) for v, t in
         (("cache", TensorProto.FLOAT), ("m", TensorProto.FLOAT), ("s", TensorProto.INT64))],
        [numpy_helper.from_array(np.array([1], np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(6)
    for n, p, t in [(1, 5, 1), (1, 6, 1), (2, 1, 3), (3, 40, 2), (1, 0, 2), (2, 3, 0)]:  # empty pieces too
        past = rng.standard_normal((n, p, 4)).astype(np.float32)
        new = rng.standard_normal((n, t, 4)).astype(np.float32)
        out = compiled.run({"past": past, "new": new})
        cache = np.concatenate([past, new], axis=1)
        np.testing.assert_array_equal(out["cache"], cache)
        np.testing.assert_array_equal(out["m"], cache.max(axis=1))
        np.testing.assert_array_equal(out["s"], [n, p + t, 4])
    assert compiled.compiled_variants == 1


def test_dynamic_shapes_kv_cache_head_size_checked_per_run():
    """The past keys' head size has a symbol of its own, D, where the new keys' is 64 (as
    ONNX Runtime GenAI's builder writes kv_cache_dim): one compile takes D to be 64, and a
    past with another head size gets the model's own error (it was read as 64 wide, past its
    end)."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node("Concat", ["new", "past"], ["keys"], axis=2)],
        [helper.make_tensor_value_info("past", f, ["N", 2, "P", "D"]),
         helper.make_tensor_value_info("new", f, ["N", 2, "T", 64])],
        [helper.make_tensor_value_info("keys", f, ["N", 2, "K", 64])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(10)
    for p in (0, 5, 9):
        past = rng.standard_normal((1, 2, p, 64)).astype(np.float32)
        new = rng.standard_normal((1, 2, 1, 64)).astype(np.float32)
        np.testing.assert_array_equal(compiled.run({"past": past, "new": new})["keys"],
                                      np.concatenate([new, past], axis=2))
    assert compiled.compiled_variants == 1
    past = np.ones((1, 2, 200000, 1), np.float32)
    with pytest.raises(weft.WeftError, match="Concat inputs must match off axis 2"):
        compiled.run({"past": past, "new": np.ones((1, 2, 1, 64), np.float32)})


def test_grid_sample_needs_a_grid_per_image():
    """GridSample reads grid n for image n: an input and a grid of different N are refused,
    at compile time where both are static and at each run over symbols (it read past the grid:
    found by dynamic_node_tests.py --device cuda, where CUDA's garbage differed from the CPU's)."""
    f = TensorProto.FLOAT

    def model(x_dims, grid_dims):
        return make_model([helper.make_node("GridSample", ["x", "grid"], ["y"])],
                          [helper.make_tensor_value_info("x", f, x_dims),
                           helper.make_tensor_value_info("grid", f, grid_dims)],
                          [helper.make_tensor_value_info("y", f, ["A", "B", "C", "D"])], opset=16
                          ).SerializeToString()

    with pytest.raises(weft.WeftError, match="must have the same N"):
        weft.compile(model([2, 1, 3, 2], [1, 2, 4, 2]))
    compiled = weft.compile(model(["N", 1, 3, 2], ["M", 2, 4, 2]), dynamic_shapes=True)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 1, 3, 2)).astype(np.float32)
    grid = rng.uniform(-1, 1, (2, 2, 4, 2)).astype(np.float32)
    y = compiled.run({"x": x, "grid": grid})["y"]
    np.testing.assert_array_equal(y[1:], compiled.run({"x": x[1:], "grid": grid[1:]})["y"])
    with pytest.raises(weft.WeftError):
        compiled.run({"x": x, "grid": grid[:1]})


@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_nearest_coordinates_in_the_grids_type(align_corners):
    """Nearest GridSample's source coordinates in f32 arithmetic, as PyTorch and ONNX Runtime
    compute them: grid values of tenths over 11 and 21 points fall on ties (0.3 over 11 with
    align_corners: 6.5 in f64, 6.4999998 in f32), which f64 coordinates rounded the other way
    (found by dynamic_node_tests.py --oracle ort)."""
    f = TensorProto.FLOAT
    x_dims, grid_dims = [1, 2, 11, 21], [1, 7, 9, 2]
    model = make_model([helper.make_node("GridSample", ["x", "grid"], ["y"], mode="nearest",
                                         align_corners=align_corners)],
                       [helper.make_tensor_value_info("x", f, x_dims),
                        helper.make_tensor_value_info("grid", f, grid_dims)],
                       [helper.make_tensor_value_info("y", f, [1, 2, 7, 9])], opset=16)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(x_dims).astype(np.float32)
    grid = (rng.integers(-10, 11, grid_dims) / 10).astype(np.float32)
    got = weft.compile(model.SerializeToString()).run({"x": x, "grid": grid})["y"]

    def source(g, n):  # PyTorch's grid_sampler_compute_source_index, in f32
        one, two = np.float32(1), np.float32(2)
        if align_corners:
            return (g + one) / two * np.float32(n - 1)
        return ((g + one) * np.float32(n) - one) / two

    ix = np.rint(source(grid[..., 0], x_dims[3])).astype(np.int64)
    iy = np.rint(source(grid[..., 1], x_dims[2])).astype(np.int64)
    inside = (ix >= 0) & (ix < x_dims[3]) & (iy >= 0) & (iy < x_dims[2])
    rows, cols = iy[0].clip(0, x_dims[2] - 1), ix[0].clip(0, x_dims[3] - 1)
    want = np.where(inside[0], x[0][:, rows, cols], 0)[None].astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_dynamic_shapes_declared_length_checked_per_run():
    """The present keys declared [N, M, 2] with M the mask's length, as ONNX Runtime GenAI's
    builder declares its present: the Concat computes P + T rows, so one compile takes M to be
    P + T, and a mask of another length compiles for its own shapes (the declared M had sized
    the buffer that P + T rows were written into: a heap corruption)."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node("Concat", ["past", "new"], ["present"], axis=1),
         helper.make_node("ReduceSum", ["mask"], ["m"], keepdims=0)],
        [helper.make_tensor_value_info("past", f, ["N", "P", 2]),
         helper.make_tensor_value_info("new", f, ["N", "T", 2]),
         helper.make_tensor_value_info("mask", f, ["N", "M"])],
        [helper.make_tensor_value_info("present", f, ["N", "M", 2]),
         helper.make_tensor_value_info("m", f, ["N"])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(11)
    for p, t, m in ((4, 1, 5), (9, 2, 11), (30000, 1, 3)):
        x = {"past": rng.standard_normal((1, p, 2)), "new": rng.standard_normal((1, t, 2)),
             "mask": np.ones((1, m))}
        x = {k: v.astype(np.float32) for k, v in x.items()}
        np.testing.assert_array_equal(compiled.run(x)["present"],
                                      np.concatenate([x["past"], x["new"]], axis=1))
        assert compiled.compiled_variants == (1 if m == p + t else 2)


def test_dynamic_shapes_derived_dims_of_inputs():
    """Inputs whose dims PyTorch's exporter spells as derived dims ("2*h", "2*h + 1", for
    torch.export's 2 * Dim("h")): each run binds h from the first such dim (an extent that no
    h gives: a compile for those shapes, which reports the Reshape it breaks), and one compile
    runs them all (before, a dim not a name alone failed the dynamic compile into compiles per
    shape)."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node("Reshape", ["x", "halves"], ["x3"]),
         helper.make_node("ReduceSum", ["x3", "one"], ["s"], keepdims=0),
         helper.make_node("Mul", ["s", "s"], ["o"]),
         helper.make_node("ReduceMax", ["y"], ["m"], axes=[1], keepdims=0)],
        [helper.make_tensor_value_info("x", f, ["b", "2*h"]),
         helper.make_tensor_value_info("y", f, ["b", "2*h + 1"])],
        [helper.make_tensor_value_info("o", f, ["b", "h"]),
         helper.make_tensor_value_info("m", f, ["b"])],
        [helper.make_tensor("one", TensorProto.INT64, [1], [1]),
         helper.make_tensor("halves", TensorProto.INT64, [3], [0, 2, -1])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(5)
    for b, h in ((2, 3), (1, 5), (4, 1), (3, 0)):
        x = rng.standard_normal((b, 2 * h)).astype(np.float32)
        y = rng.standard_normal((b, 2 * h + 1)).astype(np.float32)
        got = compiled.run({"x": x, "y": y})
        np.testing.assert_allclose(got["o"], (x[:, :h] + x[:, h:]) ** 2, rtol=1e-6)
        np.testing.assert_array_equal(got["m"], y.max(axis=1))
    assert compiled.compiled_variants == 1
    with pytest.raises(weft.WeftError, match=r"Reshape of 10 elements into 'x3'"):
        compiled.run({"x": np.zeros((2, 5), np.float32), "y": np.zeros((2, 5), np.float32)})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_dynamic_shapes_depth_to_space_over_a_symbolic_plane(mode):
    """PixelShuffle and PixelUnshuffle over a dynamic image (ESPCN's upscaling at any size): one
    compile, the plane's dims symbolic (a multiple of the block for SpaceToDepth, declared
    2*h as PyTorch exports it), against numpy's reshapes and transposes."""
    f = TensorProto.FLOAT
    model = make_model(
        [helper.make_node("DepthToSpace", ["x"], ["up"], blocksize=2, mode=mode),
         helper.make_node("SpaceToDepth", ["y"], ["down"], blocksize=2)],
        [helper.make_tensor_value_info("x", f, ["N", 12, "H", "W"]),
         helper.make_tensor_value_info("y", f, ["N", 3, "2*h", "2*w"])],
        [helper.make_tensor_value_info("up", f, ["N", 3, None, None]),
         helper.make_tensor_value_info("down", f, ["N", 12, "h", "w"])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(3)
    for n, h, w in ((1, 5, 7), (2, 3, 1), (1, 16, 12)):
        x = rng.standard_normal((n, 12, h, w)).astype(np.float32)
        y = rng.standard_normal((n, 3, 2 * h, 2 * w)).astype(np.float32)
        got = compiled.run({"x": x, "y": y})
        if mode == "DCR":
            up = x.reshape(n, 2, 2, 3, h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            up = x.reshape(n, 3, 2, 2, h, w).transpose(0, 1, 4, 2, 5, 3)
        np.testing.assert_array_equal(got["up"], up.reshape(n, 3, 2 * h, 2 * w))
        down = y.reshape(n, 3, h, 2, w, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, 12, h, w)
        np.testing.assert_array_equal(got["down"], down)
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("library", ["1", "0"])
@pytest.mark.parametrize("sa, sb", [((2, 0, 4), (2, 4, 3)), ((2, 3, 4), (2, 4, 0)),
                                    ((2, 3, 0), (2, 0, 5)), ((0, 3, 4), (4, 3)),
                                    ((2, 1, 3, 4), (0, 4, 2))])
def test_matmul_of_empty_tensors(sa, sb, library, monkeypatch):
    """Batched MatMuls with an empty dim: an empty product, or zeros where K is 0, as numpy
    (an empty output's flat index had a term of stride 0, which lowering refused as an
    internal error)."""
    monkeypatch.setenv("WEFT_ONEDNN", library)
    f = TensorProto.FLOAT
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["c"])],
                       [helper.make_tensor_value_info("a", f, list(sa)),
                        helper.make_tensor_value_info("b", f, list(sb))],
                       [helper.make_tensor_value_info("c", f, (np.ones(sa) @ np.ones(sb)).shape)])
    a, b = np.ones(sa, np.float32), np.ones(sb, np.float32)
    c = weft.compile(model.SerializeToString()).run({"a": a, "b": b})["c"]
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("op, x, w, group, y", [
    ("Conv", (1, 1, 5, 5), (0, 1, 3, 3), 1, (1, 0, 3, 3)),  # no output channels
    ("Conv", (1, 0, 5, 5), (2, 0, 3, 3), 1, (1, 2, 3, 3)),  # no input channels: the bias
    ("Conv", (1, 4, 5, 5), (0, 2, 3, 3), 2, (1, 0, 3, 3)),
    ("Conv", (1, 0, 5, 5), (4, 0, 3, 3), 2, (1, 4, 3, 3)),
    ("ConvTranspose", (1, 0, 5, 5), (0, 2, 3, 3), 1, (1, 2, 7, 7)),
    ("ConvTranspose", (1, 2, 5, 5), (2, 0, 3, 3), 1, (1, 0, 7, 7))])
def test_convolutions_over_no_channels(op, x, w, group, y, constant):
    """Convolutions of 0 input or output channels: an empty output, or the bias alone, as ONNX
    Runtime gives them (their lowering indexed channels g*0 + m, a term of coefficient 0 that it
    refused as an internal error; found by tests/fuzz/dynamic_node_tests.py --device cuda, seed
    73)."""
    f = TensorProto.FLOAT
    channels = y[1]
    bias = np.arange(channels, dtype=np.float32) + 1
    inits = [numpy_helper.from_array(bias, "b")]
    inputs = [helper.make_tensor_value_info("x", f, list(x))]
    if constant:
        inits.append(numpy_helper.from_array(np.ones(w, np.float32), "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", f, list(w)))
    model = make_model([helper.make_node(op, ["x", "w", "b"], ["y"], group=group)], inputs,
                       [helper.make_tensor_value_info("y", f, list(y))], initializers=inits)
    feeds = {"x": np.ones(x, np.float32)}
    if not constant:
        feeds["w"] = np.ones(w, np.float32)
    got = weft.compile(model.SerializeToString()).run(feeds)["y"]
    np.testing.assert_array_equal(got, np.broadcast_to(bias[:, None, None], y))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("x_shape, axis, scale, bias", [
    ((2, 3, 4, 5), -2, (1, 5), (4, 5)), ((2, 3, 4, 5), -2, (5,), None),
    ((2, 3, 4, 5), -2, (4, 1), (1, 5)), ((2, 3, 4, 5), 1, (1, 1, 5), (3, 1, 1)),
    ((2, 3, 4, 5), 0, (1, 1, 1, 5), None), ((2, 3, 4, 5), 2, (4, 5), (4, 5)),
    ((2, 3, 5), -1, (3, 5), (3, 5)), ((2, 3, 5), -1, (2, 1, 5), None),  # beyond the axis
    ((2, 3, 5), 1, (2, 3, 5), (2, 1, 1)), ((5, 5), 1, (5, 1), None)])  # per row: 5 elements
def test_layer_normalization_scale_and_bias_broadcast(x_shape, axis, scale, bias, dtype,
                                                       dynamic):
    """A LayerNormalization's scale and bias broadcast to the input, as its ONNX function body
    multiplies and adds them and as ONNX Runtime takes them: [1, 5] for normalized [4, 5] was
    read as 20 elements, past its end (results off by 1e21; found by
    tests/fuzz/dynamic_node_tests.py --device cuda, seed 77), and a scale reaching before the
    axis was refused; against an fp64 reference."""
    t = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    names = ["x", "w"] + (["b"] if bias else [])
    shapes = {"x": x_shape, "w": scale, "b": bias}
    model = make_model([helper.make_node("LayerNormalization", names, ["y"], axis=axis)],
                       [helper.make_tensor_value_info(n, t, list(shapes[n])) for n in names],
                       [helper.make_tensor_value_info("y", t, list(x_shape))], opset=17)
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal(shapes[n]).astype(dtype) for n in names}
    x = feeds["x"].astype(np.float64)
    normalized = tuple(range(axis % len(x_shape), len(x_shape)))
    mean = x.mean(axis=normalized, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=normalized, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * feeds["w"] + (feeds["b"] if bias else 0)
    got = weft.compile(model.SerializeToString(), dynamic_shapes=dynamic).run(feeds)["y"]
    tolerance = 1e-5 if dtype == np.float32 else 3e-3
    np.testing.assert_allclose(got.astype(np.float64), want, atol=tolerance * np.abs(want).max())


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("shape", [[0, 4, 3, 5], [2, 4, 0, 5], [2, 4, 3, 5]])
def test_group_norm_of_empty_tensors(opset, shape):
    """GroupNormalization of an empty batch or plane is empty (its Reshape to [N, G, -1] had
    nothing to infer -1 from: "the dim '?' is known only at run time"); a full one against
    NumPy. Scale and bias per group before opset 21, per channel from it."""
    f = TensorProto.FLOAT
    per = 4 if opset >= 21 else 2
    graph = helper.make_graph([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                                num_groups=2, epsilon=1e-5)], "g",
                              [helper.make_tensor_value_info("x", f, shape)],
                              [helper.make_tensor_value_info("y", f, shape)],
                              [numpy_helper.from_array(np.full(per, 1.5, np.float32), "s"),
                               numpy_helper.from_array(np.full(per, 0.5, np.float32), "b")])
    # (no checker: onnx 1.23.2's calls opset 18's GroupNormalization deprecated)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    got = weft.compile(model.SerializeToString()).run({"x": x})["y"]
    assert got.shape == tuple(shape)
    groups = x.reshape(shape[0], 2, -1) if x.size else x
    if x.size:
        mean = groups.mean(axis=2, keepdims=True)
        want = ((groups - mean) / np.sqrt(groups.var(axis=2, keepdims=True) + 1e-5)).reshape(shape)
        np.testing.assert_allclose(got, 1.5 * want + 0.5, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dims", [["N", 4, "H", "W"], ["N", "C", "H", "W"]])
def test_group_norm_over_symbolic_dims_of_an_empty_batch(dims, dynamic):
    """GroupNormalization decomposed over symbolic dims reshapes to [N, G, C/G * H * W] over
    those symbols, not [N, G, -1]: a compile for one shape of that graph, as each run's
    without dynamic_shapes, had nothing to infer -1 from at an empty batch ("the dim '?' is
    known only at run time"; dynamic_node_tests.py seed 86). With dynamic_shapes a symbolic C
    is taken to be the scale's 4 (the dynamic compile had failed on the Mul broadcasting the
    scale over it, and fell back to compiles per shape)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                                num_groups=2, epsilon=1e-5)], "g",
                              [helper.make_tensor_value_info("x", f, dims)],
                              [helper.make_tensor_value_info("y", f, None)],
                              [numpy_helper.from_array(np.full(4, 1.5, np.float32), "s"),
                               numpy_helper.from_array(np.full(4, 0.5, np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    session = weft.compile(model.SerializeToString(), dynamic_shapes=dynamic)
    for shape in ([0, 4, 3, 2], [3, 4, 3, 2], [2, 4, 0, 5], [1, 4, 2, 5]):
        x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        got = session.run({"x": x})["y"]
        assert got.shape == tuple(shape)
        if x.size:
            groups = x.reshape(shape[0], 2, -1)
            mean = groups.mean(axis=2, keepdims=True)
            want = ((groups - mean) / np.sqrt(groups.var(axis=2, keepdims=True) + 1e-5)).reshape(shape)
            np.testing.assert_allclose(got, 1.5 * want + 0.5, rtol=1e-5, atol=1e-5)
    assert session.compiled_variants == (1 if dynamic else 4)


@pytest.mark.parametrize("op, opset, params, attrs", [
    ("LayerNormalization", 17, [(8,), (8,)], {"axis": -1}),
    ("RMSNormalization", 23, [(8,)], {"axis": -2}),
    ("GroupNormalization", 21, [(6,), (6,)], {"num_groups": 3}),
    ("GroupNormalization", 18, [(3,), (3,)], {"num_groups": 3}),
    ("InstanceNormalization", 17, [(6,), (6,)], {}),
])
def test_normalizations_of_f64_keep_f64(op, opset, params, attrs):
    """An f64 normalization takes its statistics in f64, whatever its stash_type (f32 by
    default), as ONNX Runtime's kernels and PyTorch do: RMSNormalization and GroupNormalization
    took them in f32, as the spec's function bodies cast, 3e-7 off (found by
    tests/fuzz/dtype_oracle.py); against a long-double reference."""
    names = ["x"] + [f"p{i}" for i in range(len(params))]
    shapes = dict(zip(names, [(2, 6, 5, 8)] + params))
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, list(shapes[n])) for n in names],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    # (not checked: Debian's onnx 1.12 has neither RMSNormalization nor GroupNormalization)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    rng = np.random.default_rng(5)
    feeds = {n: rng.standard_normal(shapes[n]) * 3 + 1 for n in names}
    x, p = feeds["x"].astype(np.longdouble), [feeds[n].astype(np.longdouble) for n in names[1:]]
    eps = np.longdouble(np.float32(1e-5))  # (an attribute of type float)
    if op == "RMSNormalization":
        want = x / np.sqrt((x * x).mean(axis=(2, 3), keepdims=True) + eps) * p[0]
    else:
        if op == "LayerNormalization":
            groups, axes, per = x, (3,), lambda v: v
        else:  # statistics per group (of 2 channels) or channel, over the rest
            g = attrs.get("num_groups", 6)
            groups, axes = x.reshape(2, g, -1), (2,)
            per = lambda v: np.repeat(v, 6 // len(v)).reshape(6, 1, 1)  # noqa: E731
        mean = groups.mean(axis=axes, keepdims=True)
        var = ((groups - mean) ** 2).mean(axis=axes, keepdims=True)
        want = ((groups - mean) / np.sqrt(var + eps)).reshape(x.shape) * per(p[0]) + per(p[1])
    got = weft.compile(model.SerializeToString()).run(feeds)["y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want.astype(np.float64), rtol=0,
                               atol=1e-13 * float(np.abs(want).max()))


def test_center_crop_pad_of_a_shape_given_at_run_time():
    """CenterCropPad's shape is a shape operand: given as an input (its output's dims
    symbolic), each run's value is bound at its compile, as Resize's sizes are ('ops Weft
    cannot execute yet: CenterCropPad' before; found by dynamic_node_tests.py --oracle ort)."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    graph = helper.make_graph([helper.make_node("CenterCropPad", ["x", "s"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", f, ["H", "W"]),
                               helper.make_tensor_value_info("s", i64, [2])],
                              [helper.make_tensor_value_info("y", f, ["A", "B"])])
    # (not checked: Debian's onnx 1.12 has no CenterCropPad)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString())
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    np.testing.assert_array_equal(compiled.run({"x": x, "s": np.array([3, 4])})["y"],
                                  x[1:4, 1:5])  # cropped, centred (start (5 - 3) // 2)
    padded = np.zeros((7, 2), np.float32)
    padded[1:6] = x[:, 2:4]  # padded by 1 above and below, cropped to 2 columns
    np.testing.assert_array_equal(compiled.run({"x": x, "s": np.array([7, 2])})["y"], padded)


@pytest.mark.parametrize("op", ["Range", "Clip", "Pad"])
def test_scalar_operands_that_are_empty_are_refused(op):
    """Range's start, Clip's min and Pad's constant value hold one element; an empty one was
    read past its end (Range's start: a segfault where a shape-computing stage made it) or
    taken as 0. ONNX Runtime refuses them too."""
    f = TensorProto.FLOAT
    empty = numpy_helper.from_array(np.zeros((0,), np.float32), "e")
    one = [numpy_helper.from_array(np.array(5, np.float32), "l"),
           numpy_helper.from_array(np.array(1, np.float32), "d")]
    pads = [numpy_helper.from_array(np.array([1, 1], np.int64), "p")]
    node, inits = {"Range": (helper.make_node("Range", ["e", "l", "d"], ["y"]), one),
                   "Clip": (helper.make_node("Clip", ["x", "e"], ["y"]), []),
                   "Pad": (helper.make_node("Pad", ["x", "p", "e"], ["y"]), pads)}[op]
    graph = helper.make_graph([node], "g", [] if op == "Range" else
                              [helper.make_tensor_value_info("x", f, [3])],
                              [helper.make_tensor_value_info("y", f, None)], [empty] + inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    with pytest.raises(weft.WeftError, match=f"{op}'s .* must hold one element, not 0"):
        weft.compile(model.SerializeToString()).run({} if op == "Range" else
                                                    {"x": np.ones(3, np.float32)})


def test_bfloat16_inputs_take_float32_and_ml_dtypes_arrays():
    """A bfloat16 input takes float32 (rounded) or ml_dtypes.bfloat16 (onnx's numpy_helper
    reads bfloat16 tensors as such; they were refused as 'must be bfloat16, got bfloat16')."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    model = make_model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                       [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    compiled = weft.compile(model.SerializeToString())
    x = np.array([1.0, 2.5, -3.0], np.float32)
    np.testing.assert_array_equal(compiled.run({"x": x.astype(ml_dtypes.bfloat16)})["y"], x)
    np.testing.assert_array_equal(compiled.run({"x": x})["y"], x)
    with pytest.raises(weft.WeftError, match=r"float32 or ml_dtypes.bfloat16\), got uint16"):
        compiled.run({"x": x.astype(np.uint16)})


def test_col2im_of_no_channels_is_refused():
    """Col2Im's input [1, 0, 5] has no channel of its block: a clear error (its ConvTranspose
    had a group of 0, and the division by it stopped the process with SIGFPE)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Col2Im", ["x", "image", "block"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", f, [1, 0, 5])],
                              [helper.make_tensor_value_info("y", f, [1, 0, 5, 5])],
                              [numpy_helper.from_array(np.array([5, 5], np.int64), "image"),
                               numpy_helper.from_array(np.array([1, 5], np.int64), "block")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8  # (no check_model: the onnx that ctest runs may predate Col2Im)
    with pytest.raises(weft.WeftError, match="has no channel of block size 5"):
        weft.compile(model.SerializeToString()).run({"x": np.ones((1, 0, 5), np.float32)})


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("weights,bias,message", [
    ((5, 1, 4), (5,), "5 output channels are not a multiple of group 4"),
    ((4, 1, 4), (3,), "the bias is f32\\[3\\], but the weights have 4 output channels"),
    ((4, 2, 4), (4,), "the input has 4 channels, the weights 2 per group in 4 group"),
])
def test_conv_weights_and_bias_that_do_not_match_are_refused(dynamic, weights, bias, message):
    """A depthwise Conv (group 4) of x [2, 4, 8] whose weights or bias do not fit: a clear
    error, with and without a dynamic compile (weights [5, 1, 4] with a bias of 4 ran and read
    past the bias; found fuzzing the ONNX node tests' causal_conv_with_state models)."""
    f = TensorProto.FLOAT
    feeds = {"x": np.ones((2, 4, 8), np.float32), "w": np.ones(weights, np.float32),
             "b": np.ones(bias, np.float32)}
    dims = {k: [f"{k}{i}" for i in range(v.ndim)] if dynamic else v.shape
            for k, v in feeds.items()}
    model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=4)],
                       [helper.make_tensor_value_info(k, f, dims[k]) for k in feeds],
                       [helper.make_tensor_value_info("y", f, ["n", "m", "l"])])
    with pytest.raises(weft.WeftError, match=message):
        weft.compile(model.SerializeToString(), dynamic_shapes=dynamic).run(feeds)


def one_node_model(node, arrays, opset):
    """A model of "node" over f32 and i64 inputs shaped and typed as "arrays", its output "y"
    of any shape (no check_model: some ops postdate the onnx that ctest runs)."""
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, types[v.dtype], v.shape)
                      for k, v in arrays.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("op,attrs,feeds,message", [
    ("GatherElements", {}, {"x": (0, 3), "i": (2, 3)}, "gathers along axis 0, which is empty"),
    ("GatherND", {}, {"x": (0, 3), "i": (2, 1)}, "gathers from dim 0, which is empty"),
    ("ScatterElements", {}, {"x": (0, 3), "i": (2, 3), "u": (2, 3)},
     "scatters along axis 0, which is empty"),
    ("ScatterND", {}, {"x": (0, 3), "i": (2, 1), "u": (2, 3)},
     "scatters into dim 0, which is empty"),
    ("NegativeLogLikelihoodLoss", {"reduction": "sum"}, {"x": (3, 0), "i": (3,)},
     "the classes, dim 1 of the input, which is empty"),
    ("SoftmaxCrossEntropyLoss", {"reduction": "sum"}, {"x": (3, 0), "i": (3,)},
     "the classes, dim 1 of the input, which is empty"),
])
def test_indexing_into_an_empty_axis_is_refused(op, attrs, feeds, message):
    """Indices into an axis with no element are all out of range (ONNX Runtime fails at run
    time); the kernels read or wrote past the data (a loss over x [3, 0] gave a different sum
    each compile; found by tests/fuzz/dynamic_node_tests.py)."""
    arrays = {k: (np.zeros(v, np.int64) if k == "i" else np.ones(v, np.float32))
              for k, v in feeds.items()}
    model = one_node_model(helper.make_node(op, list(feeds), ["y"], **attrs), arrays, 13)
    with pytest.raises(weft.WeftError, match=message):
        weft.compile(model.SerializeToString()).run(arrays)


@pytest.mark.parametrize("output_shape", [[10, 8], [11, 8], [11, 7], [9, 7]])
def test_conv_transpose_output_shape_larger_than_its_full_extent(output_shape):
    """ConvTranspose with output_shape past its full extent (9 x 7 here) and no auto_pad: the
    extra positions come at the end, as an output_padding, as ONNX Runtime, onnx.reference
    and PyTorch's output_size put them (an output 2 larger was shifted down by 1; found by
    tests/fuzz/attribute_oracle.py, seed 4)."""
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.random.default_rng(4).standard_normal((1, 2, 3, 3)).astype(np.float32)
    full = np.zeros((1, 2, 9, 7), np.float32)  # stride (3, 2): y[3i + k, 2j + l] += x w
    for i in range(3):
        for j in range(3):
            full[0, :, 3 * i:3 * i + 3, 2 * j:2 * j + 3] += x[0, 0, i, j] * w[0]
    want = np.zeros((1, 2, *output_shape), np.float32)
    want[:, :, :9, :7] = full
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2],
                            output_shape=output_shape)
    model = one_node_model(node, {"x": x, "w": w}, 13)
    got = weft.compile(model.SerializeToString()).run({"x": x, "w": w})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resizing_an_empty_dim_to_a_non_empty_one_is_refused(mode):
    """X [1, 0, 4, 4] to sizes [1, 1, 8, 8]: nothing to sample along dim 1 (ONNX Runtime fails;
    Weft's kernel read past the input; found by tests/fuzz/dynamic_node_tests.py, seed 80)."""
    arrays = {"x": np.ones((1, 0, 4, 4), np.float32), "s": np.array([1, 1, 8, 8], np.int64)}
    model = one_node_model(helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode=mode),
                           arrays, 19)
    with pytest.raises(weft.WeftError, match="dim 1 is empty and cannot be resized to 1"):
        weft.compile(model.SerializeToString()).run(arrays)
    arrays["s"] = np.array([1, 0, 8, 8], np.int64)  # empty to empty: an empty output
    assert weft.compile(model.SerializeToString()).run(arrays)["y"].shape == (1, 0, 8, 8)


@pytest.mark.parametrize("image,attrs", [([], {}), ([5], {}), ([5, 5], {"dilations": [1, 2, 1]})])
def test_col2im_of_mismatched_spatial_dims_is_refused(image, attrs):
    """Col2Im's image_shape, block_shape and attributes must give the same spatial dims: an
    empty image_shape was read past its end (a segfault; found by
    tests/fuzz/dynamic_node_tests.py)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)],
                              "g", [helper.make_tensor_value_info("x", f, [1, 4, 16]),
                                    helper.make_tensor_value_info("image", TensorProto.INT64,
                                                                  [len(image)])],
                              [helper.make_tensor_value_info("y", f, None)],
                              [numpy_helper.from_array(np.array([2, 2], np.int64), "block")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    with pytest.raises(weft.WeftError, match="do not give the same spatial dims"):
        weft.compile(model.SerializeToString()).run(
            {"x": np.ones((1, 4, 16), np.float32), "image": np.array(image, np.int64)})


def test_reshape_copying_a_dim_past_the_input_rank_is_refused():
    """A 0 in a Reshape's target copies the input's dim there; past the input's rank it is an
    error that says so (it was 'the dim unk23 is known only at run time': LayerNormalization's
    expanded function over an input with an empty dim)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", f, [0, 5])],
                              [helper.make_tensor_value_info("y", f, None)],
                              [numpy_helper.from_array(np.array([2, 0, 0, 5], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(weft.WeftError, match="copies dim 2 of the input \\(a 0\\), which has rank 2"):
        weft.compile(model.SerializeToString()).run({"x": np.ones((0, 5), np.float32)})


def symbolic_model(node, inputs, opset=13):
    """One node over f32 (or i64, for names starting with i) inputs of symbolic dims."""
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(
            k, TensorProto.INT64 if k.startswith("i") else TensorProto.FLOAT,
            [f"{k}{d}" for d in range(rank)]) for k, rank in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return weft.compile(model.SerializeToString(), dynamic_shapes=True)


def test_dynamic_shapes_indices_are_checked_per_run():
    """One dynamic compile of GatherElements and of Gather: indices longer than the data off
    the axis, or any index into an empty axis, are refused as with static shapes (the kernels
    clamp indices to the axis, and read past the data: found by
    tests/fuzz/dynamic_node_tests.py on the NLL losses' expanded forms)."""
    g = symbolic_model(helper.make_node("GatherElements", ["x", "i"], ["y"]), {"x": 2, "i": 2})
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(g.run({"x": x, "i": np.array([[2, 0]])})["y"], [[4, 1]])
    with pytest.raises(weft.WeftError, match="indices dim 1 exceeds the data's"):
        g.run({"x": x, "i": np.zeros((2, 4), np.int64)})
    with pytest.raises(weft.WeftError, match="gathers along axis 0, which is empty"):
        g.run({"x": np.ones((0, 2), np.float32), "i": np.zeros((1, 2), np.int64)})
    g = symbolic_model(helper.make_node("Gather", ["x", "i"], ["y"]), {"x": 2, "i": 1})
    np.testing.assert_array_equal(g.run({"x": x, "i": np.array([2])})["y"], [[4, 5]])
    with pytest.raises(weft.WeftError, match="gathers along axis 0, which is empty"):
        g.run({"x": np.ones((0, 2), np.float32), "i": np.array([1])})


def test_dynamic_shapes_reshape_to_a_zero_dim_copies_as_onnx_does():
    """Reshape(x, Shape(y)) over symbols: a run where y's dim is 0 gives a target 0, which
    copies x's dim there (no allowzero), as a compile for that run's shapes does; the
    dynamic compile had taken the target to be y's shape (LayerNormalization's expanded
    function ran over an empty dim that way)."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Shape", ["y"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["z"])],
        "g", [helper.make_tensor_value_info("x", f, ["a", "b"]),
              helper.make_tensor_value_info("y", f, ["c", "d"])],
        [helper.make_tensor_value_info("z", f, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    assert compiled.run({"x": np.ones((2, 3), np.float32),
                         "y": np.ones((3, 2), np.float32)})["z"].shape == (3, 2)
    with pytest.raises(weft.WeftError, match="Reshape"):  # [0, 3] copies x's 2: 6 elements
        compiled.run({"x": np.ones((2, 0), np.float32), "y": np.ones((0, 3), np.float32)})


def test_dynamic_shapes_group_norm_checks_its_channels_per_run():
    """GroupNormalization's symbolic channels must be a multiple of its groups, and its scale
    and bias hold one value per channel (opset 21): each run checks them (a bias of one
    broadcast, and 1 channel in 2 groups ran)."""
    g = symbolic_model(helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"],
                                        num_groups=2), {"x": 3, "s": 1, "b": 1}, opset=21)
    ones = lambda *shape: np.ones(shape, np.float32)
    assert g.run({"x": ones(2, 4, 3), "s": ones(4), "b": ones(4)})["y"].shape == (2, 4, 3)
    # (Such a run compiles for its shapes, from the model's decomposed GroupNormalization.)
    with pytest.raises(weft.WeftError, match="GroupNormalization_0"):
        g.run({"x": ones(2, 1, 3), "s": ones(1), "b": ones(1)})
    with pytest.raises(weft.WeftError, match="GroupNormalization_0"):
        g.run({"x": ones(2, 4, 3), "s": ones(4), "b": ones(1)})


def test_dynamic_shapes_library_calls_with_empty_outputs():
    """A dynamic compile's oneDNN pooling and Gemm at a batch of 0 give empty outputs, as
    per-shape compiles do (they stopped with 'the library cannot run this call ...: 'x' is
    empty')."""
    pool = symbolic_model(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3]),
                          {"x": 4})
    assert pool.run({"x": np.ones((1, 2, 5, 5), np.float32)})["y"].shape == (1, 2, 3, 3)
    assert pool.run({"x": np.ones((0, 2, 5, 5), np.float32)})["y"].shape == (0, 2, 3, 3)
    gemm = symbolic_model(helper.make_node("Gemm", ["a", "b"], ["y"]), {"a": 2, "b": 2})
    b = np.ones((5, 4), np.float32)
    assert gemm.run({"a": np.ones((3, 5), np.float32), "b": b})["y"].shape == (3, 4)
    assert gemm.run({"a": np.ones((0, 5), np.float32), "b": b})["y"].shape == (0, 4)


def test_dynamic_shapes_gemm_checks_its_c_per_run():
    """A dynamic Gemm's C must broadcast to the output even where the output is empty, as per
    shape: at N = 0 a C of 4 columns had run (its library call checked C only where it ran;
    found by tests/fuzz/dynamic_node_tests.py, seed 11)."""
    gemm = symbolic_model(helper.make_node("Gemm", ["a", "b", "c"], ["y"]), {"a": 2, "b": 2, "c": 2})
    a, c = np.ones((3, 5), np.float32), np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(gemm.run({"a": a, "b": np.ones((5, 4), np.float32), "c": c})["y"],
                                  np.full((3, 4), 6, np.float32))
    assert gemm.run({"a": a, "b": np.ones((5, 6), np.float32), "c": c[:, :1]})["y"].shape == (3, 6)
    for n in (0, 6):
        with pytest.raises(weft.WeftError, match="C is \\[1,4\\], which does not broadcast"):
            gemm.run({"a": a, "b": np.ones((5, n), np.float32), "c": c})


@pytest.mark.parametrize("node,feeds,message", [
    (helper.make_node("Gemm", ["a", "b", "c"], ["y"]), {"a": (3, 7), "b": (7, 3), "c": (2,)},
     "C is \\[2\\], which does not broadcast to the output's \\[3, 3\\]"),
    (helper.make_node("RMSNormalization", ["x", "s"], ["y"], axis=-1),
     {"x": (2, 3, 4, 1), "s": (5,)}, "input 1 is \\[5\\], which does not broadcast"),
    (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[5, 5], pads=[1, 1, 1, 1]),
     {"x": (1, 1, 1, 5)}, "a window of 5 elements does not fit in 1 with 2 of padding"),
])
def test_shapes_that_do_not_fit_are_refused(node, feeds, message):
    """A Gemm's C that does not broadcast to the output (it ran), an RMSNormalization scale
    that does not broadcast to the input (an internal error), a pooling window
    longer than its padded input (an error about dims known only at run time)."""
    arrays = {k: np.ones(v, np.float32) for k, v in feeds.items()}
    model = one_node_model(node, arrays, 23)
    with pytest.raises(weft.WeftError, match=message):
        weft.compile(model.SerializeToString()).run(arrays)


def test_dynamic_shapes_first_inputs_that_break_an_assumption():
    """x [1, 4, 1, 6] and y [3, 1, 5, 6] broadcast; the dynamic compile takes their symbols
    to be equal (unify_dims), which these very inputs break: they compile for their own shapes
    (the first run used to fail the dynamic compile's input check)."""
    f = TensorProto.FLOAT
    model = make_model([helper.make_node("Add", ["x", "y"], ["z"])],
                       [helper.make_tensor_value_info("x", f, ["a", "b", "c", "d"]),
                        helper.make_tensor_value_info("y", f, ["e", "g", "h", "i"])],
                       [helper.make_tensor_value_info("z", f, ["j", "k", "l", "m"])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    x, y = np.ones((1, 4, 1, 6), np.float32), np.full((3, 1, 5, 6), 2, np.float32)
    np.testing.assert_array_equal(compiled.run({"x": x, "y": y})["z"], x + y)


def test_dynamic_shapes_declared_static_output():
    """The output declared [2, 3, 3] where the MatMul computes [N, M, K] over b's symbol K: the
    compile takes K to be 3, and a b with another K compiles for its own shapes (the declared
    [2, 3, 3] had sized the buffer that [2, 3, K] was written into)."""
    f = TensorProto.FLOAT
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["c"])],
                       [helper.make_tensor_value_info("a", f, ["N", "M", "J"]),
                        helper.make_tensor_value_info("b", f, ["N", "J", "K"])],
                       [helper.make_tensor_value_info("c", f, [2, 3, 3])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    for k in (3, 5000):
        a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 4, k), np.float32)
        np.testing.assert_array_equal(compiled.run({"a": a, "b": b})["c"], a @ b)
    assert compiled.compiled_variants == 2


def test_dynamic_shapes_tile_by_a_computed_batch():
    """BLOOM's ALiBi bias: a [4, 1, T] tensor tiled by the batch that Shape reads, [4N, 1, T],
    compiles once."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["n"], start=0, end=1),
        helper.make_node("Concat", ["n", "ones"], ["repeats"], axis=0),
        helper.make_node("Gather", ["ids", "zero"], ["row"], axis=0),
        helper.make_node("Cast", ["row"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["f", "axes"], ["u"]),
        helper.make_node("Mul", ["slopes", "u"], ["x"]),
        helper.make_node("Tile", ["x", "repeats"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1], np.int64), "ones"),
         numpy_helper.from_array(np.array([0, 1], np.int64), "axes"),
         numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array([0.5, 0.25, 0.125, 2], np.float32).reshape(4, 1, 1), "slopes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    for n, t in [(1, 3), (4, 1), (2, 9)]:
        ids = np.arange(n * t, dtype=np.int64).reshape(n, t)
        x = np.array([0.5, 0.25, 0.125, 2], np.float32).reshape(4, 1, 1) * ids[0].astype(np.float32)
        np.testing.assert_array_equal(compiled.run({"ids": ids})["y"], np.tile(x, (n, 1, 1)))
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("shape,axis,last", [(["N", "T"], 1, 0), (["N", "T"], 0, 1), (["N", "T", 8], 1, 0),
                                             (["N", 4, "T"], 2, 1), (["N", "T", 8], 2, 0)])
def test_dynamic_shapes_arg_max_and_pad_over_symbols(shape, axis, last):
    """ArgMax along any axis (CLIP's pooled token) and a constant Pad (Swin's windows; here of
    the last dim, symbolic or not) compile once over symbolic dims."""
    graph = helper.make_graph(
        [helper.make_node("ArgMax", ["x"], ["i"], axis=axis, keepdims=0, select_last_index=last),
         helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("i", TensorProto.INT64, None),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([0] * len(shape) + [0] * (len(shape) - 1) + [2], np.int64), "pads")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(4)
    for extents in [(1, 1), (3, 5), (2, 70)]:
        dims = [extents[0] if d == "N" else extents[1] if d == "T" else d for d in shape]
        x = rng.integers(0, 3, dims).astype(np.float32)  # ties: the first (or last) index wins
        out = compiled.run({"x": x})
        want = np.argmax(np.flip(x, axis), axis=axis) if last else np.argmax(x, axis=axis)
        if last:
            want = x.shape[axis] - 1 - want
        np.testing.assert_array_equal(out["i"], want)
        np.testing.assert_array_equal(out["p"], np.pad(x, [(0, 0)] * (len(shape) - 1) + [(0, 2)]))
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("shape,axes", [(["N", 64], [0]), (["N", "T", 16], [1]), (["N", "T"], [0, 1]),
                                        (["N", "T", "C"], [2]), (["N", "T", 8], [0, 1]),
                                        (["N", "T", "C"], [1]), (["N", 3, "H", "W"], [0, 3])])
def test_dynamic_shapes_reduce_symbolic_axes(shape, axes):
    """Reductions over symbolic axes (COLUMN, MIDDLE, ALL and ROW forms, and non-adjacent axes
    with symbolic dims between, in one step over the input's own dims; a mean divides by the
    run's extents), a Transpose over symbolic dims and a softmax along
    a symbolic axis: one compile, extents 1 to 3000, against float64."""
    ops = {"ReduceSum": lambda a: a.sum(axis=tuple(axes)), "ReduceMax": lambda a: a.max(axis=tuple(axes)),
           "ReduceMean": lambda a: a.mean(axis=tuple(axes)),
           "ReduceL2": lambda a: np.sqrt((a * a).sum(axis=tuple(axes))),
           "ReduceLogSumExp": lambda a: np.log(np.exp(a).sum(axis=tuple(axes)))}
    perm = list(range(len(shape)))[::-1]
    nodes = [helper.make_node(op, ["x"], [op], axes=axes, keepdims=0) for op in ops]
    nodes += [helper.make_node("Transpose", ["x"], ["t"], perm=perm),
              helper.make_node("Softmax", ["t"], ["softmax"], axis=-1)]
    kept = [d for i, d in enumerate(shape) if i not in axes]
    outputs = [helper.make_tensor_value_info(op, TensorProto.FLOAT, kept) for op in ops]
    outputs.append(helper.make_tensor_value_info("softmax", TensorProto.FLOAT, shape[::-1]))
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], outputs,
                       opset=12)
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(7)
    for extent in (1, 2, 7, 300, 3000):
        dims = [extent if isinstance(d, str) else d for d in shape]
        if np.prod(dims) > 2e7:
            continue
        x = rng.standard_normal(dims).astype(np.float32)
        out = compiled.run({"x": x})
        x64 = x.astype(np.float64)
        for op, f in ops.items():
            np.testing.assert_allclose(out[op], f(x64), rtol=2e-5, atol=1e-5, err_msg=f"{op} at {dims}")
        t = x64.transpose(perm)
        e = np.exp(t - t.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(out["softmax"], e / e.sum(axis=-1, keepdims=True), rtol=1e-5,
                                   atol=1e-7, err_msg=f"softmax at {dims}")
    assert compiled.compiled_variants == 1

def test_dynamic_shapes_row_micro_kernels(tmp_path, monkeypatch):
    """A softmax over rows of symbolic extent T holds micro-kernels for T = 64, 128, ..., 1024
    (the extent a constant) beside the generic kernel; each run takes the one for its T.
    Both kinds, at extents on, next to and between the variants, against float64."""
    monkeypatch.setenv("WEFT_DUMP_DIR", str(tmp_path))
    scale = numpy_helper.from_array(np.array(0.125, np.float32), "scale")
    nodes = [helper.make_node("Mul", ["x", "scale"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=-1)]
    shape = ["N", 2, "T", "T"]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [scale])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(11)
    for n, t in [(2, 64), (1, 63), (3, 65), (1, 128), (2, 200), (1, 1024), (1, 1)]:
        x = rng.standard_normal((n, 2, t, t)).astype(np.float32)
        m = x.astype(np.float64) * 0.125
        e = np.exp(m - m.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(compiled.run({"x": x})["y"], e / e.sum(axis=-1, keepdims=True),
                                   rtol=1e-5, atol=1e-7, err_msg=f"T={t}")
    assert compiled.compiled_variants == 1
    (source,) = tmp_path.glob("*/kernels.cc")
    text = source.read_text()
    assert "case 128: return" in text and "case 1024: return" in text and "default: return" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_dynamic_shapes_normalize_over_symbolic_axes(dtype):
    """Means over symbolic axes divide by the run's extents (ExprOp::kExtent):
    LayerNormalization over [T, C] of [N, T, C], InstanceNormalization and GlobalAveragePool
    over [H, W], and a ReduceMean over [N, W]; one compile, against float64."""
    onnx_type = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["layer_norm"], axis=1,
                              epsilon=1e-5),
             helper.make_node("InstanceNormalization", ["image", "scale", "bias"], ["instance_norm"],
                              epsilon=1e-5),
             helper.make_node("GlobalAveragePool", ["image"], ["pooled"]),
             helper.make_node("ReduceMean", ["image"], ["mean"], axes=[0, 3], keepdims=0)]
    inputs = [helper.make_tensor_value_info("x", onnx_type, ["N", "T", "C"]),
              helper.make_tensor_value_info("gamma", onnx_type, ["T", "C"]),
              helper.make_tensor_value_info("beta", onnx_type, ["T", "C"]),
              helper.make_tensor_value_info("image", onnx_type, ["N", 3, "H", "W"]),
              helper.make_tensor_value_info("scale", onnx_type, [3]),
              helper.make_tensor_value_info("bias", onnx_type, [3])]
    outputs = [helper.make_tensor_value_info("layer_norm", onnx_type, ["N", "T", "C"]),
               helper.make_tensor_value_info("instance_norm", onnx_type, ["N", 3, "H", "W"]),
               helper.make_tensor_value_info("pooled", onnx_type, ["N", 3, 1, 1]),
               helper.make_tensor_value_info("mean", onnx_type, [3, "H"])]
    compiled = weft.compile(make_model(nodes, inputs, outputs, opset=17).SerializeToString(),
                            dynamic_shapes=True)
    rng = np.random.default_rng(8)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=2e-3, atol=4e-3)
    for n, t, c, h, w in [(1, 1, 1, 1, 1), (2, 3, 5, 7, 11), (3, 16, 64, 20, 9)]:
        feeds = {"x": rng.standard_normal((n, t, c)), "gamma": rng.standard_normal((t, c)),
                 "beta": rng.standard_normal((t, c)), "image": rng.standard_normal((n, 3, h, w)),
                 "scale": rng.standard_normal(3), "bias": rng.standard_normal(3)}
        feeds = {k: v.astype(dtype) for k, v in feeds.items()}
        out = compiled.run(feeds)
        f = {k: v.astype(np.float64) for k, v in feeds.items()}
        x = f["x"]
        mu, var = x.mean(axis=(1, 2), keepdims=True), x.var(axis=(1, 2), keepdims=True)
        want = {"layer_norm": (x - mu) / np.sqrt(var + 1e-5) * f["gamma"] + f["beta"]}
        im = f["image"]
        mu, var = im.mean(axis=(2, 3), keepdims=True), im.var(axis=(2, 3), keepdims=True)
        want["instance_norm"] = ((im - mu) / np.sqrt(var + 1e-5) * f["scale"].reshape(1, 3, 1, 1)
                                 + f["bias"].reshape(1, 3, 1, 1))
        want["pooled"] = mu
        want["mean"] = im.mean(axis=(0, 3))
        for name, value in want.items():
            np.testing.assert_allclose(out[name].astype(np.float64), value, err_msg=f"{name} at {n, t, c, h, w}",
                                       **tol)
    assert compiled.compiled_variants == 1


def fused_subgraphs():
    """[N, T, 16] through Mul and Add into a row sum, a softmax and a LayerNormalization, and
    scores [N, 2, T, T] with a causal mask built from Shape as PyTorch exports it (Shape,
    Slice, Expand, Trilu, Equal, Where) added before a softmax."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), n)
             for n in ("scale", "shift", "gamma", "beta")]
    inits += [numpy_helper.from_array(np.array([-1], np.int64), "axes"),
              numpy_helper.from_array(np.array([2], np.int64), "two"),
              numpy_helper.from_array(np.array([4], np.int64), "four"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one"),
              numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
              numpy_helper.from_array(np.array(-np.inf, np.float32), "minus_inf")]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["m"]), helper.make_node("Add", ["m", "shift"], ["a"]),
             helper.make_node("ReduceSum", ["a", "axes"], ["row_sum"], keepdims=0),
             helper.make_node("Softmax", ["a"], ["softmax"], axis=-1),
             helper.make_node("LayerNormalization", ["a", "gamma", "beta"], ["layernorm"], axis=-1),
             helper.make_node("Shape", ["scores"], ["shape"]),
             helper.make_node("Slice", ["shape", "two", "four"], ["tt"]),
             helper.make_node("Expand", ["one", "tt"], ["ones"]),
             helper.make_node("Trilu", ["ones"], ["lower"], upper=0),
             helper.make_node("Equal", ["lower", "zero"], ["above"]),
             helper.make_node("Where", ["above", "minus_inf", "zero"], ["mask"]),
             helper.make_node("Add", ["scores", "mask"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["attention"], axis=-1)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T", 16]),
              helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 2, "T", "T"])]
    outputs = [helper.make_tensor_value_info("row_sum", TensorProto.FLOAT, ["N", "T"]),
               helper.make_tensor_value_info("softmax", TensorProto.FLOAT, ["N", "T", 16]),
               helper.make_tensor_value_info("layernorm", TensorProto.FLOAT, ["N", "T", 16]),
               helper.make_tensor_value_info("attention", TensorProto.FLOAT, ["N", 2, "T", "T"])]
    return make_model(nodes, inputs, outputs, inits, opset=17).SerializeToString()


def test_dynamic_shapes_fuse_as_a_static_compile():
    """A dynamic compile fuses as a specialized one: as many kernels, moving no more bytes at
    the run's extents (an elementwise producer inlined into a reduction that views [N, T, 16]
    as [N*T, 16]; the causal mask computed once, not per score), with the same results."""
    data = fused_subgraphs()
    dynamic = weft.compile(data, dynamic_shapes=True)
    rng = np.random.default_rng(4)
    for n, t in [(2, 5), (3, 40)]:
        feeds = {"x": rng.standard_normal((n, t, 16)).astype(np.float32),
                 "scores": rng.standard_normal((n, 2, t, t)).astype(np.float32)}
        want, static_kernels = weft.compile(data).profile(feeds)
        got, dynamic_kernels = dynamic.profile(feeds)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
        assert len(dynamic_kernels) == len(static_kernels)
        # Not equal: a static compile may fold the mask's ones into a constant it reads.
        assert sum(k["bytes"] for k in dynamic_kernels) <= sum(k["bytes"] for k in static_kernels)
    assert dynamic.compiled_variants == 1


def test_dynamic_shapes_on_cuda_through_the_emulator(monkeypatch):
    """dynamic_shapes on device="cuda": the CUDA kernels take the run's extents as
    parameters; 50 shapes on one compile, on the host emulator (WEFT_CUDA_EMULATOR=1)."""
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    nodes = [helper.make_node("Mul", ["x", "x"], ["m"]), helper.make_node("Softmax", ["m"], ["y"], axis=-1),
             helper.make_node("ReduceSum", ["x"], ["s"], axes=[0], keepdims=0),
             helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T"])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T"]),
                        helper.make_tensor_value_info("s", TensorProto.FLOAT, ["T"]),
                        helper.make_tensor_value_info("t", TensorProto.FLOAT, ["T", "N"])], opset=12)
    compiled = weft.compile(model.SerializeToString(), device="cuda", dynamic_shapes=True)
    rng = np.random.default_rng(8)
    for n, t in zip(rng.integers(1, 70, 50), rng.integers(1, 300, 50)):
        x = rng.standard_normal((n, t)).astype(np.float32)
        out = compiled.run({"x": x})
        m = x.astype(np.float64) ** 2
        e = np.exp(m - m.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(out["y"], e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(out["s"], x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(out["t"], x.T)
    assert compiled.compiled_variants == 1

def test_dynamic_shapes_unify_a_mask_length_with_the_keys():
    """A KV-cache step's additive mask [N, M] has a symbol of its own where the scores are
    over the past and new keys (P + T): one compile takes M to be P + T and checks it per
    run; a mask broadcast from length 1 (still valid ONNX) compiles for its own shapes."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Concat", ["past", "new"], ["keys"], axis=2),
             helper.make_node("Transpose", ["keys"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Constant", [], ["axes"],
                              value=numpy_helper.from_array(np.array([1, 2], np.int64))),
             helper.make_node("Unsqueeze", ["mask", "axes"], ["m4"]),
             helper.make_node("Add", ["s", "m4"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["y"], axis=-1)]
    model = make_model(
        nodes, [helper.make_tensor_value_info("past", f, ["N", 2, "P", 8]),
                helper.make_tensor_value_info("new", f, ["N", 2, "T", 8]),
                helper.make_tensor_value_info("q", f, ["N", 2, "T", 8]),
                helper.make_tensor_value_info("mask", f, ["N", "M"])],
        [helper.make_tensor_value_info("y", f, ["N", 2, "T", "K"])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(9)
    for n, t, p, m in ((1, 1, 5, 6), (2, 3, 9, 12), (1, 1, 0, 1), (2, 4, 7, 1)):
        x = {"past": rng.standard_normal((n, 2, p, 8)), "new": rng.standard_normal((n, 2, t, 8)),
             "q": rng.standard_normal((n, 2, t, 8)), "mask": rng.standard_normal((n, m))}
        x = {k: v.astype(np.float32) for k, v in x.items()}
        r = {k: v.astype(np.float64) for k, v in x.items()}
        keys = np.concatenate([r["past"], r["new"]], axis=2)
        s = r["q"] @ keys.transpose(0, 1, 3, 2) + r["mask"][:, None, None, :]
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(compiled.run(x)["y"], e / e.sum(axis=-1, keepdims=True),
                                   rtol=1e-5, atol=1e-6)
        # The first three runs share the one compile; the broadcast mask gets its own.
        assert compiled.compiled_variants == (1 if m == p + t else 2)


def test_dynamic_shapes_positions_sliced_from_the_past_length():
    """OPT's decoding step: positions are cumsum(mask) * mask - 1 over the mask's [N, M],
    sliced from the past length P (read from the cache's shape) and looked up in a table,
    then added to the new tokens' [N, T, D]. One compile takes M to be P + T (the Slice's
    M - P meets T) and checks it per run; a slice of length 1 (M = P + 1, broadcast against
    T > 1: still valid ONNX) compiles for its own shapes."""
    i64, f = TensorProto.INT64, TensorProto.FLOAT
    const = lambda name, a: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(a))  # noqa: E731
    nodes = [const("axis", np.array(1, np.int64)), const("one", np.array(1, np.int64)),
             const("end", np.array([2**63 - 1], np.int64)), const("axes", np.array([1], np.int64)),
             helper.make_node("CumSum", ["mask", "axis"], ["c"]),
             helper.make_node("Mul", ["c", "mask"], ["cm"]),
             helper.make_node("Sub", ["cm", "one"], ["pos"]),
             helper.make_node("Shape", ["past"], ["p"], start=2, end=3),
             helper.make_node("Slice", ["pos", "p", "end", "axes"], ["sliced"]),
             helper.make_node("Gather", ["table", "sliced"], ["emb"]),
             helper.make_node("Add", ["x", "emb"], ["y"])]
    table = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", f, ["N", "T", 8]),
                helper.make_tensor_value_info("mask", i64, ["N", "M"]),
                helper.make_tensor_value_info("past", f, ["N", 2, "P", 4])],
        [helper.make_tensor_value_info("y", f, ["N", "T", 8])],
        initializers=[numpy_helper.from_array(table, "table")], opset=15)
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(10)
    for n, t, p, m in ((1, 1, 5, 6), (2, 3, 9, 12), (3, 4, 0, 4), (1, 2, 20, 22), (2, 3, 6, 7)):
        mask = (rng.uniform(size=(n, m)) < 0.8).astype(np.int64)
        feed = {"x": rng.standard_normal((n, t, 8)).astype(np.float32), "mask": mask,
                "past": np.zeros((n, 2, p, 4), np.float32)}
        positions = (np.cumsum(mask, axis=1) * mask - 1)[:, p:]
        want = feed["x"] + table[np.where(positions < 0, positions + 64, positions)]
        np.testing.assert_allclose(compiled.run(feed)["y"], want, rtol=1e-6)
        # The first four runs share the one compile; the broadcast positions get their own.
        assert compiled.compiled_variants == (1 if m == p + t else 2)


def test_dynamic_shapes_matmul_of_two_activations():
    """MatMuls of two activations over symbolic dims (attention's Q x K^T and P x V, as a
    KV cache's past grows) run on oneDNN's sgemm, which takes its dims per run: operands read
    through absorbed Transposes by rows and by columns, a result written through one, batch
    dims broadcast, and empty extents (K = 0 gives zeros), each against float64. (The
    probabilities are an output too: the products then stay two calls, not Weft's attention
    call.)"""
    nodes = [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qt", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["o"]),
             helper.make_node("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["at", "b"], ["z"])]
    f = TensorProto.FLOAT
    model = make_model(
        nodes, [helper.make_tensor_value_info("q", f, ["N", "T", 3, "D"]),
                helper.make_tensor_value_info("k", f, ["N", "P", 3, "D"]),
                helper.make_tensor_value_info("v", f, ["N", 3, "P", 5]),
                helper.make_tensor_value_info("a", f, ["N", "K", "M"]),
                helper.make_tensor_value_info("b", f, ["K", 4])],
        [helper.make_tensor_value_info("y", f, ["N", "T", 3, 5]),
         helper.make_tensor_value_info("z", f, ["N", "M", 4]),
         helper.make_tensor_value_info("p", f, ["N", 3, "T", "P"])])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=True)
    rng = np.random.default_rng(8)
    dims = [(2, 1, 7, 16, 9, 3), (1, 4, 30, 8, 0, 2), (3, 2, 1, 1, 5, 0), (2, 0, 4, 2, 3, 1)]
    for n, t, p, d, k, m in dims:
        x = {"q": rng.standard_normal((n, t, 3, d)), "k": rng.standard_normal((n, p, 3, d)),
             "v": rng.standard_normal((n, 3, p, 5)), "a": rng.standard_normal((n, k, m)),
             "b": rng.standard_normal((k, 4))}
        x = {name: a.astype(np.float32) for name, a in x.items()}
        out, kernels = compiled.profile(x)
        r = {name: a.astype(np.float64) for name, a in x.items()}
        s = r["q"].transpose(0, 2, 1, 3) @ r["k"].transpose(0, 2, 3, 1)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        want = ((e / e.sum(axis=-1, keepdims=True)) @ r["v"]).transpose(0, 2, 1, 3)
        np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["z"], r["a"].transpose(0, 2, 1) @ r["b"], rtol=1e-5, atol=1e-5)
    sgemm = [k["strategy"] for k in kernels if "sgemm" in k["strategy"]]
    assert sorted(sgemm) == ["oneDNN sgemm per matrix, dims at run time",
                             "oneDNN sgemm per matrix, dims at run time, A transposed",
                             "oneDNN sgemm per matrix, dims at run time, B transposed"], sgemm
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_dynamic_shapes_library_calls(device, monkeypatch):
    """dynamic_shapes with library calls over symbolic rows (oneDNN on the CPU: MatMul and Gemm
    with their bias, activation and residual epilogues; on CUDA, through the emulator, the
    GEMMs alone): 50 shapes on one compile, more than the calls keep built (8), each against
    float64."""
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    rng = np.random.default_rng(6)
    w = {"w1": rng.standard_normal((16, 32)) * 0.3, "b1": rng.standard_normal(32),
         "w2": rng.standard_normal((32, 16)) * 0.3, "b2": rng.standard_normal(16),
         "w3": rng.standard_normal((8, 16)), "b3": rng.standard_normal(8)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["a2"]), helper.make_node("Add", ["a2", "x"], ["y"]),
             helper.make_node("Gemm", ["z", "w3", "b3"], ["g"], transB=1)]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "T", 16]),
                helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T", 16]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, ["N", 8])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()])
    compiled = weft.compile(model.SerializeToString(), device=device, dynamic_shapes=True)
    w = {k: v.astype(np.float32).astype(np.float64) for k, v in w.items()}
    for n, t in zip(rng.integers(1, 9, 50), rng.integers(1, 40, 50)):
        x = rng.standard_normal((n, t, 16)).astype(np.float32)
        z = rng.standard_normal((n, 16)).astype(np.float32)
        out = compiled.run({"x": x, "z": z})
        r = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
        np.testing.assert_allclose(out["y"], r @ w["w2"] + w["b2"] + x, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out["g"], z.astype(np.float64) @ w["w3"].T + w["b3"],
                                   rtol=1e-4, atol=1e-4)
    assert compiled.compiled_variants == 1


@pytest.mark.parametrize("dynamic", [False, True])
def test_constant_of_shape_too_large_to_fold(dynamic):
    """ConstantOfShape of a million elements (beyond what folding makes a constant: a
    detection head's zeros of [rois, 256, 7, 7]) is a fill kernel, for f32, i64 and bool
    values, over the input's shape (symbolic with dynamic_shapes) or a constant one."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1000, 1000])
    fill = lambda name, elem, v: helper.make_tensor(name, elem, [1], [v])
    nodes = [helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("ConstantOfShape", ["xs"], ["z"], value=fill("a", TensorProto.FLOAT, 2.5)),
             helper.make_node("Add", ["x", "z"], ["y"]),
             helper.make_node("ConstantOfShape", ["shape"], ["big"],
                              value=fill("b", TensorProto.INT64, -(2 ** 40))),
             helper.make_node("ConstantOfShape", ["xs"], ["yes"], value=fill("c", TensorProto.BOOL, 1))]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1000]),
         helper.make_tensor_value_info("big", TensorProto.INT64, [1000, 1000]),
         helper.make_tensor_value_info("yes", TensorProto.BOOL, ["N", 1000])], [shape])
    compiled = weft.compile(model.SerializeToString(), dynamic_shapes=dynamic)
    for n in (1000, 3):
        x = np.random.default_rng(n).standard_normal((n, 1000)).astype(np.float32)
        out = compiled.run({"x": x})
        np.testing.assert_array_equal(out["y"], x + np.float32(2.5))
        np.testing.assert_array_equal(out["big"], np.full((1000, 1000), -(2 ** 40), np.int64))
        np.testing.assert_array_equal(out["yes"], np.ones((n, 1000), bool))


@pytest.mark.parametrize("op", ["Conv", "ConvTranspose"])
def test_half_precision_convolutions_sum_in_float32(op):
    """f16 Conv and ConvTranspose (on the CPU oneDNN's f32 calls between Casts:
    graph/passes/narrow_in_f32.h) read f16 and sum in f32, against a float64 reference within
    f16's rounding of the result."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, 4, 7, 6)).astype(np.float16)
    w = rng.standard_normal((4, 5, 3, 3) if op == "ConvTranspose" else (5, 4, 3, 3)).astype(np.float16)
    b = rng.standard_normal(5).astype(np.float16)
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    if op == "ConvTranspose":  # stride 2: y[n, m, 2i + k] += x[n, c, i] w[c, m, k]
        want = np.zeros((1, 5, 15, 13))
        for i in range(3):
            for j in range(3):
                want[:, :, i:i + 13:2, j:j + 11:2] += np.einsum("nchw,cm->nmhw", xd, wd[:, :, i, j])
        attrs = {"strides": [2, 2]}
    else:  # pads 1: y[n, m, i, j] = sum x[n, c, i + k - 1, j + l - 1] w[m, c, k, l]
        padded = np.pad(xd, [(0, 0), (0, 0), (1, 1), (1, 1)])
        want = sum(np.einsum("nchw,mc->nmhw", padded[:, :, i:i + 7, j:j + 6], wd[:, :, i, j])
                   for i in range(3) for j in range(3))
        attrs = {"pads": [1, 1, 1, 1]}
    want += b.astype(np.float64).reshape(1, -1, 1, 1)
    model = make_model([helper.make_node(op, ["x", "w", "b"], ["y"], **attrs)],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT16, list(x.shape))],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT16, list(want.shape))],
                       [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    got = weft.compile(model.SerializeToString()).run({"x": x})["y"]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_an_input_without_a_shape_runs_at_the_rank_given():
    """An input whose type has no shape has an unknown rank, not rank 0: compile waits for the
    run's inputs (Shape, Slice and Squeeze of a rank-0 input would fail)."""
    graph = helper.make_graph([helper.make_node("Shape", ["x"], ["s"]),
                               helper.make_node("Slice", ["s", "one", "two"], ["d"]),
                               helper.make_node("Squeeze", ["d"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
                              [numpy_helper.from_array(np.array([1], np.int64), "one"),
                               numpy_helper.from_array(np.array([2], np.int64), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    compiled = weft.compile(model.SerializeToString())
    assert compiled.run({"x": np.ones((2, 7), np.float32)})["y"] == 7


def test_a_wrong_value_info_gives_way_to_the_op():
    """A value_info that disagrees with its node (ONNX Runtime GenAI's builder declares its [1]
    constants as scalars) is the op's type, as in ONNX Runtime; so are a graph output's dims
    (ONNX Runtime's lenient merge), but not its element type."""
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Mul", ["x", "c"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model.graph.value_info.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, []))
    y = weft.compile(model.SerializeToString()).run({"x": np.arange(3, dtype=np.float32)})["y"]
    np.testing.assert_array_equal(y, [0, 2, 4])
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    y = weft.compile(model.SerializeToString()).run({"x": np.arange(3, dtype=np.float32)})["y"]
    np.testing.assert_array_equal(y, [0, 2, 4])
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])])
    with pytest.raises(weft.WeftError, match=r"output 'y' is declared f64\[3\] but the op gives f32\[3\]"):
        weft.compile(model.SerializeToString())


@pytest.mark.parametrize("op", ["MatMul", "Add", "Gemm"])
def test_inputs_bound_to_one_type_must_agree(op):
    """ONNX's schema binds MatMul's, Add's and Gemm's inputs to one type T: f32 by f64 is an
    invalid model (ONNX Runtime refuses it), one clear error, not a silent conversion."""
    model = make_model([helper.make_node(op, ["x", "w"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])],
                       [numpy_helper.from_array(np.ones((3, 3)), "w")])
    with pytest.raises(weft.WeftError, match=rf"node '{op}_0' \({op}, opset 13\): inputs 'x' \(f32\) and "
                                             r"'w' \(f64\) are both of type T, which must be one type"):
        weft.compile(model.SerializeToString())


def test_top_k_from_a_constant_node_then_scattered():
    """A mixture of experts' routing as exporters write it: TopK with K from a Constant node,
    a Softmax of the values, and a ScatterElements of them at the indices into zeros shaped
    like the logits. At import K is not yet a constant, so the values and indices got different
    fresh symbols for it, and once the zeros folded the ScatterElements saw them as
    contradicting (an internal error); shapes are now refined before the graph is verified."""
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([2], np.int64))),
             helper.make_node("TopK", ["r", "k"], ["v", "i"], axis=-1),
             helper.make_node("Softmax", ["v"], ["w"], axis=-1),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["zeros"]),
             helper.make_node("ScatterElements", ["zeros", "i", "w"], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("r", TensorProto.FLOAT, [5, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    r = np.random.default_rng(4).standard_normal((5, 4)).astype(np.float32)
    got = weft.compile(model.SerializeToString()).run({"r": r})["y"]
    top = np.argsort(-r, axis=1, kind="stable")[:, :2]
    values = np.take_along_axis(r, top, 1).astype(np.float64)
    want = np.zeros((5, 4))
    np.put_along_axis(want, top, np.exp(values) / np.exp(values).sum(1, keepdims=True), 1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
