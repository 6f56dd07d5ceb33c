"""ONNX Runtime's OrtValue and IOBinding on weft.InferenceSession (python/weft/ort_values.py):
host runs, and CUDA runs on the emulator (WEFT_CUDA_EMULATOR=1, where device memory is host
memory, so that pointers to numpy arrays stand for CUDA tensors' pointers)."""

import numpy as np
import onnx
import pytest

import weft
from emulated_cuda import EmulatedCudaArray, read_device
from models import softmax_model

state = weft.capi.onnxruntime_pybind11_state


@pytest.fixture(scope="module")
def softmax_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "softmax.onnx"
    onnx.save(softmax_model(), path)
    return str(path)


def x_of(n=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)


def want(path, x):
    return weft.compile(path).run({"x": x})


def test_run_with_ort_values(softmax_path):
    sess = weft.InferenceSession(softmax_path)
    x = x_of()
    value = weft.OrtValue.ortvalue_from_numpy(x)
    assert value.shape() == [5, 16] and value.data_type() == "tensor(float)"
    assert value.element_type() == onnx.TensorProto.FLOAT and value.device_name() == "cpu"
    assert value.data_ptr() == x.ctypes.data  # the caller's memory, not a copy
    s, y = sess.run_with_ort_values(["s", "y"], {"x": value})
    np.testing.assert_array_equal(y.numpy(), want(softmax_path, x)["y"])
    np.testing.assert_array_equal(s.numpy(), want(softmax_path, x)["s"])
    assert s.shape() == [5]
    (y2,) = sess.run_with_ort_values(None, {"x": weft.OrtValue.from_dlpack(x)})[:1]
    np.testing.assert_array_equal(y2.numpy(), y.numpy())
    empty = weft.OrtValue.ortvalue_from_shape_and_type([2, 3], np.int64)
    assert empty.shape() == [2, 3] and empty.data_type() == "tensor(int64)"
    assert empty.tensor_size_in_bytes() == 48
    bits = np.array([0x3C00, 0x4000], np.uint16)  # 1 and 2 in float16
    half = weft.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, onnx.TensorProto.FLOAT16)
    assert half.data_type() == "tensor(float16)" and half.data_ptr() == bits.ctypes.data
    np.testing.assert_array_equal(half.numpy(), [1, 2])
    with pytest.raises(state.InvalidArgument, match="sizes differ"):
        weft.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, onnx.TensorProto.FLOAT)
    with pytest.raises(state.InvalidArgument, match="device 'tpu'"):
        weft.OrtValue.ortvalue_from_numpy(x, "tpu", 0)


def test_io_binding_on_the_host(softmax_path):
    sess = weft.InferenceSession(softmax_path)
    x = x_of(seed=1)
    expected = want(softmax_path, x)
    io = sess.io_binding()
    io.bind_cpu_input("x", x)
    io.bind_output("s")  # Weft's memory
    sess.run_with_iobinding(io)
    (s,) = io.copy_outputs_to_cpu()
    np.testing.assert_array_equal(s, expected["s"])
    # Every output bound by pointer: written in place.
    y, s = np.full((5, 16), np.nan, np.float32), np.full(5, np.nan, np.float32)
    io.clear_binding_outputs()
    io.bind_input("x", "cpu", 0, np.float32, x.shape, x.ctypes.data)
    io.bind_output("y", "cpu", 0, np.float32, y.shape, y.ctypes.data)
    io.bind_output("s", "cpu", 0, np.float32, s.shape, s.ctypes.data)
    sess.run_with_iobinding(io)
    np.testing.assert_array_equal(y, expected["y"])
    np.testing.assert_array_equal(s, expected["s"])
    assert [v.data_ptr() for v in io.get_outputs()] == [y.ctypes.data, s.ctypes.data]
    # One of them bound: copied there.
    y[:] = np.nan
    io.clear_binding_outputs()
    io.bind_ortvalue_output("y", weft.OrtValue.ortvalue_from_numpy(y))
    sess.run_with_iobinding(io)
    np.testing.assert_array_equal(y, expected["y"])
    io.bind_output("z")
    with pytest.raises(state.InvalidArgument, match="unknown output 'z'"):
        sess.run_with_iobinding(io)
    io.clear_binding_outputs()
    io.bind_cpu_input("x", x.astype(np.float64))
    with pytest.raises(state.InvalidArgument, match="must be float32"):
        sess.run_with_iobinding(io)


def test_io_binding_on_cuda_as_ultralytics_binds(softmax_path, monkeypatch):
    """Inputs and outputs bound by device pointer: the run stays on the device."""
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    sess = weft.InferenceSession(softmax_path, providers=["CUDAExecutionProvider"])
    assert sess.get_providers()[0] == "CUDAExecutionProvider"
    x = x_of(seed=2)
    expected = want(softmax_path, x)
    y, s = np.full((5, 16), np.nan, np.float32), np.full(5, np.nan, np.float32)
    io = sess.io_binding()
    io.bind_output(name="y", device_type="cuda", device_id=0, element_type=np.float32,
                   shape=y.shape, buffer_ptr=y.ctypes.data)
    io.bind_output(name="s", device_type="cuda", device_id=0, element_type=np.float32,
                   shape=s.shape, buffer_ptr=s.ctypes.data)
    io.bind_input(name="x", device_type="cuda", device_id=0, element_type=np.float32,
                  shape=x.shape, buffer_ptr=x.ctypes.data)
    sess.run_with_iobinding(io)
    np.testing.assert_allclose(y, expected["y"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(s, expected["s"], rtol=1e-6)
    # Outputs left to Weft: its DeviceArrays, as CUDA OrtValues.
    io.clear_binding_outputs()
    io.bind_output("y", "cuda")
    sess.run_with_iobinding(io)
    (value,) = io.get_outputs()
    assert value.device_name() == "cuda" and value.shape() == [5, 16]
    assert value.data_type() == "tensor(float)"


def test_cuda_ort_values_of_wefts(softmax_path, monkeypatch):
    """CUDA OrtValues allocated by Weft, and copies to and from the device (weft._weft's
    to_device, to_host and copy), on the emulator."""
    monkeypatch.setenv("WEFT_CUDA_EMULATOR", "1")
    sess = weft.InferenceSession(softmax_path, providers=["CUDAExecutionProvider"])
    x = x_of(seed=3)
    expected = want(softmax_path, x)
    value = weft.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
    assert value.device_name() == "cuda" and value.shape() == [5, 16]
    assert value.data_ptr() != x.ctypes.data  # a copy, in Weft's device memory
    np.testing.assert_array_equal(value.numpy(), x)
    empty = weft.OrtValue.ortvalue_from_shape_and_type([2, 3], np.int64, "cuda")
    assert empty.device_name() == "cuda" and empty.data_type() == "tensor(int64)"
    # A device-resident run on Weft's CUDA OrtValue; its outputs copied back by numpy().
    s, y = sess.run_with_ort_values(["s", "y"], {"x": value})
    assert y.device_name() == "cuda"
    np.testing.assert_allclose(y.numpy(), expected["y"], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(y.numpy(), read_device(y._value))
    np.testing.assert_allclose(s.numpy(), expected["s"], rtol=1e-6)
    # One output bound to CUDA memory, the other left to Weft on the host (bind_output's
    # default device): the first is copied into its memory, the second comes to the host.
    y_memory = EmulatedCudaArray(np.full((5, 16), np.nan, np.float32))
    io = sess.io_binding()
    io.bind_ortvalue_input("x", value)
    io.bind_ortvalue_output("y", weft.OrtValue(y_memory))
    io.bind_output("s")
    sess.run_with_iobinding(io)
    np.testing.assert_allclose(y_memory.array, expected["y"], rtol=1e-6, atol=1e-7)
    y_out, s_out = io.get_outputs()
    assert y_out.data_ptr() == y_memory.data_ptr()
    assert s_out.device_name() == "cpu"
    np.testing.assert_allclose(s_out.numpy(), expected["s"], rtol=1e-6)
    # Host inputs, an output asked for on CUDA: Weft's device memory.
    io = sess.io_binding()
    io.bind_cpu_input("x", x)
    io.bind_output("y", "cuda")
    sess.run_with_iobinding(io)
    (y_cuda,) = io.get_outputs()
    assert y_cuda.device_name() == "cuda"
    (y_host,) = io.copy_outputs_to_cpu()
    np.testing.assert_allclose(y_host, expected["y"], rtol=1e-6, atol=1e-7)
    with pytest.raises(weft.WeftError, match=r"f32\[16,5\], where f32\[5,16\]") as error:
        weft._weft.copy(y_cuda._value, weft._weft.to_device(x.T.copy()))
    assert error.value.code == "invalid_argument"
    with pytest.raises(weft.WeftError, match="takes a CUDA tensor, not ndarray"):
        weft._weft.to_host(x)
