#!/usr/bin/env bash
# The GPU checks of docs/status.md's CUDA items, as one prepared command for a machine with an
# NVIDIA GPU and none of Debian's packages. Here, after scripts/build.sh:
#     ../shared/tools/gpu-bundle --with-testdata      # packs the build into .gpu-bundle/
# There, from the checkout's root (the bundle carried along):
#     source .gpu-bundle/env.sh && scripts/gpu-check.sh [STAGE ...]
# Stages, all by default, each under its own time limit and each logged to $OUT/STAGE.log even
# when an earlier one failed:
#   device       nvidia-smi, and the device Weft opens
#   multiblock   tests/cuda_emulator_test.py on the GPU (WEFT_CUDA_EMULATOR=0)
#   conformance  the onnx 1.12 backend suite on the GPU against the CPU's expected failures
#   models       tests/models_test.py --device cuda (ResNet-18, MobileNetV2, encoder) vs PyTorch
#   bench        bench/gpu_bench.py: Weft vs PyTorch eager, torch.compile, CuPy/CUB; its
#                results go to $OUT/gpu_results.json (bench/gpu_results.json here)
#   session      tests/cuda_session_check.py: weft.InferenceSession with PyTorch's CUDA tensors
#                (run(), IOBinding by pointer, Weft's outputs, OrtValue.from_dlpack) over a
#                symbolic dim, against the CPU
#   fuzz         (not by default) 500 mutated node-test models run on the GPU: none may crash
#   dynamic      (not by default) tests/fuzz/dynamic_node_tests.py --device cuda: 300 node-test
#                models compiled once over symbols for CUDA, run device-resident at changed
#                shapes against the CPU's per-shape compiles
#   knobs        (not by default) bench/gpu_knobs.py: kernel times under each setting of the
#                CUDA code generation knobs; results to $OUT/knobs.json
#   tune         (not by default) bench/gpu_knobs.py --tune: each case tuned by weft tune
#                --device cuda, then default against tuned; results to $OUT/tune.json
#   timing       (not by default) bench/gpu_timing.py: kernel times between CUDA events beside
#                ncu's kernel durations, and the event method's own costs; to $OUT/timing.json
#   convs        (not by default) MobileNetV2 (make_models.py --gpu) under each way of running
#                its convolutions (default: 1x1 as cuBLAS GEMMs, depthwise as cuDNN calls;
#                WEFT_CUDA_CONV1X1=cudnn; WEFT_CUDA_GROUPED_CONV=generated), rounds alternating:
#                `weft bench --kernels` (per-kernel times) and the resident latency with CUDA
#                graphs off and on, to $OUT/convs/SETTING.ROUND.{kernels,nographs,graphs}.log
# GPU_BENCH_ARGS adds arguments to bench/gpu_bench.py (e.g. "--no-compile --iters 20"),
# GPU_KNOBS_ARGS to bench/gpu_knobs.py (e.g. "--rounds 1 --cases a,b").
# STAGE_LIMIT_S replaces every stage's time limit (seconds), to fit a session's device time.
# Prints one summary line per stage; exits 1 when a stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${WEFT:?source .gpu-bundle/env.sh first (it sets WEFT)}"
OUT=${OUT:-gpu-out}
PY=${PYTHON:-python3} # on the GPU machines, python3 has torch, onnx and cupy
mkdir -p "$OUT"
# 0: the GPU (WEFT_CUDA_EMULATOR=1 tries the script on the emulator, without a GPU; slow).
export WEFT_CUDA_EMULATOR=${WEFT_CUDA_EMULATOR:-0}
stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(device multiblock conformance models bench session)
failed=0
summary=()

run_stage() { # NAME LIMIT_S COMMAND...
  local name=$1 limit=${STAGE_LIMIT_S:-$2} start rc
  shift 2
  start=$(date +%s)
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  local took=$(($(date +%s) - start))
  local tail_line
  tail_line=$(grep -E "^(conformance|session check|[0-9]+ models of seed|[0-9]+ failures|[0-9]+ mutations|FAIL|UNEXPECTED|CRASH)" \
    "$OUT/$name.log" | head -3 | tr '\n' ' ')
  summary+=("$name: exit $rc in ${took} s ${tail_line}")
  [[ $rc -eq 0 ]] || failed=1
}

for stage in "${stages[@]}"; do
  case $stage in
    device)
      run_stage device 60 bash -c 'nvidia-smi; "$WEFT" bench examples/attention_block.onnx --device cuda --iters 5' ;;
    multiblock) run_stage multiblock 300 "$PY" tests/cuda_emulator_test.py "$WEFT" ;;
    conformance)
      run_stage conformance 400 "$PY" tests/conformance/run_conformance.py "$WEFT" --device cuda \
        --markdown "$OUT/conformance-cuda.md" ;;
    models) run_stage models 400 "$PY" tests/models_test.py "$WEFT" --device cuda ;;
    bench)
      # shellcheck disable=SC2086
      run_stage bench 540 "$PY" bench/gpu_bench.py --weft "$WEFT" --out "$OUT/gpu_results.json" \
        ${GPU_BENCH_ARGS:-} ;;
    session) run_stage session 120 "$PY" tests/cuda_session_check.py ;;
    dynamic)
      run_stage dynamic 500 "$PY" tests/fuzz/dynamic_node_tests.py --device cuda --count 300 \
        --runs 2 --data /usr/share/libonnx-testdata/data/node ;;
    fuzz)
      run_stage fuzz 300 "$PY" tests/fuzz/mutate_node_tests.py "$WEFT" --device cuda --count 500 \
        --out "$OUT" ;;
    knobs)
      # shellcheck disable=SC2086
      run_stage knobs 400 "$PY" bench/gpu_knobs.py --weft "$WEFT" --out "$OUT/knobs.json" \
        ${GPU_KNOBS_ARGS:-} ;;
    tune)
      # shellcheck disable=SC2086
      run_stage tune 500 "$PY" bench/gpu_knobs.py --weft "$WEFT" --out "$OUT/tune.json" \
        --settings "default:;" --tune 0.05 --rounds 2 ${GPU_KNOBS_ARGS:-} ;;
    timing)
      run_stage timing 300 "$PY" bench/gpu_timing.py --weft "$WEFT" --out "$OUT/timing.json" ;;
    convs)
      run_stage convs 300 bash -c '
        set -e; out=$1/convs; py=$2; mkdir -p "$out"
        "$py" bench/make_models.py "$out/models" --gpu
        m=$out/models/mobilenet_v2.onnx
        for round in 1 2 3; do
          for setting in default WEFT_CUDA_CONV1X1=cudnn WEFT_CUDA_GROUPED_CONV=generated; do
            knob=(); [[ $setting == default ]] || knob=("$setting")
            log=$out/${setting//=/_}.$round
            env "${knob[@]}" "$WEFT" bench "$m" --device cuda --kernels --iters 20 >"$log.kernels.log" 2>&1
            env "${knob[@]}" WEFT_CUDA_GRAPHS=0 "$WEFT" bench "$m" --device cuda --iters 20 >"$log.nographs.log" 2>&1
            env "${knob[@]}" "$WEFT" bench "$m" --device cuda --iters 20 >"$log.graphs.log" 2>&1
            echo "$setting round $round: graphs off / on: $(grep -h "device-resident" "$log.nographs.log" "$log.graphs.log" | tr "\n" " ")"
          done
        done' _ "$OUT" "$PY" ;;
    *) echo "unknown stage $stage (device, multiblock, conformance, models, bench, session, dynamic, fuzz, knobs, tune, timing, convs)" >&2
      exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
exit $failed
