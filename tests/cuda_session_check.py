"""weft.InferenceSession on CUDA with device-resident inputs and outputs, as ONNX Runtime scripts
drive it: CUDA tensors fed to run(), IOBinding by device pointer (Ultralytics' CUDA path),
outputs left to Weft and copied back with copy_outputs_to_cpu(), run_with_ort_values over
OrtValue.from_dlpack and over Weft's own CUDA OrtValues (numpy() through Weft's device); each
over a model with a symbolic dim at several extents (one compile), compared with Weft's CPU
outputs.

    python3 tests/cuda_session_check.py     # on a GPU (PyTorch's CUDA tensors), or
    WEFT_CUDA_EMULATOR=1 PYTHONPATH=build/python python3 tests/cuda_session_check.py

On the emulator (device memory is host memory) numpy arrays stand for the CUDA tensors: their
pointers are bound, and device outputs are read through theirs. scripts/gpu-check.sh runs it as
its "session" stage. Prints one line per case and exits 1 when any differs or fails.
"""

import os
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
import weft  # noqa: E402
from emulated_cuda import EmulatedCudaArray, read_device  # noqa: E402
from models import softmax_model  # noqa: E402

EMULATOR = os.environ.get("WEFT_CUDA_EMULATOR") == "1"


def to_device(a):
    if EMULATOR:
        return EmulatedCudaArray(a)
    import torch
    return torch.from_numpy(np.array(a, order="C")).cuda()


def empty_device(shape):
    return to_device(np.full(shape, np.nan, np.float32))


def to_host(t):
    """A device tensor (or Weft's DeviceArray, or an OrtValue of one) as a numpy array."""
    if isinstance(t, weft.OrtValue):
        if not EMULATOR:
            return t.numpy()
        t = t._value
    if isinstance(t, EmulatedCudaArray):
        return t.array.copy()
    if EMULATOR:  # a DeviceArray
        return read_device(t)
    import torch
    torch.cuda.synchronize()
    return torch.from_dlpack(t).cpu().numpy()


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "softmax.onnx")
        onnx.save(softmax_model(), path)
        cpu = weft.compile(path)
        sess = weft.InferenceSession(path, providers=["CUDAExecutionProvider"])
        if sess.get_providers()[0] != "CUDAExecutionProvider":
            print("session check: no CUDA provider (no GPU or driver?)")
            return 1
        for n in (5, 37, 1, 37, 256):
            x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
            want = cpu.run({"x": x})
            got = {}
            try:
                y, s = sess.run(None, {"x": to_device(x)})  # Weft's DeviceArrays
                got["run"] = (to_host(y), to_host(s))
                io = sess.io_binding()  # by pointer, every output bound
                x_dev, y_dev, s_dev = to_device(x), empty_device((n, 16)), empty_device((n,))
                io.bind_input("x", "cuda", 0, np.float32, (n, 16), x_dev.data_ptr())
                io.bind_output("y", "cuda", 0, np.float32, (n, 16), y_dev.data_ptr())
                io.bind_output("s", "cuda", 0, np.float32, (n,), s_dev.data_ptr())
                sess.run_with_iobinding(io)
                got["io_binding"] = (to_host(y_dev), to_host(s_dev))
                io.clear_binding_outputs()  # outputs left to Weft
                io.bind_output("y", "cuda")
                io.bind_output("s", "cuda")
                sess.run_with_iobinding(io)
                got["io_binding, Weft's outputs"] = tuple(to_host(v) for v in io.get_outputs())
                # Weft's CUDA OrtValue in, outputs copied back through Weft's device.
                values = sess.run_with_ort_values(
                    ["y", "s"], {"x": weft.OrtValue.ortvalue_from_numpy(x, "cuda", 0)})
                got["Weft's CUDA OrtValues, numpy()"] = tuple(v.numpy() for v in values)
                io.clear_binding_outputs()  # y into CUDA memory, s to the host
                y_dev = empty_device((n, 16))
                io.bind_output("y", "cuda", 0, np.float32, (n, 16), y_dev.data_ptr())
                io.bind_output("s", "cpu")
                sess.run_with_iobinding(io)
                got["io_binding, y bound, s on the host"] = (to_host(y_dev),
                                                             io.get_outputs()[1].numpy())
                if not EMULATOR:  # from_dlpack of a PyTorch CUDA tensor
                    values = sess.run_with_ort_values(
                        ["y", "s"], {"x": weft.OrtValue.from_dlpack(to_device(x))})
                    got["run_with_ort_values"] = tuple(to_host(v) for v in values)
            except Exception as e:  # noqa: BLE001 (every failure is reported, then counted)
                print(f"N={n}: FAIL {type(e).__name__}: {e}")
                failures += 1
                continue
            for case, (y, s) in got.items():
                ok = (np.allclose(y, want["y"], rtol=1e-5, atol=1e-6)
                      and np.allclose(s, want["s"], rtol=1e-5, atol=1e-5))
                print(f"N={n} {case}: {'ok' if ok else 'FAIL: differs from the CPU'}")
                failures += not ok
    print(f"session check: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
