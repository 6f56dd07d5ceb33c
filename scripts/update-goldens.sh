#!/usr/bin/env bash
# Rewrites every golden file from the current build: the replay test's
# (tests/golden/replay/*/) and the lowering goldens (tests/golden/lowering/*.txt). Run it
# after an intended change to the kernel text, lowering, fusion or code generation, review
# the diff (git diff tests/golden), and commit it with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
WEFT_UPDATE_GOLDENS=1 ./build/tests/replay_test --gtest_filter=Replay.GeneratedCodeMatchesGoldens
WEFT_UPDATE_GOLDENS=1 ./build/tests/lowering_golden_test --gtest_filter=LoweringGoldens.KernelsMatchGoldens
git status --short tests/golden
