"""ONNX Runtime's OrtValue and IOBinding over Weft's runs, for scripts that bind inputs and
outputs by pointer or as OrtValues (Ultralytics' CUDA path, Hugging Face's runners):

    io = sess.io_binding()
    io.bind_input("x", "cuda", 0, np.float32, tuple(x.shape), x.data_ptr())
    io.bind_output("y", "cuda", 0, np.float32, tuple(y.shape), y.data_ptr())
    sess.run_with_iobinding(io)                   # y now holds the output

An OrtValue holds a host array (numpy; its memory is the caller's, not copied) or a CUDA
tensor (an object with __dlpack__ or __cuda_array_interface__, a pointer bound by address, or
Weft's DeviceArray output). A run whose inputs are all CUDA tensors stays on the device
(weft.compile's device-resident runs); outputs bound to memory are written there, others are
Weft's own, on the device bind_output names. CUDA OrtValues of Weft's (ortvalue_from_numpy
and ortvalue_from_shape_and_type on "cuda") are DeviceArrays; numpy() copies through Weft's
device (weft._weft.to_host), whoever allocated the value. Where it differs from ONNX Runtime:
every output is computed, and an output bound to memory is written there after the run (a
copy) unless every output is bound, when the run writes them in place.
"""

import ctypes

import numpy as np

from . import _weft

# ONNX Runtime's exception classes (NotImplemented is theirs, not the builtin).
from .capi import onnxruntime_pybind11_state as ort_errors

_KDL_CUDA = 2

# ONNX's TensorProto element types by numpy dtype name (OrtValue.element_type()).
_ONNX_ELEMENT_TYPES = {
    "float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16,
}
# ONNX's type strings, as ONNX Runtime reports them, by Weft's dtype names (NodeArg.type,
# OrtValue.data_type()).
ONNX_TYPES = {
    "float32": "tensor(float)", "float64": "tensor(double)", "float16": "tensor(float16)",
    "bfloat16": "tensor(bfloat16)", "int8": "tensor(int8)", "int16": "tensor(int16)",
    "int32": "tensor(int32)", "int64": "tensor(int64)", "uint8": "tensor(uint8)",
    "uint16": "tensor(uint16)", "uint32": "tensor(uint32)", "uint64": "tensor(uint64)",
    "bool": "tensor(bool)",
}


class _CudaBuffer:
    """Device memory bound by address, as CuPy and PyTorch describe a CUDA tensor."""

    def __init__(self, ptr, shape, dtype):
        self.shape, self.dtype = tuple(int(d) for d in shape), np.dtype(dtype)
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": self.dtype.str, "data": (int(ptr), False),
            "strides": None, "version": 3}


def _host_view(ptr, shape, dtype):
    """A numpy array over host memory bound by address (not a copy)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(ptr))
    return np.frombuffer(buffer, dtype, count).reshape(tuple(shape))


def _device(device_type):
    device = str(device_type).lower()
    if device not in ("cpu", "cuda"):
        raise ort_errors.InvalidArgument(
            f"error: device '{device_type}': Weft's are 'cpu' and 'cuda'")
    return device


def _copied(copy, *args):
    """weft._weft's copy between host and device, or on the device, raising ONNX Runtime's
    classes."""
    try:
        return copy(*args)
    except _weft.WeftError as e:
        raise ort_errors.as_onnxruntime_error(e) from None


def _on_cuda(value):
    if hasattr(value, "__cuda_array_interface__"):
        return True
    return hasattr(value, "__dlpack_device__") and value.__dlpack_device__()[0] == _KDL_CUDA


class OrtValue:
    """A tensor for run_with_ort_values and IOBinding: a host array or a CUDA tensor."""

    def __init__(self, value):
        self._value = value  # numpy array, or a CUDA tensor object

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        if _device(device_type) == "cuda":
            return OrtValue(_copied(_weft.to_device, np.asarray(numpy_obj)))
        return OrtValue(np.asarray(numpy_obj))

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        """A host OrtValue over "data"'s memory, its elements read as ONNX's element type
        (TensorProto's number) of the same size: bfloat16 or float16 bits held as uint16."""
        names = {v: k for k, v in _ONNX_ELEMENT_TYPES.items()}
        data = np.asarray(data)
        try:
            if names[onnx_element_type] == "bfloat16":
                import ml_dtypes
                dtype = np.dtype(ml_dtypes.bfloat16)
            else:
                dtype = np.dtype(names[onnx_element_type])
        except (KeyError, ImportError):
            raise ort_errors.InvalidArgument(
                f"error: ONNX element type {onnx_element_type}: Weft reads none such from numpy "
                "(bfloat16 needs ml_dtypes)") from None
        if dtype.itemsize != data.dtype.itemsize:
            raise ort_errors.InvalidArgument(
                f"error: {data.dtype} elements cannot be read as ONNX element type "
                f"{onnx_element_type}: their sizes differ")
        return OrtValue(data.view(dtype))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0,
                                     vendor_id=-1):
        value = np.empty(tuple(shape), dtype=element_type)
        if _device(device_type) == "cuda":
            return OrtValue(_copied(_weft.to_device, value))
        return OrtValue(value)

    @staticmethod
    def from_dlpack(data, is_bool_tensor=False):
        if not hasattr(data, "__dlpack__"):
            raise ort_errors.InvalidArgument(
                "error: OrtValue.from_dlpack takes an object with __dlpack__ (a PyTorch, CuPy or "
                "JAX tensor), not a bare capsule")
        if _on_cuda(data):
            return OrtValue(data)
        value = np.from_dlpack(data)
        return OrtValue(value.astype(bool) if is_bool_tensor else value)

    def _dtype_name(self):
        dtype = getattr(self._value, "dtype", None)
        if isinstance(dtype, (np.dtype, str)):  # numpy and CuPy; Weft's DeviceArray
            return str(dtype)
        return str(dtype).replace("torch.", "")

    def shape(self):
        return [int(d) for d in self._value.shape]

    def tensor_size_in_bytes(self):
        dtype = self._dtype_name()
        size = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        return int(np.prod(self.shape(), dtype=np.int64)) * size

    def device_name(self):
        return "cuda" if _on_cuda(self._value) else "cpu"

    def data_type(self):
        return ONNX_TYPES.get(self._dtype_name(), f"tensor({self._dtype_name()})")

    def element_type(self):
        return _ONNX_ELEMENT_TYPES.get(self._dtype_name(), 0)

    def data_ptr(self):
        v = self._value
        if isinstance(v, np.ndarray):
            return v.ctypes.data
        if hasattr(v, "__cuda_array_interface__"):
            return v.__cuda_array_interface__["data"][0]
        return v.data_ptr()

    def has_value(self):
        return True

    def is_tensor(self):
        return True

    def is_sparse_tensor(self):
        return False

    def is_tensor_sequence(self):
        return False

    def numpy(self):
        """The values as a numpy array: the array itself on the host, a copy from CUDA."""
        v = self._value
        return v if isinstance(v, np.ndarray) else _copied(_weft.to_host, v)

    def update_inplace(self, np_arr):
        if not isinstance(self._value, np.ndarray):
            raise ort_errors.NotImplemented(
                "error: update_inplace of a CUDA OrtValue: write the CUDA tensor")
        np.copyto(self._value, np_arr)

    def to_dlpack(self):
        return self._value.__dlpack__()

    def __dlpack__(self, *args, **kwargs):
        return self._value.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def __repr__(self):
        return (f"OrtValue(shape={self.shape()}, type={self.data_type()}, "
                f"device={self.device_name()})")


class IOBinding:
    """Inputs and outputs bound to a session's run (InferenceSession.io_binding())."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}   # name -> OrtValue
        self._outputs = {}  # name -> OrtValue (bound to memory) or a device (Weft's), in order
        self._results = []

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = OrtValue(np.asarray(arr_on_cpu))

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        if _device(device_type) == "cpu":
            self._inputs[name] = OrtValue(_host_view(buffer_ptr, shape, element_type))
        else:
            self._inputs[name] = OrtValue(_CudaBuffer(buffer_ptr, shape, element_type))

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        device = _device(device_type)
        if buffer_ptr is None:
            self._outputs[name] = device
        elif element_type is None or shape is None:
            raise ort_errors.InvalidArgument(
                f"error: output '{name}' bound to memory needs its element_type and shape")
        elif device == "cpu":
            self._outputs[name] = OrtValue(_host_view(buffer_ptr, shape, element_type))
        else:
            self._outputs[name] = OrtValue(_CudaBuffer(buffer_ptr, shape, element_type))

    def bind_ortvalue_output(self, name, ortvalue):
        self._outputs[name] = ortvalue

    def synchronize_inputs(self):
        """Nothing to wait for: Weft's runs return once their outputs are written."""

    def synchronize_outputs(self):
        """Nothing to wait for: Weft's runs return once their outputs are written."""

    def get_outputs(self):
        """The bound outputs of the last run, as OrtValues, in the order they were bound."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        return [v.numpy() for v in self._results]

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = {}
        self._results = []

    def _run(self):
        feeds = {name: value._value for name, value in self._inputs.items()}
        names = [o.name for o in self._session.get_outputs()]
        wanted = list(self._outputs) or names
        for n in wanted:
            if n not in names:
                valid = ", ".join(f"'{v}'" for v in names)
                raise ort_errors.InvalidArgument(
                    f"error: unknown output '{n}'; the model's outputs are {valid}")
        bound = {n: v._value for n, v in self._outputs.items() if isinstance(v, OrtValue)}
        if bound and set(bound) == set(names):
            self._session._run_feeds(feeds, outputs=bound)  # written in place
            self._results = [self._outputs[n] for n in wanted]
            return
        out = self._session._run_feeds(feeds)
        self._results = [self._place(out[n], self._outputs.get(n)) for n in wanted]

    @staticmethod
    def _place(value, target):
        """A run's output where its binding wants it: as it is (not bound), on a device
        ("cpu" or "cuda": Weft's memory there) or written into bound memory."""
        on_cuda = _on_cuda(value)
        if target is None:
            return OrtValue(value)
        if isinstance(target, str):  # "cpu" or "cuda"
            if target == "cuda":
                return OrtValue(value if on_cuda else _copied(_weft.to_device, value))
            return OrtValue(_copied(_weft.to_host, value) if on_cuda else value)
        if _on_cuda(target._value):
            source = value if on_cuda else _copied(_weft.to_device, value)
            _copied(_weft.copy, target._value, source)
        else:
            np.copyto(target._value, _copied(_weft.to_host, value) if on_cuda else value)
        return target
