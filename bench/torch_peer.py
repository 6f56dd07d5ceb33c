"""PyTorch as a peer, eager or torch.compile: runs the same computation as the benchmark model
of that name (bench/make_models.py) and prints the median time as JSON.

Run with the benchmark virtual environment's Python (PyTorch 2.x and torchvision from PyPI):
    bench/.venv/bin/python bench/torch_peer.py CASE ITERS [THREADS] [MODE]
THREADS defaults to os.cpu_count(); MODE is eager (the default) or compile (torch.compile with
its defaults, i.e. Inductor, whose CPU backend generates and builds C++); both run under
torch.inference_mode(). Prints one line of JSON: {"case", "mode", "median_ms", "iters",
"threads", "torch", "blas", "compile_s"}, or {"case", "mode", "error"} with exit status 1 when
torch is missing, the case is unknown or torch.compile fails. Inputs are standard normal; 2
warm-up runs precede the timed ones, as for Weft and ONNX Runtime in run_bench.py. In compile
mode the first warm-up run compiles: compile_s is its wall time (compilation plus one run; an
Inductor cache left by an earlier run, under /tmp/torchinductor_$USER, shortens it), null in
eager mode.
"""
import ast
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def dims(case):
    """softmax_4096x1024 -> [4096, 1024] (make_models.py names these cases by their shape)."""
    return [int(d) for d in case.rsplit("_", 1)[1].split("x")]


def reductions():
    """make_models.py's REDUCTIONS, the single source of the reduction shapes and axes, read
    without importing it: it imports onnx, which the virtual environment does not have."""
    with open(os.path.join(HERE, "make_models.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REDUCTIONS" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


def build(torch, case, device="cpu"):
    """(function, inputs) computing what make_models.py's model CASE computes; the constant
    parameters come from bench_cases.py, as make_models.py's do. Inputs, parameters and modules
    are drawn on the CPU, then moved to "device" (bench/gpu_bench.py passes "cuda")."""
    import bench_cases as bc
    gen = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    def param(seed, shape):
        return torch.from_numpy(bc.param(seed, shape)).to(device)

    F = torch.nn.functional

    for name, shape, axes in reductions():
        if name == case:  # ReduceSum, keepdims=0
            return (lambda x: torch.sum(x, dim=axes)), [randn(*shape)]
    if case.startswith("softmax_"):  # Softmax, axis=-1
        return (lambda x: torch.softmax(x, dim=-1)), [randn(*dims(case))]
    if case.startswith("layernorm_"):  # LayerNormalization, axis=-1, epsilon 1e-5, g=1, b=0
        shape = dims(case)
        g, b = torch.ones(shape[-1], device=device), torch.zeros(shape[-1], device=device)
        return (lambda x: torch.nn.functional.layer_norm(x, shape[-1:], g, b, 1e-5)), [randn(*shape)]
    if case.startswith("attention_softmax_"):  # Softmax(x * 0.125 + causal mask), axis=-1
        shape = dims(case)
        mask = torch.from_numpy(bc.causal_mask(shape[-1])).to(device)
        return (lambda x: torch.softmax(x * bc.ATTENTION_SCALE + mask, dim=-1)), [randn(*shape)]
    if case.startswith("rmsnorm_"):  # x / sqrt(mean(x^2, -1) + 1e-6) * g
        shape = dims(case)
        g = param(1, [shape[-1]])
        return (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + bc.EPS_RMS) * g), [randn(*shape)]
    if case.startswith("bias_gelu_"):  # exact (erf) GELU of x + b
        shape = dims(case)
        b = param(2, [shape[-1]])
        return (lambda x: F.gelu(x + b)), [randn(*shape)]
    if case.startswith("logsumexp_"):  # ReduceLogSumExp, last axis, keepdims=0
        return (lambda x: torch.logsumexp(x, dim=-1)), [randn(*dims(case))]
    if case.startswith("bn_train_"):  # batch statistics over N, H, W (biased variance), then normalize
        shape = dims(case)
        gamma, beta = param(3, [shape[1]]), param(4, [shape[1]])
        return (lambda x: F.batch_norm(x, None, None, gamma, beta, training=True, eps=bc.EPS_NORM)), [randn(*shape)]
    if case.startswith("groupnorm_"):  # groupnorm_NxCxHxW_gG
        shape = [int(d) for d in case.split("_")[1].split("x")]
        groups = int(case.rsplit("_g", 1)[1])
        gamma, beta = param(5, [shape[1]]), param(6, [shape[1]])
        return (lambda x: F.group_norm(x, groups, gamma, beta, bc.EPS_NORM)), [randn(*shape)]
    if case == "gpt_block":  # bench_cases.gpt_block: the same module and weights as the ONNX export
        return bc.gpt_block(torch).to(device), [randn(bc.GPT_BATCH, bc.GPT_SEQ, bc.GPT_DIM)]
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
            return resnet.to(device), [randn(1, 3, 224, 224)]
        return encoder.to(device), [randn(4, 128, 256)]
    if case == "mobilenet_v2":  # make_models.py --gpu's: the same seed and draws
        import torchvision
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
        from testing.torch_models import randomize_batch_norms
        torch.manual_seed(1)
        mobilenet = randomize_batch_norms(torchvision.models.mobilenet_v2())
        torch.randn(1, 3, 224, 224)
        return mobilenet.to(device), [randn(1, 3, 224, 224)]
    raise KeyError(f"unknown case {case}")


def blas_library(torch):
    """The BLAS torch's MatMuls go to, from its build configuration (PyPI wheels link MKL
    statically, so no BLAS shows among the loaded libraries), e.g. "mkl 2024.2"."""
    config = torch.__config__.show()
    found = re.search(r"BLAS_INFO=(\w+)", config)
    if not found:
        return None
    version = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    return found.group(1) + (f" {version.group(1)}" if found.group(1) == "mkl" and version else "")


def main():
    case, iters = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[4] if len(sys.argv) > 4 else "eager"
    if mode not in ("eager", "compile"):
        print(json.dumps({"case": case, "mode": mode, "error": f"unknown mode {mode}"}))
        return 1
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"case": case, "mode": mode, "error": f"no torch: {e}"}))
        return 1
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
    torch.set_num_threads(threads)
    try:
        fn, inputs = build(torch, case)
    except KeyError as e:
        print(json.dumps({"case": case, "mode": mode, "error": str(e)}))
        return 1
    compile_s = None
    if mode == "compile":
        fn = torch.compile(fn)  # lazy: the first call below traces and compiles
    times = []
    with torch.inference_mode():
        try:
            t0 = time.perf_counter()
            fn(*inputs)
            if mode == "compile":
                compile_s = time.perf_counter() - t0
            fn(*inputs)
        except Exception as e:  # a torch.compile failure: the table says n/a
            print(json.dumps({"case": case, "mode": mode, "error": f"{type(e).__name__}: {e}"[:500]}))
            return 1
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(*inputs)
            times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"case": case, "mode": mode, "median_ms": statistics.median(times), "iters": iters,
                      "threads": torch.get_num_threads(), "torch": torch.__version__,
                      "blas": blas_library(torch), "compile_s": compile_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
