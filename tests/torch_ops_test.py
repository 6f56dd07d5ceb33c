"""Torch functions and modules as a current PyTorch exports them by default (the dynamo
exporter, opset 18+), each run by Weft's Python module and compared with PyTorch (rtol 1e-3,
atol 1e-4; integer and bool outputs exactly): OPS, ~120 functions at static shapes (indexing,
scatter, sorting, windows, resampling, pooling, normalizations, recurrent layers, attention,
losses, FFTs, complex views); DYNAMIC, shape arithmetic exported over torch.export.Dim dims
(heads split and merged, halves, causal masks built from the length, padding to a multiple,
lengths as inputs, derived dims such as 2 * Dim("h")), each compiled once (but for the few in
PER_SHAPE) and run at several shapes.

A case PyTorch cannot export is reported, not failed, unless more than a tenth of them are
(the exporter itself broken). Not here, knowingly: bf16 arithmetic between Casts, which Weft
keeps in f32 between the ops of a kernel (docs/architecture.md, "Numerics").

Usage: .venv/bin/python torch_ops_test.py   (exits 77, a skip, without PyTorch 2.9+)
"""

import contextlib
import io
import os
import sys
import tempfile
import warnings

import numpy as np

try:
    import torch
    import torch.nn.functional as F
    from torch.export import Dim
except ImportError as e:
    print(f"SKIP: PyTorch is not installed in this environment ({e}); scripts/setup.sh installs it")
    sys.exit(77)
if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 9):
    print(f"SKIP: PyTorch {torch.__version__} predates the dynamo exporter as the default (2.9)")
    sys.exit(77)

import weft  # noqa: E402

warnings.filterwarnings("ignore")
torch.manual_seed(0)
r = torch.randn

OPS = {
    "cumsum_rev": (lambda x: torch.flip(torch.cumsum(torch.flip(x, [1]), 1), [1]), (r(3, 7),)),
    "roll": (lambda x: torch.roll(x, shifts=(2, -1), dims=(0, 1)), (r(5, 6),)),
    "unfold": (lambda x: F.unfold(x, 3, padding=1, stride=2), (r(1, 3, 8, 8),)),
    "fold": (lambda x: F.fold(x, (6, 6), 2, stride=2), (r(1, 12, 9),)),
    "grid_sample": (
        lambda x, g: F.grid_sample(x, g, align_corners=False),
        (r(1, 2, 5, 6), torch.rand(1, 4, 3, 2) * 2 - 1),
    ),
    "grid_sample_nearest_border": (
        lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
        (r(1, 2, 5, 6), torch.rand(1, 4, 3, 2) * 2.4 - 1.2),
    ),
    "interp_bicubic": (
        lambda x: F.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=False),
        (r(1, 2, 5, 6),),
    ),
    "interp_bilinear_aa": (
        lambda x: F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
        (r(1, 2, 9, 10),),
    ),
    "interp_trilinear": (
        lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"),
        (r(1, 2, 3, 4, 5),),
    ),
    "sdpa_mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        (r(2, 4, 5, 8), r(2, 4, 7, 8), r(2, 4, 7, 8), torch.rand(5, 7) > 0.3),
    ),
    "sdpa_gqa": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
        (r(1, 8, 6, 16), r(1, 2, 6, 16), r(1, 2, 6, 16)),
    ),
    "topk": (lambda x: torch.topk(x, 3, dim=1), (r(4, 9),)),
    "sort_desc": (lambda x: torch.sort(x, dim=-1, descending=True), (r(4, 9),)),
    "argsort": (lambda x: torch.argsort(x, dim=0), (r(6, 3),)),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 1), (r(3, 8),)),
    "scatter_reduce_amax": (
        lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
        (r(3, 5), torch.randint(0, 5, (3, 4)), r(3, 4)),
    ),
    "index_put_acc": (
        lambda x, i, v: x.index_put((i,), v, accumulate=True),
        (r(6, 3), torch.tensor([0, 2, 2, 5]), r(4, 3)),
    ),
    "index_select": (
        lambda x, i: torch.index_select(x, 1, i),
        (r(3, 6), torch.tensor([5, 0, 0, 2])),
    ),
    "masked_fill": (lambda x, m: x.masked_fill(m, -1e4), (r(3, 6), torch.rand(3, 6) > 0.5)),
    "where_scalar": (lambda x: torch.where(x > 0, x, 0.1 * x), (r(3, 6),)),
    "bucketize": (lambda x, b: torch.bucketize(x, b), (r(10), torch.tensor([-1.0, 0.0, 0.5, 2.0]))),
    "histc": (lambda x: torch.histc(x, bins=5, min=-2, max=2), (r(100),)),
    "linalg_norm": (lambda x: torch.linalg.vector_norm(x, ord=3, dim=1), (r(4, 6),)),
    "matrix_norm_fro": (lambda x: torch.linalg.matrix_norm(x), (r(2, 4, 6),)),
    "det": (lambda x: torch.linalg.det(x), (r(3, 4, 4),)),
    "pad_reflect": (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), (r(1, 2, 5, 6),)),
    "pad_circular": (lambda x: F.pad(x, (2, 1, 1, 2), mode="circular"), (r(1, 2, 5, 6),)),
    "pad_replicate3d": (
        lambda x: F.pad(x, (1, 1, 2, 0, 1, 1), mode="replicate"),
        (r(1, 2, 3, 4, 5),),
    ),
    "pixel_unshuffle": (lambda x: F.pixel_unshuffle(x, 2), (r(1, 3, 8, 6),)),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 3), (r(1, 6, 4, 4),)),
    "embedding_bag": (
        lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
        (r(10, 4), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])),
    ),
    "stft": (
        lambda x: torch.view_as_real(
            torch.stft(x, 16, hop_length=4, window=torch.hann_window(16), return_complex=True)
        ),
        (r(2, 64),),
    ),
    "fft_rfft": (lambda x: torch.view_as_real(torch.fft.rfft(x, dim=-1)), (r(3, 16),)),
    "fft_irfft": (lambda x: torch.fft.irfft(torch.view_as_complex(x), n=14), (r(3, 8, 2),)),
    "einsum_bilinear": (
        lambda a, b, c: torch.einsum("bi,ij,bj->b", a, b, c),
        (r(4, 3), r(3, 5), r(4, 5)),
    ),
    "tril": (lambda x: torch.tril(x, -1), (r(2, 5, 5),)),
    "triu_dyn": (lambda x: torch.triu(x, 1) + x.t().triu(), (r(5, 5),)),
    "diag": (lambda x: torch.diagonal(x, offset=1, dim1=-2, dim2=-1), (r(2, 4, 5),)),
    "clamp_tensor": (
        lambda x, lo, hi: torch.clamp(x, lo, hi),
        (r(4, 5), -torch.rand(5), torch.rand(5)),
    ),
    "atan2": (lambda a, b: torch.atan2(a, b), (r(10), r(10))),
    "remainder": (lambda a, b: torch.remainder(a, b), (r(10) * 5, r(10).abs() + 0.5)),
    "fmod_int": (
        lambda a, b: torch.fmod(a, b),
        (torch.randint(-20, 20, (10,)), torch.randint(1, 7, (10,))),
    ),
    "floor_divide": (
        lambda a, b: torch.floor_divide(a, b),
        (torch.randint(-20, 20, (10,)), torch.randint(1, 7, (10,))),
    ),
    "bitwise": (
        lambda a, b: (a & b) ^ (a | 3) << 1,
        (torch.randint(0, 100, (10,)), torch.randint(0, 100, (10,))),
    ),
    "logical": (lambda a, b: torch.logical_xor(a > 0, b > 0).float(), (r(10), r(10))),
    "isnan_inf": (
        lambda x: torch.nan_to_num(torch.log(x), nan=0.0, posinf=1.0, neginf=-1.0),
        (r(10),),
    ),
    "group_norm": (lambda x: F.group_norm(x, 2), (r(2, 6, 4, 4),)),
    "instance_norm": (lambda x: F.instance_norm(x), (r(2, 3, 5, 5),)),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3), (r(1, 6, 4, 4),)),
    "layer_norm_noaffine": (lambda x: F.layer_norm(x, (4, 5)), (r(3, 4, 5),)),
    "rms_norm": (lambda x: F.rms_norm(x, (5,), torch.ones(5) * 2), (r(3, 4, 5),)),
    "glu": (lambda x: F.glu(x, -1), (r(3, 8),)),
    "mish": (lambda x: F.mish(x), (r(10),)),
    "hardswish": (lambda x: F.hardswish(x), (r(10) * 4,)),
    "softplus_beta": (lambda x: F.softplus(x, beta=2, threshold=5), (r(10) * 5,)),
    "celu": (lambda x: F.celu(x, 0.7), (r(10),)),
    "logsigmoid": (lambda x: F.logsigmoid(x), (r(10) * 10,)),
    "cosine_sim": (lambda a, b: F.cosine_similarity(a, b, dim=1), (r(4, 6), r(4, 6))),
    "pairwise_dist": (lambda a, b: F.pairwise_distance(a, b), (r(4, 6), r(4, 6))),
    "normalize": (lambda x: F.normalize(x, dim=1), (r(4, 6),)),
    "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (r(1, 2, 7, 5),)),
    "adaptive_max": (lambda x: F.adaptive_max_pool2d(x, (3, 2)), (r(1, 2, 6, 4),)),
    "max_pool_ceil_dil": (
        lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True),
        (r(1, 2, 9, 9),),
    ),
    "avg_pool_ceil_nopad": (
        lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        (r(1, 2, 8, 8),),
    ),
    "lp_pool": (lambda x: F.lp_pool2d(x, 2, 2), (r(1, 2, 6, 6),)),
    "max_unpool": (
        lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2),
        (r(1, 2, 6, 6),),
    ),
    "conv_transpose_outpad": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
        (r(1, 4, 5, 5), r(4, 3, 3, 3)),
    ),
    "conv1d_dil_grp": (
        lambda x, w: F.conv1d(x, w, padding="same", dilation=3, groups=2),
        (r(1, 4, 20), r(6, 2, 5)),
    ),
    "conv3d": (
        lambda x, w: F.conv3d(x, w, stride=(1, 2, 2), padding=1),
        (r(1, 2, 5, 6, 7), r(3, 2, 3, 3, 3)),
    ),
    "bmm_baddbmm": (
        lambda a, b, c: torch.baddbmm(c, a, b, beta=0.5, alpha=2),
        (r(2, 3, 4), r(2, 4, 5), r(2, 3, 5)),
    ),
    "addcmul": (lambda a, b, c: torch.addcmul(a, b, c, value=0.3), (r(4), r(4), r(4))),
    "lerp": (lambda a, b, w: torch.lerp(a, b, w), (r(5), r(5), torch.rand(5))),
    "prod_dim": (lambda x: torch.prod(x, 1), (r(3, 4),)),
    "std_mean": (lambda x: torch.std_mean(x, dim=1, correction=0), (r(3, 8),)),
    "var_unbiased": (lambda x: torch.var(x, dim=(0, 2)), (r(3, 4, 5),)),
    "amax_multi": (lambda x: torch.amax(x, dim=(0, 2), keepdim=True), (r(3, 4, 5),)),
    "logsumexp": (lambda x: torch.logsumexp(x, dim=(1,)), (r(3, 4, 5) * 30,)),
    "any_all": (
        lambda x: torch.stack([torch.any(x > 1, 1), torch.all(x > -1, 1)]).int(),
        (r(4, 6),),
    ),
    "argmax_keep": (lambda x: torch.argmax(x, 1, keepdim=True), (r(4, 6),)),
    "one_hot": (lambda i: F.one_hot(i, 5), (torch.tensor([0, 3, 1, 4]),)),
    "repeat_interleave": (lambda x: torch.repeat_interleave(x, 3, dim=1), (r(2, 3),)),
    "repeat_interleave_t": (
        lambda x, n: torch.repeat_interleave(x, n, dim=0),
        (r(3, 2), torch.tensor([1, 0, 2])),
    ),
    "narrow_chunk": (lambda x: torch.cat(torch.chunk(x, 3, 1)[::-1], 1), (r(2, 7),)),
    "unbind_stack": (lambda x: torch.stack(torch.unbind(x, 1)[::-1], 0), (r(2, 3, 4),)),
    "flip_neg_step": (lambda x: x.flip(0)[::2], (r(7, 3),)),
    "nonzero": (lambda x: torch.nonzero(x > 0), (r(4, 5),)),
    "unique": (lambda x: torch.unique(x, sorted=True), (torch.randint(0, 5, (12,)).float(),)),
    "complex_mul": (
        lambda a, b: torch.view_as_real(torch.view_as_complex(a) * torch.view_as_complex(b)),
        (r(4, 2), r(4, 2)),
    ),
    "polar_abs": (lambda a: torch.view_as_complex(a).abs(), (r(4, 2),)),
    "meshgrid": (lambda a, b: torch.stack(torch.meshgrid(a, b, indexing="xy")), (r(3), r(4))),
    "arange_dyn": (lambda x: x * torch.arange(x.shape[-1], dtype=x.dtype), (r(3, 5),)),
    "linspace": (lambda x: x + torch.linspace(-1, 1, x.shape[-1]), (r(3, 5),)),
    "full_like_zeros": (lambda x: torch.zeros_like(x) + torch.full_like(x, 2.5), (r(3, 5),)),
    "eye_mul": (lambda x: x @ torch.eye(5), (r(3, 5),)),
    "int_div_trunc": (
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        (torch.randint(-20, 20, (10,)), torch.randint(1, 7, (10,))),
    ),
    "float_round": (lambda x: torch.round(x * 10, decimals=1), (r(10),)),
    "sign_sgn": (lambda x: torch.sign(x) * torch.sgn(x) + torch.signbit(x).float(), (r(10),)),
    "half_cast": (lambda x: (x.half() * 2).float(), (r(10),)),
    "bool_sum": (lambda x: (x > 0).sum(1), (r(4, 6),)),
    "int_mean": (lambda x: x.float().mean(), (torch.randint(0, 9, (5,)),)),
    "lstm": (
        torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True).eval(),
        (r(2, 5, 4),),
    ),
    "gru": (torch.nn.GRU(4, 6, batch_first=True).eval(), (r(2, 5, 4),)),
    "rnn_tanh": (torch.nn.RNN(4, 6).eval(), (r(5, 2, 4),)),
    "mha": (
        torch.nn.MultiheadAttention(8, 2, batch_first=True).eval(),
        (r(2, 5, 8), r(2, 6, 8), r(2, 6, 8)),
    ),
    "transformer_decoder": (
        torch.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True, dropout=0.0).eval(),
        (r(2, 5, 8), r(2, 6, 8)),
    ),
    "prelu": (torch.nn.PReLU(3).eval(), (r(2, 3, 4),)),
    "bn1d": (torch.nn.BatchNorm1d(3).eval(), (r(4, 3),)),
    "embedding_pad": (
        torch.nn.Embedding(10, 4, padding_idx=0).eval(),
        (torch.tensor([[0, 3, 9]]),),
    ),
    "upsample_nearest_exact": (
        lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
        (r(1, 2, 4, 5),),
    ),
    "affine_grid": (lambda t: F.affine_grid(t, (1, 2, 4, 5), align_corners=False), (r(1, 2, 3),)),
    "ctc_free_logsoftmax": (lambda x: F.log_softmax(x, 2).transpose(0, 1), (r(2, 5, 6),)),
    # Not label_smoothing: PyTorch 2.15 exports SoftmaxCrossEntropyLoss without it.
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t, reduction="sum"),
        (r(4, 5), torch.tensor([1, 0, 4, 2])),
    ),
    "nll_ignore": (
        lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, ignore_index=2),
        (r(4, 5), torch.tensor([1, 2, 4, 2])),
    ),
    "bce_logits": (
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=torch.tensor([2.0, 1, 1])),
        (r(4, 3), torch.rand(4, 3)),
    ),
    "smooth_l1": (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), (r(4, 3), r(4, 3))),
    "huber": (lambda a, b: F.huber_loss(a, b, reduction="none", delta=0.3), (r(4, 3), r(4, 3))),
    "kl_div": (
        lambda a, b: F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="batchmean"),
        (r(4, 3), r(4, 3)),
    ),
    "triplet": (lambda a, p, n: F.triplet_margin_loss(a, p, n), (r(4, 3), r(4, 3), r(4, 3))),
}

B, S = Dim("b", min=1, max=64), Dim("s", min=2, max=512)


def heads(x):  # [b, s, 16] -> [b, 4, s, 4]
    b, s, _ = x.shape
    return x.view(b, s, 4, 4).transpose(1, 2)


# name: (function or module, the shapes of each run (a tuple of them for several inputs; "ids"
# for token ids, "lens2"/"lens3" for lengths), the dynamic dims of each input).
DYNAMIC = {
    "heads_merge": (
        lambda x: heads(x).transpose(1, 2).reshape(x.shape[0], x.shape[1], -1) * 2,
        [(2, 5, 16), (3, 9, 16), (1, 2, 16)],
        {0: B, 1: S},
    ),
    "half_split": (
        lambda x: x[:, : x.shape[1] // 2] - x[:, x.shape[1] // 2 :],
        [(2, 6, 3), (1, 10, 3), (4, 2, 3)],
        {0: B, 1: 2 * Dim("h", min=1, max=256)},
    ),
    "causal_mask": (
        lambda x: torch.softmax(
            (x @ x.transpose(1, 2)).masked_fill(
                torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1), float("-inf")
            ),
            -1,
        ),
        [(2, 5, 8), (1, 9, 8), (3, 2, 8)],
        {0: B, 1: S},
    ),
    "interp_half": (
        lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear"),
        [(1, 3, 16, 12), (2, 3, 10, 22)],
        {0: B, 2: 2 * Dim("hh", min=2, max=128), 3: 2 * Dim("ww", min=2, max=128)},
    ),
    "pool_ceil": (
        # (count_include_pad=True with ceil_mode's extra windows is generated code, which takes
        # no symbolic window: it compiles per shape.)
        lambda x: (
            F.max_pool2d(x, 3, 2, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        ),
        [(1, 3, 17, 20), (2, 3, 8, 9)],
        {0: B, 2: Dim("ph", min=4, max=128), 3: Dim("pw", min=4, max=128)},
    ),
    "pad_reflect": (
        lambda x: F.pad(x, (3, 2), mode="reflect") * 2 + F.pad(x, (1, 4), mode="replicate"),
        [(2, 4, 16), (1, 4, 9)],
        {0: B, 2: Dim("pt", min=6, max=512)},
    ),
    "flip": (lambda x: torch.flip(x, [1]) * 2 + x, [(2, 5, 3), (1, 9, 3)], {0: B, 1: S}),
    "pos_ids": (
        lambda x: x + torch.arange(x.shape[1]).unsqueeze(0).unsqueeze(-1).float() * 0.1,
        [(2, 5, 3), (1, 7, 3)],
        {0: B, 1: S},
    ),
    "pad_to_8": (
        lambda x: F.pad(x, (0, (8 - x.shape[-1] % 8) % 8)),
        [(2, 5), (1, 8), (3, 13)],
        {0: B, 1: Dim("n", min=1, max=100)},
    ),
    "interp_like": (
        lambda x, y: F.interpolate(x, size=y.shape[-2:], mode="bilinear", align_corners=False) + y,
        [((1, 2, 4, 4), (1, 2, 7, 9)), ((1, 2, 6, 3), (1, 2, 12, 6))],
        (
            {2: Dim("h1", min=2, max=64), 3: Dim("w1", min=2, max=64)},
            {2: Dim("h2", min=2, max=64), 3: Dim("w2", min=2, max=64)},
        ),
    ),
    "len_mask_mean": (
        lambda x, n: (
            x * (torch.arange(x.shape[1]).unsqueeze(0) < n.unsqueeze(1)).unsqueeze(-1)
        ).sum(1)
        / n.unsqueeze(1).float(),
        [((2, 6, 3), "lens2"), ((3, 4, 3), "lens3")],
        ({0: B, 1: S}, {0: B}),
    ),
    "topk_half": (
        lambda x: torch.topk(x, x.shape[-1] // 2, -1).values,
        [(2, 6), (3, 10)],
        {0: B, 1: 2 * Dim("k", min=1, max=256)},
    ),
    "repeat_batch": (
        lambda x, y: x.repeat(y.shape[0], 1) + y,
        [((1, 4), (3, 4)), ((1, 4), (5, 4))],
        ({}, {0: B}),
    ),
    "expand_as": (
        lambda x, y: x.expand_as(y) * y,
        [((1, 4), (3, 4)), ((1, 4), (6, 4))],
        ({}, {0: B}),
    ),
    "new_zeros_cat": (
        lambda x: torch.cat([x, x.new_zeros(x.shape[0], 2, x.shape[2])], 1),
        [(2, 5, 3), (1, 3, 3)],
        {0: B, 1: S},
    ),
    "unfold_windows": (
        lambda x: x.unfold(1, 4, 2).sum(-1),
        [(2, 10, 3), (1, 6, 3)],
        {0: B, 1: 2 * Dim("w", min=2, max=256)},
    ),
    "flatten_linear": (
        torch.nn.Sequential(torch.nn.Flatten(1), torch.nn.Linear(12, 5)).eval(),
        [(2, 3, 4), (7, 3, 4)],
        {0: B},
    ),
    "conv_dyn_hw": (
        torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1)
        ).eval(),
        [(1, 3, 8, 8), (2, 3, 13, 7)],
        {0: B, 2: Dim("h", min=4, max=128), 3: Dim("w", min=4, max=128)},
    ),
    "attn_module": (
        torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, dropout=0.0).eval(),
        [(2, 5, 16), (1, 11, 16)],
        {0: B, 1: S},
    ),
    "gru_dyn": (torch.nn.GRU(4, 6, batch_first=True).eval(), [(2, 5, 4), (3, 8, 4)], {0: B, 1: S}),
    "cumsum_norm": (
        lambda x: torch.cumsum(x, 1) / torch.arange(1, x.shape[1] + 1).float(),
        [(2, 5), (1, 9)],
        {0: B, 1: S},
    ),
    "index_last": (lambda x: x[:, -1] + x[:, 0], [(2, 5, 3), (1, 2, 3)], {0: B, 1: S}),
    "gather_lens": (
        lambda x, n: x[torch.arange(x.shape[0]), n - 1],
        [((2, 6, 3), "lens2"), ((3, 4, 3), "lens3")],
        ({0: B, 1: S}, {0: B}),
    ),
    "var_dyn": (
        lambda x: x.var(1, keepdim=True) + x.std(-1, keepdim=True).mean(),
        [(2, 5, 3), (4, 9, 3)],
        {0: B, 1: S},
    ),
    "sdpa_dyn": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=False),
        [((1, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8)), ((2, 2, 3, 8), (2, 2, 9, 8), (2, 2, 9, 8))],
        ({0: B, 2: S}, {0: B, 2: Dim("t", min=2, max=512)}, {0: B, 2: Dim("t", min=2, max=512)}),
    ),
    "layernorm_dyn": (
        torch.nn.LayerNorm(8).eval(),
        [(2, 5, 8), (3, 1, 8)],
        {0: B, 1: Dim("s1", min=1, max=512)},
    ),
    "embedding_dyn": (
        torch.nn.Embedding(20, 4).eval(),
        [("ids", (2, 5)), ("ids", (3, 2))],
        {0: B, 1: S},
    ),
    "pixel_shuffle": (
        lambda x: F.pixel_shuffle(x, 2) * 2,
        [(1, 12, 5, 7), (2, 12, 3, 4)],
        {0: B, 2: Dim("ph", min=1, max=128), 3: Dim("pw", min=1, max=128)},
    ),
    "pixel_unshuffle": (
        lambda x: F.pixel_unshuffle(x, 2) + 1,
        [(1, 3, 6, 8), (2, 3, 10, 4)],
        {0: B, 2: 2 * Dim("uh", min=1, max=128), 3: 2 * Dim("uw", min=1, max=128)},
    ),
    "upsample_nearest_cat": (
        lambda x: torch.cat([x, F.interpolate(F.max_pool2d(x, 2), scale_factor=2)], 1),
        [(1, 2, 8, 6), (2, 2, 12, 10)],
        {0: B, 2: 2 * Dim("nh", min=2, max=128), 3: 2 * Dim("nw", min=2, max=128)},
    ),
    "upsample_bilinear": (
        lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
        [(1, 2, 5, 7), (2, 2, 3, 4)],
        {0: B, 2: Dim("bh", min=1, max=128), 3: Dim("bw", min=1, max=128)},
    ),
    "from_the_end": (
        lambda x: x[:, -3:].sum(1) + x[:, :-3].mean(1),
        [(2, 5, 4), (1, 9, 4), (3, 4, 4)],
        {0: B, 1: Dim("e", min=4, max=512)},
    ),
}


# Cases whose dynamic compile fails, so that each new shape compiles again
# (docs/dynamic-shapes.md, "What falls back"): their results are checked, their compiles not.
PER_SHAPE = {
    "pad_to_8": "Pad with pads computed from a dim",
}


def make(spec):
    if spec == "lens2":
        return torch.tensor([3, 6])
    if spec == "lens3":
        return torch.tensor([1, 4, 2])
    if isinstance(spec, tuple) and spec and spec[0] == "ids":
        return torch.randint(0, 20, spec[1])
    return torch.randn(*spec)


class Function(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *a):
        return self.f(*a)


def flat(values):
    out = []
    for v in values if isinstance(values, (tuple, list)) else (values,):
        out += flat(v) if isinstance(v, (tuple, list)) else [v]
    return out


def differences(outputs, expected):
    bad = []
    for i, (o, t) in enumerate(zip(outputs, expected)):
        t, o = t.detach().numpy(), np.asarray(o)
        if o.shape != t.shape:
            bad.append(f"output {i} has shape {o.shape}, PyTorch's {t.shape}")
        elif t.dtype == np.bool_ or np.issubdtype(t.dtype, np.integer):
            if not np.array_equal(o.astype(t.dtype), t):
                bad.append(f"output {i}: integers differ")
        elif not np.allclose(o, t, rtol=1e-3, atol=1e-4, equal_nan=True):
            bad.append(f"output {i}: largest difference {np.nanmax(np.abs(o - t)):.3g}")
    if len(outputs) != len(expected):
        bad.append(f"{len(outputs)} outputs, PyTorch's {len(expected)}")
    return bad


def export(module, args, path, dynamic_shapes=None):
    """True if PyTorch exported it; its own failures are not Weft's."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            torch.onnx.export(
                module, args, path, dynamic_shapes=dynamic_shapes, external_data=False
            )
        return True
    except Exception as e:  # noqa: BLE001 (any exporter failure)
        print(f"not exported by PyTorch: {os.path.basename(path)}: {str(e).splitlines()[0][:120]}")
        return False


def main():
    failures, not_exported, ran = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (f, args) in OPS.items():
            module = f if isinstance(f, torch.nn.Module) else Function(f)
            path = os.path.join(tmp, name + ".onnx")
            if not export(module, args, path):
                not_exported += 1
                continue
            with torch.no_grad():
                expected = flat(module(*args))
            try:
                s = weft.InferenceSession(path)
                feed = {i.name: a.numpy() for i, a in zip(s.get_inputs(), args)}
                bad = differences(s.run(None, feed), expected)
            except weft.WeftError as e:
                bad = [str(e).strip()]
            ran += 1
            if bad:
                failures.append(f"{name}: " + "; ".join(bad))
                print(f"FAIL {failures[-1]}")
        for name, (f, shapes, dims) in DYNAMIC.items():
            is_module = isinstance(f, torch.nn.Module)
            module = f if is_module else Function(f)
            runs = [
                tuple(
                    make(x)
                    for x in (s if isinstance(s[0], (tuple, str)) and s[0] != "ids" else (s,))
                )
                for s in shapes
            ]
            dims = dims if isinstance(dims, tuple) else (dims,)
            path = os.path.join(tmp, "dynamic_" + name + ".onnx")
            if not export(module, runs[0], path, dims if is_module else (dims,)):
                not_exported += 1
                continue
            ran += 1
            try:
                s = weft.InferenceSession(path)
                names = [i.name for i in s.get_inputs()]
                for args in runs:
                    with torch.no_grad():
                        expected = flat(module(*args))
                    bad = differences(
                        s.run(None, {n: a.numpy() for n, a in zip(names, args)}), expected
                    )
                    if bad:
                        failures.append(
                            f"{name} at {[tuple(a.shape) for a in args]}: " + "; ".join(bad)
                        )
                        print(f"FAIL {failures[-1]}")
                variants = s.weft_model.compiled_variants
                if name in PER_SHAPE and variants == 1:
                    print(f"note: {name} compiles once now; take it out of PER_SHAPE")
                elif name not in PER_SHAPE and variants != 1:
                    failures.append(f"{name}: {variants} compiles for {len(runs)} shapes, not 1")
                    print(f"FAIL {failures[-1]}")
            except weft.WeftError as e:
                failures.append(f"{name}: {str(e).strip()}")
                print(f"FAIL {failures[-1]}")
    total = len(OPS) + len(DYNAMIC)
    print(
        f"{ran} of {total} cases exported and run, {not_exported} not exported by PyTorch "
        f"{torch.__version__}, {len(failures)} failed"
    )
    if not_exported > total // 10:
        failures.append(f"PyTorch exported only {total - not_exported} of {total} cases")
    if failures:
        print(f"{len(failures)} failed:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
