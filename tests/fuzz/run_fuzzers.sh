#!/bin/sh
# Runs every libFuzzer harness of tests/fuzz for SECONDS on seed corpora
# that make_seeds.py generates (.npy/.npz from numpy, HDF5 datasets and
# checkpoints from fuzz_write_seeds, .pb files and models of
# libonnx-testdata, IDX and CIFAR records, shape files and option text),
# keeping each harness's corpus in WORK/corpus.
# Fails on any finding (a crash, a sanitizer report, a leak, a timeout, an
# input over the RSS limit); the input is left in WORK/findings. The
# harnesses come from an address build (scripts/sanitize.sh build address
# BUILD), which this script makes when BUILD has none.
# Longer runs: run_fuzzers.sh BUILD WORK 600 [HARNESS...].
# Usage: run_fuzzers.sh BUILD_DIR WORK_DIR SECONDS [HARNESS...]
set -eu
build=$1 work=$2 seconds=$3
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
harnesses=${*:-npy tensor_proto sizes model datasets checkpoint cli_text}
mkdir -p "$work/findings"
if [ ! -x "$build/tests/fuzz/fuzz_model" ]; then
  bash "$src/scripts/sanitize.sh" build address "$build"
fi

seeds="$work/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
/usr/bin/python3 "$src/tests/fuzz/make_seeds.py" "$seeds" "$build/tests/fuzz/fuzz_write_seeds"

export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp"
status=0
for harness in $harnesses; do
  corpus="$work/corpus/$harness"
  mkdir -p "$corpus"
  if "$build/tests/fuzz/fuzz_$harness" "$corpus" "$seeds/$harness" -max_total_time="$seconds" \
       -timeout=10 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$work/findings/$harness-" \
       > "$work/$harness.log" 2>&1; then
    # Inputs that crashed a child process the harness survived (the HDF5
    # reader's probe, deep/child_process.h) are not findings.
    rm -f "$work/findings/$harness-"*
    execs=$(grep -o 'Done [0-9]* runs' "$work/$harness.log" | tail -1 | grep -o '[0-9][0-9]*' || true)
    echo "fuzz_$harness: ${execs:-?} executions in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs, no finding"
  else
    echo "fuzz_$harness: FINDING (input in $work/findings):"
    tail -40 "$work/$harness.log"
    status=1
  fi
done
exit $status
