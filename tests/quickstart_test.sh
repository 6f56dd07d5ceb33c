#!/usr/bin/env bash
# The README's Python and C++ quickstarts, exactly as written there, from the repository root.
# Usage: quickstart_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
cd "$1"
build=$2
out=$(PYTHONPATH="$build/python" /usr/bin/python3 examples/quickstart.py)
grep -q "output y float32 (2, 128, 64)" <<<"$out" || { echo "python quickstart: $out"; exit 1; }
exe=$(mktemp)
trap 'rm -f "$exe"' EXIT
c++ -std=c++17 -Iinclude examples/quickstart.cc -L"$build/lib" -lweft -Wl,-rpath,"$build/lib" -o "$exe"
out=$("$exe" examples/attention_block.onnx)
grep -q "y: f32\[2,128,64\]" <<<"$out" || { echo "C++ quickstart: $out"; exit 1; }
echo "quickstarts ok"
