"""More Hugging Face architectures on the CPU, beyond hf_bench.py's: does each one that PyTorch's
default exporter writes load in Weft and match PyTorch, and is any pathologically slow? Each
is built from its config (the text models, the state-space and recurrent ones (Mamba2, RWKV,
LFM2), BEiT, DeiT, YOLOS, SigLIP and DINOv2 with registers with 2 layers of width 64; the
other vision models at their configs' defaults; HuBERT, WavLM and AST with 2 layers; DETR with a
ResNet-50 backbone and one encoder and decoder layer of width 64; PatchTST over 7 series of 512
steps, 2 layers of width 64), random weights, batch 1,
exported by torch.onnx.export's defaults (the dynamo exporter) without a KV cache; BatchNorm
statistics randomized and weights initialized to zero redrawn, so every layer does work. Each model:
Weft's outputs against PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest
magnitude), then Weft's Python module and ONNX Runtime (CPU execution provider, 2 intra-op
threads) timed in alternating rounds in this process; an entry is the system's lowest median
over the rounds. The small text models run in tenths of a millisecond, where fixed costs
weigh: their times find a pathological kernel (BEiT's index tables, computed at every run
until they folded), not speed at scale (hf_bench.py's). Not in CI: exporting the 52 models
takes about 15 minutes on 2 cores.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/hf_zoo.py [--rounds 2]
       [--write | --update] [MODEL...]
--write stores bench/hf_zoo_results.json, which run_bench.py puts in docs/benchmarks.md;
--update replaces only the measured models' rows there (after a change that concerns them).
"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import onnxruntime as ort
from ort_options import described, session_options
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cnn_bench import timed  # noqa: E402
from hf_bench import stored_with, tensors  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms, redraw_zero_weights  # noqa: E402

SEQ = 32


def models():
    """name -> (model factory, inputs factory)."""
    import transformers as tf

    ids = lambda: torch.randint(5, 995, (1, SEQ))
    mask = torch.ones(1, SEQ, dtype=torch.long)
    text = lambda: (ids(), mask)
    decoder = lambda: (ids(),)
    seq2seq = lambda: (ids(), mask, ids())
    image = lambda size=224: (torch.randn(1, 3, size, size),)
    audio = lambda: (torch.randn(1, 16000),)
    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 vocab_size=1000)
    lm = dict(small, num_key_value_heads=2, use_cache=False)
    s2s = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=1000,
               pad_token_id=0, decoder_start_token_id=0, use_cache=False)
    gptj = dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, vocab_size=1000, use_cache=False)
    vision = {k: v for k, v in small.items() if k != "vocab_size"}
    return {
        "electra": (lambda: tf.ElectraModel(tf.ElectraConfig(embedding_size=64, **small)), text),
        "mobilebert": (lambda: tf.MobileBertModel(tf.MobileBertConfig(num_hidden_layers=2, vocab_size=1000)),
                       text),
        "convbert": (lambda: tf.ConvBertModel(tf.ConvBertConfig(embedding_size=64, **small)), text),
        "mpnet": (lambda: tf.MPNetModel(tf.MPNetConfig(**small)), text),
        "squeezebert": (lambda: tf.SqueezeBertModel(tf.SqueezeBertConfig(embedding_size=64, **small)), text),
        "funnel": (lambda: tf.FunnelBaseModel(tf.FunnelConfig(block_sizes=[1, 1], d_model=64, n_head=4,
                                                              d_head=16, d_inner=128, vocab_size=1000)), text),
        "xlnet": (lambda: tf.XLNetModel(tf.XLNetConfig(d_model=64, n_layer=2, n_head=4, d_inner=128,
                                                       vocab_size=1000)), decoder),
        "gpt_neox": (lambda: tf.GPTNeoXModel(tf.GPTNeoXConfig(use_cache=False, **small)), decoder),
        "gptj": (lambda: tf.GPTJModel(tf.GPTJConfig(**gptj)), decoder),
        "codegen": (lambda: tf.CodeGenModel(tf.CodeGenConfig(**gptj)), decoder),
        "bloom": (lambda: tf.BloomModel(tf.BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=1000,
                                                       use_cache=False)), decoder),
        "gemma": (lambda: tf.GemmaModel(tf.GemmaConfig(head_dim=16, **lm)), decoder),
        "gemma2": (lambda: tf.Gemma2Model(tf.Gemma2Config(head_dim=16, **lm)), decoder),
        "phi3": (lambda: tf.Phi3Model(tf.Phi3Config(pad_token_id=0, **lm)), decoder),
        "stablelm": (lambda: tf.StableLmModel(tf.StableLmConfig(**lm)), decoder),
        "olmo": (lambda: tf.OlmoModel(tf.OlmoConfig(**lm)), decoder),
        "starcoder2": (lambda: tf.Starcoder2Model(tf.Starcoder2Config(**lm)), decoder),
        "qwen3": (lambda: tf.Qwen3Model(tf.Qwen3Config(head_dim=16, **lm)), decoder),
        "gemma3": (lambda: tf.Gemma3TextModel(tf.Gemma3TextConfig(head_dim=16, sliding_window=8, **lm)),
                   decoder),
        "smollm3": (lambda: tf.SmolLM3Model(tf.SmolLM3Config(pad_token_id=0, **lm)), decoder),
        "olmo2": (lambda: tf.Olmo2Model(tf.Olmo2Config(**lm)), decoder),
        "glm4": (lambda: tf.Glm4Model(tf.Glm4Config(head_dim=16, pad_token_id=0, **lm)), decoder),
        "granite": (lambda: tf.GraniteModel(tf.GraniteConfig(**lm)), decoder),
        "cohere": (lambda: tf.CohereModel(tf.CohereConfig(**lm)), decoder),
        "helium": (lambda: tf.HeliumModel(tf.HeliumConfig(head_dim=16, **lm)), decoder),
        "nemotron": (lambda: tf.NemotronModel(tf.NemotronConfig(head_dim=16, **lm)), decoder),
        "lfm2": (lambda: tf.Lfm2Model(tf.Lfm2Config(**lm)), decoder),
        "mamba2": (lambda: tf.Mamba2Model(tf.Mamba2Config(hidden_size=64, num_hidden_layers=2, vocab_size=1000,
                                                          num_heads=4, head_dim=32, state_size=8, n_groups=1,
                                                          chunk_size=8, use_cache=False)), decoder),
        "rwkv": (lambda: tf.RwkvModel(tf.RwkvConfig(hidden_size=64, num_hidden_layers=2, vocab_size=1000,
                                                    attention_hidden_size=64, intermediate_size=128,
                                                    context_length=64, use_cache=False)), decoder),
        "modernbert": (lambda: tf.ModernBertModel(tf.ModernBertConfig(local_attention=8, pad_token_id=0,
                                                                      **small)), text),
        "marian": (lambda: tf.MarianModel(tf.MarianConfig(**s2s)), seq2seq),
        "pegasus": (lambda: tf.PegasusModel(tf.PegasusConfig(**s2s)), seq2seq),
        "mbart": (lambda: tf.MBartModel(tf.MBartConfig(**s2s)), seq2seq),
        "beit": (lambda: tf.BeitModel(tf.BeitConfig(use_relative_position_bias=True, **vision)), image),
        "deit": (lambda: tf.DeiTModel(tf.DeiTConfig(**vision)), image),
        "yolos": (lambda: tf.YolosModel(tf.YolosConfig(**vision)), lambda: image(512)),
        "mobilevit": (lambda: tf.MobileViTModel(tf.MobileViTConfig(image_size=256)), lambda: image(256)),
        "levit": (lambda: tf.LevitModel(tf.LevitConfig()), image),
        "poolformer": (lambda: tf.PoolFormerModel(tf.PoolFormerConfig()), image),
        "siglip": (lambda: tf.SiglipVisionModel(tf.SiglipVisionConfig(image_size=224, patch_size=16, **vision)),
                   image),
        "dinov2_registers": (lambda: tf.Dinov2WithRegistersModel(tf.Dinov2WithRegistersConfig(**vision)), image),
        "resnet": (lambda: tf.ResNetModel(tf.ResNetConfig()), image),
        "regnet": (lambda: tf.RegNetModel(tf.RegNetConfig()), image),
        "efficientnet": (lambda: tf.EfficientNetModel(tf.EfficientNetConfig()), image),
        "convnextv2": (lambda: tf.ConvNextV2Model(tf.ConvNextV2Config()), image),
        "focalnet": (lambda: tf.FocalNetModel(tf.FocalNetConfig()), image),
        "swinv2": (lambda: tf.Swinv2Model(tf.Swinv2Config()), image),
        "detr": (lambda: tf.DetrModel(tf.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False,
                                                    backbone_config=tf.ResNetConfig(out_features=["stage4"]),
                                                    d_model=64, encoder_layers=1, decoder_layers=1,
                                                    num_queries=10)), lambda: image(256)),
        "hubert": (lambda: tf.HubertModel(tf.HubertConfig(num_hidden_layers=2)), audio),
        "wavlm": (lambda: tf.WavLMModel(tf.WavLMConfig(num_hidden_layers=2)), audio),
        "ast": (lambda: tf.ASTModel(tf.ASTConfig(num_hidden_layers=2)), lambda: (torch.randn(1, 1024, 128),)),
        "patchtst": (lambda: tf.PatchTSTModel(tf.PatchTSTConfig(num_input_channels=7, context_length=512,
                                                                patch_length=16, patch_stride=8, d_model=64,
                                                                num_attention_heads=4, num_hidden_layers=2,
                                                                ffn_dim=128)),
                     lambda: (torch.randn(1, 512, 7),)),
    }


def measure(names, rounds):
    import weft

    catalog = models()
    rows = []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, inputs = catalog[name]
            row = {"model": name}
            rows.append(row)
            model = redraw_zero_weights(randomize_batch_norms(make()).eval())
            args = inputs()
            with torch.inference_mode():
                want = tensors(model(*args))
            path = os.path.join(tmp, name + ".onnx")
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, args, path, external_data=False)
                with open(path, "rb") as f:
                    data = f.read()
                compiled = weft.compile(data, threads=2)
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            session = ort.InferenceSession(data, session_options(threads=2), providers=["CPUExecutionProvider"])
            feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
            got = list(compiled.run(feed).values())
            row["matches"], row["max_diff"], row["max_abs"] = len(got) == len(want), 0.0, 0.0
            for g, w in zip(got, want):
                scale = float(np.abs(w).max())
                row["max_diff"] = max(row["max_diff"], float(np.abs(g - w).max()))
                row["max_abs"] = max(row["max_abs"], scale)
                row["matches"] &= bool(np.allclose(g, w, rtol=1e-3, atol=1e-4 + 1e-5 * scale))
            first = timed(lambda: compiled.run(feed), 3)
            runs = max(3, min(50, int(1000 / max(first, 1e-3))))
            for _ in range(rounds):
                row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), runs))
                row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), runs))
            for system in ("weft", "ort"):
                row[f"{system}_median_ms"] = min(row[f"{system}_round_ms"])
            print(f"{name}: {'matches' if row['matches'] else 'DIFFERS'} (max diff {row['max_diff']:.2e} "
                  f"of {row['max_abs']:.3g}); Weft {row['weft_median_ms']:.3f} ms, ONNX Runtime "
                  f"{row['ort_median_ms']:.3f} ms", flush=True)
    return rows


def markdown(r):
    lines = ["## More Hugging Face architectures on the CPU", "",
             f"`bench/hf_zoo.py`, measured {r['date']} on {r['machine']}, 2 threads: architectures "
             f"beyond hf_bench.py's, from transformers {r['transformers']}, each built from its config "
             "(the text models, the state-space and recurrent ones (Mamba2, RWKV, LFM2), BEiT, "
             "DeiT, YOLOS, SigLIP and DINOv2 with registers with 2 layers of width 64; the other vision "
             "models at their configs' defaults; HuBERT, WavLM and AST with 2 layers; DETR with a "
             "ResNet-50 backbone and one encoder and decoder layer of width 64; PatchTST over 7 series "
             "of 512 steps, 2 layers of width 64), random weights (BatchNorm "
             "statistics randomized, weights initialized to zero redrawn), batch 1, "
             "exported by PyTorch "
             f"{r['pytorch']} with `torch.onnx.export`'s defaults. \"Matches\": Weft's outputs against "
             "PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude). Weft's "
             f"Python module and ONNX Runtime {r['onnxruntime']} (CPU execution provider, 2 intra-op "
             f"threads, {described(r)}) alternate over {r['rounds']} rounds; each entry is the system's "
             "lowest median. The small models run in tenths of a millisecond, where fixed costs weigh: "
             "these times find pathological kernels, not speed at scale. ORT / Weft above 1: Weft is "
             "faster.", "",
             "| Model | Matches PyTorch | Max difference | Weft | ONNX Runtime | ORT / Weft |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    slower = []
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['model']} | fails: {row['error'][:80]} | | | | |")
            continue
        q = row["ort_median_ms"] / row["weft_median_ms"]
        if q < 1:
            slower.append(f"{row['model']} ({q:.2f})")
        lines.append(f"| {row['model']} | {'yes' if row['matches'] else '**no**'} | "
                     f"{row['max_diff']:.1e} of {row['max_abs']:.2g} | {row['weft_median_ms']:.3f} ms | "
                     f"{row['ort_median_ms']:.3f} ms | {q:.2f} |")
    redone = [f"{row['model']} ({row['date']}, {row['rounds']} rounds)" for row in r["rows"]
              if "date" in row]
    if redone:
        lines += ["", "Re-measured alone, with the same systems and versions: " + ", ".join(redone) + "."]
    matched = sum(1 for row in r["rows"] if row.get("matches"))
    lines += ["", f"{matched} of {len(r['rows'])} load and match PyTorch; slower than ONNX Runtime on "
              f"{len(slower)}" + (": " + ", ".join(slower) if slower else "")
              + ". Every round is in `bench/hf_zoo_results.json`.", ""]
    return lines


def main():
    import transformers

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/hf_zoo_results.json")
    ap.add_argument("--update", action="store_true",
                    help="replace only the measured models' rows of bench/hf_zoo_results.json")
    ap.add_argument("models", nargs="*", help="a subset (default: all)")
    args = ap.parse_args()
    if args.write and args.update:
        ap.error("--write and --update exclude each other")
    torch.set_num_threads(2)
    rows = measure(args.models or list(models()), args.rounds)
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
         "rounds": args.rounds, "pytorch": torch.__version__, "onnxruntime": ort.__version__,
         "transformers": transformers.__version__, "rows": rows}
    path = os.path.join(HERE, "hf_zoo_results.json")
    if args.update:
        r = stored_with(path, r, ("machine", "onnxruntime", "pytorch", "transformers"))
    print("\n".join(markdown(r)))
    if args.write or args.update:
        with open(path, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
