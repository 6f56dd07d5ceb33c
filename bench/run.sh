#!/usr/bin/env bash
# Benchmarks Weft beside its CPU peers (ONNX Runtime, PyTorch eager and torch.compile, oneDNN
# primitives) and writes docs/benchmarks.md. One command from a fresh clone: bench/run.sh (it runs
# scripts/setup.sh and scripts/build.sh first when Weft is not built).
# Benchmark-only dependencies (the onnxruntime, torch and torchvision wheels from PyPI) live in
# bench/.venv, never in Weft.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/tools/weft/weft ]] || { ./scripts/setup.sh && ./scripts/build.sh; }
[[ -x bench/.venv/bin/python ]] || python3 -m venv bench/.venv
# Also completes a venv made before the PyTorch peer moved into it (it then had only onnxruntime).
bench/.venv/bin/python -c 'import onnxruntime, numpy, torch, torchvision, onnx, onnxscript, transformers, diffusers, timm' 2>/dev/null ||
  bench/.venv/bin/pip install --quiet onnxruntime numpy torch torchvision onnx==1.23.2 onnxscript transformers diffusers timm
mkdir -p build/bench
c++ -O3 -march=native -fopenmp -o build/bench/bandwidth bench/bandwidth.cc
build/bench/bandwidth > build/bench/bandwidth.json
cat build/bench/bandwidth.json
# The oneDNN peer (Debian's libdnnl-dev); if it does not build, its column says n/a.
c++ -O3 -march=native -fopenmp -o build/bench/dnnl_peer bench/dnnl_peer.cc -ldnnl ||
  { echo "bench/run.sh: bench/dnnl_peer.cc did not build; no oneDNN column" >&2; rm -f build/bench/dnnl_peer; }
# Models again when make_models.py or bench_cases.py changed since they were made (or none were):
# make_models.py writes the marker .made last.
made=build/bench/models/.made
[[ -f $made && $made -nt bench/make_models.py && $made -nt bench/bench_cases.py ]] ||
  /usr/bin/python3 bench/make_models.py build/bench/models
/usr/bin/python3 bench/fusion_bench.py build/tools/weft/weft build/bench/fusion_models
/usr/bin/python3 bench/plan_bench.py build/tools/weft/weft --keep build/bench/plan_models --write
/usr/bin/python3 bench/tune_bench.py build/tools/weft/weft build/bench/models --write
/usr/bin/python3 bench/compile_bench.py build/tools/weft/weft build/bench/models --write
# Gelu-20, RMSNormalization-23, RotaryEmbedding-23, Attention-23 (models written by onnx 1.23.2).
bench/.venv/bin/python bench/onnx_ops_bench.py build/tools/weft/weft --write
# Math functions (exp, log, tanh, erf, softplus, mish, the trigonometric ones, pow) likewise.
PYTHONPATH=build/python bench/.venv/bin/python bench/math_bench.py --write
# One dynamic-shape compile against one per shape, and ONNX Runtime (Weft's Python module).
PYTHONPATH=build/python bench/.venv/bin/python bench/dynamic_bench.py --write
# Real models (torchvision CNNs, a U-Net, a 1-D CNN, transformer layers) beside ORT and PyTorch.
PYTHONPATH=build/python bench/.venv/bin/python bench/cnn_bench.py --write
# Sequence convolutions (Conformer, QuartzNet, Whisper's and wav2vec2's front ends) likewise.
PYTHONPATH=build/python bench/.venv/bin/python bench/sequence_bench.py --write
# A YOLOv8n-style detector (C2f, SPPF, upsampling, the head's decoding) likewise.
PYTHONPATH=build/python bench/.venv/bin/python bench/yolo_bench.py --write
# Diffusion UNets (DDPM's, a small Stable Diffusion one), one denoising step, likewise.
PYTHONPATH=build/python bench/.venv/bin/python bench/diffusion_bench.py --write
# Not run here (about 10 minutes each, timm's 40): bench/zoo_bench.py (torchvision's zoo),
# bench/hf_bench.py and bench/hf_zoo.py (Hugging Face transformers), bench/timm_zoo.py (timm's
# image models) and bench/genai_bench.py (ONNX Runtime GenAI's
# language models; it needs `bench/.venv/bin/pip install onnxruntime-genai`), whose --write
# results run_bench.py includes.
# PyTorch (eager and torch.compile) runs through bench/torch_peer.py under bench/.venv's Python.
bench/.venv/bin/python bench/run_bench.py build/tools/weft/weft build/bench/models build/bench/bandwidth.json \
  build/bench/dnnl_peer
