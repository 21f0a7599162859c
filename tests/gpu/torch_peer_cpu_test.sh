#!/bin/sh
# benchmarks/gpu/torch_peer.py end to end on the CPU: deep500's results (op
# bench --json, oneDNN) rebuilt and timed in PyTorch from their labels alone,
# forward and backward, one ratio per row and a geometric mean per pass.
# Usage: torch_peer_cpu_test.sh DEEP500 PYTHON SOURCE_DIR WORK_DIR
set -eu
deep500=$1 python=$2 src=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
"$deep500" op bench Conv --input x:float32:1x8x12x12 --input w:float32:16x8x3x3 \
  --attr pads=1,1,1,1 --attr strides=2,2 --backend onednn --backward --min-reps 3 \
  --min-time 0 --json "$work/conv.json" > /dev/null
"$deep500" op bench Gemm --input a:float32:32x16 --input b:float32:24x16 --input c:float32:24 \
  --attr transB=1 --attr alpha=0.5 --backend onednn --backward --min-reps 3 --min-time 0 \
  --json "$work/gemm.json" > /dev/null
"$python" "$src/benchmarks/gpu/torch_peer.py" "$work/conv.json" "$work/gemm.json" --device cpu \
  --reps 5 --warmup 1 --json "$work/peer.json" > "$work/peer.txt"
"$python" - "$work/peer.json" <<'PY'
import json, sys
peer = json.load(open(sys.argv[1]))
rows = {(r["op"], r["pass"]) for r in peer["rows"]}
assert rows == {(o, p) for o in ("Conv", "Gemm") for p in ("forward", "backward")}, rows
assert all(r["torch_s"] > 0 and r["ratio"] > 0 for r in peer["rows"]), peer["rows"]
assert set(peer["geomean"]) == {"Conv backward", "Conv forward", "Gemm backward", "Gemm forward"}
PY
