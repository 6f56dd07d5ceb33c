"""Real architectures exported at test time with Debian's PyTorch (random weights), run with
`weft run`, and compared with PyTorch (rtol 1e-3, atol 1e-4): torchvision ResNet-18 and
MobileNetV2, and a torch.nn.TransformerEncoderLayer (also exported with dynamic axes and
run at another shape).

Usage: models_test.py WEFT_BINARY [--device cuda]   (exits 77, a skip, when PyTorch is missing)

With --device cuda, Weft runs the models on the GPU (or the emulator, with WEFT_CUDA_EMULATOR=1)
and is compared with PyTorch on the CPU, within the same tolerances.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: PyTorch or torchvision is not installed ({e}); scripts/setup.sh installs them")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing"))
from torch_models import randomize_batch_norms  # noqa: E402


def check(weft, device, tmp, name, model, example, run_input=None, **export_args):
    path = os.path.join(tmp, name + ".onnx")
    torch.onnx.export(model, example, path, opset_version=14, input_names=["x"], output_names=["y"],
                      **export_args)
    x = (run_input if run_input is not None else example).numpy()
    np.save(os.path.join(tmp, name + "_x.npy"), x)
    out = os.path.join(tmp, name + "_out")
    r = subprocess.run([weft, "run", path, "--device", device, "--input",
                        f"x={os.path.join(tmp, name + '_x.npy')}", "--output-dir", out],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{name}: {r.stderr}"
    got = np.load(os.path.join(out, "y.npy"))
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert np.abs(want).max() > 1e-2, f"{name}: outputs too small to compare meaningfully"
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)
    print(f"ok {name} ({device}): {got.shape}, max |torch| = {np.abs(want).max():.3g}, "
          f"max |weft - torch| = {np.abs(got - want).max():.2e}")
    if device == "cpu":
        check_cuda_codegen(weft, tmp, name, path, x)


def check_cuda_codegen(weft, tmp, name, path, x):
    """The model's CUDA kernels, for the same input, compile with NVRTC for sm_80 and sm_90."""
    case = os.path.join(tmp, name + "_case")
    os.makedirs(os.path.join(case, "test_data_set_0"))
    os.symlink(path, os.path.join(case, "model.onnx"))
    with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(onnx.numpy_helper.from_array(x, "x").SerializeToString())
    r = subprocess.run([weft, "test-onnx", "--device", "cuda", "--compile-only", case],
                       capture_output=True, text=True, timeout=600)
    if "NVRTC is not available" in r.stdout:
        print(f"skipped CUDA codegen of {name}: NVRTC is not installed")
        return
    assert r.returncode == 0, f"{name} CUDA codegen: {r.stdout[-3000:]}{r.stderr}"
    print(f"ok {name}: CUDA kernels compile with NVRTC for sm_80 and sm_90")


def main():
    weft = sys.argv[1]
    device = sys.argv[3] if sys.argv[2:3] == ["--device"] else "cpu"
    torch.manual_seed(0)
    failures = []

    def checked(*args, **kwargs):  # every model is tried; the first failure does not stop them
        try:
            check(weft, device, tmp, *args, **kwargs)
        except AssertionError as e:
            failures.append(args[0])
            print(f"FAIL {args[0]} ({device}): {e}")

    with tempfile.TemporaryDirectory() as tmp:
        image = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            resnet = randomize_batch_norms(torchvision.models.resnet18()).eval()
            mobilenet = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
        checked("resnet18", resnet, image)
        checked("mobilenet_v2", mobilenet, image)
        encoder = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512,
                                                   batch_first=True, activation="gelu").eval()
        checked("encoder_layer", encoder, torch.randn(2, 32, 128))
        checked("encoder_layer_dynamic", encoder, torch.randn(2, 32, 128),
                run_input=torch.randn(3, 17, 128), dynamic_axes={"x": {0: "batch", 1: "seq"}})
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
