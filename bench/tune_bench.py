"""What `weft tune` gains over the cost model's schedules, per benchmark model. Tunes each
model in a tuning cache of its own (so the main table keeps measuring the cost model), and
reads the summary line of `weft tune`: the sum of the tuned kernels' medians with the cost
model's schedules and with the winners, timed on the model's own buffers.

Usage: tune_bench.py WEFT MODEL_DIR [--cases A,B,...] [--write]
--write stores bench/tune_results.json, which run_bench.py puts in docs/benchmarks.md.
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
import time

from machine_name import machine

HERE = os.path.dirname(os.path.abspath(__file__))
# The memory-bound cases of run_bench.py (models with library calls tune only their
# generated kernels, which is what this measures too).
CASES = ["reduce_row_65536x3", "reduce_row_64x30000", "reduce_col_2048x256", "reduce_col_131072x32",
         "reduce_all_9x1024x1024", "reduce_row_9x1024x1024", "reduce_middle_64x1024x64",
         "reduce_middle_512x16x512", "softmax_4096x1024", "attention_softmax_8x8x256x256",
         "layernorm_4096x1024", "rmsnorm_4096x1024", "logsumexp_4096x1024", "bias_gelu_4096x1024",
         "bn_train_32x64x56x56", "groupnorm_32x64x56x56_g8", "encoder_layer", "gpt_block"]
SUMMARY = re.compile(r"(\d+) kernels tuned \((\d+) have one candidate.*sum of their medians "
                     r"([\d.]+) -> ([\d.]+) ms")


def tune(weft, model, cache):
    start = time.time()
    r = subprocess.run([weft, "tune", model], capture_output=True, text=True, timeout=1800,
                       env=dict(os.environ, WEFT_CACHE_DIR=cache))
    seconds = time.time() - start
    m = SUMMARY.search(r.stdout)
    if r.returncode != 0 or not m:
        return {"error": (r.stderr.strip() or r.stdout.strip())[-300:]}
    winners = [line.split(" with ", 1)[1] for line in r.stdout.splitlines() if " -> " in line and " with " in line]
    return {"tuned": int(m.group(1)), "fixed": int(m.group(2)), "cost_model_ms": float(m.group(3)),
            "tuned_ms": float(m.group(4)), "seconds": seconds, "winners": winners}


def markdown(r):
    lines = ["## Autotuning: `weft tune` against the cost model", "",
             f"`bench/tune_bench.py`, measured {r['date']} on {r['machine']}: `weft tune MODEL` in a tuning "
             "cache of its own, so the tables above measure the cost model's schedules. A kernel whose "
             "code does not depend on the schedule (elementwise without reductions, most library-bound "
             "models' small kernels) has one candidate and is not measured. Times are the sums of the "
             "tuned kernels' medians, each kernel timed alone on the model's buffers; a winner other "
             "than the cost model's schedule is timed again, alternating with it, and kept only if it "
             "stays 3% faster. Speedups of a few percent are within this machine's noise.", "",
             "| Case | Kernels tuned | Cost model | Tuned | Speedup | Tune time | Winning schedules |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in r["rows"]:
        if "error" in row:
            lines.append(f"| {row['case']} | failed: {row['error'][:80]} | | | | | |")
            continue
        if not row["tuned"]:
            lines.append(f"| {row['case']} | 0 ({row['fixed']} with one candidate) | | | | {row['seconds']:.0f} s | |")
            continue
        speedup = row["cost_model_ms"] / row["tuned_ms"] if row["tuned_ms"] > 0 else 0
        winners = "; ".join(sorted(set(w.replace(" column_width=2048 column_rows=128", "") for w in row["winners"])))
        lines.append(f"| {row['case']} | {row['tuned']} | {row['cost_model_ms']:.3f} ms | {row['tuned_ms']:.3f} ms | "
                     f"{speedup:.2f} | {row['seconds']:.0f} s | {winners or 'the cost model'} |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("model_dir")
    ap.add_argument("--cases", help="comma-separated subset")
    ap.add_argument("--write", action="store_true", help="write bench/tune_results.json")
    a = ap.parse_args()
    cases = a.cases.split(",") if a.cases else CASES
    rows = []
    with tempfile.TemporaryDirectory(prefix="weft-tune-") as cache:
        for case in cases:
            row = {"case": case, **tune(a.weft, os.path.join(a.model_dir, case + ".onnx"), cache)}
            rows.append(row)
            print(json.dumps(row))
    if a.write:
        with open(os.path.join(HERE, "tune_results.json"), "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
