"""Arrays in and out of the Python module without copies: DLPack and __cuda_array_interface__.

Host runs: outputs are numpy arrays that np.from_dlpack (and torch.from_dlpack, where PyTorch
is installed) take over without a copy; inputs may be any object with __dlpack__.
Device-resident runs, on the CUDA emulator (WEFT_CUDA_EMULATOR=1, where device memory is host
memory): CUDA inputs by __cuda_array_interface__ or DLPack, outputs as weft.DeviceArray, which
leave by DLPack and __cuda_array_interface__, and come back in as inputs of another run.
"""

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

import weft
from emulated_cuda import EmulatedCudaArray, read_device

KDL_CPU, KDL_CUDA = 1, 2


def softmax_model():
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 40])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class HostDLPack:
    """A host array that only speaks DLPack (as a PyTorch or JAX CPU tensor would)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return (KDL_CPU, 0)


class CudaDLPack:
    """Only the DLPack half of a CUDA tensor: forwards to another object's __dlpack__."""

    def __init__(self, inner):
        self._inner = inner

    def __dlpack__(self, stream=None):
        return self._inner.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._inner.__dlpack_device__()


def test_host_outputs_leave_by_dlpack_without_a_copy():
    model = weft.compile(softmax_model())
    x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
    y = model.run({"x": x})["y"]
    taken = np.from_dlpack(y)
    assert taken.ctypes.data == y.ctypes.data
    np.testing.assert_allclose(taken, softmax(x), rtol=1e-6, atol=1e-7)


def test_torch_takes_host_outputs_without_a_copy():
    torch = pytest.importorskip("torch")
    model = weft.compile(softmax_model())
    x = torch.randn(6, 40)
    y = model.run({"x": x})["y"]  # a torch tensor in, through DLPack
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.ctypes.data
    np.testing.assert_allclose(t.numpy(), softmax(x.numpy()), rtol=1e-6, atol=1e-7)


def test_host_inputs_by_dlpack():
    model = weft.compile(softmax_model())
    x = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    y = model.run({"x": HostDLPack(x)})["y"]
    np.testing.assert_array_equal(y, model.run({"x": x})["y"])


@pytest.fixture
def emulator(monkeypatch):
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")


def test_device_resident_run_in_and_out(emulator):
    model = weft.compile(softmax_model(), device="cuda")
    x = np.random.default_rng(2).standard_normal((6, 40)).astype(np.float32)
    src = EmulatedCudaArray(x)
    out = model.run({"x": src})["y"]
    assert isinstance(out, weft.DeviceArray)
    assert out.__dlpack_device__() == (KDL_CUDA, 0)
    assert out.shape == (6, 40) and out.dtype == "float32"
    assert out.__cuda_array_interface__["data"][0] == out.data_ptr()
    np.testing.assert_allclose(read_device(out), softmax(x), rtol=1e-6, atol=1e-7)
    # The output goes back in through DLPack (a capsule, consumed), and directly.
    again = model.run({"x": CudaDLPack(out)})["y"]
    np.testing.assert_allclose(read_device(again), softmax(softmax(x)), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(read_device(model.run({"x": out})["y"]), read_device(again))
    np.testing.assert_array_equal(src.array, x)  # inputs are only read


def test_device_inputs_are_checked(emulator):
    model = weft.compile(softmax_model(), device="cuda")
    with pytest.raises(weft.WeftError, match="must be float32, got float64"):
        model.run({"x": EmulatedCudaArray(np.zeros((6, 40)))})
    two = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])])
    m2 = helper.make_model(two, opset_imports=[helper.make_opsetid("", 13)])
    m2.ir_version = 8
    add = weft.compile(m2.SerializeToString(), device="cuda")
    with pytest.raises(weft.WeftError, match="pass all inputs on one device"):
        add.run({"a": EmulatedCudaArray(np.ones(4, np.float32)), "b": np.ones(4, np.float32)})
    cpu = weft.compile(softmax_model())
    with pytest.raises(weft.WeftError, match='compiled for "cuda"'):
        cpu.run({"x": EmulatedCudaArray(np.zeros((6, 40), np.float32))})


def test_allow_tf32_is_an_option(emulator):
    model = weft.compile(softmax_model(), device="cuda", allow_tf32=True)
    x = np.ones((6, 40), np.float32)
    np.testing.assert_allclose(model.run({"x": x})["y"], softmax(x), rtol=1e-6)


def test_cuda_graphs_replay_runs_with_new_values(emulator, monkeypatch):
    """WEFT_CUDA_GRAPHS=1: a run that repeats the last one's shape and addresses is captured,
    and later ones replay it (tests/cuda_emulator_test.py checks that they do). A replay must
    read each run's values, and a run whose addresses move must still be right."""
    monkeypatch.setenv("WEFT_CUDA_GRAPHS", "1")
    w = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Softmax", ["h"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 32])],
        [onnx.numpy_helper.from_array(w, "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    model = weft.compile(m.SerializeToString(), device="cuda")
    rng = np.random.default_rng(4)
    for _ in range(4):  # host arrays: copied into the same arena each run
        x = rng.standard_normal((8, 16)).astype(np.float32)
        np.testing.assert_allclose(model.run({"x": x})["y"], softmax(x @ w), rtol=1e-5, atol=1e-6)
    src = EmulatedCudaArray(np.zeros((8, 16), np.float32))
    for _ in range(4):  # one device buffer, new values in place
        src.array[...] = rng.standard_normal((8, 16))
        out = model.run({"x": src})["y"]
        np.testing.assert_allclose(read_device(out), softmax(src.array @ w), rtol=1e-5, atol=1e-6)


def test_outputs_given_by_the_caller(emulator, monkeypatch):
    """run(feeds, outputs=...) writes into the caller's arrays: numpy arrays for host feeds,
    CUDA tensors for device feeds. With both buffers kept, a device-resident run keeps its
    addresses, which CUDA graphs need (WEFT_CUDA_GRAPHS=1): each run must still see new
    values."""
    monkeypatch.setenv("WEFT_CUDA_GRAPHS", "1")
    host = weft.compile(softmax_model())
    x = np.random.default_rng(5).standard_normal((6, 40)).astype(np.float32)
    y = np.zeros((6, 40), np.float32)
    assert host.run({"x": x}, outputs={"y": y})["y"] is y
    np.testing.assert_allclose(y, softmax(x), rtol=1e-6, atol=1e-7)
    model = weft.compile(softmax_model(), device="cuda")
    src, dst = EmulatedCudaArray(np.zeros((6, 40), np.float32)), EmulatedCudaArray(np.zeros((6, 40), np.float32))
    for seed in range(4):
        src.array[...] = np.random.default_rng(seed).standard_normal((6, 40))
        assert model.run({"x": src}, outputs={"y": dst})["y"] is dst
        np.testing.assert_allclose(dst.array, softmax(src.array), rtol=1e-6, atol=1e-7)
    with pytest.raises(weft.WeftError, match="outputs= must give every output"):
        model.run({"x": src}, outputs={})
    with pytest.raises(weft.WeftError, match="names 'z', not an output"):
        model.run({"x": src}, outputs={"y": dst, "z": dst})
    with pytest.raises(weft.WeftError, match="output 'y' must be a CUDA tensor"):
        model.run({"x": src}, outputs={"y": np.zeros((6, 40), np.float32)})
    with pytest.raises(weft.WeftError, match="output 'y' must be float32"):
        host.run({"x": x}, outputs={"y": np.zeros((6, 40))})
    with pytest.raises(weft.WeftError, match="must be"):
        host.run({"x": x}, outputs={"y": np.zeros((6, 41), np.float32)})
