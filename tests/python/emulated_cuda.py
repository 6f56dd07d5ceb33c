"""CUDA tensors on the emulator (WEFT_CUDA_EMULATOR=1), where device memory is host memory:
numpy arrays described as CUDA tensors, and Weft's device outputs read through their pointers.
For the tests that run device-resident on the emulator (test_dlpack.py, cuda_session_check.py,
tests/fuzz/dynamic_node_tests.py --device cuda)."""

import ctypes

import numpy as np


class EmulatedCudaArray:
    """A numpy array described as a CUDA tensor (__cuda_array_interface__), as CuPy and
    PyTorch describe theirs."""

    def __init__(self, a):
        self.array = np.array(a, order="C")  # (np.ascontiguousarray makes a scalar 1-d)
        self.__cuda_array_interface__ = {
            "shape": self.array.shape, "typestr": self.array.dtype.str,
            "data": (self.array.ctypes.data, False), "strides": None, "version": 3}

    def data_ptr(self):
        return self.array.ctypes.data


def read_device(value):
    """A copy of a weft.DeviceArray's values, read through its pointer; its dtype by name,
    numpy's or ml_dtypes' (bfloat16, float8, int4: no __cuda_array_interface__ type)."""
    try:
        dtype = np.dtype(value.dtype)
    except TypeError:
        import ml_dtypes
        dtype = np.dtype(getattr(ml_dtypes, value.dtype))
    count = int(np.prod(value.shape, dtype=np.int64))
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(value.data_ptr())
    return np.frombuffer(buffer, dtype, count).reshape(value.shape).copy()
