"""Recurrent models on the CPU, Weft beside ONNX Runtime, PyTorch eager and torch.compile in one
run (cnn_bench.py's harness): LSTMs and GRUs as torch.onnx exports them (ONNX's LSTM and GRU
ops), which Weft runs as its recurrent call (library/recurrent_call.h): a 2-layer LSTM over 100
steps at batch 4, an LSTM over 1,000 steps at batch 1 (a long stream), a wide GRU at batch 8, a
wide LSTM at batch 32, a GRU text classifier (embedding, GRU, the last state's logits) and a
speech encoder (a strided 1-D convolution over 80 mel bins, then a 2-layer bidirectional LSTM).
Random weights, exported with torch.onnx.export's defaults; Weft's output checked against
PyTorch's first.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/recurrent_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/recurrent_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import torch

from cnn_bench import peer_table, table_main
from ort_options import described


class Sequence(torch.nn.Module):
    """An LSTM or GRU's outputs over the sequence, without its states."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


class GruClassifier(torch.nn.Module):
    def __init__(self, vocab=10000, d=128, hidden=256, classes=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.gru = torch.nn.GRU(d, hidden, batch_first=True)
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, tokens):
        return self.out(self.gru(self.embed(tokens))[1][0])


class SpeechEncoder(torch.nn.Module):
    def __init__(self, mels=80, d=256, hidden=256):
        super().__init__()
        self.conv = torch.nn.Conv1d(mels, d, 3, stride=2, padding=1)
        self.lstm = torch.nn.LSTM(d, hidden, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        return self.lstm(torch.relu(self.conv(x)).transpose(1, 2))[0]


MODELS = {
    "lstm2x128_b4_t100": (lambda: Sequence(torch.nn.LSTM(64, 128, 2)).eval(), lambda: torch.randn(100, 4, 64)),
    "lstm128_b1_t1000": (lambda: Sequence(torch.nn.LSTM(64, 128)).eval(), lambda: torch.randn(1000, 1, 64)),
    "gru512_b8_t100": (lambda: Sequence(torch.nn.GRU(64, 512)).eval(), lambda: torch.randn(100, 8, 64)),
    "lstm256_b32_t100": (lambda: Sequence(torch.nn.LSTM(64, 256)).eval(), lambda: torch.randn(100, 32, 64)),
    "gru_classifier": (lambda: GruClassifier().eval(), lambda: torch.randint(0, 10000, (8, 64))),
    "speech_bilstm": (lambda: SpeechEncoder().eval(), lambda: torch.randn(1, 80, 400)),
}


def markdown(r):
    lines = ["## Recurrent models on the CPU", "",
             f"`bench/recurrent_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: "
             "LSTMs and GRUs as torch.onnx exports them (ONNX's LSTM and GRU ops, which Weft runs as its "
             "recurrent call, [library.md](library.md)): a 2-layer LSTM (64 -> 128) over 100 steps at batch 4, "
             "an LSTM (64 -> 128) over 1,000 steps at batch 1, a GRU 512 wide at batch 8 and an LSTM 256 wide "
             "at batch 32 over 100 steps, a GRU text classifier (64 tokens, batch 8) and a speech encoder (a "
             "strided convolution over 400 frames of 80 mel bins, then a 2-layer bidirectional LSTM 256 wide); "
             f"random weights, exported by PyTorch {r['pytorch']}. Weft's Python module, ONNX Runtime "
             f"{r['onnxruntime']} (CPU execution provider, {described(r)}), PyTorch eager and `torch.compile` "
             f"(compile time not included), all in one process; {r['rounds']} rounds, each entry the system's "
             f"lowest median of {r['iters']} runs, Weft's output checked against PyTorch's first. Ratios are "
             "peer time / Weft time (above 1: Weft is faster).", ""]
    lines += peer_table(r, "recurrent_results.json")
    for b in r.get("beside", []):
        lines += [f"The same suite on {b['machine']}, {b['threads']} threads, {b['date']} ({b['rounds']} rounds "
                  f"of {b['iters']} runs; ONNX Runtime {b['onnxruntime']}, PyTorch {b['pytorch']}):", ""]
        lines += peer_table(b, "recurrent_results.json")
    return lines


def main():
    table_main(MODELS, markdown, "recurrent_results.json")


if __name__ == "__main__":
    main()
