#!/usr/bin/env bash
# Builds Weft and runs every test: unit tests, CLI tests, the inspect sweep over the ONNX
# backend test data, and the ResNet-18 export test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
