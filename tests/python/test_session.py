"""weft.InferenceSession, ONNX Runtime's session API: a script written for onnxruntime runs
unmodified but for its import, and the API's parts (output selection, metadata, options,
providers and their fallback, bytes) behave as ONNX Runtime documents them. Outputs are
compared with the CLI's (WEFT_CLI), with onnx's ReferenceEvaluator where this onnx has it
(.venv's; Debian's is older), and with onnxruntime where it is installed."""

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import weft
from models import make_model, softmax_model
from weft import _weft

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("WEFT_CLI", os.path.join(ROOT, "build", "tools", "weft", "weft"))
EXAMPLE = os.path.join(ROOT, "examples", "attention_block.onnx")

# A script written for onnxruntime, as users have them. The test swaps only its import.
ORT_SCRIPT = """\
import sys

import numpy as np
import onnxruntime as ort

path, x_path, out_path = sys.argv[1:]
ort.set_default_logger_severity(3)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
print([(i.name, i.type, i.shape) for i in sess.get_inputs()])
meta = sess.get_modelmeta()
print(meta.producer_name, meta.graph_name, meta.version, meta.custom_metadata_map)
name = sess.get_inputs()[0].name
x = np.load(x_path)
out = sess.run(None, {name: x})[0]
np.save(out_path, out)
"""


@pytest.fixture(scope="module")
def softmax_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "softmax.onnx"
    onnx.save(softmax_model(), path)
    return path


def feeds(n=5):
    return {"x": np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)}


def run_script(text, model, x, tmp_path, tag):
    """Runs "text" as a script of its own (this interpreter, weft on its path); its output."""
    script = tmp_path / f"script_{tag}.py"  # not weft.py, which would shadow weft
    script.write_text(text)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / f"{tag}_out.npy"
    env = dict(os.environ)
    weft_dir = os.path.dirname(os.path.dirname(os.path.abspath(weft.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (weft_dir, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(script), model, str(tmp_path / "x.npy"), str(out)],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return np.load(out), done.stdout


def test_unmodified_ort_script(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 128, 64)).astype(np.float32)
    swapped = ORT_SCRIPT.replace("import onnxruntime as ort", "import weft as ort")
    assert swapped != ORT_SCRIPT
    y, stdout = run_script(swapped, EXAMPLE, x, tmp_path, "weft")
    assert "('x', 'tensor(float)', [2, 128, 64])" in stdout
    assert y.shape == (2, 128, 64) and y.dtype == np.float32
    np.testing.assert_array_equal(y, weft.compile(EXAMPLE).run({"x": x})["y"])
    compared = 0
    if os.path.exists(CLI):  # the same engine: bit for bit
        args = [CLI, "run", EXAMPLE, "--input", f"x={tmp_path / 'x.npy'}",
                "--output-dir", str(tmp_path / "cli")]
        subprocess.run(args, check=True, capture_output=True)
        np.testing.assert_array_equal(y, np.load(tmp_path / "cli" / "y.npy"))
        compared += 1
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        ReferenceEvaluator = None
    if ReferenceEvaluator is not None:
        (want,) = ReferenceEvaluator(EXAMPLE).run(["y"], {"x": x})
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        compared += 1
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        onnxruntime = None
    if onnxruntime is not None:  # the script as written, on onnxruntime itself
        want, theirs = run_script(ORT_SCRIPT, EXAMPLE, x, tmp_path, "ort")
        assert theirs == stdout
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        compared += 1
    assert compared, "no CLI, reference evaluator or onnxruntime to compare with"


def test_output_names_select_and_order(softmax_path):
    sess = weft.InferenceSession(str(softmax_path))
    want = weft.compile(softmax_path).run(feeds())
    y, s = sess.run(None, feeds())
    np.testing.assert_array_equal(y, want["y"])
    np.testing.assert_array_equal(s, want["s"])
    assert [a.shape for a in sess.run([], feeds())] == [(5, 16), (5,)]
    s2, y2 = sess.run(["s", "y"], feeds())
    np.testing.assert_array_equal(s2, want["s"])
    np.testing.assert_array_equal(y2, want["y"])
    (only,) = sess.run(("s",), feeds())
    np.testing.assert_array_equal(only, want["s"])


def test_unknown_output_and_input(softmax_path):
    sess = weft.InferenceSession(softmax_path)
    with pytest.raises(weft.WeftError,
                       match="unknown output 'z'; the model's outputs are 'y', 's'"):
        sess.run(["y", "z"], feeds())
    with pytest.raises(weft.WeftError, match="unknown input 'q'"):
        sess.run(None, {"x": feeds()["x"], "q": feeds()["x"]})


def test_onnxruntime_exception_classes(softmax_path, tmp_path):
    """Errors come as ONNX Runtime's classes, where scripts' except clauses name them."""
    state = weft.capi.onnxruntime_pybind11_state
    from weft.capi._pybind_state import InvalidArgument, InvalidGraph  # ONNX Runtime's other path
    assert InvalidArgument is state.InvalidArgument and issubclass(InvalidGraph, weft.WeftError)
    with pytest.raises(state.NoSuchFile, match="no such file") as e:
        weft.InferenceSession(str(tmp_path / "missing.onnx"))
    assert isinstance(e.value, weft.WeftError)
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07junk that is no protobuf")
    with pytest.raises(state.InvalidProtobuf, match="junk.onnx: not a valid ONNX model"):
        weft.InferenceSession(str(tmp_path / "junk.onnx"))
    model = softmax_model()
    model.opset_import[0].version = 99
    with pytest.raises(state.NotImplemented, match="opset 99 is newer"):
        weft.InferenceSession(model.SerializeToString())
    model = softmax_model()
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(state.NotImplemented, match="unsupported ops: NoSuchOp"):
        weft.InferenceSession(model.SerializeToString())
    model = softmax_model()
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64  # declared wrong
    with pytest.raises(state.Fail, match="declared"):
        weft.InferenceSession(model.SerializeToString())
    sess = weft.InferenceSession(softmax_path)
    x = feeds()["x"]
    for feed, why in [({"x": x.astype(np.float64)}, "must be float32, got float64"),
                      ({"x": x[:, :3]}, "dim 1 must be 16"), ({}, "missing input 'x'"),
                      ({"x": x, "q": x}, "unknown input 'q'")]:
        with pytest.raises(state.InvalidArgument, match=why):
            sess.run(None, feed)
    with pytest.raises(state.InvalidArgument, match="unknown output 'z'"):
        sess.run(["z"], feeds())
    with pytest.raises(ValueError, match="missing input 'x'"):  # as ONNX Runtime's
        sess.run(None, {"q": x})
    with pytest.raises(ValueError, match="missing input 'x'"):
        sess.run_with_ort_values(None, {})
    # weft.compile raises WeftError itself, its kind in .code.
    with pytest.raises(weft.WeftError) as e:
        weft.compile(str(tmp_path / "missing.onnx"))
    assert type(e.value) is weft.WeftError and e.value.code == "no_such_file"
    with pytest.raises(weft.WeftError) as e:
        weft.compile(softmax_path).run({"x": x.astype(np.float64)})
    assert e.value.code == "invalid_argument"


def test_other_onnxruntime_calls(softmax_path):
    assert weft.get_version_string() == weft.__version__
    sess = weft.InferenceSession(softmax_path)
    sess.disable_fallback()
    sess.enable_fallback()
    opts = weft.SessionOptions()
    assert not opts.has_providers()
    with pytest.raises(weft.capi.onnxruntime_pybind11_state.NotImplemented, match="custom op"):
        opts.register_custom_ops_library("libortextensions.so")
    run_options = weft.RunOptions()
    run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert run_options.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(RuntimeError, match="no_such_key"):
        run_options.get_run_config_entry("no_such_key")


def test_run_async(softmax_path):
    """run_async calls back from another thread with the outputs, or with the error's message
    (ONNX Runtime's callback(results, user_data, err))."""
    import threading
    sess = weft.InferenceSession(softmax_path)
    x = feeds()["x"]
    done, calls = threading.Event(), []

    def callback(results, user_data, err):
        calls.append((results, user_data, err, threading.current_thread()))
        done.set()

    sess.run_async(None, {"x": x}, callback, "mine")
    assert done.wait(60)
    results, user_data, err, thread = calls.pop()
    assert err == "" and user_data == "mine" and thread is not threading.current_thread()
    np.testing.assert_array_equal(results[0], sess.run(None, {"x": x})[0])
    done.clear()
    sess.run_async(["s"], {"x": x[:, :3]}, callback, None)
    assert done.wait(60)
    results, _, err, _ = calls.pop()
    assert results == [] and "dim 1 must be 16" in err
    with pytest.raises(ValueError, match="missing input 'x'"):
        sess.run_async(None, {}, callback, None)


def test_lists_as_inputs(softmax_path):
    """Lists take the input's dtype, as ONNX Runtime converts them; arrays must have it."""
    sess = weft.InferenceSession(softmax_path)
    x = feeds()["x"]
    (y,) = sess.run(["y"], {"x": x.astype(np.float64).tolist()})
    np.testing.assert_array_equal(y, sess.run(["y"], {"x": x})[0])


def test_inputs_and_outputs(softmax_path):
    sess = weft.InferenceSession(softmax_path)
    (x,) = sess.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", ["N", 16])
    assert repr(x) == "NodeArg(name='x', type='tensor(float)', shape=['N', 16])"
    assert [(o.name, o.type, o.shape) for o in sess.get_outputs()] == [
        ("y", "tensor(float)", ["N", 16]), ("s", "tensor(float)", ["N"])]


def test_model_metadata(tmp_path):
    """get_modelmeta(), as Ultralytics' exports are read: class names and stride in
    metadata_props; the other fields as ModelProto has them; ONNX Runtime's, where installed."""
    model = softmax_model()
    model.producer_name, model.producer_version, model.domain = "ultralytics", "8.3", "ai.test"
    model.doc_string, model.model_version = "a detector", 7
    model.graph.name, model.graph.doc_string = "main_graph", "the graph"
    for key, value in [("stride", "32"), ("names", "{0: 'person', 1: 'bicycle'}"), ("stride", "16")]:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    path = tmp_path / "meta.onnx"
    onnx.save(model, path)
    meta = weft.InferenceSession(str(path)).get_modelmeta()
    got = {k: getattr(meta, k) for k in ("producer_name", "domain", "description", "graph_name",
                                         "graph_description", "version", "custom_metadata_map")}
    assert got == {"producer_name": "ultralytics", "domain": "ai.test", "description": "a detector",
                   "graph_name": "main_graph", "graph_description": "the graph", "version": 7,
                   "custom_metadata_map": {"stride": "16",
                                           "names": "{0: 'person', 1: 'bicycle'}"}}
    assert weft.compile(str(path)).metadata["producer_version"] == "8.3"
    plain = weft.InferenceSession(str(softmax_path_of(tmp_path))).get_modelmeta()
    # No model_version: ONNX Runtime's "no version", the largest int64.
    assert (plain.custom_metadata_map, plain.version, plain.description) == ({}, 2**63 - 1, "")
    try:
        import onnxruntime
    except ImportError:
        return
    theirs = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).get_modelmeta()
    assert {k: getattr(theirs, k) for k in got} == got


def softmax_path_of(tmp_path):
    path = tmp_path / "plain.onnx"
    onnx.save(softmax_model(), path)
    return path


@pytest.mark.parametrize("elem_type,type_str", [
    (TensorProto.DOUBLE, "tensor(double)"), (TensorProto.FLOAT16, "tensor(float16)"),
    (TensorProto.BFLOAT16, "tensor(bfloat16)"), (TensorProto.INT8, "tensor(int8)"),
    (TensorProto.INT32, "tensor(int32)"), (TensorProto.INT64, "tensor(int64)"),
    (TensorProto.UINT8, "tensor(uint8)"), (TensorProto.UINT64, "tensor(uint64)"),
    (TensorProto.BOOL, "tensor(bool)")])
def test_onnx_type_strings(elem_type, type_str):
    model = make_model([helper.make_node("Identity", ["a"], ["b"])],
                       [helper.make_tensor_value_info("a", elem_type, ["B", 3])],
                       [helper.make_tensor_value_info("b", elem_type, ["B", 3])])
    sess = weft.InferenceSession(model.SerializeToString())
    assert [(i.type, i.shape) for i in sess.get_inputs()] == [(type_str, ["B", 3])]
    assert [(o.type, o.shape) for o in sess.get_outputs()] == [(type_str, ["B", 3])]


def test_bfloat16_is_float32_in_numpy():
    model = make_model([helper.make_node("Relu", ["a"], ["b"])],
                       [helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [4])],
                       [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [4])])
    sess = weft.InferenceSession(model.SerializeToString())
    (b,) = sess.run(None, {"a": np.array([-1, 0.5, 2, -3], np.float32)})
    assert b.dtype == np.float32
    np.testing.assert_array_equal(b, [0, 0.5, 2, 0])


def test_bytes(softmax_path):
    want = weft.InferenceSession(softmax_path).run(None, feeds())
    for source in (softmax_path.read_bytes(), bytearray(softmax_path.read_bytes())):
        got = weft.InferenceSession(source, providers=["CPUExecutionProvider"]).run(None, feeds())
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


@pytest.fixture
def compile_calls(monkeypatch):
    """The keyword arguments of each weft compile the session makes."""
    calls = []
    real = _weft.compile

    def spy(model, **kwargs):
        calls.append(kwargs)
        return real(model, **kwargs)

    monkeypatch.setattr(_weft, "compile", spy)
    return calls


def test_session_options(softmax_path, compile_calls, monkeypatch):
    so = weft.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1  # accepted, ignored
    so.graph_optimization_level = weft.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.execution_mode = weft.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.optimized_model_filepath = "unused.onnx"
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = weft.InferenceSession(softmax_path, sess_options=so, providers=["CPUExecutionProvider"])
    assert compile_calls[-1]["threads"] == 1 and compile_calls[-1]["fusion"] is False
    assert sess.get_session_options() is so
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    want = weft.compile(softmax_path).run(feeds())
    y, s = sess.run(None, feeds(), weft.RunOptions())
    np.testing.assert_allclose(y, want["y"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s, want["s"], rtol=1e-6)
    # The defaults: all the CPUs (OMP_NUM_THREADS left aside, as ONNX Runtime does; a
    # WEFT_NUM_THREADS, which compile() reads, wins), fusion.
    monkeypatch.delenv("WEFT_NUM_THREADS", raising=False)
    weft.InferenceSession(softmax_path)
    threads = compile_calls[-1]["threads"]
    assert threads == _weft.default_threads(openmp=False) and threads >= 1
    assert compile_calls[-1]["fusion"] is True
    monkeypatch.setenv("WEFT_NUM_THREADS", "1")
    weft.InferenceSession(softmax_path)
    assert compile_calls[-1]["threads"] == 0
    assert compile_calls[-1]["allow_bf16"] is False
    assert weft.SessionOptions().graph_optimization_level == 99  # ORT_ENABLE_ALL
    so = weft.SessionOptions()
    so.add_session_config_entry("weft.allow_bf16", "1")
    weft.InferenceSession(softmax_path, sess_options=so)
    assert compile_calls[-1]["allow_bf16"] is True


def test_threads_outlast_other_libraries_openmp_settings(softmax_path):
    """PyTorch's torch.set_num_threads sets the thread count of GCC's libgomp, which Weft
    shares with it: Weft's default count stays its own (one thread under Ultralytics, which
    sets 1 on 2 cores, had made its runs 1.8x slower), and its runs and compiles leave the
    caller's count as they found it."""
    gomp = ctypes.CDLL("libgomp.so.1")  # the OpenMP runtime Weft loaded
    default = _weft.default_threads()
    gomp.omp_set_num_threads(1)
    try:
        assert _weft.default_threads() == default
        weft.compile(softmax_path).run(feeds())
        weft.InferenceSession(softmax_path).run(None, feeds())
        assert gomp.omp_get_max_threads() == 1
    finally:
        gomp.omp_set_num_threads(default)


def test_symbolic_dims_compile_once(softmax_path, monkeypatch):
    """As ONNX Runtime runs any extent of a model's symbolic dims, a session compiles once for
    all of them (dynamic_shapes; a language model's past grows every step, and a compile per
    length took seconds a step); the config entry "weft.dynamic_shapes" "0" compiles per shape."""
    monkeypatch.setenv("WEFT_SPECIALIZE_AFTER", "0")
    sess = weft.InferenceSession(softmax_path)
    for n in (3, 5, 9):
        y, _ = sess.run(None, feeds(n))
        np.testing.assert_allclose(y, weft.compile(softmax_path).run(feeds(n))["y"], rtol=1e-6, atol=1e-7)
    assert sess.weft_model.compiled_variants == 1
    so = weft.SessionOptions()
    so.add_session_config_entry("weft.dynamic_shapes", "0")
    per_shape = weft.InferenceSession(softmax_path, sess_options=so)
    for n in (3, 5, 9):
        per_shape.run(None, feeds(n))
    assert per_shape.weft_model.compiled_variants == 3


def test_profiling(softmax_path, tmp_path):
    so = weft.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = weft.InferenceSession(softmax_path, so)
    sess.run(None, feeds())
    path = sess.end_profiling()
    assert os.path.basename(path).startswith("prof_") and path.endswith(".json")
    with open(path) as f:
        events = json.load(f)
    assert events and all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert any("Softmax" in e["args"]["op_name"] for e in events)
    assert sess.end_profiling() == ""  # stopped
    assert weft.InferenceSession(softmax_path).end_profiling() == ""


def test_available_providers():
    assert weft.get_available_providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert weft.get_all_providers() == weft.get_available_providers()
    assert weft.get_device() == "GPU"
    # What scripts call before a session: accepted (nothing to do, or done at compile).
    weft.set_default_logger_severity(3)
    weft.set_default_logger_verbosity(0)
    weft.disable_telemetry_events()
    weft.preload_dlls()


def cuda_works(model_bytes):
    try:
        _weft.compile(model_bytes, device="cuda")
        return True
    except weft.WeftError:
        return False


def test_cuda_fallback_without_a_gpu(softmax_path, monkeypatch):
    monkeypatch.delenv("WEFT_CUDA_EMULATOR", raising=False)
    if cuda_works(softmax_path.read_bytes()):
        pytest.skip("this machine has CUDA: no fallback to see")
    want = weft.compile(softmax_path).run(feeds())
    for providers in (["CUDAExecutionProvider", "CPUExecutionProvider"],
                      ["CUDAExecutionProvider"]):  # CPU is the last resort, as in ORT
        with pytest.warns(UserWarning, match="CUDAExecutionProvider is not available"):
            sess = weft.InferenceSession(softmax_path, providers=providers)
        assert sess.get_providers() == ["CPUExecutionProvider"]
        np.testing.assert_array_equal(sess.run(["y"], feeds())[0], want["y"])


def test_cuda_fallback_only_when_not_available(softmax_path, monkeypatch):
    """Any machine: a CUDA compile that fails for want of a device falls back; one that fails
    for another reason raises."""
    real = _weft.compile
    why = {"message": "error: device 'cuda' is not available: no CUDA driver"}

    def no_cuda(model, device="cpu", **kwargs):
        if device == "cuda":
            raise weft.WeftError(why["message"])
        return real(model, device=device, **kwargs)

    monkeypatch.setattr(_weft, "compile", no_cuda)
    with pytest.warns(UserWarning, match=r"falling back to \['CPUExecutionProvider'\]"):
        sess = weft.InferenceSession(softmax_path,
                                     providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    why["message"] = "error: node 'n': Foo is not supported"
    with pytest.raises(weft.WeftError, match="not supported"):
        weft.InferenceSession(softmax_path, providers=["CUDAExecutionProvider"])


def test_cuda_provider_on_the_emulator(softmax_path, monkeypatch, compile_calls):
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    sess = weft.InferenceSession(
        softmax_path, providers=[("CUDAExecutionProvider", {"device_id": 0, "use_tf32": "1"}),
                                 "CPUExecutionProvider"])
    assert compile_calls[-1]["device"] == "cuda" and compile_calls[-1]["allow_tf32"] is True
    assert sess.get_providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert sess.get_provider_options() == {
        "CUDAExecutionProvider": {"device_id": "0", "use_tf32": "1"}, "CPUExecutionProvider": {}}
    want = weft.compile(softmax_path).run(feeds())
    y, s = sess.run(None, feeds())  # host inputs: numpy outputs
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, want["y"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s, want["s"], rtol=1e-6)
    # provider_options as a parallel list; TF32 stays off unless asked for.
    weft.InferenceSession(softmax_path, providers=["CUDAExecutionProvider"],
                          provider_options=[{}])
    assert compile_calls[-1]["allow_tf32"] is False
    with pytest.raises(ValueError, match="CUDA device 0"):
        weft.InferenceSession(softmax_path, providers=[("CUDAExecutionProvider", {"device_id": 1})])


def test_provider_names(softmax_path):
    with pytest.raises(ValueError, match="unknown provider 'GPU'; Weft's providers are "
                                         "'CUDAExecutionProvider', 'CPUExecutionProvider'"):
        weft.InferenceSession(softmax_path, providers=["GPU"])
    with pytest.raises(ValueError, match="same length"):
        weft.InferenceSession(softmax_path, providers=["CPUExecutionProvider"],
                              provider_options=[{}, {}])
    # ONNX Runtime's other providers are passed over with a warning, as ORT does with those
    # its build lacks.
    with pytest.warns(UserWarning, match="Weft has no TensorrtExecutionProvider"):
        sess = weft.InferenceSession(
            softmax_path, providers=["TensorrtExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    # providers=None: CPU.
    assert weft.InferenceSession(softmax_path).get_providers() == ["CPUExecutionProvider"]
