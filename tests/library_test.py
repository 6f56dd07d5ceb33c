"""oneDNN calls (weft/library): which nodes they take and absorb, and that their outputs match
PyTorch and Weft's own generated code (WEFT_ONEDNN=0). Each model is built with PyTorch so
that the reference is independent of Weft.

Usage: library_test.py WEFT_BINARY      (exits 77, a skip, when PyTorch is missing)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import torch
except ImportError as e:
    print(f"SKIP: PyTorch is not installed ({e})")
    sys.exit(77)

WEFT = None


class Block(torch.nn.Module):
    """A ResNet basic block with a downsample branch: the residual Add's other operand comes
    from a branch that runs after the first convolution."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.down = torch.nn.Conv2d(8, 16, 1, stride=2)

    def forward(self, x):
        y = self.conv2(torch.relu(self.conv1(x)))
        return torch.relu(y + self.down(x))


class FrozenBatchNormBlock(torch.nn.Module):
    """A ResNet bottleneck's last 1x1 convolution, torchvision's FrozenBatchNorm2d after it
    (x * scale + shift, in DETR's and the detectors' backbones) and the residual."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.conv = torch.nn.Conv2d(16, 32, 1, bias=False)
        self.norm = torchvision.ops.FrozenBatchNorm2d(32)
        for buffer in (self.norm.weight, self.norm.bias, self.norm.running_mean):
            buffer.copy_(torch.randn(32))
        self.norm.running_var.copy_(torch.rand(32) + 0.5)

    def forward(self, x, r):
        return torch.relu(self.norm(self.conv(x)) + r)


class DepthwiseMultiplier(torch.nn.Module):
    """A depthwise convolution with two outputs a channel (FastViT's 7x7 stride-2
    downsampling) between 1x1 convolutions: a depthwise convolution over the input's channels
    repeated (graph/passes/depthwise_multiplier.h)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(8, 16, 1)
        self.down = torch.nn.Conv2d(16, 32, 7, stride=2, padding=3, groups=16)
        self.b = torch.nn.Conv2d(32, 8, 1)

    def forward(self, x):
        return self.b(self.down(self.a(x)))


class WinogradBlock(torch.nn.Module):
    """A ResNet basic block of 3x3 convolutions with 32 channels: oneDNN's Winograd kernels,
    the residual summed into a destination in their blocked layout."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))) + x)


class WinogradChain(torch.nn.Module):
    """Two Winograd blocks, then a mean: the values between the convolutions lie in nChw16c,
    the last one, which a generated kernel reads, channels-last."""

    def __init__(self):
        super().__init__()
        self.a, self.b = WinogradBlock(), WinogradBlock()

    def forward(self, x):
        return self.b(self.a(x)).mean(dim=(2, 3))


class WinogradShapes(torch.nn.Module):
    """3x3 convolutions over 40 channels: one without padding (a smaller plane) and without
    bias, then LeakyReLU; one padded, plus a residual (a crop of the input), then ReLU."""

    def __init__(self):
        super().__init__()
        self.valid = torch.nn.Conv2d(40, 48, 3, bias=False)
        self.same = torch.nn.Conv2d(48, 40, 3, padding=1)

    def forward(self, x):
        v = torch.nn.functional.leaky_relu(self.valid(x), 0.1)
        return torch.relu(self.same(v) + x[:, :, 1:-1, 1:-1])


class WinogradNarrow(torch.nn.Module):
    """3x3 convolutions of 16 and 24 channels (SqueezeNet's first fire modules have 16 -> 64),
    the second plus a residual."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(16, 24, 3, padding=1)
        self.b = torch.nn.Conv2d(24, 16, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))) + x)


class BroadcastPostOps(torch.nn.Module):
    """Convolutions followed by operands that broadcast over more than the channels: a
    position embedding over a batch (TNT's pixel embedding), a spatial gate [N, 1, H, W] and a
    squeeze-excitation gate [N, C, 1, 1] at batch 2. oneDNN 2.6 takes them as binary post-ops
    only in its gemm-based convolution, which got them wrong; they stay after the call."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Conv2d(3, 16, 7, stride=4, padding=3)
        self.pos = torch.nn.Parameter(torch.randn(1, 16, 4, 4))
        self.a = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        e = self.embed(x) + self.pos
        a = self.a(e) * torch.sigmoid(e.mean(1, keepdim=True))
        return self.b(a) * torch.sigmoid(a.mean((2, 3), keepdim=True))


class OnePixelHead(torch.nn.Module):
    """MobileNetV4's head: the mean over the pixels, then a 1x1 convolution of 512 -> 1024
    channels (2^19 weights) with ReLU, then a Linear: both Weft's matrix-vector product
    (dnnl_conv.cc: conv_call), not oneDNN's."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(512, 1024, 1)
        self.fc = torch.nn.Linear(1024, 300)

    def forward(self, x):
        y = torch.relu(self.conv(x.mean((2, 3), keepdim=True)))
        return self.fc(y.flatten(1))


class ParallelBranches(torch.nn.Module):
    """MobileOne's training-time block: 3x3, 3x3 and 1x1 convolutions of the same input summed,
    then ReLU; then a depthwise 3x3 beside a depthwise 1x1. Each sum is one convolution
    (canonicalize_rewrites.h: parallel_convs_summed)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(16, 24, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 24, 3, padding=1)
        self.c = torch.nn.Conv2d(16, 24, 1, bias=False)
        self.dw3 = torch.nn.Conv2d(24, 24, 3, padding=1, groups=24)
        self.dw1 = torch.nn.Conv2d(24, 24, 1, groups=24)

    def forward(self, x):
        y = torch.relu(self.a(x) + self.b(x) + self.c(x))
        return self.dw3(y) + self.dw1(y)


class RuntimeWeights(torch.nn.Module):
    """A 3x3 convolution whose weights are an input (a hypernetwork's, or weights standardized
    in forward that do not fold), then ReLU."""

    def forward(self, x, w):
        return torch.relu(torch.nn.functional.conv2d(x, w, padding=1))


class WinogradStrided(torch.nn.Module):
    """3x3 convolutions of stride 2 over 32 channels: one padded, then LeakyReLU; one
    unpadded, plus a residual (a strided crop of the input), then ReLU."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(32, 32, 3, stride=2, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, stride=2)

    def forward(self, x):
        v = torch.nn.functional.leaky_relu(self.a(x), 0.1)
        return torch.relu(self.b(v) + x[:, :, 2:61:4, 2:57:4])


class DilatedPadded(torch.nn.Module):
    """Dilated 3x3 convolutions as DeepLabV3's ASPP on a small plane: rows of taps that read
    only padding (canonicalize drops them): the first keeps 1x3 taps, the second one."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(16, 16, 3, dilation=(8, 2), padding=(8, 2))
        self.b = torch.nn.Conv2d(16, 24, 3, dilation=8, padding=8)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x))))


class PaddedThenPooled(torch.nn.Module):
    """Explicit zero padding before convolutions (TensorFlow's and some exporters' Pad), which
    each convolution takes as padding of its own, and a global mean at the end."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(16, 24, 3)
        self.b = torch.nn.Conv2d(24, 32, 3, stride=2)

    def forward(self, x):
        y = torch.relu(self.a(torch.nn.functional.pad(x, (1, 1, 1, 1))))
        y = torch.relu(self.b(torch.nn.functional.pad(y, (0, 1, 0, 1))))
        return torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)


class AsppBranch(torch.nn.Module):
    """DeepLabV3's ASPP branch at rate 12 over 16x16, its taps reading mostly padding
    (canonicalize splits it into nine pieces), then a dilated one of stride 2, left whole."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(128, 128, 3, dilation=12, padding=12)
        self.b = torch.nn.Conv2d(128, 40, 3, stride=2, dilation=7, padding=7)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class FewChannelsAGroup(torch.nn.Module):
    """ResNeXt's grouped 3x3 convolution of 4 channels a group between 1x1 ones: without
    AVX-512 generated code runs it on plain activations (library/dnnl.h: few_channels_a_group),
    with it oneDNN's JIT kernel, channels-last."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(32, 32, 1)
        self.b = torch.nn.Conv2d(32, 32, 3, padding=1, groups=8)
        self.c = torch.nn.Conv2d(32, 16, 1)

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


class WideConv(torch.nn.Module):
    """A 3x3 convolution of 1.2 GFLOP over 256 channels, between channel concatenations."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(256, 64, 3, padding=1)
        self.head = torch.nn.Conv2d(64 + 128, 8, 1)

    def forward(self, x):
        y = torch.relu(self.conv(torch.cat([x, -x], 1)))
        return self.head(torch.cat([y, x], 1))


class SegmentationHead(torch.nn.Module):
    """A convolution with HardSwish (a oneDNN post-op), then bilinear upsampling to a given
    size, as torchvision's LR-ASPP ends: its Resize has an int64 sizes input."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = torch.nn.functional.hardswish(self.conv(x))
        return torch.nn.functional.interpolate(y, size=(24, 20), mode="bilinear",
                                               align_corners=False)


class Conv1d(torch.nn.Module):
    """A 1-D convolution, channels-last between the reorders of the graph's input and output:
    oneDNN's direct kernel (brgemm, or jit:avx2 for few taps)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(16, 32, 5, padding=2)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Conv1dLong(torch.nn.Module):
    """A 1-D convolution with 15 taps, as a byte-level text classifier's: without AVX-512,
    oneDNN has only its gemm-based kernel for it, and oneDNN's matmuls over im2col tiles run
    it instead."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(32, 64, 15, padding=7)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Conv1dChain(torch.nn.Module):
    """1-D convolutions with long windows back to back, as a sequence classifier's: strided,
    dilated, without bias, a BatchNormalization and a residual between them, a max over time
    after. Channels-last from the first convolution to the max: no reorder between them."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv1d(24, 64, 15, padding=7)
        self.b = torch.nn.Conv1d(64, 64, 9, stride=2, dilation=2, padding=8, bias=False)
        self.bn = torch.nn.BatchNorm1d(64)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)
        self.c = torch.nn.Conv1d(64, 64, 15, padding=7)

    def forward(self, x):
        h = self.bn(self.b(torch.relu(self.a(x))))
        return torch.relu(self.c(h) + h).amax(dim=2)


class ConformerConv(torch.nn.Module):
    """A Conformer's convolution module: a pointwise convolution, GLU, a depthwise 1-D one of 31
    taps, BatchNormalization, SiLU, a pointwise one; and a short causal depthwise one (4 taps,
    padded both sides and sliced, as LFM2 and Mamba export it). oneDNN 2.6 ran 1-D depthwise
    convolutions at 1-3 GFLOP/s: generated code runs them, on the plain layout."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv1d(32, 64, 1)
        self.dw = torch.nn.Conv1d(32, 32, 31, padding=15, groups=32)
        self.bn = torch.nn.BatchNorm1d(32)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)
        self.b = torch.nn.Conv1d(32, 32, 1)
        self.causal = torch.nn.Conv1d(32, 32, 4, padding=3, groups=32)

    def forward(self, x):
        h = torch.nn.functional.glu(self.a(x), dim=1)
        h = self.b(torch.nn.functional.silu(self.bn(self.dw(h))))
        return self.causal(h)[..., :-3]


class Attention(torch.nn.Module):
    """Transposes around batched MatMuls, as multi-head attention exports them."""

    def forward(self, q, k, v):
        s = torch.matmul(q.transpose(0, 1), k.permute(1, 2, 0))  # [h, n, n]
        return torch.matmul(torch.softmax(s, -1), v.transpose(0, 1)).transpose(0, 1)


class MaskedAttention(torch.nn.Module):
    """Attention with a scale and an additive mask: the call takes the Transposes, the scale
    and the mask, a [T, T] operand over the heads' one batch dim, which the call passes 4-D
    (merge_batch_dims). A mask over two batch dims, [1, 1, T, T] over [B, H, T, T], oneDNN 2.6
    would run on its reference matmul: that one fuses into the softmax (docs/library.md)."""

    def forward(self, q, k, v, mask):
        s = torch.matmul(q.transpose(0, 1), k.permute(1, 2, 0)) * 0.25 + mask
        return torch.matmul(torch.softmax(s, -1), v.transpose(0, 1)).transpose(0, 1)


class SeqFirstAttention(torch.nn.Module):
    """Attention over [B, H, S, D] whose result goes out as [S, B, H, D], as
    nn.MultiheadAttention with batch_first writes it before its output projection; with
    "plain", as [B, H, S, D]. The second product writes through the permutation's strides."""

    def __init__(self, plain=False):
        super().__init__()
        self.plain = plain

    def forward(self, q, k, v):
        y = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)), -1), v)
        return y if self.plain else y.permute(2, 0, 1, 3)


class Head(torch.nn.Module):
    """Pooling with ceil_mode, a Linear with bias, a Clip (ReLU6) and a scale."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(x, 3, stride=2, ceil_mode=True)
        x = torch.nn.functional.avg_pool2d(x, 2, stride=1, padding=1, count_include_pad=False)
        return torch.clamp(self.fc(x.flatten(1)), 0, 6) * 0.5


class AddMm(torch.nn.Module):
    """Gemm with a full-matrix C (torch.addmm), then ReLU: C is a binary-add post-op (as a
    matmul bias varying along M, oneDNN would take its reference kernel)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 48))

    def forward(self, x, c):
        return torch.relu(torch.addmm(c, x, self.w))


class Linear3d(torch.nn.Module):
    """A Linear over [batch, tokens, features], then an epilogue: a residual Add and ReLU, whose
    operand spans the rows (the batches fold into one matmul's rows, the bias becomes the
    matmul's own); a per-batch scale, which broadcasts over the tokens but not the batches
    (they stay batches); a one-element bias; or a Transpose of the result across the batches
    (rows not evenly spaced: they stay batches)."""

    def __init__(self, epilogue):
        super().__init__()
        self.fc = torch.nn.Linear(16, 24)
        self.epilogue = epilogue

    def forward(self, x, r):
        y = self.fc(x)
        if self.epilogue == "residual":
            return torch.relu(y + r)
        if self.epilogue == "per_batch":
            return y * r
        if self.epilogue == "scalar_bias":  # a one-element bias, as the matmul's own
            return torch.matmul(x, self.fc.weight.t()) + r
        return y.transpose(0, 1) + r


class Up(torch.nn.Module):
    """A decoder's upsampling three ways, concatenated: ConvTranspose with padding and
    output_padding, a grouped one, and bilinear interpolation (Resize, pytorch_half_pixel);
    then a convolution over the channels of all three."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.grouped = torch.nn.ConvTranspose2d(8, 8, 2, stride=2, groups=2)
        self.conv = torch.nn.Conv2d(20, 6, 3, padding=1)

    def forward(self, x):
        c = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.conv(torch.cat([self.up(x), self.grouped(x), c], 1))


class Decoder(torch.nn.Module):
    """A U-Net's way up between convolutions: ConvTranspose, a Concat with the skip
    connection, bilinear Resize. The 2x2, stride-2 ConvTranspose is a matrix product and a
    pixel shuffle (conv_transpose_as_matmul); the Resize reads and writes channels-last in
    place (the Transposes around it absorbed)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.c3 = torch.nn.Conv2d(16, 8, 3, padding=1)
        self.c4 = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e1 = torch.relu(self.c1(x))
        d = torch.relu(self.c3(torch.cat([self.up(torch.relu(self.c2(e1))), e1], 1)))
        r = torch.nn.functional.interpolate(d, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.c4(r)


class Stem(torch.nn.Module):
    """A ResNet stem: convolution, ReLU, max pooling, then a block whose residual is the pooled
    value; and an average pooling of a padded value between two convolutions. Both poolings
    run channels-last in place (the Pad runs channels-last too)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 7, stride=2, padding=3)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        p = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 3, 2, 1)
        y = torch.relu(self.conv2(p) + p)
        return self.conv3(torch.nn.functional.avg_pool2d(torch.nn.functional.pad(y, (1, 1, 1, 1)), 2))


class Bottleneck(torch.nn.Module):
    """A residual block whose residual (a, an intermediate) is read last by the convolution
    that sums it: that convolution's output takes a's memory (no copy of a first)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(8, 8, 1)

    def forward(self, x):
        a = torch.relu(self.conv1(x))
        return torch.relu(self.conv3(torch.relu(self.conv2(a))) + a)


class InvertedResidual(torch.nn.Module):
    """MobileNetV2's block: 1x1 expansion, ReLU6, a 3x3 depthwise convolution (stride 1 and,
    in a second one, 2), ReLU6, 1x1 projection."""

    def __init__(self, c=8, expand=6):
        super().__init__()
        e = c * expand
        act = lambda: torch.nn.ReLU6()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(c, e, 1), act(), torch.nn.Conv2d(e, e, 3, 1, 1, groups=e),
                                        act(), torch.nn.Conv2d(e, e, 3, 2, 1, groups=e), act(),
                                        torch.nn.Conv2d(e, c, 1))

    def forward(self, x):
        return self.body(x)


class SqueezeExcite(torch.nn.Module):
    """EfficientNet's MBConv block: 1x1 expansion and a depthwise 3x3 (SiLU after each), then
    squeeze and excitation (a mean over the pixels, two 1x1 convolutions of one pixel, SiLU
    and Sigmoid, the gate multiplied in), a 1x1 projection."""

    def __init__(self, c=8, expand=4, squeezed=4):
        super().__init__()
        e = c * expand
        self.expand = torch.nn.Conv2d(c, e, 1)
        self.depthwise = torch.nn.Conv2d(e, e, 3, 1, 1, groups=e)
        self.squeeze, self.excite = torch.nn.Conv2d(e, squeezed, 1), torch.nn.Conv2d(squeezed, e, 1)
        self.project = torch.nn.Conv2d(e, c, 1)

    def forward(self, x):
        silu = torch.nn.functional.silu
        h = silu(self.depthwise(silu(self.expand(x))))
        gate = torch.sigmoid(self.excite(silu(self.squeeze(h.mean(dim=(2, 3), keepdim=True)))))
        return self.project(h * gate)


class ShuffleUnit(torch.nn.Module):
    """Two ShuffleNetV2 units: a channel split, a branch of convolutions, a Concat and a
    channel shuffle (Reshape, Transpose, Reshape). The split and the shuffle run
    channels-last between the convolutions: channels_last sinks the Transposes through them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 1)
        self.branch = torch.nn.Sequential(
            torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, padding=1, groups=4),
            torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU())

    def forward(self, x):
        x = torch.relu(self.conv(x))
        for _ in range(2):
            a, b = x.chunk(2, dim=1)
            x = torch.cat((a, self.branch(b)), 1)
            n, c, h, w = x.shape
            x = x.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return x


class Inception(torch.nn.Module):
    """GoogLeNet's pattern: a stride-2 ceil-mode max pooling that the next block's
    convolutions read and so does its pooling branch. Both poolings run channels-last in
    place (pools_between_regions, weft.MaxPoolChannelsLast): no reorder around either."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.a = torch.nn.Conv2d(16, 8, 1)
        self.b = torch.nn.Conv2d(16, 8, 3, padding=1)
        self.c = torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):
        p = torch.nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, ceil_mode=True)
        q = torch.nn.functional.max_pool2d(p, 3, 1, 1, ceil_mode=True)
        return torch.cat((self.a(p), self.b(p), self.c(q)), 1)


class Poolings(torch.nn.Module):
    """Poolings between convolutions with "c" channels: a padded stride-2 max pooling and an
    average over whole 2x2 windows (generated code, channels-last), an average over padded
    windows that leaves the padding out of its count (oneDNN's call)."""

    def __init__(self, c=16):
        super().__init__()
        self.a = torch.nn.Conv2d(3, c, 3)
        self.b = torch.nn.Conv2d(c, c, 1)
        self.c = torch.nn.Conv2d(c, c, 1)
        self.d = torch.nn.Conv2d(c, c, 1)

    def forward(self, x):
        f = torch.nn.functional
        p = f.max_pool2d(torch.relu(self.a(x)), 3, 2, 1)
        q = f.avg_pool2d(self.b(p), 2, 2)
        r = f.avg_pool2d(self.c(q), 3, 1, 1, count_include_pad=False)
        return self.d(r)


class Video(torch.nn.Module):
    """An R(2+1)D block: 3-D convolutions (1x3x3, then 3x1x1) with a residual. They run on
    channels-last activations in place, [N, D, H, W, C] between them."""

    def __init__(self):
        super().__init__()
        self.spatial = torch.nn.Conv3d(8, 8, (1, 3, 3), padding=(0, 1, 1))
        self.temporal = torch.nn.Conv3d(8, 8, (3, 1, 1), padding=(1, 0, 0))

    def forward(self, x):
        return torch.relu(self.temporal(torch.relu(self.spatial(x))) + x)


def check_col2im(tmp):
    """Col2Im (torch's fold: VOLO's outlook attention) with stride, padding and dilation:
    Weft's own call, against PyTorch."""
    import onnx
    from onnx import TensorProto, helper
    x = np.random.default_rng(1).standard_normal((2, 6 * 9, 6 * 4)).astype(np.float32)
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [len(v)], v)
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 2],
                            pads=[1, 1, 1, 1], dilations=[1, 2])
    graph = helper.make_graph([node], "col2im",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [ints("image", [11, 9]), ints("block", [3, 3])])
    path = os.path.join(tmp, "col2im.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    want = torch.nn.functional.fold(torch.from_numpy(x), output_size=(11, 9), kernel_size=3,
                                    padding=1, stride=2, dilation=(1, 2)).numpy()
    out = os.path.join(tmp, "col2im")
    os.makedirs(out)
    np.testing.assert_allclose(run(path, {"x": x}, out, {}), want, rtol=1e-5, atol=1e-6)
    calls = [k["strategy"] for k in kernels(path) if "Col2Im" in k["strategy"]]
    assert len(calls) == 1, [k["strategy"] for k in kernels(path)]
    print(f"ok col2im: {calls}")


def winograd_kernels():
    """Whether oneDNN has its f32 Winograd convolutions on this CPU: they need AVX-512
    (avx512_core); elsewhere Weft's 3x3 convolutions stay direct."""
    with open("/proc/cpuinfo") as f:
        flags = set(next((l for l in f if l.startswith("flags")), "").split())
    return {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags


def avx2_without_brgemm():
    """Whether oneDNN's f32 convolutions here are its AVX2 JIT kernels (AVX2, no AVX-512),
    which run faster on its blocked layout, nChw8c."""
    with open("/proc/cpuinfo") as f:
        flags = set(next((l for l in f if l.startswith("flags")), "").split())
    return "avx2" in flags and "avx512f" not in flags


def debug_lines(path, text, env_extra={}):
    """How many lines of a run's debug log say "text"."""
    r = subprocess.run([WEFT, "run", path, "--fill", "random", "--output-dir",
                        os.path.dirname(path)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "WEFT_LOG": "debug", **env_extra})
    assert r.returncode == 0, r.stderr
    return r.stderr.count(text)


def in_place_sums(path, env_extra={}):
    """How many library calls' outputs took the memory of the residual they sum."""
    return debug_lines(path, "its output takes the memory of the input it sums into it",
                       env_extra)


class SharedWeight(torch.nn.Module):
    """One weight multiplied in 6 times, as ALBERT's layers share theirs."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 64) / 8)

    def forward(self, x):
        for _ in range(6):
            x = x @ self.w
        return x


def shared_packings(path):
    """How many library calls took the packed copy of a weight an earlier call packed."""
    return debug_lines(path, "shares the packed copy of an earlier call")


# The strategies of library calls: oneDNN's, and Weft's own Winograd convolutions, which
# take their place on CPUs where oneDNN has none.
LIBRARY_CALLS = ("oneDNN", "Weft Winograd")


def run(path, inputs, directory, env_extra):
    args = [WEFT, "run", path, "--output-dir", directory]
    for name, value in inputs.items():
        np.save(os.path.join(directory, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(directory, name + '.npy')}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env_extra})
    assert r.returncode == 0, r.stderr
    return np.load(os.path.join(directory, "y.npy"))


def kernels(path, env_extra={}):
    r = subprocess.run([WEFT, "inspect", path, "--json"], capture_output=True, text=True,
                       timeout=300, env={**os.environ, **env_extra})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["kernels"]


def check(tmp, name, model, inputs, expect_calls, expect_gemm=None):
    path = os.path.join(tmp, name + ".onnx")
    names = list(inputs)
    torch.onnx.export(model, tuple(torch.from_numpy(v) for v in inputs.values()), path,
                      opset_version=14, input_names=names, output_names=["y"])
    with torch.no_grad():
        want = model(*(torch.from_numpy(v) for v in inputs.values())).numpy()
    out = os.path.join(tmp, name)
    os.makedirs(out)
    got = run(path, inputs, out, {})
    generated = run(path, inputs, out, {"WEFT_ONEDNN": "0"})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(generated, want, rtol=1e-4, atol=1e-5, err_msg=name + " generated")
    calls = [k["op_type"] for k in kernels(path) if k["strategy"].startswith(LIBRARY_CALLS)]
    refs = [k["strategy"] for k in kernels(path) if "(ref" in k["strategy"]]
    assert not refs, f"{name}: oneDNN reference kernels {refs}"
    assert calls == expect_calls, f"{name}: oneDNN calls {calls}, expected {expect_calls}"
    if expect_gemm:
        gemms = [k["strategy"] for k in kernels(path) if k["strategy"].startswith("oneDNN matmul")]
        assert all(expect_gemm in g for g in gemms), f"{name}: {gemms}, expected {expect_gemm}"
    print(f"ok {name}: {calls}, max |weft - torch| = {np.abs(got - want).max():.2e}")


def check_own_winograd(tmp, name, model, inputs, expect_calls, form, large=False):
    """check(), then on AVX2 without AVX-512 (or with it, for "large" planes of 128 tiles or
    more and few channels, which Weft's kernel takes there too, on AVX-512 registers): every
    convolution runs Weft's own Winograd kernel in "form", and its output matches oneDNN's
    direct kernels' (WEFT_WINOGRAD=0)."""
    check(tmp, name, model, inputs, expect_calls)
    path = os.path.join(tmp, name + ".onnx")
    own = [k["strategy"] for k in kernels(path) if k["op_type"].startswith("Conv")]
    if avx2_without_brgemm() or (large and winograd_kernels()):
        assert all(o.startswith(f"Weft Winograd {form}") for o in own), own
    out = os.path.join(tmp, name)
    np.testing.assert_allclose(run(path, inputs, out, {}),
                               run(path, inputs, out, {"WEFT_WINOGRAD": "0"}),
                               rtol=1e-4, atol=1e-5, err_msg=f"{name}: Winograd against direct")


def main():
    global WEFT
    WEFT = os.path.abspath(sys.argv[1])
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    f = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        check(tmp, "block", Block().eval(), {"x": f(2, 8, 15, 15)},
              ["Conv+Relu", "Conv", "Conv+Add+Relu"])
        # Channels-last in place, oneDNN's direct kernel (its 16 -> 16 channels would run
        # Weft's Winograd kernel on AVX2) takes the residual as the destination's start (a
        # sum post-op).
        direct = {"WEFT_WINOGRAD": "0"}
        summed = [k["strategy"] for k in kernels(os.path.join(tmp, "block.onnx"), direct)
                  if k["op_type"] == "Conv+Add+Relu"]
        assert len(summed) == 1 and "residual summed" in summed[0], summed
        # The residual (the downsampling convolution's output) dies there: the sum's output
        # takes its memory, as in a bottleneck (an intermediate residual).
        assert in_place_sums(os.path.join(tmp, "block.onnx"), direct) == 1
        # The frozen batch norm's scale folds into the weights and its shift into the bias:
        # the residual is the call's first post-op, a sum (a binary post-op of full size kept
        # DETR's 1x1 convolutions off oneDNN's brgemm kernels, at 65-85% of their speed).
        check(tmp, "frozen_batch_norm", FrozenBatchNormBlock().eval(),
              {"x": f(1, 16, 20, 20), "r": f(1, 32, 20, 20)}, ["Conv+Add+Relu"])
        frozen = [k["strategy"] for k in kernels(os.path.join(tmp, "frozen_batch_norm.onnx"))
                  if k["op_type"] == "Conv+Add+Relu"]
        assert "residual summed" in frozen[0], frozen
        check_col2im(tmp)
        check(tmp, "depthwise_multiplier", DepthwiseMultiplier().eval(), {"x": f(2, 8, 17, 13)},
              ["Conv", "Conv", "Conv"])
        repeat = [k["strategy"] for k in kernels(os.path.join(tmp, "depthwise_multiplier.onnx"))
                  if k["op_type"] == "Conv"]
        if winograd_kernels():  # AVX-512: oneDNN's depthwise kernel, not its generic one
            assert "brdgmm_dw" in repeat[1], repeat
        check(tmp, "winograd", WinogradBlock().eval(), {"x": f(2, 32, 14, 14)},
              ["Conv+Relu", "Conv+Add+Relu"])
        wino = [k["strategy"] for k in kernels(os.path.join(tmp, "winograd.onnx"))
                if k["op_type"].startswith("Conv")]
        if winograd_kernels():
            assert all("wino" in w for w in wino) and "residual summed" in wino[1], wino
        elif avx2_without_brgemm():  # Weft's own (winograd.cc), the residual in its epilogue
            assert all(w.startswith("Weft Winograd") for w in wino) and "residual" in wino[1], wino
        else:
            assert not any("wino" in w or "Winograd" in w for w in wino), wino
        off = {"WEFT_WINOGRAD": "0"}
        direct = [k["strategy"] for k in kernels(os.path.join(tmp, "winograd.onnx"), off)
                  if k["op_type"].startswith("Conv")]
        assert not any("wino" in d or "Winograd" in d for d in direct), direct
        check(tmp, "winograd_chain", WinogradChain().eval(), {"x": f(1, 32, 12, 12)},
              ["Conv+Relu", "Conv+Add+Relu", "Conv+Relu", "Conv+Add+Relu"])
        chain = [k["strategy"] for k in kernels(os.path.join(tmp, "winograd_chain.onnx"))
                 if k["op_type"].startswith("Conv")]
        # x is channels-last (a graph input) and the result is read by the mean: the first
        # convolution reads and sums x reordered; the last reorders out; between them, none.
        # Without AVX-512 (no brgemm), oneDNN's direct 3x3 kernels run faster on its blocked
        # layout, nChw8c, and the chain lies so the same way.
        # Weft's own Winograd kernel (AVX2) runs as fast on either layout: all channels-last.
        if winograd_kernels():
            assert "reordered in, nChw16c out" in chain[0], chain
            assert all("nChw16c in place" in c for c in chain[1:3]), chain
            assert "nChw16c in, reordered out" in chain[3], chain
        elif avx2_without_brgemm():
            assert all("channels-last in, channels-last out" in c for c in chain), chain
        off = [k["strategy"] for k in kernels(os.path.join(tmp, "winograd_chain.onnx"),
                                              {"WEFT_DNNL_BLOCKED": "0", "WEFT_WINOGRAD": "0"})
               if k["op_type"].startswith("Conv")]
        assert not any("nChw" in c for c in off), off
        # On a small plane (4 tiles of 4x4), Weft's Winograd kernel takes tiles of 2x2.
        check_own_winograd(tmp, "winograd_small", WinogradBlock().eval(), {"x": f(1, 32, 7, 7)},
                           ["Conv+Relu", "Conv+Add+Relu"], "F(2x2, 3x3)")
        # Weft's own Winograd kernel on planes that its 4x4 tiles do not divide, in a batch
        # of 3, over 40 channels (not a multiple of its 16-channel strips; with AVX-512 two
        # groups of 16 and a half one), with and without padding, a LeakyReLU and a
        # residual. Its 189 tiles run in chunks a thread (the Winograd block's 32, all at
        # once).
        check_own_winograd(tmp, "winograd_shapes", WinogradShapes().eval(),
                           {"x": f(3, 40, 37, 29)}, ["Conv+LeakyRelu", "Conv+Add+Relu"],
                           "F(4x4, 3x3)", large=True)
        # Its residual (a crop of the input) dies there: the output takes its memory.
        if avx2_without_brgemm():
            assert in_place_sums(os.path.join(tmp, "winograd_shapes.onnx")) == 1
        # The same on planes of 1,089 and 1,156 tiles: 12 rows of tiles a register block of
        # its products with AVX-512, the last block of a chunk fewer.
        check_own_winograd(tmp, "winograd_large", WinogradShapes().eval(),
                           {"x": f(1, 40, 135, 133)}, ["Conv+LeakyRelu", "Conv+Add+Relu"],
                           "F(4x4, 3x3)", large=True)
        check(tmp, "parallel_branches", ParallelBranches().eval(), {"x": f(1, 16, 20, 20)},
              ["Conv+Relu", "Conv"])
        check(tmp, "one_pixel_head", OnePixelHead().eval(), {"x": f(1, 512, 7, 7)}, [])
        products = [(k["op_type"], k["strategy"]) for k in kernels(os.path.join(tmp, "one_pixel_head.onnx"))
                    if k["op_type"].startswith(("Conv", "Gemm"))]
        assert [s.startswith("Weft matrix-vector product") for _, s in products] == [True, True], products
        # Its weights reordered at each run into oneDNN's layout, not multiplied by its
        # gemm-based kernel on plain weights (2.8x slower at 64 channels and 56x56).
        check(tmp, "runtime_weights", RuntimeWeights(), {"x": f(1, 32, 28, 28), "w": f(32, 32, 3, 3) * np.float32(0.1)},
              ["Conv+Relu"])
        conv = [k["strategy"] for k in kernels(os.path.join(tmp, "runtime_weights.onnx"))
                if k["op_type"].startswith("Conv")]
        assert not any("gemm" in c for c in conv), conv
        check(tmp, "broadcast_post_ops", BroadcastPostOps().eval(), {"x": f(2, 3, 16, 16)},
              ["Conv", "Conv", "Conv"])
        # From 16 channels, on 196 tiles: Weft's kernel with AVX-512 too (not oneDNN's
        # Winograd, which starts at 32; conv_choice.cc).
        check_own_winograd(tmp, "winograd_narrow", WinogradNarrow().eval(), {"x": f(1, 16, 56, 56)},
                           ["Conv+Relu", "Conv+Add+Relu"], "F(4x4, 3x3)", large=True)
        # Stride 2 as four phases of stride 1 (winograd.cc), on planes of odd and even sides,
        # padded and not: 128 tiles of 4x4 in chunks a thread, then 32 all at once (2 threads).
        check_own_winograd(tmp, "winograd_strided", WinogradStrided().eval(),
                           {"x": f(2, 32, 61, 57)}, ["Conv+LeakyRelu", "Conv+Add+Relu"],
                           "F(4x4, 3x3), stride 2")
        check(tmp, "dilated_padded", DilatedPadded().eval(), {"x": f(2, 16, 6, 7)},
              ["Conv+Relu", "Conv+Relu"])
        check(tmp, "padded_then_pooled", PaddedThenPooled().eval(), {"x": f(2, 16, 15, 13)},
              ["Conv+Relu", "Conv+Relu"])
        pads = [k["op_type"] for k in kernels(os.path.join(tmp, "padded_then_pooled.onnx"))
                if "Pad" in k["op_type"]]
        assert not pads, pads
        aspp = ["Conv"] * 9 + ["Conv"]
        avx512 = winograd_kernels()  # oneDNN's avx512_core kernels
        check(tmp, "few_channels_a_group", FewChannelsAGroup().eval(), {"x": f(1, 32, 30, 29)},
              ["Conv+Relu", "Conv+Relu", "Conv"] if avx512 else ["Conv+Relu", "Conv"])
        grouped = [k["strategy"] for k in kernels(os.path.join(tmp, "few_channels_a_group.onnx"))
                   if k["op_type"].startswith("Conv") and not k["strategy"].startswith(LIBRARY_CALLS)]
        assert len(grouped) == (0 if avx512 else 1), grouped
        check(tmp, "aspp_branch", AsppBranch().eval(), {"x": f(1, 128, 16, 16)}, aspp)
        # A large convolution between concatenations (channels-last) runs blocked alone, its
        # activations reordered, where that is faster (AVX2); the 1x1 ones stay channels-last.
        check(tmp, "wide_conv", WideConv().eval(), {"x": f(1, 128, 64, 64)},
              ["Conv+Relu", "Conv"])
        wide = [k["strategy"] for k in kernels(os.path.join(tmp, "wide_conv.onnx"),
                                               {"WEFT_WINOGRAD": "0"})
                if k["op_type"].startswith("Conv")]
        if avx2_without_brgemm():
            assert "reordered to nChw8c" in wide[0] and "channels-last" in wide[1], wide
        check(tmp, "segmentation_head", SegmentationHead().eval(), {"x": f(1, 8, 6, 5)},
              ["Conv+HardSwish", "Transpose+Resize"])
        check(tmp, "conv1d", Conv1d().eval(), {"x": f(1, 16, 64)}, ["Conv+Relu"])
        conv1d = [k["strategy"] for k in kernels(os.path.join(tmp, "conv1d.onnx"))
                  if k["op_type"] == "Conv+Relu"]
        assert "channels-last" in conv1d[0] and "gemm" not in conv1d[0], conv1d
        check(tmp, "conv1d_long", Conv1dLong().eval(), {"x": f(1, 32, 512)}, ["Conv+Relu"])
        path = os.path.join(tmp, "conv1d_long.onnx")
        long = [k["strategy"] for k in kernels(path) if k["op_type"] == "Conv+Relu"]
        off = {"WEFT_IM2COL": "0"}
        own = [k["strategy"] for k in kernels(path, off) if k["op_type"] == "Conv+Relu"]
        if "gemm" in own[0]:  # oneDNN has only its gemm-based convolution here (AVX2)
            assert "im2col tiles" in long[0] and "channels-last in place" in long[0], long
            x = {"x": f(1, 32, 512)}
            np.testing.assert_allclose(run(path, x, os.path.join(tmp, "conv1d_long"), off),
                                       run(path, x, os.path.join(tmp, "conv1d_long"), {}),
                                       rtol=1e-4, atol=1e-5, err_msg="im2col tiles")
        else:
            assert "im2col" not in long[0], long
        check(tmp, "conv1d_chain", Conv1dChain().eval(), {"x": f(2, 24, 301)},
              ["Conv+Relu", "Conv", "Conv+Add+Relu"])
        listed = kernels(os.path.join(tmp, "conv1d_chain.onnx"))
        moves = [k["op_type"] for k in listed if "Transpose" in k["op_type"]]
        assert moves == ["Transpose"], moves  # the input's only
        if "gemm" in own[0]:
            tiles = [k["strategy"] for k in listed if "im2col tiles" in k["strategy"]]
            assert len(tiles) == 3, listed
        check(tmp, "conformer_conv", ConformerConv().eval(), {"x": f(2, 32, 250)},
              ["Conv", "Conv"])
        generated = [k["op_type"] for k in kernels(os.path.join(tmp, "conformer_conv.onnx"))
                     if "Conv" in k["op_type"] and not k["strategy"].startswith(LIBRARY_CALLS)]
        assert len(generated) == 2, generated  # the depthwise ones
        # Depthwise convolutions channels-last, as oneDNN's calls and as generated code
        # (WEFT_DEPTHWISE=generated: weft.ConvChannelsLast on its [k..., 1, M] weights).
        check(tmp, "inverted_residual", InvertedResidual().eval(), {"x": f(1, 8, 20, 20)},
              ["Conv+Clip", "Conv+Clip", "Conv+Clip", "Conv"])
        path = os.path.join(tmp, "inverted_residual.onnx")
        generated = {"WEFT_DEPTHWISE": "generated"}
        listed = kernels(path, generated)
        calls = [k["op_type"] for k in listed if k["strategy"].startswith("oneDNN")]
        assert calls == ["Conv+Clip", "Conv"], calls  # the 1x1 convolutions only
        # Both depthwise convolutions generated, stitched into one kernel with their Clips.
        own = [k["op_type"] for k in listed if "ConvChannelsLast" in k["name"]]
        assert own == ["Conv+Clip+Conv+Clip"], own
        x = {"x": f(1, 8, 20, 20)}
        got = run(path, x, os.path.join(tmp, "inverted_residual"), generated)
        ref = run(path, x, os.path.join(tmp, "inverted_residual"), {})
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg="generated depthwise")
        # The squeeze and excitation convolutions (one pixel each) are generated code, in one
        # kernel with the mean before them and the gate's Mul after them.
        check(tmp, "squeeze_excite", SqueezeExcite().eval(), {"x": f(1, 8, 10, 10)},
              ["Conv", "Conv", "Conv"])
        own = [k["op_type"] for k in kernels(os.path.join(tmp, "squeeze_excite.onnx"))
               if "Conv" in k["op_type"] and not k["strategy"].startswith("oneDNN")]
        assert len(own) == 1 and own[0].count("Conv") == 2 and "ReduceMean" in own[0], own
        check(tmp, "shuffle_unit", ShuffleUnit().eval(), {"x": f(1, 8, 6, 6)},
              ["Conv+Relu"] + ["Conv+Relu", "Conv", "Conv+Relu"] * 2)
        moves = [k["op_type"] for k in kernels(os.path.join(tmp, "shuffle_unit.onnx"))
                 if not k["strategy"].startswith("oneDNN")]
        # The input's reorder; the first split (a Split, or Slices from the TorchScript
        # exporter); each Concat with its shuffle (one Transpose, of the channel factors)
        # and the next split, stitched through the shuffle's Reshapes; the output's reorder,
        # joined with the last shuffle. No other Transpose: the units run channels-last.
        assert len(moves) == 4 and [m.count("Transpose") for m in moves] == [1, 0, 1, 2], moves
        check(tmp, "inception", Inception().eval(), {"x": f(1, 3, 15, 15)},
              ["Conv+Relu", "Conv", "Conv", "Conv"])
        path = os.path.join(tmp, "inception.onnx")
        own = [k["op_type"] for k in kernels(path) if not k["strategy"].startswith("oneDNN")]
        # The input's reorder, the two poolings (generated, channels-last), the output's
        # reorder, one Transpose per branch writing its part of the Concat: none around the
        # poolings.
        assert own == ["Transpose", "MaxPool", "MaxPool", "Transpose+Transpose+Transpose+Concat"], own
        # As oneDNN's calls (WEFT_POOLING=onednn), in place too, with equal outputs.
        onednn = {"WEFT_POOLING": "onednn"}
        calls = [k["strategy"] for k in kernels(path, onednn) if k["op_type"] == "MaxPool"]
        assert len(calls) == 2 and all("channels-last in place" in c for c in calls), calls
        x = {"x": f(1, 3, 15, 15)}
        np.testing.assert_array_equal(run(path, x, os.path.join(tmp, "inception"), onednn),
                                      run(path, x, os.path.join(tmp, "inception"), {}))
        # Average poolings: over whole windows generated, padded ones oneDNN's calls.
        # 16 channels: one SIMD vector; 56: vectors and a tail.
        for c in (16, 56):
            name = f"poolings_{c}"
            check(tmp, name, Poolings(c).eval(), {"x": f(1, 3, 17, 17)},
                  ["Conv+Relu", "Conv", "Conv", "AveragePool", "Conv"])
            path = os.path.join(tmp, name + ".onnx")
            own = [k["op_type"] for k in kernels(path) if not k["strategy"].startswith("oneDNN")]
            assert own == ["Transpose", "MaxPool", "AveragePool", "Transpose"], own
            x = {"x": f(1, 3, 17, 17)}
            np.testing.assert_allclose(run(path, x, os.path.join(tmp, name), onednn),
                                       run(path, x, os.path.join(tmp, name), {}),
                                       rtol=1e-6, atol=1e-6)
        check(tmp, "video", Video().eval(), {"x": f(1, 8, 4, 6, 6)},
              ["Conv+Relu", "Conv+Add+Relu"])
        video = [k["strategy"] for k in kernels(os.path.join(tmp, "video.onnx"))
                 if k["op_type"].startswith("Conv")]
        assert all("channels-last in place" in v for v in video), video
        check(tmp, "bottleneck", Bottleneck().eval(), {"x": f(2, 4, 9, 9)},
              ["Conv+Relu", "Conv+Relu", "Conv+Add+Relu"])
        assert in_place_sums(os.path.join(tmp, "bottleneck.onnx")) == 1
        check(tmp, "attention", Attention(), {"q": f(12, 4, 16), "k": f(12, 4, 16),
                                              "v": f(12, 4, 16)},
              ["Transpose+Transpose+MatMul", "Transpose+MatMul+Transpose"])
        check(tmp, "masked_attention", MaskedAttention(),
              {"q": f(12, 4, 16), "k": f(12, 4, 16), "v": f(12, 4, 16), "mask": f(12, 12)},
              ["Transpose+Transpose+MatMul+Mul+Add", "Transpose+MatMul+Transpose"])
        # The result's batches B and H step as one batch dim inside its rows: oneDNN takes the
        # same kernel as for the plain result (at B = 1 too), not its slower batched gemm.
        for b in (4, 1):
            qkv = {"q": f(b, 3, 32, 16), "k": f(b, 3, 32, 16), "v": f(b, 3, 32, 16)}
            for plain in (True, False):
                name = f"seq_first_attention_{b}{'_plain' * plain}"
                check(tmp, name, SeqFirstAttention(plain), qkv,
                      ["Transpose+MatMul", "MatMul" if plain else "MatMul+Transpose"])
            impls = [[k["strategy"].split("(")[1] for k in kernels(os.path.join(tmp, name + ".onnx"))
                      if k["strategy"].startswith("oneDNN matmul")][-1]
                     for name in (f"seq_first_attention_{b}_plain", f"seq_first_attention_{b}")]
            assert impls[0] == impls[1], impls
        check(tmp, "head", Head().eval(), {"x": f(2, 8, 10, 10)},
              ["MaxPool", "AveragePool", "Gemm+Clip+Mul"])
        check(tmp, "addmm", AddMm(), {"x": f(16, 32), "c": f(16, 48)}, ["Gemm+Relu"])
        check(tmp, "linear_residual", Linear3d("residual").eval(),
              {"x": f(3, 5, 16), "r": f(3, 5, 24)}, ["MatMul+Add+Add+Relu"], "15x16x24 (")
        # Products of at most 300 rows all told over constant weights: where oneDNN's matmul is
        # its gemm-based one (AVX2), the weights lie in padded rows; from 301 rows, packed.
        for rows, layout in ((150, "weights in padded rows"), (151, "packed weights")):
            name = f"linear_{rows}"
            check(tmp, name, Linear3d("residual").eval(),
                  {"x": f(2, rows, 16), "r": f(2, rows, 24)}, ["MatMul+Add+Add+Relu"],
                  f"{2 * rows}x16x24 (")
            gemm = [k["strategy"] for k in kernels(os.path.join(tmp, name + ".onnx"))
                    if k["strategy"].startswith("oneDNN matmul")]
            if "gemm:jit" in gemm[0]:
                assert layout in gemm[0], gemm
        check(tmp, "linear_per_batch", Linear3d("per_batch").eval(),
              {"x": f(3, 5, 16), "r": f(3, 1, 24)}, ["MatMul+Add+Mul"], "3 batches of 5x16x24")
        check(tmp, "matmul_scalar_bias", Linear3d("scalar_bias").eval(),
              {"x": f(3, 5, 16), "r": f(1)}, ["MatMul+Add"], "15x16x24 (")
        check(tmp, "linear_transposed", Linear3d("transposed").eval(),
              {"x": f(3, 5, 16), "r": f(5, 3, 24)}, ["MatMul+Add+Transpose"],
              "3 batches of 5x16x24")
        check(tmp, "upsampling", Up().eval(), {"x": f(2, 8, 7, 7)},
              ["Resize", "ConvTranspose", "ConvTranspose", "Conv"])
        check(tmp, "decoder", Decoder().eval(), {"x": f(1, 4, 16, 16)},
              ["Conv+Relu", "Conv+Relu", "MatMul", "Conv+Relu",
               "Transpose+Resize+Transpose", "Conv"])
        # The max pooling runs channels-last (weft.MaxPoolChannelsLast), as oneDNN's call:
        # 8 channels are too few for generated code's vectors.
        check(tmp, "stem", Stem().eval(), {"x": f(1, 3, 32, 32)},
              ["Conv+Relu", "MaxPool", "Conv+Add+Relu", "AveragePool", "Conv"])
        maxpool = [k["strategy"] for k in kernels(os.path.join(tmp, "stem.onnx"))
                   if k["op_type"] == "MaxPool"]
        assert "channels-last in place" in maxpool[0], maxpool
        # The average pooling reads the Pad's output, which runs channels-last (a Pad of the
        # spatial dims): oneDNN's JIT kernel reads and writes it in place.
        pools = [k["strategy"] for k in kernels(os.path.join(tmp, "stem.onnx"))
                 if k["op_type"] == "AveragePool"]
        assert "jit" in pools[0] and "channels-last in place" in pools[0], pools
        # There the residual is also the convolution's source: the output needs its own memory.
        assert in_place_sums(os.path.join(tmp, "stem.onnx")) == 0
        check(tmp, "shared_weight", SharedWeight(), {"x": f(4, 64)}, ["MatMul"] * 6)
        assert shared_packings(os.path.join(tmp, "shared_weight.onnx")) == 5
    print("all library checks passed")


if __name__ == "__main__":
    main()
