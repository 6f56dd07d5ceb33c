#!/usr/bin/env bash
# Installs every build and test dependency of Weft from Debian packages.
# Runs `apt-get update` once. Safe to re-run.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libisl-dev libdnnl-dev libglpk-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  python3 python3-dev pybind11-dev python3-onnx python3-numpy python3-pytest
  libonnx-testdata
)
# Exporting real models in the end-to-end tests needs PyTorch; skip with WEFT_SETUP_NO_TORCH=1.
if [[ "${WEFT_SETUP_NO_TORCH:-0}" != 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

sudo_cmd=()
if [[ $(id -u) != 0 ]]; then sudo_cmd=(sudo); fi

"${sudo_cmd[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
