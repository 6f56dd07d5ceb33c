"""Models as a current PyTorch exports them by default, run with `weft run` and compared with
PyTorch (rtol 1e-3, atol 1e-4): torchvision ResNet-18, MobileNetV2, EfficientNet-B0 and
ConvNeXt-Tiny, a torch.nn.TransformerEncoderLayer and a GPT-2-style block (causal
scaled_dot_product_attention, tanh GELU). `torch.onnx.export(model, args, path)` with nothing
else set uses the dynamo exporter since PyTorch 2.9: opset 18 or newer, IR 10, weights in an
external-data file. The encoder is also exported with a dynamic batch and sequence length and
run at two shapes. ResNet-18 exported with a dynamic batch, and the encoder layer and the
GPT-2 block with a dynamic batch and length, each compile once in the Python module
(dynamic_shapes=True) and run at several shapes, as do small Hugging Face transformers models
(BERT, GPT-2, Llama: their attention-mask subgraphs) exported with a dynamic batch and length,
and a decoding step of GPT-2 and Llama with a KV cache of dynamic length.
Random weights; BatchNorm statistics randomized so every layer does work.

Usage: .venv/bin/python torch_export_test.py WEFT   (exits 77, a skip, without PyTorch 2.9+)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: PyTorch is not installed in this environment ({e}); scripts/setup.sh installs it")
    sys.exit(77)
if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 9):
    print(f"SKIP: PyTorch {torch.__version__} predates the dynamo exporter as the default (2.9)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "testing"))
from torch_models import randomize_batch_norms  # noqa: E402

WEFT = sys.argv[1] if len(sys.argv) > 1 else "build/tools/weft/weft"
failures = []


class DecoderStep(torch.nn.Module):
    """One decoding step of a transformers causal LM with a KV cache: new token ids, the mask
    over past and new, each layer's past keys and values in; the logits and each layer's
    present keys and values out (decode_bench.py and kv_sweep.py export it too)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask, *past):
        import transformers as tf

        cache = tf.DynamicCache()
        for i in range(len(past) // 2):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
        return (out.logits,) + tuple(t for layer in out.past_key_values.layers for t in (layer.keys, layer.values))


class GPT2Block(torch.nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ResidualBlock(torch.nn.Module):
    """A ResNet basic block of 3x3 convolutions with 32 channels and biases: over dynamic dims,
    built per shape, large planes run Weft's Winograd kernel, narrow ones (under 7 points a
    side) oneDNN's direct call, whose values must lie in the same order."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))) + x)


class RelativePositionAttention(torch.nn.Module):
    """Attention scores with terms added to a slice of them in place, as MViT-v2 adds its
    relative positions to all but the class token's row and column; the exporter writes
    the slice assignment as ScatterND between Transposes."""

    def forward(self, x):
        b, n, c = x.shape
        attn = x @ x.transpose(1, 2) / c
        rel = (x[:, 1:, :8] @ x[:, 1:, 8:16].transpose(1, 2)).sigmoid()
        attn[:, 1:, 1:] = attn[:, 1:, 1:] + rel
        return attn.softmax(dim=-1) @ x


class RelativePositionBias(torch.nn.Module):
    """Attention with BEiT's relative position bias: the index table built in forward from the
    window (a meshgrid and in-place writes, which the exporter writes as ScatterElements), a
    lookup of a learned table by it added to the scores. The table's ops are all of constants:
    they fold, and no kernel computes them at run time."""

    def __init__(self, window=10, heads=2):
        super().__init__()
        self.window, self.heads = window, heads
        self.table = torch.nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))

    def forward(self, x):
        w = self.window
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += w - 1
        rel[:, :, 1] += w - 1
        rel[:, :, 0] *= 2 * w - 1
        bias = self.table[rel.sum(-1).view(-1)].view(w * w, w * w, -1).permute(2, 0, 1)
        b, n, c = x.shape
        q = x.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        attn = (q @ q.transpose(-1, -2) / c + bias).softmax(-1)
        return (attn @ q).transpose(1, 2).reshape(b, n, c)


def run_weft(path, x, tmp):
    model = onnx.load(path, load_external_data=False)
    name = model.graph.input[0].name
    np.save(os.path.join(tmp, "x.npy"), x)
    out = os.path.join(tmp, "out")
    r = subprocess.run([WEFT, "run", path, "--input", f"{name}={os.path.join(tmp, 'x.npy')}",
                        "--output-dir", out], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return model, np.load(os.path.join(out, model.graph.output[0].name + ".npy"))


def check(name, model, example, runs=None, folded=(), **export_args):
    """Weft's output against PyTorch's; "folded": op types of the export that no kernel may
    compute (their inputs are constants)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(model, (example,), path, **export_args)
        exported = {n.op_type for n in onnx.load(path, load_external_data=False).graph.node}
        for op in folded:
            assert op in exported, f"{name}: the export has no {op} (it has {sorted(exported)})"
            r = subprocess.run([WEFT, "inspect", path, "--json"], capture_output=True, text=True,
                               timeout=600, check=True)
            kernels = [k["op_type"] for k in json.loads(r.stdout)["kernels"] if op in k["op_type"]]
            if kernels:
                failures.append(f"{name}: {op} computed at run time by {kernels}")
                print(f"FAIL {failures[-1]}")
        for x in runs or [example]:
            try:
                onnx_model, got = run_weft(path, x.numpy(), tmp)
            except RuntimeError as e:
                failures.append(f"{name}: {e}")
                print(f"FAIL {name}: {e}")
                return
            with torch.no_grad():
                want = model(x).numpy()
            opset = next(o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx"))
            assert onnx_model.ir_version >= 10 and opset >= 18, \
                f"{name}: exported at IR {onnx_model.ir_version}, opset {opset}; expected a current export"
            assert np.abs(want).max() > 1e-2, f"{name}: outputs too small to compare meaningfully"
            err = np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else "shape"
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                failures.append(f"{name} {tuple(x.shape)}: differs from PyTorch (max error {err})")
                print(f"FAIL {failures[-1]}")
                return
            print(f"ok {name} {tuple(x.shape)} (IR {onnx_model.ir_version}, opset {opset}): "
                  f"max |torch| = {np.abs(want).max():.3g}, max |weft - torch| = {err:.2e}")


def nvrtc_compiles_dynamic(name, path, input_name, x):
    """The model's CUDA kernels over symbolic extents compile with NVRTC for sm_80 and sm_90
    (`weft test-onnx --device cuda --compile-only --dynamic-shapes`); none fall back."""
    case = os.path.join(os.path.dirname(path), name + "_case")
    os.makedirs(os.path.join(case, "test_data_set_0"))
    os.symlink(path, os.path.join(case, "model.onnx"))
    with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(onnx.numpy_helper.from_array(x, input_name).SerializeToString())
    r = subprocess.run([WEFT, "test-onnx", "--device", "cuda", "--compile-only", "--dynamic-shapes",
                        case], capture_output=True, text=True, timeout=900)
    if "NVRTC is not available" in r.stdout:
        print(f"skipped the NVRTC compile of {name}: NVRTC is not installed")
        return True
    if r.returncode != 0:
        failures.append(f"{name}: CUDA kernels over symbolic extents: {r.stdout[-2000:]}{r.stderr}")
        print(f"FAIL {failures[-1]}")
        return False
    print(f"ok {name}: its CUDA kernels over symbolic extents compile with NVRTC")
    return True


def check_one_compile(name, model, example, runs, dynamic_shapes, nvrtc=False):
    """"model" exported with dynamic dims, compiled once by the Python module with
    dynamic_shapes=True, and run at every input in "runs" against PyTorch; with "nvrtc", its
    CUDA kernels are also compiled over symbolic extents."""
    try:
        import weft
    except ImportError as e:
        print(f"skipped {name}: the weft module is not importable ({e})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(model, (example,), path, external_data=False, dynamic_shapes=dynamic_shapes)
        input_name = onnx.load(path, load_external_data=False).graph.input[0].name
        with open(path, "rb") as f:
            compiled = weft.compile(f.read(), dynamic_shapes=True)
        if nvrtc and not nvrtc_compiles_dynamic(name, path, input_name, example.numpy()):
            return
    check_runs(name, compiled, [input_name], [(str(tuple(x.shape)), (x,)) for x in runs],
               lambda args: [model(*args).numpy()])


def check_runs(label, compiled, names, runs, reference):
    """Runs "compiled" (inputs "names") at each (shape text, PyTorch args) of "runs" against
    reference(args), PyTorch's outputs as arrays, and checks that it compiled once."""
    for shape, args in runs:
        got = list(compiled.run({k: a.numpy() for k, a in zip(names, args)}).values())
        want = reference(args)
        if len(got) != len(want) or any(g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-4)
                                        for g, w in zip(got, want)):
            failures.append(f"{label} {shape}: differs from PyTorch")
            print(f"FAIL {failures[-1]}")
            return
    if compiled.compiled_variants != 1:
        failures.append(f"{label}: {compiled.compiled_variants} compiles, not 1")
        print(f"FAIL {failures[-1]}")
        return
    shapes = ", ".join(shape for shape, _ in runs[:4]) + (f" and {len(runs) - 4} more" if len(runs) > 4 else "")
    print(f"ok {label}: {shapes} on one compile (dynamic_shapes)")


def check_transformers_one_compile():
    """Hugging Face transformers models as current exports write them, with a dynamic batch
    and length: the attention masks' subgraphs (Range over the length, Slices to it, CumSum
    and GatherND over it) compile once, and every length runs on that compile."""
    try:
        import transformers as tf
        import weft
    except ImportError as e:
        print(f"skipped transformers: {e}")
        return
    ids = lambda n, t: torch.randint(5, 1000, (n, t))  # noqa: E731
    models = {
        "bert": (tf.BertModel(tf.BertConfig(num_hidden_layers=2, hidden_size=128, intermediate_size=256,
                                            num_attention_heads=4)),
                 lambda n, t: (ids(n, t), torch.ones(n, t, dtype=torch.long))),
        "gpt2": (tf.GPT2Model(tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, use_cache=False)),
                 lambda n, t: (ids(n, t),)),
        "llama": (tf.LlamaModel(tf.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                               num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                                               use_cache=False)),
                  lambda n, t: (ids(n, t),)),
    }
    batch, length = torch.export.Dim("batch", max=64), torch.export.Dim("length", min=2, max=512)
    for name, (model, make) in models.items():
        model.eval()
        example = make(2, 16)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, example, path, external_data=False,
                              dynamic_shapes=tuple({0: batch, 1: length} for _ in example))
            names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
            with open(path, "rb") as f:
                compiled = weft.compile(f.read(), dynamic_shapes=True)
        runs = [(f"{n}x{t}", make(n, t)) for n, t in ((2, 16), (1, 7), (3, 100))]
        check_runs(f"transformers {name}", compiled, names, runs,
                   lambda args: [t.numpy() for t in model(*args).to_tuple()])


def check_transformers_kv_cache():
    """One decoding step of GPT-2, Llama and BLOOM with a KV cache (new tokens, the mask over past and
    new, each layer's past keys and values in; logits and the grown cache out), exported with
    dynamic batch, new length and past length: every step runs on one compile."""
    try:
        import transformers as tf
        import weft
    except ImportError as e:
        print(f"skipped transformers KV cache: {e}")
        return
    small = dict(vocab_size=1000, attn_implementation="eager")  # SDPA's is_causal is data-dependent
    models = {
        "gpt2": tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, **small)),
        "llama": tf.LlamaForCausalLM(tf.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                                    num_attention_heads=4, num_key_value_heads=2, **small)),
        # ALiBi: a bias built from the mask [N, total] is added to scores over P + T (unify_dims)
        "bloom": tf.BloomForCausalLM(tf.BloomConfig(hidden_size=128, n_layer=2, n_head=4, **small)),
    }

    batch, new, past = (torch.export.Dim("batch", max=64), torch.export.Dim("new", max=512),
                        torch.export.Dim("past", min=1, max=2048))
    total = torch.export.Dim("total", max=4096)
    for name, model in models.items():
        step = DecoderStep(model.eval()).eval()
        c = model.config
        heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
        layers = c.num_hidden_layers

        def make(n, t, p):
            return ((torch.randint(5, 995, (n, t)), torch.ones(n, p + t, dtype=torch.long)) +
                    tuple(torch.randn(n, heads, p, c.hidden_size // c.num_attention_heads) for _ in range(2 * layers)))

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, name + "_step.onnx")
            torch.onnx.export(step, make(2, 3, 5), path, external_data=False,
                              dynamic_shapes=({0: batch, 1: new}, {0: batch, 1: total},
                                              tuple({0: batch, 2: past} for _ in range(2 * layers))))
            names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
            with open(path, "rb") as f:
                compiled = weft.compile(f.read(), dynamic_shapes=True)
        runs = [(f"{n}x{t} after {p}", make(n, t, p)) for n, t, p in ((1, 1, 5), (1, 1, 6), (2, 1, 30), (1, 4, 9))]
        check_runs(f"transformers {name} KV cache", compiled, names, runs,
                   lambda args: [w.numpy() for w in step(*args)])


def main():
    torch.manual_seed(0)
    image = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        for name, ctor in [("resnet18", torchvision.models.resnet18),
                           ("mobilenet_v2", torchvision.models.mobilenet_v2),
                           ("efficientnet_b0", torchvision.models.efficientnet_b0),
                           ("convnext_tiny", torchvision.models.convnext_tiny)]:
            check(name, randomize_batch_norms(ctor()), image)
        tokens = torch.randn(2, 16, 64)
        check("gpt2_block", GPT2Block().eval(), tokens)
        check("relative_position_attention", RelativePositionAttention(), tokens)
        check("relative_position_bias", RelativePositionBias(), torch.randn(2, 100, 64),
              folded=["ScatterElements"])
        encoder = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval()
        check("transformer_encoder_layer", encoder, tokens)
        batch, length = torch.export.Dim("batch", max=64), torch.export.Dim("length", max=512)
        check("transformer_encoder_layer_dynamic", encoder, tokens,
              runs=[tokens, torch.randn(3, 40, 64)],
              dynamic_shapes={"src": {0: batch, 1: length}})
        tokens_at = [torch.randn(n, t, 64) for n, t in ((2, 16), (1, 1), (3, 40), (5, 7))]
        check_one_compile("resnet18_dynamic_batch", randomize_batch_norms(torchvision.models.resnet18()),
                          torch.randn(2, 3, 224, 224), [torch.randn(n, 3, 224, 224) for n in (2, 1, 3)],
                          {"x": {0: batch}})
        # As a text recognizer takes lines of text: [N, 3, 48, W], W dynamic. The window ops'
        # output widths are quotients of W ((W+1)/2, ...), not the exporter's names for them.
        width = torch.export.Dim("width", min=32, max=2048)
        check_one_compile("resnet18_dynamic_width", randomize_batch_norms(torchvision.models.resnet18()),
                          torch.randn(2, 3, 48, 320),
                          [torch.randn(n, 3, 48, w) for n, w in ((2, 320), (1, 160), (3, 200), (1, 97))],
                          {"x": {0: batch, 3: width}})
        check_one_compile("residual_block_dynamic", ResidualBlock().eval(), torch.randn(2, 32, 64, 64),
                          [torch.randn(n, 32, 64, w) for n, w in ((2, 64), (1, 5), (3, 40))],
                          {"x": {0: batch, 3: torch.export.Dim("w", min=2, max=2048)}})
        check_one_compile("transformer_encoder_layer_one_compile", encoder, tokens, tokens_at,
                          {"src": {0: batch, 1: length}}, nvrtc=True)
        rng = np.random.default_rng(3)
        fifty = [torch.randn(int(n), int(t), 64) for n, t in zip(rng.integers(1, 7, 50), rng.integers(1, 65, 50))]
        check_one_compile("gpt2_block_one_compile", GPT2Block().eval(), tokens, fifty,
                          {"x": {0: batch, 1: length}}, nvrtc=True)
        check_transformers_one_compile()
        check_transformers_kv_cache()
    if failures:
        print(f"{len(failures)} failed:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
