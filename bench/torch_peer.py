"""PyTorch eager as a peer: runs the same computation as the benchmark model of that name
(bench/make_models.py) under torch.inference_mode() and prints the median time as JSON.

Run with Debian's Python (python3-torch 1.13, which has no torch.compile):
    /usr/bin/python3 bench/torch_peer.py CASE ITERS [THREADS]
THREADS defaults to os.cpu_count(). Prints one line of JSON: {"case", "median_ms", "iters",
"threads", "torch", "blas"}, or {"case", "error"} with exit status 1 when torch is missing or the case
is unknown. Inputs are standard normal; 2 warm-up runs precede the timed ones, as for Weft and
ONNX Runtime in run_bench.py.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def dims(case):
    """softmax_4096x1024 -> [4096, 1024] (make_models.py names these cases by their shape)."""
    return [int(d) for d in case.rsplit("_", 1)[1].split("x")]


def build(torch, case):
    """(function, inputs) computing what make_models.py's model CASE computes."""
    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    sys.path.insert(0, HERE)
    from make_models import REDUCTIONS  # the single source of the reduction shapes and axes
    for name, shape, axes in REDUCTIONS:
        if name == case:  # ReduceSum, keepdims=0
            return (lambda x: torch.sum(x, dim=axes)), [randn(*shape)]
    if case.startswith("softmax_"):  # Softmax, axis=-1
        return (lambda x: torch.softmax(x, dim=-1)), [randn(*dims(case))]
    if case.startswith("layernorm_"):  # LayerNormalization, axis=-1, epsilon 1e-5, g=1, b=0
        shape = dims(case)
        g, b = torch.ones(shape[-1]), torch.zeros(shape[-1])
        return (lambda x: torch.nn.functional.layer_norm(x, shape[-1:], g, b, 1e-5)), [randn(*shape)]
    if case in ("resnet18", "encoder_layer"):
        import torchvision
        # Same seed and the same draws from it as make_models.py (the resnet, the input it
        # exports the resnet with, the encoder), so the weights are the same too.
        torch.manual_seed(0)
        resnet = torchvision.models.resnet18().eval()
        torch.randn(1, 3, 224, 224)
        encoder = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                   batch_first=True, activation="gelu").eval()
        if case == "resnet18":
            return resnet, [randn(1, 3, 224, 224)]
        return encoder, [randn(4, 128, 256)]
    raise KeyError(f"unknown case {case}")


def blas_library():
    """The BLAS shared library this process loaded (torch's MatMuls go to it), resolved through
    Debian's alternatives: e.g. .../blas/libblas.so.3.x is the reference (netlib) BLAS."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "blas" in os.path.basename(path):
                    return os.path.realpath(path)
    except OSError:
        pass
    return None


def main():
    case, iters = sys.argv[1], int(sys.argv[2])
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"case": case, "error": f"no torch: {e}"}))
        return 1
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
    torch.set_num_threads(threads)
    try:
        fn, inputs = build(torch, case)
    except KeyError as e:
        print(json.dumps({"case": case, "error": str(e)}))
        return 1
    times = []
    with torch.inference_mode():
        for _ in range(2):
            fn(*inputs)
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*inputs)
            times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"case": case, "median_ms": statistics.median(times), "iters": iters,
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "blas": blas_library()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
