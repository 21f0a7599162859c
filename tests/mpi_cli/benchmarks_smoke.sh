#!/bin/sh
# The Level 3 benchmarks end to end on small sizes (ctest mpi_benchmarks):
# bench_allreduce under mpirun on 2 ranks, the cost model fitted to its JSON,
# the scaling study on 1 and 2 ranks, and allreduce against allreduce:overlap.
# Usage: benchmarks_smoke.sh BENCH_ALLREDUCE DEEP500 MPIEXEC PYTHON SOURCE_DIR WORK_DIR
set -eu
bench=$1 deep500=$2 mpiexec=$3 python=$4 src=$5 work=$6
rm -rf "$work" && mkdir -p "$work"
"$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$bench" --sizes 65536,1048576 \
  --min-reps 3 --min-time 0.01 --gradients resnet18 --json "$work/ar2.json"
"$python" -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert d['ranks']==2 and len(d['bandwidth'])==2 and d['gradients']['tensors']==62, d" "$work/ar2.json"
"$python" "$src/benchmarks/distributed/cost_model.py" --bench "$work/ar2.json" --min-bytes 0 \
  --json "$work/cost.json" --plot "$work/cost"
test -s "$work/cost.png"
"$python" "$src/benchmarks/distributed/scaling.py" --deep500 "$deep500" --mpirun "$mpiexec" \
  --ranks 1,2 --repetitions 1 --samples 512 --json "$work/scaling.json"
"$python" -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert [r['ranks'] for r in d['strong']]==[1,2] and d['weak'][0]['efficiency']==1.0, d" \
  "$work/scaling.json"
"$python" "$src/benchmarks/distributed/compare_schemes.py" --deep500 "$deep500" --mpirun "$mpiexec" \
  --schemes allreduce,allreduce:overlap --ranks 2 --samples 512 --repetitions 1 \
  --json "$work/overlap.json"
"$python" -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert [s['scheme'] for s in d['schemes']]==['allreduce','allreduce:overlap'], d" "$work/overlap.json"
