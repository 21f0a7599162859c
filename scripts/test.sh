#!/usr/bin/env bash
# The test command: installs what is missing, builds, checks formatting and
# runs every ctest test (unit, onnx conformance floors, mpi, slow ...).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/bootstrap.sh
bash scripts/check_format.sh
# ctest runs tests side by side on purpose: the machine-wide measurement
# lock would make them take turns (its own tests turn it on for themselves).
export DEEP500_MEASUREMENT_LOCK=off
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 ${CTEST_ARGS:-}
