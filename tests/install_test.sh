#!/usr/bin/env bash
# `cmake --install` of the build tree, then the C++ quickstart built against the installed
# tree by a separate CMake project (find_package(weft CONFIG)), and the installed CLI.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/install" -B "$tmp/user" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DQUICKSTART="$src/examples/quickstart.cc" >/dev/null
cmake --build "$tmp/user" >/dev/null
out=$("$tmp/user/quickstart" "$src/examples/attention_block.onnx")
grep -q "y: f32\[2,128,64\]" <<<"$out" || { echo "installed C++ quickstart: $out"; exit 1; }
# The executable found libweft in the prefix, not in the build tree.
ldd "$tmp/user/quickstart" | grep -q "$tmp/prefix/.*libweft.so" ||
  { echo "quickstart does not link the installed libweft:"; ldd "$tmp/user/quickstart"; exit 1; }
"$tmp/prefix/bin/weft" ops | grep -q "^Softmax " || { echo "installed CLI: no ops"; exit 1; }
echo "install ok"
