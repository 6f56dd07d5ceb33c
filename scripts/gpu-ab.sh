#!/usr/bin/env bash
# A/B of two Weft builds on the GPU machine, in alternating runs (the machines are shared and
# noisy: never compare a build with a number measured in another call). Here, before the call:
#     cp .gpu-bundle/w.tar.xz /tmp/base.tar.xz            # the older build's bundle
#     ../shared/tools/gpu-bundle --with-testdata          # the newer build (rewrites .gpu-bundle)
#     mkdir -p .gpu-bundle/base && mv /tmp/base.tar.xz .gpu-bundle/base/w.tar.xz
# There, after `source .gpu-bundle/env.sh` (the newer build is $WEFT):
#     scripts/gpu-ab.sh [ROUNDS] MODEL.onnx ...
# Each round runs every model with the base build, then the new one: `weft bench --device
# cuda --kernels --iters 30 --fill random`, CUDA graphs off on both (WEFT_CUDA_GRAPHS=0,
# so that both time the same launches). Prints, per round, model and build, the
# device-resident median and the sum of the kernels' medians (ms), then each model's medians
# over the rounds and new / base. A model a build fails on prints its error instead.
set -uo pipefail
: "${WEFT:?source .gpu-bundle/env.sh first (it sets WEFT)}"
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=2
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
  rounds=$1
  shift
fi
[[ $# -gt 0 ]] || { echo "usage: scripts/gpu-ab.sh [ROUNDS] MODEL.onnx ..." >&2; exit 2; }
base_dir=/opt/weft-base
[[ -x $base_dir/w/bin/weft ]] || { mkdir -p "$base_dir" && tar xJf "$here/.gpu-bundle/base/w.tar.xz" -C "$base_dir"; }
base=$base_dir/w/bin/weft
[[ -x $base ]] || { echo "no base build: put its w.tar.xz in .gpu-bundle/base/" >&2; exit 2; }

measure() { # WEFT MODEL -> "resident_ms kernels_ms" or "error: ..."
  local out
  out=$(WEFT_CUDA_GRAPHS=0 timeout 120 "$1" bench "$2" --device cuda --kernels --iters 30 \
    --fill random 2>&1) || { out=$(printf '%s' "$out" | tail -1); echo "error: ${out#error: }"; return; }
  local resident kernels
  resident=$(printf '%s\n' "$out" | sed -n 's/^device-resident.*: median \([0-9.]*\) ms.*/\1/p')
  kernels=$(printf '%s\n' "$out" | awk '$1 == "total" { print $2 }')
  echo "${resident:-n/a} ${kernels:-n/a}"
}

declare -A results
for ((r = 1; r <= rounds; ++r)); do
  for model in "$@"; do
    for build in base new; do
      w=$base
      [[ $build == new ]] && w=$WEFT
      m=$(measure "$w" "$model")
      echo "round $r $(basename "$model" .onnx) $build: $m"
      results["$model|$build"]+="$m;"
    done
  done
done
echo
echo "model: base resident ms (rounds) -> new; new / base of the medians"
for model in "$@"; do
  python3 - "$(basename "$model" .onnx)" "${results["$model|base"]}" "${results["$model|new"]}" <<'EOF'
import statistics, sys
name, base, new = sys.argv[1:]
def resident(text):
    return [float(x.split()[0]) for x in text.split(";") if x and not x.startswith("error")
            and x.split()[0] != "n/a"]
b, n = resident(base), resident(new)
ratio = f"{statistics.median(n) / statistics.median(b):.2f}" if b and n else "n/a"
print(f"{name}: {'/'.join(f'{x:.3f}' for x in b)} -> {'/'.join(f'{x:.3f}' for x in n)}; {ratio}")
EOF
done
