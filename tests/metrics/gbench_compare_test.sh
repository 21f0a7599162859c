#!/bin/sh
# Two `deep500 op bench --format gbench` runs compared by Google Benchmark's
# own compare.py (Debian libbenchmark-tools): the output must be JSON that
# tool reads, with one row per (problem, backend, pass), the U test over the
# repetitions and the aggregates.
# Usage: gbench_compare_test.sh DEEP500 PYTHON WORK_DIR
set -eu
deep500=$1 python=$2 work=$3
compare=/usr/share/benchmark/compare.py
[ -f "$compare" ] || { echo "gbench compare test: $compare missing (apt install libbenchmark-tools)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
for run in 1 2; do
  "$deep500" op bench Relu --input x:float32:Nx64 --batch 4 --backward --min-reps 12 --max-reps 12 \
    --min-time 0 --warmup 1 --format gbench > "$work/run$run.json" 2> "$work/run$run.err"
done
"$python" "$compare" --no-color -a benchmarks "$work/run1.json" "$work/run2.json" > "$work/compare.txt"
for row in "Relu/x:float32\[4,64\]/reference/forward_pvalue .*U Test, Repetitions: 12 vs 12" \
           "Relu/x:float32\[4,64\]/reference/backward_median" "OVERALL_GEOMEAN"; do
  grep -q "$row" "$work/compare.txt" || { cat "$work/compare.txt"; echo "gbench compare test: no row '$row'" >&2; exit 1; }
done
echo "gbench compare test: passed"
