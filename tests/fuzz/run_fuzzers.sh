#!/bin/sh
# Builds the libFuzzer harnesses of tests/fuzz with clang and runs each for
# SECONDS on a seed corpus (generated: .npy files from numpy, .pb files from
# libonnx-testdata). Fails on any finding (a crash, a sanitizer report, a
# leak, a timeout, an input over the RSS limit); the input is left in
# WORK/findings. Longer runs: run_fuzzers.sh BUILD SRC WORK 36000.
# Usage: run_fuzzers.sh BUILD_DIR SOURCE_DIR WORK_DIR SECONDS
set -eu
build=$1 src=$2 work=$3 seconds=$4
mkdir -p "$work/findings"
env -u MAKEFLAGS cmake -S "$src/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
env -u MAKEFLAGS cmake --build "$build" > "$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }

seeds="$work/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/npy" "$seeds/tensor_proto" "$seeds/sizes"
/usr/bin/python3 - "$seeds/npy" <<'PY'
import sys, numpy as np
d = sys.argv[1]
for i, a in enumerate([np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64),
                       np.array(3.5), np.ones((1, 2, 2), np.float16), np.array([True, False]),
                       np.zeros((0, 4), np.float64), np.arange(6, dtype=np.uint8).reshape(2, 3).T]):
    np.save(f"{d}/seed{i}.npy", a)
PY
find /usr/share/libonnx-testdata/data/node -name '*.pb' | head -300 | while read -r f; do
  cp "$f" "$seeds/tensor_proto/$(echo "$f" | md5sum | cut -c1-12).pb"
done
for s in 4096 512K 1.5G 8GiB 2x3x224x224 9223372036854775807x2 -1x5 0x99999999999; do
  printf '%s' "$s" > "$seeds/sizes/$(printf '%s' "$s" | md5sum | cut -c1-12)"
done

status=0
for harness in npy tensor_proto sizes; do
  corpus="$work/corpus/$harness"
  mkdir -p "$corpus"
  if "$build/fuzz_$harness" "$corpus" "$seeds/$harness" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$work/findings/$harness-" \
       > "$work/$harness.log" 2>&1; then
    execs=$(grep -o 'Done [0-9]* runs' "$work/$harness.log" | tail -1 | grep -o '[0-9][0-9]*' || true)
    echo "fuzz_$harness: ${execs:-?} executions in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs, no finding"
  else
    echo "fuzz_$harness: FINDING (input in $work/findings):"
    tail -30 "$work/$harness.log"
    status=1
  fi
done
exit $status
