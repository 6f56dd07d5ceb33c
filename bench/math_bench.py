"""Math functions on the CPU, one op on a [1, 64, 256, 256] f32 tensor (16.8 MB), Weft beside ONNX
Runtime, PyTorch eager and torch.compile in one run (cnn_bench.py's harness): the functions
Weft writes as vectorizable polynomials (Exp, Log, Tanh, Erf, Softplus, Mish) and those for
which its kernels call glibc's vector forms (Sin, Cos, Tan, Asin, Atan, Sinh, Asinh, Pow with a
non-integer exponent); inputs uniform over a range inside each function's domain; then four
compositions (a select before exp and log, GPT-2's spelled-out tanh GELU, a masked softmax).
Exported with
torch.onnx.export's defaults; Weft's output checked against PyTorch's first.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/math_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/math_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import math

import torch

from cnn_bench import peer_table, table_main
from ort_options import described

SHAPE = (1, 64, 256, 256)


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def case(fn, lo, hi):
    return (lambda: Fn(fn), lambda: torch.rand(SHAPE) * (hi - lo) + lo)


class MaskedSoftmax(torch.nn.Module):
    """Causal attention's softmax as eager attention writes it: Where(mask, scores, -inf)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.ones(SHAPE[-2:], dtype=torch.bool).tril())

    def forward(self, x):
        return torch.softmax(torch.where(self.mask, x, float("-inf")), dim=-1)


def gelu_tanh_spelled(x):  # GPT-2's "gelu_new", as its modeling code writes it
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


F = torch.nn.functional
MODELS = {
    "exp": case(torch.exp, -20, 20), "log": case(torch.log, 0, 100), "tanh": case(torch.tanh, -5, 5),
    "erf": case(torch.erf, -3, 3), "softplus": case(F.softplus, -20, 20), "mish": case(F.mish, -20, 20),
    "sin": case(torch.sin, -100, 100), "cos": case(torch.cos, -100, 100), "tan": case(torch.tan, -1.5, 1.5),
    "asin": case(torch.asin, -1, 1), "atan": case(torch.atan, -100, 100), "sinh": case(torch.sinh, -10, 10),
    "asinh": case(torch.asinh, -100, 100), "pow_1.7": case(lambda x: torch.pow(x, 1.7), 0, 100),
    # Compositions: a select before exp or log, GELU's 1 + tanh, a bool mask before softmax.
    "relu_exp": case(lambda x: torch.exp(torch.relu(x)), -20, 20),
    "clamp_log": case(lambda x: torch.log(torch.clamp(x, min=1e-10)), -1, 100),
    "gelu_tanh_spelled": case(gelu_tanh_spelled, -5, 5),
    "masked_softmax": (MaskedSoftmax, lambda: torch.randn(SHAPE) * 3),
}


def markdown(r):
    lines = ["## Math functions on the CPU", "",
             f"`bench/math_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: one op on "
             "a [1, 64, 256, 256] f32 tensor (16.8 MB), its inputs uniform over a range inside the function's "
             "domain. Exp, Log, Tanh, Erf, Softplus and Mish are Weft's vectorizable polynomials; Sin, Cos, Tan, "
             "Asin, Atan, Sinh, Asinh and Pow call glibc's vector forms (libmvec; "
             "[cpu-strategies.md](cpu-strategies.md)). The last four rows are compositions: exp(relu(x)), "
             "log(clamp(x, 1e-10)), GPT-2's tanh GELU as its modeling code spells it, and a softmax over the last "
             "axis after Where(causal mask, x, -inf) (the mask a [256, 256] bool constant). Exported by PyTorch "
             f"{r['pytorch']}. Weft's Python module, ONNX Runtime {r['onnxruntime']} (CPU execution provider, "
             f"{described(r)}), PyTorch eager and `torch.compile` (compile time not included), all in one "
             f"process; {r['rounds']} rounds, each entry the system's lowest median of {r['iters']} runs, "
             "Weft's output checked against PyTorch's first. Ratios are peer time / Weft time (above 1: Weft "
             "is faster).", ""]
    return lines + peer_table(r, "math_results.json")


def main():
    table_main(MODELS, markdown, "math_results.json")


if __name__ == "__main__":
    main()
