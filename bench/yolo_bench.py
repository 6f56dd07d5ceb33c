"""A YOLOv8n-style detector and a YOLOv4-style Mish backbone on the CPU, Weft beside ONNX Runtime,
PyTorch eager and torch.compile in one run (cnn_bench.py's harness). Written here after the
published architectures. Ultralytics' YOLOv8n (width 0.25, depth 0.33): convolutions with
BatchNorm and SiLU, C2f blocks (a split, a chain of bottlenecks, a concatenation of every stage),
SPPF (three chained 5x5 max poolings), a feature pyramid with nearest x2 upsampling and
concatenations, and the decoupled head with its decoding as the exported model has it (DFL: a
softmax over 16 bins and their expectation, boxes from the anchor points, sigmoid class scores)
into [1, 84, anchors]; no NMS. YOLOv4's CSPDarknet53 backbone at a quarter of its depth:
convolutions with BatchNorm and Mish, CSP stages. Random weights (BatchNorm statistics
randomized), exported with torch.onnx.export's defaults; Weft's output checked against
PyTorch's first.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/yolo_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/yolo_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import torch

from cnn_bench import peer_table, randomize_batch_norms, table_main
from ort_options import described

nn = torch.nn


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)

    def forward(self, x):
        return nn.functional.silu(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1, self.cv2 = Conv(c1, 2 * self.c, 1), Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.cv1, self.cv2 = Conv(c1, c1 // 2, 1), Conv(c1 * 2, c2, 1)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.pool(y[-1]))
        return self.cv2(torch.cat(y, 1))


class Detect(nn.Module):
    def __init__(self, channels, classes=80, bins=16):
        super().__init__()
        self.classes, self.bins = classes, bins
        c2, c3 = max(16, channels[0] // 4, 4 * bins), max(channels[0], min(classes, 100))
        self.box = nn.ModuleList(nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * bins, 1))
                                 for c in channels)
        self.cls = nn.ModuleList(nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, classes, 1))
                                 for c in channels)
        self.register_buffer("proj", torch.arange(bins, dtype=torch.float32).view(1, bins, 1, 1))

    def forward(self, features, strides=(8, 16, 32)):
        outs, anchors, scales = [], [], []
        for i, x in enumerate(features):
            outs.append(torch.cat([self.box[i](x), self.cls[i](x)], 1).flatten(2))
            h, w = x.shape[2:]
            ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
            anchors.append(torch.stack([xs, ys]).flatten(1))
            scales.append(torch.full((1, h * w), float(strides[i])))
        y = torch.cat(outs, 2)
        anchor, stride = torch.cat(anchors, 1)[None], torch.cat(scales, 1)[None]
        box, cls = y.split((4 * self.bins, self.classes), 1)
        n, _, a = box.shape
        dist = nn.functional.conv2d(box.view(n, 4, self.bins, a).transpose(2, 1).softmax(1), self.proj)
        lt, rb = dist.view(n, 4, a).chunk(2, 1)
        xy0, xy1 = anchor - lt, anchor + rb
        boxes = torch.cat([(xy0 + xy1) / 2, xy1 - xy0], 1) * stride
        return torch.cat([boxes, cls.sigmoid()], 1)


class YoloV8n(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(Conv(3, 16, 3, 2), Conv(16, 32, 3, 2), C2f(32, 32, 1, True))
        self.p3 = nn.Sequential(Conv(32, 64, 3, 2), C2f(64, 64, 2, True))
        self.p4 = nn.Sequential(Conv(64, 128, 3, 2), C2f(128, 128, 2, True))
        self.p5 = nn.Sequential(Conv(128, 256, 3, 2), C2f(256, 256, 1, True), SPPF(256, 256))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.h4, self.h3 = C2f(384, 128), C2f(192, 64)
        self.d3, self.n4 = Conv(64, 64, 3, 2), C2f(192, 128)
        self.d4, self.n5 = Conv(128, 128, 3, 2), C2f(384, 256)
        self.detect = Detect((64, 128, 256))

    def forward(self, x):
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        p5 = self.p5(p4)
        h4 = self.h4(torch.cat([self.up(p5), p4], 1))
        o3 = self.h3(torch.cat([self.up(h4), p3], 1))
        o4 = self.n4(torch.cat([self.d3(o3), h4], 1))
        o5 = self.n5(torch.cat([self.d4(o4), p5], 1))
        return self.detect([o3, o4, o5])


class Cbm(nn.Module):
    """YOLOv4's convolution, BatchNorm and Mish."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)

    def forward(self, x):
        return nn.functional.mish(self.bn(self.conv(x)))


class CspStage(nn.Module):
    """A CSP stage of YOLOv4's backbone: a strided convolution, then half the channels through
    residual blocks and half around them, concatenated."""

    def __init__(self, c1, c2, n):
        super().__init__()
        h = c2 // 2
        self.down, self.part1, self.part2 = Cbm(c1, c2, 3, 2), Cbm(c2, h), Cbm(c2, h)
        self.blocks = nn.ModuleList(nn.Sequential(Cbm(h, h), Cbm(h, h, 3)) for _ in range(n))
        self.tail, self.out = Cbm(h, h), Cbm(c2, c2)

    def forward(self, x):
        x = self.down(x)
        a = self.part1(x)
        for b in self.blocks:
            a = a + b(a)
        return self.out(torch.cat([self.tail(a), self.part2(x)], 1))


class CspDarknet(nn.Module):
    """YOLOv4's CSPDarknet53 backbone at a quarter of its depth (1, 2, 2, 2, 1 blocks), Mish
    throughout; its last feature map as the output."""

    def __init__(self):
        super().__init__()
        self.stem = Cbm(3, 32, 3)
        self.s1, self.s2, self.s3 = CspStage(32, 64, 1), CspStage(64, 128, 2), CspStage(128, 256, 2)
        self.s4, self.s5 = CspStage(256, 512, 2), CspStage(512, 1024, 1)

    def forward(self, x):
        return self.s5(self.s4(self.s3(self.s2(self.s1(self.stem(x))))))


MODELS = {
    "yolov8n_640": (lambda: randomize_batch_norms(YoloV8n()), lambda: torch.rand(1, 3, 640, 640)),
    "yolov8n_320": (lambda: randomize_batch_norms(YoloV8n()), lambda: torch.rand(1, 3, 320, 320)),
    "cspdarknet_mish_320": (lambda: randomize_batch_norms(CspDarknet()), lambda: torch.rand(1, 3, 320, 320)),
}


def markdown(r):
    lines = ["## A YOLOv8n-style detector on the CPU", "",
             f"`bench/yolo_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: a "
             "detector after YOLOv8n's published architecture (C2f blocks, SPPF, nearest x2 upsampling and "
             "concatenations, SiLU; the head's box and class decoding, no NMS) at 640x640 and 320x320, and "
             "YOLOv4's CSPDarknet53 backbone at a quarter of its depth (CSP stages, Mish after every "
             "convolution; its last feature map) at 320x320; random "
             f"weights, exported by PyTorch {r['pytorch']}. Weft's Python module, ONNX Runtime "
             f"{r['onnxruntime']} (CPU execution provider, {described(r)}), PyTorch eager and `torch.compile` "
             f"(compile time not included), all in one process; {r['rounds']} rounds, each entry the system's "
             f"lowest median of {r['iters']} runs, Weft's output checked against PyTorch's first. Ratios are "
             "peer time / Weft time (above 1: Weft is faster).", ""]
    return lines + peer_table(r, "yolo_results.json")


def main():
    table_main(MODELS, markdown, "yolo_results.json")


if __name__ == "__main__":
    main()
