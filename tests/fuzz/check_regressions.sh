#!/usr/bin/env bash
# Inputs that once crashed Weft: each must now give exit status 1 with exactly one "error:"
# line. regressions/*.onnx (found by import_fuzzer) through `weft inspect`; regressions/run/
# (found by mutating the attributes and input shapes of the ONNX node tests) through
# `weft run --fill random`. Usage: check_regressions.sh WEFT_BINARY
set -u
weft=$1
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
check() { # MODEL COMMAND...
  local model=$1 err rc
  shift
  err=$(timeout 60 "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc != 1 || $(printf '%s\n' "$err" | grep -c '') != 1 || $err != error:* ]]; then
    echo "FAIL $model: rc=$rc: $err"
    status=1
  else
    echo "ok $model: $err"
  fi
}
for model in "$here"/regressions/*.onnx; do
  check "$model" "$weft" inspect "$model"
done
for model in "$here"/regressions/run/*.onnx; do
  check "$model" "$weft" run "$model" --fill random --output-dir "$tmp"
done
exit $status
