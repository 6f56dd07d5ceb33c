"""timm's image models on the CPU: does each one that PyTorch's default exporter writes load in
Weft and match PyTorch, and is any pathologically slow? 65 architectures of timm (the smallest
variant of each family: convolutional, mobile, hybrid, vision transformers, MLP mixers),
random weights (BatchNorm statistics randomized, weights initialized to zero redrawn), batch 1,
each at its pretrained configuration's input size, exported by torch.onnx.export's defaults
(the dynamo exporter). Each model: Weft's output against PyTorch's (rtol 1e-3, atol 1e-4 plus
1e-5 of the output's largest magnitude), then Weft's Python module and ONNX Runtime (CPU
execution provider, 2 intra-op threads) timed in alternating rounds in this process; an entry
is the system's lowest median over the rounds. Not in CI: the 65 exports and runs take about
40 minutes on 2 cores. Needs timm in the benchmark venv (bench/run.sh installs it).

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/timm_zoo.py [--rounds 2]
       [--write | --update] [MODEL...]
--write stores bench/timm_zoo_results.json, which run_bench.py puts in docs/benchmarks.md;
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
from hf_bench import stored_with  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from testing.torch_models import randomize_batch_norms, redraw_zero_weights  # noqa: E402

MODELS = [
    # convolutional
    "dla34", "dpn68", "res2net50_14w_8s", "resnest14d", "skresnet18", "selecsls42b",
    "ese_vovnet19b_dw", "nf_resnet26", "gernet_s", "repvgg_a0", "hrnet_w18_small", "regnety_002",
    "cspresnet50", "darknet53", "halonet26t", "botnet26t_256", "lambda_resnet26t",
    "convnextv2_atto", "inception_next_tiny", "starnet_s1", "hgnetv2_b0",
    # mobile
    "efficientnet_b0", "mobilenetv3_large_100", "mobilenetv4_conv_small", "ghostnet_100",
    "ghostnetv2_100", "rexnet_100", "mixnet_s", "tinynet_a", "fbnetc_100", "lcnet_050",
    "mobileone_s0", "repvit_m1", "efficientvit_b0", "fastvit_t8", "mambaout_femto",
    # hybrid
    "efficientformer_l1", "efficientformerv2_s0", "levit_128s", "mobilevit_xs", "mobilevitv2_050",
    "edgenext_xx_small", "poolformer_s12", "coat_lite_tiny", "coatnet_nano_rw_224", "tiny_vit_5m_224",
    "visformer_tiny", "gcvit_xxtiny", "davit_tiny", "convit_tiny", "volo_d1_224",
    # vision transformers
    "vit_tiny_patch16_224", "deit_tiny_patch16_224", "eva02_tiny_patch14_224", "cait_xxs24_224",
    "xcit_nano_12_p16_224", "crossvit_9_240", "pit_ti_224", "tnt_s_patch16_224",
    "twins_pcpvt_small", "pvt_v2_b0",
    # MLPs and recurrent mixers
    "mixer_s16_224", "resmlp_12_224", "gmlp_ti16_224", "sequencer2d_s",
]


def measure(names, rounds):
    import timm
    import weft

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            torch.manual_seed(0)
            row = {"model": name}
            rows.append(row)
            model = redraw_zero_weights(randomize_batch_norms(timm.create_model(name, pretrained=False)))
            size = model.pretrained_cfg.get("input_size", (3, 224, 224))
            row["input"] = list(size)
            x = torch.randn(1, *size)
            with torch.inference_mode():
                want = model(x).numpy()
            path = os.path.join(tmp, name + ".onnx")
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(model, (x,), path, external_data=False)
                with open(path, "rb") as f:
                    data = f.read()
                compiled = weft.compile(data, threads=2)
            except Exception as e:  # the row says why
                row["error"] = str(e)[-300:]
                print(f"{name}: {row['error']}", flush=True)
                continue
            session = ort.InferenceSession(data, session_options(threads=2),
                                           providers=["CPUExecutionProvider"])
            feed = {session.get_inputs()[0].name: x.numpy()}
            got = list(compiled.run(feed).values())[0]
            scale = float(np.abs(want).max())
            row["max_diff"], row["max_abs"] = float(np.abs(got - want).max()), scale
            row["matches"] = bool(np.allclose(got, want, rtol=1e-3, atol=1e-4 + 1e-5 * scale))
            first = timed(lambda: compiled.run(feed), 3)
            runs = max(3, min(30, int(1500 / max(first, 1e-3))))
            for _ in range(rounds):
                row.setdefault("weft_round_ms", []).append(timed(lambda: compiled.run(feed), runs))
                row.setdefault("ort_round_ms", []).append(timed(lambda: session.run(None, feed), runs))
            for system in ("weft", "ort"):
                row[f"{system}_median_ms"] = min(row[f"{system}_round_ms"])
            print(f"{name}: {'matches' if row['matches'] else 'DIFFERS'} (max diff {row['max_diff']:.2e} "
                  f"of {row['max_abs']:.3g}); Weft {row['weft_median_ms']:.2f} ms, ONNX Runtime "
                  f"{row['ort_median_ms']:.2f} ms", flush=True)
    return rows


def markdown(r):
    lines = ["## timm's image models on the CPU", "",
             f"`bench/timm_zoo.py`, measured {r['date']} on {r['machine']}, 2 threads: {len(r['rows'])} "
             f"architectures of timm {r['timm']} (the smallest variant of each family), random weights "
             "(BatchNorm statistics randomized, weights initialized to zero redrawn), batch 1, each at "
             "its pretrained configuration's input size, exported by PyTorch "
             f"{r['pytorch']} with `torch.onnx.export`'s defaults. \"Matches\": Weft's output against "
             "PyTorch's (rtol 1e-3, atol 1e-4 plus 1e-5 of the output's largest magnitude). Weft's "
             f"Python module and ONNX Runtime {r['onnxruntime']} (CPU execution provider, 2 intra-op "
             f"threads, {described(r)}) alternate over {r['rounds']} rounds; each entry is the system's "
             "lowest median. ORT / Weft above 1: Weft is faster.", "",
             "| Model | Input | Matches PyTorch | Max difference | Weft | ONNX Runtime | ORT / Weft |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    slower, ratios = [], []
    for row in r["rows"]:
        size = "x".join(str(d) for d in row.get("input", [])[1:])
        if "error" in row:
            lines.append(f"| {row['model']} | {size} | fails: {row['error'][:80]} | | | | |")
            continue
        q = row["ort_median_ms"] / row["weft_median_ms"]
        ratios.append(q)
        if q < 1:
            slower.append(f"{row['model']} ({q:.2f})")
        lines.append(f"| {row['model']} | {size} | {'yes' if row['matches'] else '**no**'} | "
                     f"{row['max_diff']:.1e} of {row['max_abs']:.2g} | {row['weft_median_ms']:.2f} ms | "
                     f"{row['ort_median_ms']:.2f} ms | {q:.2f} |")
    redone = [f"{row['model']} ({row['date']}, {row['rounds']} rounds)" for row in r["rows"]
              if "date" in row]
    if redone:
        lines += ["", "Re-measured alone, with the same systems and versions: " + ", ".join(redone) + "."]
    matched = sum(1 for row in r["rows"] if row.get("matches"))
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    lines += ["", f"{matched} of {len(r['rows'])} load and match PyTorch. Geomean ONNX Runtime / Weft "
              f"**{geomean:.2f}**; slower than ONNX Runtime on {len(slower)}"
              + (": " + ", ".join(slower) if slower else "")
              + ". Every round is in `bench/timm_zoo_results.json`.", "",
              "Its first run (2026-12-04) found four faults, each fixed and tested since: TNT gave "
              "wrong results (a [1, C, H, W] position embedding added after a convolution over a "
              "batch, a broadcast oneDNN 2.6 gets wrong: docs/library.md), NF-ResNet-26 NaN (a "
              "ReduceMean over a unit axis and the row, without keepdims, wrote part of its output; "
              "`tests/python/test_reductions.py`) and then 0.15x ONNX Runtime (its weights, "
              "standardized in forward, did not fold: ReduceMean and BatchNormalization now "
              "evaluate), and ConvNeXt-V2's compile never ended (channels_last sank one Transpose "
              "forever). MobileOne and RepVGG were re-measured once their training-time branches "
              "(parallel convolutions summed) became one convolution each (docs/library.md): "
              "MobileOne-S0 had been 0.88x ONNX Runtime, RepVGG-A0 1.23x.", ""]
    return lines


def main():
    import timm

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store bench/timm_zoo_results.json")
    ap.add_argument("--update", action="store_true",
                    help="replace only the measured models' rows of bench/timm_zoo_results.json")
    ap.add_argument("models", nargs="*", help="a subset (default: all)")
    args = ap.parse_args()
    if args.write and args.update:
        ap.error("--write and --update exclude each other")
    torch.set_num_threads(2)
    rows = measure(args.models or MODELS, args.rounds)
    from run_bench import machine
    r = {"date": datetime.date.today().isoformat(), "machine": machine(), "ort_threads_parked": True,
         "rounds": args.rounds, "pytorch": torch.__version__, "onnxruntime": ort.__version__,
         "timm": timm.__version__, "rows": rows}
    path = os.path.join(HERE, "timm_zoo_results.json")
    if args.update:
        r = stored_with(path, r, ("machine", "onnxruntime", "pytorch", "timm"))
    print("\n".join(markdown(r)))
    if args.write or args.update:
        with open(path, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
