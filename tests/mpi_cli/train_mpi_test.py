"""`deep500 train --distributed` under real mpirun (ctest label mpi).

1. Two ranks at batch 16 with allreduce (and with the parameter server) end
   with the parameters and the train loss of one process at batch 32, and
   rank 0 records both ranks' figures and their timeline (one track per
   rank).
2. A rank killed with SIGKILL mid-run ends the whole job, non-zero, within
   the communicator timeout, and the output names that rank.
3. A rank that stops answering (SIGSTOP) in a 3-rank job ends the job
   within the communicator timeout: the waiting rank names itself and the
   collective, the other waiting rank, and the silent rank.
4. `--communicator nccl` trains, or (without one GPU per rank) ends the job
   with one line naming the NCCL communicator and the reason.

Usage: train_mpi_test.py DEEP500 MPIEXEC
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

DEEP500, MPIEXEC = sys.argv[1], sys.argv[2]
MPI = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "2"]
TRAIN = [DEEP500, "train", "--model", "lenet5", "--dataset", "fashion-mnist", "--subset", "1024",
         "--test-subset", "256", "--optimizer", "momentum", "--hyper", "lr=0.05,momentum=0.9",
         "--threads", "1", "--prefetch-threads", "0", "--no-progress", "--executor", "reference"]


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}"
    return r.stdout


def params(folder):
    return {f: np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))}


def check_matches_one_process(tmp, scheme):
    alone, dist = os.path.join(tmp, "alone"), os.path.join(tmp, "dist-" + scheme)
    metrics = os.path.join(tmp, scheme + ".json")
    alone_metrics = os.path.join(tmp, scheme + "-alone.json")
    run(TRAIN + ["--batch-size", "32", "--save-params", alone, "--metrics-json", alone_metrics])
    timeline = os.path.join(tmp, scheme + "-timeline.json")
    out = run(MPI + TRAIN + ["--batch-size", "16", "--distributed", scheme,
                             "--save-params", dist, "--metrics-json", metrics,
                             "--timeline", timeline])
    assert out.count("deep500 train:") == 1, f"only rank 0 prints the summary:\n{out}"
    a, b = params(alone), params(dist)
    assert a.keys() == b.keys() and len(a) == 10, (a.keys(), b.keys())
    worst = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
    moved = max(float(np.max(np.abs(a[k]))) for k in a)
    assert moved > 0
    # Equal in exact arithmetic; in float32 the weight gradients are summed in
    # another order (two 16-row GEMMs and an allreduce, or one 32-row GEMM,
    # blocked by the CPU's ISA) and the steps carry the rounding on: 1e-3 of
    # the largest weight allows that, a lost or unaveraged rank's gradient does not fit.
    assert worst <= 1e-3 * moved, \
        f"{scheme}: parameters differ by {worst} from one process at batch 32"
    # The train loss is over both ranks' samples, as one process's is over all of them.
    loss_alone = json.load(open(alone_metrics))["summary"]["final_train_loss"]
    loss_dist = json.load(open(metrics))["summary"]["final_train_loss"]
    assert abs(loss_dist - loss_alone) <= 1e-4 * loss_alone, \
        f"{scheme}: train loss {loss_dist}, one process at batch 32 {loss_alone}"
    d = json.load(open(metrics))["distributed"]
    assert d["ranks"] == 2 and d["communicator"] == "mpi", d
    assert [r["steps"] for r in d["per_rank"]] == [32, 32], d
    assert all(r["bytes_sent"] > 0 for r in d["per_rank"]), d
    events = [e for e in json.load(open(timeline))["traceEvents"] if e["ph"] == "X"]
    assert {e["pid"] for e in events} == {0, 1}, "one timeline track per rank"
    assert sum(e["pid"] == 1 for e in events) >= 32, "rank 1's calls, one or more per step"
    print(f"{scheme}: 2 ranks x batch 16 = 1 process x batch 32 within {worst:.2e}")


def parent(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descends_from(pid, ancestor):
    for _ in range(8):
        pid = parent(pid)
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def rank_pid(rank, job):
    """The pid of the deep500 process that mpirun `job` started as `rank` (not
    another job's: ctest runs other MPI jobs at the same time)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if (DEEP500.encode() in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env
                and descends_from(int(pid), job)):
            return int(pid)
    return None


def signal_rank_one(sig, timeout, ranks=2):
    """Starts a long job, sends `sig` to rank 1 once it trains; returns
    (exit status, output, seconds from the signal to the end of the job)."""
    cmd = MPI[:-1] + [str(ranks), DEEP500, "train", "--model", "lenet5",
                      "--dataset", "fashion-mnist",
                      "--epochs", "50", "--batch-size", "8", "--no-progress", "--threads", "1",
                      "--distributed", "allreduce", "--comm-timeout", str(timeout)]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    pid = None
    for _ in range(200):
        pid = rank_pid(1, job.pid)
        if pid:
            break
        time.sleep(0.1)
    assert pid, "rank 1 never started"
    time.sleep(2)  # into training
    start = time.monotonic()
    os.kill(pid, sig)
    try:
        out, _ = job.communicate(timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        raise AssertionError(f"the job did not end after signal {sig} to rank 1")
    return job.returncode, out, time.monotonic() - start


def check_killed_rank_ends_the_job():
    timeout = 20
    rc, out, took = signal_rank_one(signal.SIGKILL, timeout)
    assert rc != 0, out
    assert "rank 1" in out, f"the output does not name rank 1:\n{out}"
    assert took <= timeout + 10, f"ended {took:.1f} s after the kill"
    print(f"killed rank 1: the job ended in {took:.1f} s, exit {rc}, naming rank 1")


def check_silent_rank_ends_the_job():
    timeout = 5
    rc, out, took = signal_rank_one(signal.SIGSTOP, timeout, ranks=3)
    assert rc != 0, out
    line = next(l for l in out.splitlines() if "did not complete" in l)
    waiting = [r for r in (0, 2) if f"rank {r} of 3" in line]
    assert len(waiting) == 2 and "did not complete within 5 s" in line, line
    assert "waiting too: rank " in line, f"names the other waiting rank: {line}"
    assert "no word from rank 1 within 2 s" in line, f"names the silent rank: {line}"
    assert took <= timeout + 15, f"ended {took:.1f} s after rank 1 stopped"
    print(f"stopped rank 1: the job ended in {took:.1f} s, exit {rc}: {line}")


def check_nccl_communicator():
    """`--communicator nccl` trains on one GPU per rank; without that, every
    rank ends with one line naming the NCCL communicator and why."""
    r = subprocess.run(MPI + TRAIN + ["--batch-size", "16", "--distributed", "allreduce",
                                      "--communicator", "nccl"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if r.returncode == 0:
        assert r.stdout.count("deep500 train:") == 1, r.stdout
        print("nccl: 2 ranks trained on NCCL")
        return
    assert r.returncode == 2, r.stdout
    # Each rank's error is one write(): lines of ranks failing together never
    # interleave into one garbled line.
    for l in r.stdout.splitlines():
        if "deep500:" in l:
            assert l.startswith("deep500: ") and l.count("deep500:") == 1, r.stdout
    line = next((l for l in r.stdout.splitlines() if "nccl communicator, rank" in l), None)
    assert line and line.startswith("deep500: error: rank "), r.stdout
    print(f"nccl without one GPU per rank: exit 2: {line}")


def check_bound_rank_counts_the_machine(tmp):
    """Under mpirun's core binding a rank's affinity is one core; a recipe's
    `cores >= 2` is about the machine, so one bound rank runs it."""
    recipe = os.path.join(os.path.dirname(__file__), "..", "..", "recipes", "fashion_mnist_mlp.yaml")
    out = run([MPIEXEC, "--allow-run-as-root", "-np", "1", "--bind-to", "core", DEEP500, "run",
               recipe, "--no-plots", "--no-progress", "--output-dir", os.path.join(tmp, "np1")])
    assert "deep500 run: passed" in out, out
    print("mpirun -np 1 --bind-to core: cores >= 2 met")


def check_interrupted_distributed_recipe(tmp):
    """Ctrl-C (SIGINT to `deep500 run`'s process group) of a recipe that
    started mpirun itself: the ranks stop after their batch, the run is
    recorded interrupted, and `deep500 run` exits 130 (mpirun alone exits 1)."""
    recipe = os.path.join(os.path.dirname(__file__), "..", "..", "recipes",
                          "fashion_mnist_lenet_allreduce.yaml")
    out_dir = os.path.join(tmp, "interrupted")
    # 2 ranks x batch 16: the global batch its reference ensemble was recorded at.
    job = subprocess.Popen([DEEP500, "run", recipe, "--set", "training.distributed.ranks=2",
                            "--set", "training.batch_size=16", "--no-plots", "--no-progress",
                            "--output-dir", out_dir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    for line in job.stdout:
        if "(training)" in line:
            break
    time.sleep(3)  # into the batches
    os.killpg(job.pid, signal.SIGINT)  # as a terminal's Ctrl-C
    out, _ = job.communicate(timeout=120)
    assert job.returncode == 130, f"exit {job.returncode}:\n{out}"
    assert "deep500 run: interrupted" in out, out
    print("interrupted 2-rank recipe: exit 130, recorded interrupted")


def check_reproduce_distributed_run(tmp):
    """`deep500 reproduce` of a 2-rank run starts mpirun as `run` does, and
    the rerun is the same bit for bit."""
    recipe = os.path.join(os.path.dirname(__file__), "..", "..", "recipes",
                          "fashion_mnist_lenet_allreduce.yaml")
    out_dir = os.path.join(tmp, "reproduce")
    sets = ["training.distributed.ranks=2", "training.epochs=1", "training.subset=1024",
            "training.test_subset=256", "criteria=[]"]
    first = subprocess.run([DEEP500, "run", recipe, "--no-plots", "--no-progress",
                            "--output-dir", out_dir] + [a for s in sets for a in ("--set", s)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert first.returncode == 0 and "run 1 in" in first.stdout, first.stdout
    out = run([DEEP500, "reproduce", "1", "--no-plots", "--no-progress", "--output-dir", out_dir])
    assert "trains on 2 ranks" in out and "reproduced bit for bit" in out, out
    print("reproduce of a 2-rank run: bit for bit")


with tempfile.TemporaryDirectory() as tmp:
    for scheme in ("allreduce", "ps"):
        check_matches_one_process(tmp, scheme)
    if os.cpu_count() >= 2:
        check_bound_rank_counts_the_machine(tmp)
    check_interrupted_distributed_recipe(tmp)
    check_reproduce_distributed_run(tmp)
check_killed_rank_ends_the_job()
check_silent_rank_ends_the_job()
check_nccl_communicator()
