#!/usr/bin/env bash
# Runs `weft inspect` on every model of the ONNX backend test data and checks that each
# exits 0, or 1 with exactly one "error:" line on stderr: never a crash, hang or usage error.
# Usage: inspect_sweep.sh WEFT_BINARY [SUMMARY_FILE]
set -u
weft=$1
summary=${2:-/dev/null}
data=/usr/share/libonnx-testdata/data
if [[ ! -d $data ]]; then
  echo "SKIP: $data is missing (install libonnx-testdata: scripts/setup.sh)"
  exit 77
fi
export weft
check_one() {
  local model=$1 err rc
  err=$(timeout 60 "$weft" inspect "$model" 2>&1 >/dev/null)
  rc=$?
  local lines
  lines=$(printf '%s' "$err" | grep -c '')
  if [[ $rc == 0 ]]; then
    echo "ok $model"
  elif [[ $rc == 1 && $lines == 1 && $err == error:* ]]; then
    echo "refused $model :: $err"
  else
    echo "BAD rc=$rc lines=$lines $model :: $(printf '%s' "$err" | head -c 400 | tr '\n' ' ')"
  fi
}
export -f check_one
find "$data/node" "$data/pytorch-converted" "$data/pytorch-operator" "$data/simple" \
  -name model.onnx | sort | xargs -P "$(nproc)" -I{} bash -c 'check_one {}' > "$summary.tmp" 2>&1
total=$(grep -c '' "$summary.tmp")
ok=$(grep -c '^ok ' "$summary.tmp")
refused=$(grep -c '^refused ' "$summary.tmp")
bad=$(grep -c '^BAD ' "$summary.tmp")
sort "$summary.tmp" > "$summary"; rm -f "$summary.tmp"
echo "inspect sweep: $total models: $ok ok, $refused refused with one clear error, $bad bad"
grep '^BAD ' "$summary" | head -20
[[ $total -ge 1072 && $bad == 0 ]]
