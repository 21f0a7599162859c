#!/bin/sh
# `launcher: {kind: srun}` on a real SLURM cluster (slurm_cluster.sh: munged,
# slurmctld and slurmd on this machine, started here and stopped after):
# `deep500 run` of a 2-rank recipe starts `srun --ntasks 2 ...`, trains on
# 2 MPI ranks (Open MPI through SLURM's PMIx), and records one passed run
# whose context names the SLURM job; the job is in slurmctld's log.
# SKIPPED (exit 77, never counted as passed) only where the daemons cannot
# start, with the reason.
# Usage: slurm_launcher_test.sh DEEP500 SOURCE_DIR WORK_DIR
set -u
deep500=$1 source=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
sh "$here/slurm_cluster.sh" start "$work/cluster" || exit $?
trap 'sh "$here/slurm_cluster.sh" stop "$work/cluster"' EXIT
export SLURM_CONF="$work/cluster/slurm.conf"
fail() { echo "FAIL: $*"; exit 1; }

"$deep500" run "$source/recipes/fashion_mnist_lenet_allreduce.yaml" --output-dir "$work/results" \
  --no-progress --no-plots --set 'launcher={kind: srun, nodes: 1, tasks_per_node: 2, time: "00:10:00"}' \
  --set training.distributed.ranks=2 --set training.batch_size=16 --set training.epochs=1 \
  --set training.subset=6000 --set training.test_subset=1000 \
  --set 'criteria=[test_accuracy >= 0.5 by epoch 1]' > "$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ $rc -eq 0 ] || fail "deep500 run exited $rc"
grep -q "trains on 2 ranks: srun --ntasks 2 --nodes 1 --ntasks-per-node 2 --time 00:10:00 " \
  "$work/out.txt" || fail "the srun command is not the one the launcher section asks for"
grep -q "2 ranks (allreduce" "$work/out.txt" || fail "the run did not train on 2 ranks"
"$deep500" history --json --output-dir "$work/results" > "$work/history.json" || fail "history"
/usr/bin/python3 - "$work/history.json" <<'PY' || exit 1
import json, os, sys
runs = json.load(open(sys.argv[1]))
if len(runs) != 1 or runs[0]["status"] != "passed":
    sys.exit(f"FAIL: expected one passed run, got {[(r['id'], r['status']) for r in runs]}")
results = json.load(open(os.path.join(runs[0]["results_dir"], "results.json")))
job = results["context"].get("job", {})
if "SLURM_JOB_ID" not in job or job.get("SLURM_NTASKS") != "2":
    sys.exit(f"FAIL: the run's context does not name a SLURM job of 2 tasks: {job}")
if results["resolved_recipe"]["launcher"]["kind"] != "srun":
    sys.exit("FAIL: the resolved recipe's launcher is not srun")
print(f"ok: one passed run in SLURM job {job['SLURM_JOB_ID']} ({job['SLURM_NTASKS']} tasks)")
PY
grep -q "_job_complete: JobId=[0-9]* WEXITSTATUS 0" "$work/cluster/slurmctld.log" \
  || fail "slurmctld's log has no job that completed"
echo "passed"
