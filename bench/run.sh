#!/usr/bin/env bash
# Benchmarks Weft beside its CPU peers (ONNX Runtime, PyTorch eager, oneDNN primitives) and
# writes docs/benchmarks.md. One command from a fresh clone (after scripts/setup.sh):
# bench/run.sh
# Benchmark-only dependencies (the onnxruntime wheel) live in bench/.venv, never in Weft.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/tools/weft/weft ]] || ./scripts/build.sh
if [[ ! -x bench/.venv/bin/python ]]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet onnxruntime numpy
fi
mkdir -p build/bench
c++ -O3 -march=native -fopenmp -o build/bench/bandwidth bench/bandwidth.cc
build/bench/bandwidth > build/bench/bandwidth.json
cat build/bench/bandwidth.json
# The oneDNN peer (Debian's libdnnl-dev); if it does not build, its column says n/a.
c++ -O3 -march=native -fopenmp -o build/bench/dnnl_peer bench/dnnl_peer.cc -ldnnl ||
  { echo "bench/run.sh: bench/dnnl_peer.cc did not build; no oneDNN column" >&2; rm -f build/bench/dnnl_peer; }
[[ -f build/bench/models/resnet18.onnx ]] || /usr/bin/python3 bench/make_models.py build/bench/models
/usr/bin/python3 bench/fusion_bench.py build/tools/weft/weft build/bench/fusion_models
/usr/bin/python3 bench/plan_bench.py build/tools/weft/weft --keep build/bench/plan_models --write
# PyTorch eager runs through bench/torch_peer.py under /usr/bin/python3 (Debian's python3-torch).
bench/.venv/bin/python bench/run_bench.py build/tools/weft/weft build/bench/models build/bench/bandwidth.json \
  build/bench/dnnl_peer
