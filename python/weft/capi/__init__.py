"""Where ONNX Runtime keeps its exception classes (onnxruntime.capi.onnxruntime_pybind11_state,
also onnxruntime.capi._pybind_state), so that `import weft as ort` keeps scripts' except
clauses working: see onnxruntime_pybind11_state.py."""

from . import _pybind_state, onnxruntime_pybind11_state  # noqa: F401
