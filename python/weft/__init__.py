"""Weft: an ONNX tensor compiler for memory-bound work.

    import numpy as np, weft
    model = weft.compile("model.onnx")            # a path, or the model's bytes
    print(model.inputs)                           # names, dtypes, shapes ("N" for symbolic dims)
    out = model.run({"x": np.ones((4, 128), np.float32)})   # {output name: numpy array}
    model.run(feeds, outputs={"y": y})            # into the caller's arrays (or CUDA tensors)

Options of compile(): device ("cpu" or "cuda"), threads (OpenMP threads per run; default
$WEFT_NUM_THREADS, else all cores), dump_dir (IR after each pass, generated source and a
build.sh; default $WEFT_DUMP_DIR), fusion (False: one kernel per node, for comparisons),
allow_tf32 (CUDA: cuBLAS and cuDNN may use TF32; default fp32), dynamic_shapes (one compile
for every extent of the inputs' symbolic dims, where the model allows it:
docs/dynamic-shapes.md), allow_bf16 (CPU: f32 convolutions and matrix products multiply operands
rounded to bf16 where the CPU does so natively, AVX512-BF16 or AMX; default fp32). Errors raise
weft.WeftError with the CLI's message.

Inputs may be any array with __dlpack__ (PyTorch, CuPy, JAX, numpy). When all of them are
CUDA tensors (DLPack or __cuda_array_interface__) and the model was compiled for "cuda",
the run is device-resident: outputs are weft.DeviceArray, which torch.from_dlpack and
cupy.from_dlpack take without a copy. Outputs of host runs are numpy arrays, which
np.from_dlpack and torch.from_dlpack also take without a copy.

Outputs are numpy arrays over memory Weft allocated (no copy); inputs that are C-contiguous
and of the declared dtype are read in place. One model may run on many threads at once
(run() releases the GIL). model.profile(feeds) returns (outputs, per-kernel timings).

weft.InferenceSession is ONNX Runtime's session API over compile() (session.py): a script
written for onnxruntime runs on Weft with `import weft as ort`.
"""

import os as _os

# libgomp's waiting threads spin 300,000 pauses (5.6 ms on an AMD EPYC) before they sleep, which
# takes the cores from the threads with work where other processes use them too. It reads
# GOMP_SPINCOUNT once, when it loads (with _weft, next): where the user set neither it nor
# OMP_WAIT_POLICY, 10,000 (docs/api.md, "OpenMP threads"). The CLI does the same.
if "GOMP_SPINCOUNT" not in _os.environ and "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "10000"

from . import _cuda_libraries, _weft, capi  # noqa: E402,F401
from ._weft import DeviceArray, Model, WeftError  # noqa: F401,E402
from .ort_values import IOBinding, OrtValue  # noqa: E402
from .session import (ExecutionMode, GraphOptimizationLevel, InferenceSession,  # noqa: E402
                      ModelMetadata, NodeArg, RunOptions, SessionOptions, disable_telemetry_events,
                      enable_telemetry_events, get_all_providers, get_available_providers,
                      get_device, get_version_string, preload_dlls, set_default_logger_severity,
                      set_default_logger_verbosity)

__all__ = ["compile", "DeviceArray", "Model", "WeftError", "InferenceSession", "SessionOptions",
           "NodeArg", "RunOptions", "GraphOptimizationLevel", "ExecutionMode", "ModelMetadata",
           "get_available_providers", "get_all_providers", "get_device", "preload_dlls",
           "set_default_logger_severity", "set_default_logger_verbosity",
           "disable_telemetry_events", "enable_telemetry_events", "OrtValue", "IOBinding",
           "get_version_string"]
__version__ = "0.1.0"


def compile(model, device="cpu", **options):  # noqa: A001 (weft.compile, as documented)
    """The model compiled for "device" (see the module's docstring). For "cuda", NVIDIA's
    libraries that the loader does not find are first loaded from pip's nvidia-* wheels, where
    PyTorch's CUDA wheels put them (_cuda_libraries.py)."""
    if device == "cuda":
        _cuda_libraries.preload_once()
    return _weft.compile(model, device=device, **options)
