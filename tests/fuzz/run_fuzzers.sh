#!/bin/sh
# Runs every libFuzzer harness of tests/fuzz for SECONDS on seed corpora
# that make_seeds.py generates (.npy/.npz from numpy, HDF5 datasets and
# checkpoints from fuzz_write_seeds, .pb files and models of
# libonnx-testdata, IDX and CIFAR records, shape files and option text,
# recipes and results),
# keeping each harness's corpus in WORK/corpus.
# Fails on any finding (a crash, a sanitizer report, a leak, a timeout, an
# input over the RSS limit); the input is left in WORK/findings. The
# harnesses come from an address build (scripts/sanitize.sh build address
# BUILD), which this script makes when BUILD has none.
# SECONDS "ci" (ctest fuzz_readers) runs a fixed number of inputs per
# harness from a fixed seed: the same inputs on every machine, so CI fails
# only when a change breaks a reader, not when a random run gets lucky; new
# bugs are the longer runs' job: run_fuzzers.sh BUILD WORK 600 [HARNESS...].
# SECONDS "replay" (ctest fuzz_replay, the regular build's harnesses,
# tests/fuzz/replay_main.cc) runs every harness once on each seed input,
# past findings included, without coverage guidance or sanitizers.
# Usage: run_fuzzers.sh BUILD_DIR WORK_DIR SECONDS|ci|replay [HARNESS...]
set -eu
build=$1 work=$2 seconds=$3
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
harnesses=${*:-npy tensor_proto sizes model datasets checkpoint cli_text recipe}
mkdir -p "$work/findings"
if [ "$seconds" != replay ] && [ ! -x "$build/tests/fuzz/fuzz_model" ]; then
  bash "$src/scripts/sanitize.sh" build address "$build"
fi

seeds="$work/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
/usr/bin/python3 "$src/tests/fuzz/make_seeds.py" "$seeds" "$build/tests/fuzz/fuzz_write_seeds"

export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp"
# Inputs per harness in ci mode: about 10-20 s each on a 2-core VM.
ci_runs() {
  case $1 in
    npy) echo 200000 ;; tensor_proto | sizes) echo 100000 ;; cli_text) echo 50000 ;;
    recipe) echo 20000 ;;
    datasets) echo 2000 ;; checkpoint) echo 200 ;;
    model) echo 150000 ;; *) echo 1000 ;;
  esac
}
status=0
for harness in $harnesses; do
  if [ "$seconds" = replay ]; then
    "$build/tests/fuzz/fuzz_$harness" "$seeds/$harness" || { echo "fuzz_$harness: FINDING"; status=1; }
    continue
  fi
  corpus="$work/corpus/$harness"
  mkdir -p "$corpus"
  if [ "$seconds" = ci ]; then
    bound="-seed=1 -runs=$(ci_runs "$harness") -max_total_time=300"
  else
    bound="-max_total_time=$seconds"
  fi
  # shellcheck disable=SC2086
  if "$build/tests/fuzz/fuzz_$harness" "$corpus" "$seeds/$harness" $bound \
       -timeout=10 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$work/findings/$harness-" \
       > "$work/$harness.log" 2>&1; then
    # Inputs that crashed a child process the harness survived (the HDF5
    # reader's probe, deep/child_process.h) are not findings.
    rm -f "$work/findings/$harness-"*
    execs=$(grep -o 'Done [0-9]* runs' "$work/$harness.log" | tail -1 | grep -o '[0-9][0-9]*' || true)
    echo "fuzz_$harness: ${execs:-?} executions ($bound), corpus $(ls "$corpus" | wc -l) inputs, no finding"
  else
    echo "fuzz_$harness: FINDING (input in $work/findings):"
    tail -40 "$work/$harness.log"
    status=1
  fi
done
exit $status
