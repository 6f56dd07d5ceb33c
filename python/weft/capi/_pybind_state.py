"""ONNX Runtime's other path to its exception classes: onnxruntime_pybind11_state's."""

from .onnxruntime_pybind11_state import *  # noqa: F401,F403
from .onnxruntime_pybind11_state import __all__  # noqa: F401
