"""Hugging Face transformers on the CPU: does each model that PyTorch's default exporter writes
load, match PyTorch, and run at least as fast as ONNX Runtime? Encoders, decoders,
encoder-decoders, speech, state-space and vision models built from their configs (random
weights, no download), at batch 1, exported by torch.onnx.export's defaults (the dynamo
exporter) without a KV cache. Each model: Weft's
outputs against PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude),
then Weft's Python module, ONNX Runtime (CPU execution provider, 2 intra-op threads) and
PyTorch eager timed in alternating rounds in this process; an entry is the system's lowest
median over the rounds. Not in CI: exporting, compiling and timing the 24 models takes
about 10 minutes on 2 cores.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/hf_bench.py [--rounds 2]
       [--write | --update] [MODEL...]
Needs `transformers` in the venv (bench/run.sh installs it). --write stores
bench/hf_results.json, which run_bench.py puts in docs/benchmarks.md; --update replaces only
the given models' rows there (each then says its date and rounds; the table notes them).
"""
import argparse
import datetime
import json
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from ort_options import session_options
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cnn_bench import timed  # noqa: E402

SEQ = 128


def tokens(vocab, length=SEQ):
    return torch.randint(5, vocab - 5, (1, length))


def models():
    """name -> (model factory, inputs factory taking the config, what it is)."""
    import transformers as tf

    mask = torch.ones(1, SEQ, dtype=torch.long)
    small_lm = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                    num_attention_heads=8, num_key_value_heads=2, vocab_size=32000, use_cache=False)
    seq2seq = lambda c: (tokens(c.vocab_size), mask, tokens(c.vocab_size, 32))
    image = lambda c: (torch.randn(1, 3, 224, 224),)
    return {
        "bert": (lambda: tf.BertModel(tf.BertConfig()),
                 lambda c: (tokens(c.vocab_size), mask), f"BERT-base, {SEQ} tokens"),
        "distilbert": (lambda: tf.DistilBertModel(tf.DistilBertConfig()),
                       lambda c: (tokens(c.vocab_size), mask), f"DistilBERT, {SEQ} tokens"),
        "roberta": (lambda: tf.RobertaModel(tf.RobertaConfig()),
                    lambda c: (tokens(c.vocab_size), mask), f"RoBERTa-base, {SEQ} tokens"),
        "gpt2": (lambda: tf.GPT2Model(tf.GPT2Config(use_cache=False)),
                 lambda c: (tokens(c.vocab_size),), f"GPT-2 (124M), {SEQ} tokens"),
        "llama": (lambda: tf.LlamaModel(tf.LlamaConfig(**small_lm)),
                  lambda c: (tokens(c.vocab_size),), f"Llama, 4 layers of 512, GQA, {SEQ} tokens"),
        "qwen2": (lambda: tf.Qwen2Model(tf.Qwen2Config(**small_lm)),
                  lambda c: (tokens(c.vocab_size),), f"Qwen2, 4 layers of 512, GQA, {SEQ} tokens"),
        "t5_encoder": (lambda: tf.T5EncoderModel(tf.T5Config(num_layers=6, d_model=512, d_ff=2048,
                                                             num_heads=8)),
                       lambda c: (tokens(c.vocab_size),), f"T5-small's encoder, {SEQ} tokens"),
        "clip_text": (lambda: tf.CLIPTextModel(tf.CLIPTextConfig()),
                      lambda c: (tokens(c.vocab_size, 77),), "CLIP's text encoder, 77 tokens"),
        "whisper_encoder": (lambda: tf.WhisperModel(tf.WhisperConfig()).encoder,
                            lambda c: (torch.randn(1, 80, 3000),), "Whisper's encoder, 30 s of audio"),
        "vit": (lambda: tf.ViTModel(tf.ViTConfig()), image, "ViT-base/16, 224x224"),
        "swin": (lambda: tf.SwinModel(tf.SwinConfig()), image, "Swin-T, 224x224"),
        "convnext": (lambda: tf.ConvNextModel(tf.ConvNextConfig()), image, "ConvNeXt-T, 224x224"),
        "albert": (lambda: tf.AlbertModel(tf.AlbertConfig()), lambda c: (tokens(c.vocab_size), mask),
                   f"ALBERT's default (xxlarge, shared layers), {SEQ} tokens"),
        "deberta_v2": (lambda: tf.DebertaV2Model(tf.DebertaV2Config(num_hidden_layers=4)),
                       lambda c: (tokens(c.vocab_size), mask), f"DeBERTa-v2, 4 layers, {SEQ} tokens"),
        "bart": (lambda: tf.BartModel(tf.BartConfig(encoder_layers=3, decoder_layers=3,
                                                    use_cache=False)),
                 seq2seq, f"BART, 3+3 layers, {SEQ} + 32 tokens"),
        "t5": (lambda: tf.T5Model(tf.T5Config(num_layers=3, num_decoder_layers=3, d_model=512,
                                              d_ff=2048, num_heads=8, use_cache=False)),
               seq2seq, f"T5, 3+3 layers, {SEQ} + 32 tokens"),
        "opt": (lambda: tf.OPTModel(tf.OPTConfig(num_hidden_layers=4, use_cache=False)),
                lambda c: (tokens(c.vocab_size),), f"OPT, 4 layers of 768, {SEQ} tokens"),
        "phi": (lambda: tf.PhiModel(tf.PhiConfig(num_hidden_layers=2, hidden_size=512,
                                                 intermediate_size=2048, num_attention_heads=8,
                                                 use_cache=False)),
                lambda c: (tokens(c.vocab_size),), f"Phi, 2 layers of 512, {SEQ} tokens"),
        "mistral": (lambda: tf.MistralModel(tf.MistralConfig(**small_lm)),
                    lambda c: (tokens(c.vocab_size),), f"Mistral, 4 layers of 512, {SEQ} tokens"),
        "falcon": (lambda: tf.FalconModel(tf.FalconConfig(num_hidden_layers=2, hidden_size=512,
                                                          num_attention_heads=8, use_cache=False)),
                   lambda c: (tokens(c.vocab_size),), f"Falcon, 2 layers of 512, {SEQ} tokens"),
        "mamba": (lambda: tf.MambaModel(tf.MambaConfig(num_hidden_layers=2, hidden_size=256,
                                                       use_cache=False)),
                  lambda c: (tokens(c.vocab_size),), f"Mamba, 2 layers of 256, {SEQ} tokens"),
        "wav2vec2": (lambda: tf.Wav2Vec2Model(tf.Wav2Vec2Config(num_hidden_layers=4)),
                     lambda c: (torch.randn(1, 16000),), "wav2vec 2.0, 4 layers, 1 s of audio"),
        "segformer": (lambda: tf.SegformerModel(tf.SegformerConfig()),
                      lambda c: (torch.randn(1, 3, 256, 256),), "SegFormer-B0, 256x256"),
        "dinov2": (lambda: tf.Dinov2Model(tf.Dinov2Config()), image, "DINOv2-base, 224x224"),
    }


def tensors(out):
    """A model's outputs as a list of numpy arrays, nested tuples (XLNet's mems, a KV cache)
    flattened, in the exporter's order."""
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, torch.Tensor):
        return [out.numpy()]
    return [a for t in out if isinstance(t, (torch.Tensor, tuple, list)) for a in tensors(t)]


def measure(names, rounds):
    import weft

    catalog = models()
    rows = []
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, inputs, what = catalog[name]
            row = {"model": name, "what": what}
            rows.append(row)
            model = make().eval()
            args = inputs(model.config)
            with torch.inference_mode():
                want = tensors(model(*args))
            path = os.path.join(tmp, name + ".onnx")
            with torch.no_grad():
                torch.onnx.export(model, args, path, external_data=False)
            with open(path, "rb") as f:
                data = f.read()
            try:
                compiled = weft.compile(data, threads=2)
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            options = session_options(threads=2)
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
            feed = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args)}
            got = list(compiled.run(feed).values())
            row["matches"], row["max_diff"], row["max_abs"] = True, 0.0, 0.0
            for g, w in zip(got, want):
                scale = float(np.abs(w).max())
                row["max_diff"] = max(row["max_diff"], float(np.abs(g - w).max()))
                row["max_abs"] = max(row["max_abs"], scale)
                row["matches"] &= bool(np.allclose(g, w, rtol=1e-3, atol=1e-4 + 1e-5 * scale))
            first = timed(lambda: compiled.run(feed), 3)
            runs = max(3, min(20, int(2000 / first)))
            with torch.inference_mode():
                for _ in range(rounds):
                    row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), runs))
                    row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), runs))
                    row.setdefault("torch_round_ms", []).append(timed(lambda: model(*args), runs))
            for system in ("weft", "ort", "torch"):
                row[f"{system}_median_ms"] = min(row[f"{system}_round_ms"])
            print(f"{name}: {'matches' if row['matches'] else 'DIFFERS'} (max diff {row['max_diff']:.2e} "
                  f"of {row['max_abs']:.3g}); Weft {row['weft_median_ms']:.2f} ms, ONNX Runtime "
                  f"{row['ort_median_ms']:.2f} ms, PyTorch {row['torch_median_ms']:.2f} ms", flush=True)
    return rows


def geomean(xs):
    return float(np.exp(np.mean(np.log(xs)))) if xs else float("nan")


def markdown(r):
    lines = ["## Hugging Face transformers on the CPU", "",
             f"`bench/hf_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: models of "
             f"transformers {r['transformers']} built from their configs (random weights), batch 1, "
             f"exported by PyTorch {r['pytorch']} with `torch.onnx.export`'s defaults (no KV cache). "
             "\"Matches\": Weft's outputs against PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the "
             f"output's largest magnitude). Weft's Python module, ONNX Runtime {r['onnxruntime']} "
             "(CPU execution provider, 2 intra-op threads) and PyTorch eager alternate over "
             f"{r['rounds']} rounds; each entry is the system's lowest median. Ratios above 1: Weft "
             "is faster.", "",
             "| Model | What | Matches PyTorch | Max difference | Weft | ONNX Runtime | ORT / Weft "
             "| PyTorch eager | eager / Weft |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ort_ratios, torch_ratios, slower = [], [], []
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['model']} | {row['what']} | fails: {row['error'][:80]} | | | | | | |")
            continue
        q = row["ort_median_ms"] / row["weft_median_ms"]
        e = row["torch_median_ms"] / row["weft_median_ms"]
        ort_ratios.append(q)
        torch_ratios.append(e)
        if q < 1:
            slower.append(f"{row['model']} ({q:.2f})")
        lines.append(f"| {row['model']} | {row['what']} | {'yes' if row['matches'] else '**no**'} | "
                     f"{row['max_diff']:.1e} of {row['max_abs']:.2g} | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms']:.2f} ms | {q:.2f} | {row['torch_median_ms']:.2f} ms | {e:.2f} |")
    redone = [f"{row['model']} ({row['date']}, {row['rounds']} rounds)" for row in r["rows"]
              if "date" in row]
    if redone:
        lines += ["", "Re-measured alone, with the same systems and versions: " + ", ".join(redone) + "."]
    matched = sum(1 for row in r["rows"] if row.get("matches"))
    lines += ["", f"{matched} of {len(r['rows'])} match PyTorch. Geomean ONNX Runtime / Weft "
              f"**{geomean(ort_ratios):.2f}**, PyTorch eager / Weft **{geomean(torch_ratios):.2f}**; "
              f"slower than ONNX Runtime on {len(slower)}" + (": " + ", ".join(slower) if slower else "")
              + ". Every round is in `bench/hf_results.json`.", ""]
    return lines


def stored_with(path, result, keys):
    """The results stored at "path" with "result"'s rows (each dated) in place of theirs for the
    same models; exits where one of "keys" (the machine, the systems' versions) differs."""
    with open(path) as f:
        stored = json.load(f)
    for key in keys:
        if stored[key] != result[key]:
            sys.exit(f"--update: {key} is {result[key]}, the stored rows' {stored[key]}: rerun all")
    for row in result["rows"]:
        row.update(date=result["date"], rounds=result["rounds"])
        at = [i for i, old in enumerate(stored["rows"]) if old["model"] == row["model"]]
        if at:
            stored["rows"][at[0]] = row
        else:
            stored["rows"].append(row)
    return stored


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/hf_results.json")
    ap.add_argument("--update", action="store_true",
                    help="replace only the measured models' rows of bench/hf_results.json")
    ap.add_argument("models", nargs="*", help="a subset (default: all)")
    args = ap.parse_args()
    if args.write and args.update:
        ap.error("--write and --update exclude each other")
    torch.set_num_threads(2)
    import transformers

    rows = measure(args.models or list(models()), args.rounds)
    from run_bench import machine
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "onnxruntime": ort.__version__, "pytorch": torch.__version__,
              "transformers": transformers.__version__, "rounds": args.rounds, "rows": rows}
    path = os.path.join(HERE, "hf_results.json")
    if args.update:
        result = stored_with(path, result, ("machine", "onnxruntime", "pytorch", "transformers"))
    print("\n".join(markdown(result)))
    if args.write or args.update:
        with open(path, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
