#!/usr/bin/env bash
# Configures and builds Weft and its tests into build/ (warnings are errors).
set -euo pipefail
cd "$(dirname "$0")/.."
# pybind11 comes from .venv (scripts/setup.sh): Debian's 2.10 is not numpy-2 safe.
pybind11=()
if [[ -x .venv/bin/python ]]; then
  pybind11=(-Dpybind11_DIR="$(.venv/bin/python -m pybind11 --cmakedir)")
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${pybind11[@]}" "$@"
cmake --build build --parallel "$(nproc)"
