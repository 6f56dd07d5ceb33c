"""Greedy generation with a language model as ONNX Runtime GenAI's model builder writes it for
the CPU, e.g.  python -m onnxruntime_genai.models.builder -m Qwen/Qwen2.5-0.5B -o qwen -p int4 -e cpu

    PYTHONPATH=build/python python3 examples/generate.py qwen/model.onnx [--tokens 32] [--compare-ort]

One compile serves every step (dynamic_shapes); each step's present key and value (and other
state: LFM2's convolution) come back as the next step's past. genai_config.json beside the model
gives the head size and the sliding window's length. docs/language-models.md."""
import argparse
import json
import os
import time

import numpy as np

import weft


def present_name(past):
    """The output that becomes input "past" at the next step."""
    return past.replace("past_key_values", "present", 1) if past.startswith("past_key_values") \
        else past.replace("past", "present", 1)


def initial_state(inputs, config, batch):
    """Zeros for every input that carries state between steps: the KV cache, empty (a sliding
    window's layers: a buffer of the window's length), and recurrent states."""
    decoder = config["model"]["decoder"]
    window = (decoder.get("sliding_window") or {}).get("window_size", 0)
    sizes = {"batch_size": batch, "kv_cache_dim": decoder["head_size"], "past_sequence_length": 0,
             "past_sliding_length": window}
    return {i.name: np.zeros([d if isinstance(d, int) else sizes[d] for d in i.shape], i.dtype)
            for i in inputs if i.name not in ("input_ids", "attention_mask", "position_ids")}


def generate(run, inputs, config, prompt, steps):
    """Greedy tokens [batch, steps] after the prompt [batch, length]; "run" maps feeds to outputs."""
    batch = prompt.shape[0]
    state = initial_state(inputs, config, batch)
    wants_positions = any(i.name == "position_ids" for i in inputs)
    ids, total, tokens = prompt, 0, []
    for _ in range(steps):
        total += ids.shape[1]
        feed = {"input_ids": ids, "attention_mask": np.ones((batch, total), np.int64), **state}
        if wants_positions:
            feed["position_ids"] = np.broadcast_to(np.arange(total - ids.shape[1], total), ids.shape).astype(np.int64)
        out = run(feed)
        state = {name: out[present_name(name)] for name in state}
        ids = out["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        tokens.append(ids)
    return np.concatenate(tokens, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--compare-ort", action="store_true", help="run ONNX Runtime too and compare the tokens")
    args = ap.parse_args()
    with open(os.path.join(os.path.dirname(os.path.abspath(args.model)), "genai_config.json")) as f:
        config = json.load(f)
    vocabulary = config["model"].get("vocab_size", 1000)
    prompt = np.random.default_rng(0).integers(3, min(vocabulary, 1000), (1, 16)).astype(np.int64)
    start = time.perf_counter()
    model = weft.compile(args.model, dynamic_shapes=True)
    print(f"compiled in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    tokens = generate(model.run, model.inputs, config, prompt, args.tokens)
    print(f"Weft: {args.tokens} tokens in {time.perf_counter() - start:.2f} s: {tokens[0].tolist()}")
    if args.compare_ort:
        import onnxruntime as ort
        session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        theirs = generate(lambda feed: dict(zip(names, session.run(None, feed))), model.inputs, config, prompt,
                          args.tokens)
        print("ONNX Runtime's tokens:", "the same" if (theirs == tokens).all() else theirs[0].tolist())


if __name__ == "__main__":
    main()
