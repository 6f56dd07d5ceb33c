#!/usr/bin/env bash
# Installs every build and test dependency of Weft: Debian packages (it runs `apt-get update`
# once), then a virtual environment .venv/ of pinned PyPI packages (pybind11 for the Python
# module, numpy 2, the current onnx and a current PyTorch for the tests), then the current ONNX node test suite,
# generated from that onnx into .cache/ (docs/conformance.md). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libonnx-dev libprotobuf-dev protobuf-compiler
  libisl-dev libdnnl-dev libglpk-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libdlpack-dev
  python3 python3-dev python3-venv python3-onnx python3-numpy python3-pytest
  libonnx-testdata
)
# Exporting real models in the end-to-end tests needs PyTorch: Debian's 1.13 (the TorchScript
# exporter) and PyPI's current one in .venv (below). Skip both with WEFT_SETUP_NO_TORCH=1.
if [[ "${WEFT_SETUP_NO_TORCH:-0}" != 1 ]]; then
  packages+=(python3-torch python3-torchvision)
fi

sudo_cmd=()
if [[ $(id -u) != 0 ]]; then sudo_cmd=(sudo); fi

"${sudo_cmd[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${packages[@]}"

# PyPI's packages, pinned. Debian's pybind11 2.10 predates numpy 2 (2.12 added it): a module
# built with it reads numpy 2's dtypes wrong and gives wrong results.
if [[ ! -x .venv/bin/python ]]; then /usr/bin/python3 -m venv .venv; fi
.venv/bin/pip install --disable-pip-version-check -q -r scripts/requirements.txt
if [[ "${WEFT_SETUP_NO_TORCH:-0}" != 1 ]]; then
  .venv/bin/pip install --disable-pip-version-check -q -r scripts/requirements-torch.txt
fi

# The node tests of the pinned onnx, written once (about 10 s and 60 MB).
onnx_version=$(.venv/bin/python -c 'import onnx; print(onnx.__version__)')
suite=.cache/onnx-$onnx_version
if [[ ! -f $suite/VERSION ]]; then
  rm -rf "$suite"
  .venv/bin/python tests/conformance/generate_node_suite.py "$suite"
fi
