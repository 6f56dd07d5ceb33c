"""Language models as ONNX Runtime GenAI's model builder writes them: does the model that
`onnxruntime_genai.models.builder` makes for the CPU (GroupQueryAttention with its KV cache and
rotary embedding, SkipSimplifiedLayerNormalization, and in int4 and int8 MatMulNBits) load in Weft,
generate ONNX Runtime's tokens, and decode as fast? Each model is built from its
transformers config with random weights (no download), in f32, int4 and int8. A greedy loop feeds
each step's present key and value back as the next past (the growing cache an
InferenceSession user runs): a prompt of PROMPT tokens, then STEPS tokens one at a time, at
batch 1. Weft compiles once with dynamic_shapes (every past length), ONNX Runtime (CPU execution
provider, 2 intra-op threads) runs the same model; the two alternate over the rounds in this
process, and an entry is the system's lowest median over them.

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/genai_bench.py [--rounds 2] [--write]
(needs onnxruntime-genai in bench/.venv). --write stores bench/genai_results.json, which
run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
from ort_options import session_options

# The one dynamic-shape compile is what is timed: by default a set of shapes run 3 times gets a
# specialized compile in a background thread, and each round here repeats every past length,
# so those compiles would take one of the two cores during the timed rounds (docs/knobs.md).
os.environ.setdefault("WEFT_SPECIALIZE_AFTER", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
PROMPT, STEPS = 32, 32


def configs():
    """name -> (transformers config, what it is)."""
    import transformers as tf
    shared = dict(vocab_size=16000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                  num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024)
    return {
        "llama": (tf.LlamaConfig(**shared), "Llama, 8 layers of 1024, 16 heads over 4 kv heads"),
        "qwen2": (tf.Qwen2Config(**shared), "Qwen2 (Q/K/V biases), the same sizes"),
        "mistral": (tf.MistralConfig(sliding_window=48, **shared),
                    "Mistral, the same sizes, a sliding window of 48"),
    }


def build(name, config, precision, tmp):
    """The builder's model for a random-weight model of "config"; its directory."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers
    source = os.path.join(tmp, name)
    if not os.path.isdir(source):
        torch.manual_seed(0)
        tf.AutoModelForCausalLM.from_config(config).eval().save_pretrained(source)
        vocab = {f"t{i}": i for i in range(config.vocab_size)}
        tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        tf.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="t1", eos_token="t2",
                                   unk_token="t0").save_pretrained(source)
    out = os.path.join(tmp, f"{name}_{precision}")
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", name, "-i", source,
                    "-o", out, "-p", precision, "-e", "cpu", "-c", os.path.join(tmp, "cache")],
                   check=True, capture_output=True)
    return out


def generate(run, layers, kv_heads, head):
    """Greedy tokens, the prompt's time and each decoding step's time (ms), the logits."""
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 1000, (1, PROMPT)).astype(np.int64)
    past = [np.zeros((1, kv_heads, 0, head), np.float32)] * (2 * layers)
    tokens, times, logits = [], [], []
    for step in range(STEPS + 1):
        feed = {"input_ids": ids, "attention_mask": np.ones((1, PROMPT + step), np.int64)}
        for layer in range(layers):
            feed[f"past_key_values.{layer}.key"] = past[2 * layer]
            feed[f"past_key_values.{layer}.value"] = past[2 * layer + 1]
        start = time.perf_counter()
        out, past = run(feed)
        times.append((time.perf_counter() - start) * 1e3)
        logits.append(out[:, -1])
        ids = out[:, -1].argmax(-1)[:, None].astype(np.int64)
        tokens.append(int(ids[0, 0]))
    return tokens, times[0], times[1:], np.concatenate(logits)


def memory_mb():
    """This process's resident memory and its peak so far, in MB."""
    fields = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in open("/proc/self/status")
              if line.startswith(("VmRSS", "VmHWM"))}
    return fields["VmRSS"], fields["VmHWM"]


def loaded(path, system, layers):
    """The model loaded by "system" ("ort": an InferenceSession, 2 threads; "weft": one
    dynamic-shape compile), and a step that runs it: feed -> logits, presents."""
    if system == "ort":
        options = session_options(threads=2)
        model = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in model.get_outputs()]
        outputs = lambda feed: dict(zip(names, model.run(None, feed)))
    else:
        import weft
        model = weft.compile(path, threads=2, dynamic_shapes=True)
        outputs = model.run

    def run(feed):
        out = outputs(feed)
        return out["logits"], [out[f"present.{i // 2}.{'key' if i % 2 == 0 else 'value'}"]
                               for i in range(2 * layers)]
    return model, run


def memory_child(path, system, layers, kv_heads, head):
    """In a fresh process: the memory that loading the model and one loop added, as JSON."""
    import weft  # noqa: F401 (both systems' libraries in the baseline)
    base, _ = memory_mb()
    _, run = loaded(path, system, layers)
    loaded_mb, _ = memory_mb()
    generate(run, layers, kv_heads, head)
    now, peak = memory_mb()
    print(json.dumps({"load_mb": loaded_mb - base, "loop_mb": now - base, "peak_mb": peak - base}))


def memory(path, system, layers, kv_heads, head):
    """memory_child's measure, in a process of its own (each system's alone)."""
    done = subprocess.run([sys.executable, __file__, "--memory", path, system, str(layers), str(kv_heads),
                           str(head)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(rounds):
    import onnx
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (config, what) in configs().items():
            for precision in ("fp32", "int4", "int8"):
                row = {"model": name, "precision": precision, "what": what}
                rows.append(row)
                try:
                    path = os.path.join(build(name, config, precision, tmp), "model.onnx")
                except subprocess.CalledProcessError as e:
                    row["error"] = "builder: " + e.stderr.decode()[-200:]
                    print(f"{name} {precision}: {row['error']}", flush=True)
                    continue
                graph = onnx.load(path, load_external_data=False).graph
                row["ops"] = sorted({n.op_type for n in graph.node if n.domain == "com.microsoft"})
                layers = config.num_hidden_layers
                kv_heads, head = config.num_key_value_heads, config.hidden_size // config.num_attention_heads
                _, ort_run = loaded(path, "ort", layers)
                start = time.perf_counter()
                try:
                    compiled, weft_run = loaded(path, "weft", layers)
                    row["weft_compile_s"] = time.perf_counter() - start
                    first = time.perf_counter()
                    generate(weft_run, layers, kv_heads, head)
                    row["weft_first_loop_s"] = time.perf_counter() - first
                except Exception as e:  # the row says why
                    row["error"] = str(e)[-300:]
                    print(f"{name} {precision}: {row['error']}", flush=True)
                    continue
                for _ in range(rounds):
                    for system, run in (("ort", ort_run), ("weft", weft_run)):
                        time.sleep(0.2)  # the other system's spinning threads have stopped
                        tokens, prompt_ms, step_ms, logits = generate(run, layers, kv_heads, head)
                        row.setdefault(f"{system}_prompt_round_ms", []).append(prompt_ms)
                        row.setdefault(f"{system}_step_round_ms", []).append(statistics.median(step_ms))
                        row[f"{system}_tokens"], row[f"{system}_logits"] = tokens, logits
                row["same_tokens"] = row.pop("weft_tokens") == row.pop("ort_tokens")
                want, got = row.pop("ort_logits"), row.pop("weft_logits")
                row["max_diff"], row["max_abs"] = float(np.abs(got - want).max()), float(np.abs(want).max())
                row["variants"] = compiled.compiled_variants
                for system in ("ort", "weft"):
                    for part in ("prompt", "step"):
                        row[f"{system}_{part}_ms"] = min(row[f"{system}_{part}_round_ms"])
                    row[f"{system}_memory"] = memory(path, system, layers, kv_heads, head)
                row["model_mb"] = sum(os.path.getsize(os.path.join(os.path.dirname(path), f)) / 2**20
                                      for f in os.listdir(os.path.dirname(path)) if f.startswith("model.onnx"))
                print(f"{name} {precision}: same tokens {row['same_tokens']}, max diff {row['max_diff']:.1e}; "
                      f"prompt ORT {row['ort_prompt_ms']:.1f} ms, Weft {row['weft_prompt_ms']:.1f} ms; per token "
                      f"ORT {row['ort_step_ms']:.2f} ms, Weft {row['weft_step_ms']:.2f} ms; "
                      f"{row['variants']} compile(s); memory after the loop ORT "
                      f"{row['ort_memory']['loop_mb']:.0f} MB, Weft {row['weft_memory']['loop_mb']:.0f} MB", flush=True)
    return rows


def markdown(r):
    lines = ["## Language models as ONNX Runtime GenAI's builder writes them", "",
             f"`bench/genai_bench.py`, measured {r['date']} on {r['machine']}, 2 threads: models built from their "
             f"transformers configs (random weights) by onnxruntime-genai {r['genai']}'s model builder for the CPU "
             "(`-e cpu`), in f32, int4 and int8 (its MatMulNBits, which Weft runs on the quantized weights: "
             "docs/library.md); Weft expands their com.microsoft ops at import (docs/onnx-versions.md). A greedy loop at batch 1 with "
             f"the growing KV cache: a prompt of {PROMPT} tokens, then {STEPS} tokens one at a time. Weft "
             "compiles once with `dynamic_shapes` (compiles: how many it made for every past length; its first "
             "loop includes building the kernels, from Weft's kernel cache where an earlier run built them; "
             "`WEFT_SPECIALIZE_AFTER=0`, so that no specialized compile "
             f"runs in the background during the rounds); ONNX Runtime {r['onnxruntime']} (CPU execution provider) "
             f"runs the same model; alternating over {r['rounds']} rounds in one process, each entry the lowest median. "
             "Same tokens: Weft's greedy tokens equal ONNX Runtime's; the difference is of the last position's "
             "logits over all steps, relative to their largest magnitude. In int4 and int8 both quantize the activations "
             "to int8 (the builder's accuracy level 4; docs/library.md), which turns the f32 rounding differences "
             "before each matmul (1e-6) into whole quanta where a value lies near a rounding boundary: with f32 "
             "activations (accuracy level 0) the two differ by 7e-6 on the prompt, with int8 by 4e-2 (1.3%) on "
             "the int4 Llama. Those differences grow layer by layer, as each flips more roundings, and on these "
             "random-weight models, whose logits lie close together, greedy decoding can then pick another "
             "token: the int8 models' tokens part ways (each MatMulNBits alone, given one input, agrees with "
             "ONNX Runtime's within 3e-6 of 4; ONNX Runtime against itself with the int8 Llama's embedding "
             "table scaled by 1 + 1e-6 parts ways too, at step 8, its logits 1.7 apart). Each system's "
             "loop starts 0.2 s after the other's ends: ONNX Runtime's threads spin a while after a run, and had "
             "made the Weft prompt after them 2x slower. ORT / Weft above 1: Weft is faster. Memory: what the "
             "process's resident memory grew by from loading the model to the end of one loop (and its peak over "
             "that), each system alone in a fresh process; the model's files for scale.", "",
             "| Model | Weights | com.microsoft ops | Same tokens | Difference | Prompt: ORT | Weft | ORT / Weft "
             "| Per token: ORT | Weft | ORT / Weft | Compiles | Weft's first loop | Files | Memory (peak): ORT | Weft |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in r["rows"]:
        label = f"| {row['model']} | {row['precision']} | {', '.join(row.get('ops', []))} |"
        if "error" in row:
            lines.append(f"{label} error: {row['error']} | | | | | | | | | | | | |")
            continue
        lines.append(f"{label} {'yes' if row['same_tokens'] else 'no'} | {row['max_diff'] / row['max_abs']:.1e} | "
                     f"{row['ort_prompt_ms']:.1f} ms | {row['weft_prompt_ms']:.1f} ms | "
                     f"{row['ort_prompt_ms'] / row['weft_prompt_ms']:.2f} | {row['ort_step_ms']:.2f} ms | "
                     f"{row['weft_step_ms']:.2f} ms | {row['ort_step_ms'] / row['weft_step_ms']:.2f} | "
                     f"{row['variants']} | {row['weft_first_loop_s']:.1f} s | " + memory_cells(row))
    return lines + [""]


def memory_cells(row):
    if "weft_memory" not in row:
        return "| | |"
    cell = lambda m: f"{m['loop_mb']:.0f} MB ({m['peak_mb']:.0f})"
    return f"{row['model_mb']:.0f} MB | {cell(row['ort_memory'])} | {cell(row['weft_memory'])} |"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--memory":
        memory_child(sys.argv[2], sys.argv[3], *(int(v) for v in sys.argv[4:7]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/genai_results.json")
    args = ap.parse_args()
    import onnxruntime_genai
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": ort.__version__,
         "genai": onnxruntime_genai.__version__, "rounds": args.rounds, "rows": measure(args.rounds)}
    print("\n".join(markdown(r)))
    if args.write:
        with open(os.path.join(HERE, "genai_results.json"), "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
