"""Image-to-image models on the CPU, Weft beside ONNX Runtime, PyTorch eager and torch.compile in
one run (cnn_bench.py's harness). Written here after their published architectures: a
CycleGAN ResNet generator (reflection padding, InstanceNorm, 6 residual blocks, two
ConvTransposes up, a 7x7 convolution to 3 channels and Tanh), Johnson et al.'s fast style
transfer network (the same with nearest x2 upsampling and 9x9 convolutions at both ends),
DnCNN (17 convolutions with BatchNorm, the noise subtracted from the input; 64 -> 1 channels
last) and ESPCN (x3 super-resolution by a PixelShuffle of 9 channels). Their last convolutions
have few output channels, where oneDNN's kernels fill few of a register's lanes
(docs/library.md: Weft's kernel for them). Random weights (BatchNorm statistics randomized by the harness),
exported with torch.onnx.export's defaults; Weft's output checked against PyTorch's first.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/image_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/image_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import torch

from cnn_bench import peer_table, table_main
from ort_options import described

nn = torch.nn


class PaddedConv(nn.Module):
    """A convolution after a reflection pad of half its window."""

    def __init__(self, i, o, k, stride=1):
        super().__init__()
        self.pad, self.conv = nn.ReflectionPad2d(k // 2), nn.Conv2d(i, o, k, stride)

    def forward(self, x):
        return self.conv(self.pad(x))


def norm_relu(c):
    return [nn.InstanceNorm2d(c, affine=True), nn.ReLU()]


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(PaddedConv(c, c, 3), *norm_relu(c), PaddedConv(c, c, 3),
                                  nn.InstanceNorm2d(c, affine=True))

    def forward(self, x):
        return x + self.body(x)


class CycleGanGenerator(nn.Module):
    def __init__(self, c=64, blocks=6):
        super().__init__()
        up = lambda i, o: [nn.ConvTranspose2d(i, o, 3, 2, 1, output_padding=1), *norm_relu(o)]
        self.net = nn.Sequential(PaddedConv(3, c, 7), *norm_relu(c),
                                 nn.Conv2d(c, 2 * c, 3, 2, 1), *norm_relu(2 * c),
                                 nn.Conv2d(2 * c, 4 * c, 3, 2, 1), *norm_relu(4 * c),
                                 *[Residual(4 * c) for _ in range(blocks)],
                                 *up(4 * c, 2 * c), *up(2 * c, c), PaddedConv(c, 3, 7), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class Upsampled(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.conv = PaddedConv(i, o, 3)

    def forward(self, x):
        return self.conv(nn.functional.interpolate(x, scale_factor=2.0, mode="nearest"))


class StyleTransfer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(PaddedConv(3, 32, 9), *norm_relu(32), PaddedConv(32, 64, 3, 2),
                                 *norm_relu(64), PaddedConv(64, 128, 3, 2), *norm_relu(128),
                                 *[Residual(128) for _ in range(5)], Upsampled(128, 64),
                                 *norm_relu(64), Upsampled(64, 32), *norm_relu(32),
                                 PaddedConv(32, 3, 9))

    def forward(self, x):
        return self.net(x)


class DnCNN(nn.Module):
    def __init__(self, depth=17, c=64):
        super().__init__()
        layers = [nn.Conv2d(1, c, 3, padding=1), nn.ReLU()]
        for _ in range(depth - 2):
            layers += [nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
        self.noise = nn.Sequential(*layers, nn.Conv2d(c, 1, 3, padding=1))

    def forward(self, x):
        return x - self.noise(x)


class Espcn(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.Tanh(),
                                 nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                                 nn.Conv2d(32, r * r, 3, padding=1), nn.PixelShuffle(r))

    def forward(self, x):
        return self.net(x)


MODELS = {
    "cyclegan_256": (lambda: CycleGanGenerator(), lambda: torch.rand(1, 3, 256, 256) * 2 - 1),
    "style_transfer_256": (lambda: StyleTransfer(), lambda: torch.rand(1, 3, 256, 256)),
    "dncnn_256": (lambda: DnCNN(), lambda: torch.rand(1, 1, 256, 256)),
    "espcn_x3_224": (lambda: Espcn(), lambda: torch.rand(1, 1, 224, 224)),
}


def markdown(r):
    lines = ["## Image-to-image models on the CPU", "",
             f"`bench/image_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: "
             "a CycleGAN ResNet generator (6 residual blocks, reflection padding, InstanceNorm, "
             "ConvTranspose up, a 7x7 convolution to 3 channels), Johnson et al.'s fast style transfer "
             "network (9x9 convolutions at both ends, nearest x2 upsampling), DnCNN (17 convolutions, "
             "64 -> 1 channels last) and ESPCN (x3 super-resolution, PixelShuffle), batch 1; random "
             f"weights, exported by PyTorch {r['pytorch']}. Weft's Python module, ONNX Runtime "
             f"{r['onnxruntime']} (CPU execution provider, {described(r)}), PyTorch eager and `torch.compile` "
             f"(compile time not included), all in one process; {r['rounds']} rounds, each entry the system's "
             f"lowest median of {r['iters']} runs, Weft's output checked against PyTorch's first. Ratios are "
             "peer time / Weft time (above 1: Weft is faster). The last convolutions of the first three run "
             "on Weft's kernel of few output channels ([library.md](library.md)).", ""]
    return lines + peer_table(r, "image_results.json")


def main():
    table_main(MODELS, markdown, "image_results.json")


if __name__ == "__main__":
    main()
