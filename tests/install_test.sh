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
# The executable found libweft in the prefix, not in the build tree. (Each output is taken
# whole before grep -q reads it: grep -q stops at its match, and under pipefail the writer's
# SIGPIPE would fail the pipe now and then.)
libs=$(ldd "$tmp/user/quickstart")
grep -q "$tmp/prefix/.*libweft.so" <<<"$libs" ||
  { echo "quickstart does not link the installed libweft:"; echo "$libs"; exit 1; }
ops=$("$tmp/prefix/bin/weft" ops)
grep -q "^Softmax " <<<"$ops" || { echo "installed CLI: no ops"; exit 1; }
echo "install ok"
