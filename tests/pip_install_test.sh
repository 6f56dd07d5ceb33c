#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment (PyPI's packages only: no Debian python3-*
# modules), then, from outside the checkout, the README's Python quickstart, the installed
# `weft` CLI, outputs taken by np.from_dlpack without a copy, and the session and DLPack tests
# (an onnxruntime script with its import swapped among them).
# Usage: pip_install_test.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/v"
"$tmp/v/bin/pip" install --quiet --disable-pip-version-check "$src"
cd "$tmp"
out=$(cd "$src" && "$tmp/v/bin/python" examples/quickstart.py)
grep -q "output y float32 (2, 128, 64)" <<<"$out" || { echo "python quickstart: $out"; exit 1; }
ops=$("$tmp/v/bin/weft" ops) # whole, before grep -q (see install_test.sh)
grep -q "^Softmax " <<<"$ops" || { echo "installed CLI: no ops"; exit 1; }
"$tmp/v/bin/python" - "$src/examples/attention_block.onnx" <<'PY'
import sys
import numpy as np
import weft
assert weft.__file__.startswith(sys.prefix), weft.__file__  # the installed module
model = weft.compile(sys.argv[1])
y = model.run({"x": np.ones((2, 128, 64), np.float32)})["y"]
assert np.from_dlpack(y).ctypes.data == y.ctypes.data, "np.from_dlpack copied"
PY
# The ONNX Runtime script with its import swapped, and DLPack, against the installed module.
"$tmp/v/bin/pip" install --quiet --disable-pip-version-check pytest==9.2.0 onnx==1.23.2
WEFT_CLI="$tmp/v/bin/weft" "$tmp/v/bin/python" -m pytest -q -p no:cacheprovider \
  "$src/tests/python/test_session.py" "$src/tests/python/test_dlpack.py"
echo "pip install ok"
