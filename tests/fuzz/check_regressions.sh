#!/usr/bin/env bash
# Inputs that once crashed Weft (found by import_fuzzer): each must now give exit status 1
# with exactly one "error:" line. Usage: check_regressions.sh WEFT_BINARY
set -u
weft=$1
status=0
for model in "$(dirname "$0")"/regressions/*.onnx; do
  err=$(timeout 60 "$weft" inspect "$model" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc != 1 || $(printf '%s\n' "$err" | grep -c '') != 1 || $err != error:* ]]; then
    echo "FAIL $model: rc=$rc: $err"
    status=1
  else
    echo "ok $model: $err"
  fi
done
exit $status
