"""Sequence convolutions on the CPU, Weft beside ONNX Runtime, PyTorch eager and torch.compile in
one run (cnn_bench.py's harness): the convolution module of a Conformer (NeMo's and ESPnet's
speech encoders: LayerNorm, pointwise convolution, GLU, depthwise 1-D convolution of 31 taps,
BatchNorm, SiLU, pointwise convolution, residual, on [batch, time, channels]) at batch 1 and 4,
a short causal depthwise convolution (LFM2's and Mamba's: 4 taps, padded and sliced), a
QuartzNet block (depthwise 1-D convolutions of 33 taps between pointwise ones), Whisper's
convolution stem and wav2vec2's feature encoder. Random weights, exported with
torch.onnx.export's defaults; Weft's output checked against PyTorch's first.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/sequence_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/sequence_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import torch

from cnn_bench import peer_table, randomize_batch_norms, table_main
from ort_options import described



class ConformerConv(torch.nn.Module):
    def __init__(self, d=256, k=31):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.pw1 = torch.nn.Conv1d(d, 2 * d, 1)
        self.dw = torch.nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = torch.nn.BatchNorm1d(d)
        self.pw2 = torch.nn.Conv1d(d, d, 1)

    def forward(self, x):
        h = torch.nn.functional.glu(self.pw1(self.ln(x).transpose(1, 2)), dim=1)
        h = self.pw2(torch.nn.functional.silu(self.bn(self.dw(h))))
        return x + h.transpose(1, 2)


class CausalShortConv(torch.nn.Module):
    def __init__(self, d=1024, k=4):
        super().__init__()
        self.conv = torch.nn.Conv1d(d, d, k, padding=k - 1, groups=d)

    def forward(self, x):
        return self.conv(x)[..., : x.shape[-1]]


class QuartzBlock(torch.nn.Module):
    def __init__(self, c=256, k=33, r=3):
        super().__init__()
        self.dw = torch.nn.ModuleList(torch.nn.Conv1d(c, c, k, padding=k // 2, groups=c, bias=False)
                                      for _ in range(r))
        self.pw = torch.nn.ModuleList(torch.nn.Conv1d(c, c, 1, bias=False) for _ in range(r))
        self.bn = torch.nn.ModuleList(torch.nn.BatchNorm1d(c) for _ in range(r))
        self.res, self.res_bn = torch.nn.Conv1d(c, c, 1, bias=False), torch.nn.BatchNorm1d(c)

    def forward(self, x):
        h = x
        for i in range(len(self.dw)):
            h = self.bn[i](self.pw[i](self.dw[i](h)))
            if i < len(self.dw) - 1:
                h = torch.relu(h)
        return torch.relu(h + self.res_bn(self.res(x)))


class WhisperStem(torch.nn.Module):
    def __init__(self, mels=80, d=384):
        super().__init__()
        self.c1 = torch.nn.Conv1d(mels, d, 3, padding=1)
        self.c2 = torch.nn.Conv1d(d, d, 3, stride=2, padding=1)

    def forward(self, x):
        gelu = torch.nn.functional.gelu
        return gelu(self.c2(gelu(self.c1(x)))).permute(0, 2, 1)


class Wav2Vec2Features(torch.nn.Module):
    def __init__(self):
        super().__init__()
        taps = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        self.convs = torch.nn.ModuleList(torch.nn.Conv1d(1 if i == 0 else 512, 512, k, stride=s, bias=False)
                                         for i, (k, s) in enumerate(taps))
        self.norm = torch.nn.GroupNorm(512, 512)

    def forward(self, x):
        h = x[:, None]
        for i, conv in enumerate(self.convs):
            h = conv(h)
            if i == 0:
                h = self.norm(h)
            h = torch.nn.functional.gelu(h)
        return h.transpose(1, 2)


MODELS = {
    "conformer_conv": (lambda: randomize_batch_norms(ConformerConv()), lambda: torch.randn(1, 1024, 256)),
    "conformer_conv_b4": (lambda: randomize_batch_norms(ConformerConv()), lambda: torch.randn(4, 512, 256)),
    "causal_short_conv": (lambda: CausalShortConv().eval(), lambda: torch.randn(1, 1024, 2048)),
    "quartznet_block": (lambda: randomize_batch_norms(QuartzBlock()), lambda: torch.randn(1, 256, 800)),
    "whisper_stem": (lambda: WhisperStem().eval(), lambda: torch.randn(1, 80, 3000)),
    "wav2vec2_features": (lambda: Wav2Vec2Features().eval(), lambda: torch.randn(1, 16000)),
}


def markdown(r):
    lines = ["## Sequence convolutions on the CPU", "",
             f"`bench/sequence_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: "
             "a Conformer's convolution module ([batch, time, 256], 31 taps) at batch 1 and 4, a short causal "
             "depthwise convolution (1,024 channels of 2,048 steps, 4 taps), a QuartzNet block (256 channels "
             "of 800 steps, 33 taps), Whisper's convolution stem (80 x 3,000) and wav2vec2's feature encoder "
             f"(a second of 16 kHz audio); random weights, exported by PyTorch {r['pytorch']}. Weft's Python "
             f"module, ONNX Runtime {r['onnxruntime']} (CPU execution provider, {described(r)}), PyTorch eager "
             f"and `torch.compile` (compile time not included), all in one process; {r['rounds']} rounds, each "
             f"entry the system's lowest median of {r['iters']} runs, Weft's output checked against PyTorch's "
             "first. Ratios are peer time / Weft time (above 1: Weft is faster).", ""]
    return lines + peer_table(r, "sequence_results.json")


def main():
    table_main(MODELS, markdown, "sequence_results.json")


if __name__ == "__main__":
    main()
