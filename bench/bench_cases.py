"""What make_models.py (Debian's Python: torch 1.13, onnx) and torch_peer.py (bench/.venv: torch
2.x, no onnx) must draw identically: the constant parameters of the subgraph cases and the
GPT-style block. Imports only numpy at module level; torch is passed in, so each side uses its own.
"""
import numpy as np

EPS_RMS = 1e-6
EPS_NORM = 1e-5  # batch norm and group norm, as torch's defaults
ATTENTION_SCALE = 0.125
MASK_VALUE = -1e9
GROUPS = 8


def param(seed, shape):
    """A standard-normal f32 parameter from its own fixed seed (numpy's PCG64, the same on both
    sides, unlike torch's generator across versions)."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def causal_mask(n):
    """[1, 1, n, n] additive mask: 0 on and below the diagonal, MASK_VALUE above."""
    return np.triu(np.full((n, n), MASK_VALUE, np.float32), 1)[None, None]


# gpt_block: x [BATCH, SEQ, DIM] -> x + attn(ln1(x)) -> h + mlp(ln2(h)).
GPT_BATCH, GPT_SEQ, GPT_DIM, GPT_HEADS, GPT_HIDDEN = 4, 128, 256, 4, 1024
GPT_SEED = 1


def gpt_block(torch):
    """The GPT-style decoder block, with its weights drawn by torch.manual_seed(GPT_SEED) in
    construction order: plain nn.Linear and nn.LayerNorm, whose initialization is the same in
    torch 1.13 and 2.x, and attention written out (no nn.MultiheadAttention fast path)."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(GPT_DIM)
            self.qkv = nn.Linear(GPT_DIM, 3 * GPT_DIM)
            self.proj = nn.Linear(GPT_DIM, GPT_DIM)
            self.ln2 = nn.LayerNorm(GPT_DIM)
            self.fc1 = nn.Linear(GPT_DIM, GPT_HIDDEN)
            self.fc2 = nn.Linear(GPT_HIDDEN, GPT_DIM)
            self.register_buffer("mask", torch.from_numpy(causal_mask(GPT_SEQ)))

        def forward(self, x):
            b, t, c = x.shape
            d = c // GPT_HEADS
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
            q = q.reshape(b, t, GPT_HEADS, d).transpose(1, 2)  # [b, heads, t, d]
            k = k.reshape(b, t, GPT_HEADS, d).transpose(1, 2)
            v = v.reshape(b, t, GPT_HEADS, d).transpose(1, 2)
            scores = q @ k.transpose(-2, -1) * (1.0 / d ** 0.5) + self.mask
            attn = torch.softmax(scores, dim=-1) @ v
            h = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
            return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(h))))

    torch.manual_seed(GPT_SEED)
    return Block().eval()
