#!/usr/bin/env bash
# The GPU checks and benchmarks of the GPU issues, as one script for a lent
# GPU machine (../shared/gpu/README.md): unpacks the bundle, runs the GPU
# tests, the NCCL tests, `deep500 info`, the op matrix's GPU rows, the
# DeepBench operators on cudnn against PyTorch on the same device (hot and
# cold, with and without transfers) and the GPU recipe. $OUT gets three
# files (the device tool brings back at most eight): steps.txt (each step's
# status and last lines), summary.md (the PyTorch comparisons) and
# results.tar.gz (every output). Every step runs even if one before it
# fails; each has a time limit. Without a GPU it says SKIPPED.
#   bash benchmarks/gpu/gpu_check.sh            # OUT defaults to ./gpu-out
# GPU_CHECK_FORCE=1 runs every step without a GPU (each then fails or skips:
# how the script itself is tried on a CPU machine).
set -u
FINAL=${OUT:-$PWD/gpu-out}
mkdir -p "$FINAL"
OUT=$(mktemp -d)
trap 'cp "$OUT/steps.txt" "$FINAL/" 2>/dev/null; cat "$OUT"/torch_*.md > "$FINAL/summary.md" 2>/dev/null; tar czf "$FINAL/results.tar.gz" -C "$OUT" . ; rm -rf "$OUT"' EXIT
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUNDLE=${BUNDLE:-$SRC/.gpu-bundle/d5.tar.xz}
W=${WORK:-/tmp/d5-work}
log() { echo "== $*" | tee -a "$OUT/steps.txt"; }
step() {  # step NAME SECONDS COMMAND...: runs it with a limit, records its status
  local name=$1 limit=$2; shift 2
  log "$name"
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc" >> "$OUT/steps.txt"
  tail -n 5 "$OUT/$name.txt"
}

if [ -f "$BUNDLE" ]; then
  rm -rf "$W" && mkdir -p "$W" && tar xJf "$BUNDLE" -C "$W"
  R="bash $W/d5/run.sh"
else
  echo "no bundle at $BUNDLE: using the build tree" | tee -a "$OUT/steps.txt"
  export PATH="$SRC/build/recipes:$SRC/build/tests:$PATH"
  R=""
fi
PY=${PYTHON:-python3}
if [ -z "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ] && [ -z "${GPU_CHECK_FORCE:-}" ]; then
  echo "SKIPPED: no NVIDIA GPU on this machine" | tee -a "$OUT/steps.txt"
  exit 0
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv \
  > "$OUT/nvidia-smi.txt" 2>&1

step gpu_tests 240 $R deep500_gpu_tests --gtest_output=json:"$OUT/gpu_tests.json"
step nccl_tests 60 $R mpirun --allow-run-as-root -np 1 deep500_nccl_tests
step info 30 $R deep500 info

D="$SRC/recipes/deepbench"
bench() {  # bench NAME OP ARGS...: deep500 op bench on cudnn, JSON kept
  local name=$1 op=$2; shift 2
  step "$name" 240 $R deep500 op bench "$op" --backend cudnn --backward --min-reps 20 \
    --min-time 0.1 --max-time 1 --json "$OUT/$name.json" "$@"
}
bench conv_hot Conv --shapes "$D/resnet50_conv.txt" --batch 1,32
bench gemm_hot Gemm --shapes "$D/training_gemm.txt"
bench conv_cold Conv --shapes "$D/resnet50_conv.txt" --batch 1 --cache cold
bench gemm_transfers Gemm --shapes "$D/training_gemm.txt" --include-transfers
for name in conv_hot gemm_hot conv_cold; do
  step "torch_$name" 300 $PY "$SRC/benchmarks/gpu/torch_peer.py" "$OUT/$name.json" \
    --markdown "$OUT/torch_$name.md" --json "$OUT/torch_$name.json"
done
OPS=Conv,Relu,Sigmoid,Tanh,MaxPool,AveragePool,Softmax,LogSoftmax,BatchNormalization,Gemm,MatMul
step op_matrix 240 $R deep500 op matrix --ops $OPS --backend cudnn,onednn,reference \
  --json "$OUT/matrix.json"
step recipe 300 $R deep500 run "$SRC/recipes/deepbench_conv_gemm_gpu.yaml" \
  --output-dir "$OUT/recipe" --no-progress --no-plots
cat "$OUT/steps.txt"
