#!/usr/bin/env bash
# Rewrites the golden files of the replay test (tests/golden/replay/*/) from the current
# build: run it after an intended change to lowering, fusion or code generation, review the
# diff (git diff tests/golden), and commit it with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
WEFT_UPDATE_GOLDENS=1 ./build/tests/replay_test --gtest_filter=Replay.GeneratedCodeMatchesGoldens
git status --short tests/golden
