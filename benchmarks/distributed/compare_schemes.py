#!/usr/bin/env python3
"""Training throughput of several --distributed schemes side by side, e.g. allreduce
against allreduce:overlap (the step time with and without overlap).

Each scheme trains the same model and data on the same ranks; the runs are
interleaved (A, B, A, B, ...) so drift hits every scheme alike. Reported: samples/s
of all ranks (median, min, max) and each scheme's ratio of median step time to the
first scheme's, with the range of the per-round ratios.

  benchmarks/distributed/compare_schemes.py --deep500 build/recipes/deep500 \
      --schemes allreduce,allreduce:overlap --ranks 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deep500", default="build/recipes/deep500", help="the deep500 program")
    p.add_argument("--mpirun", default="mpirun", help="the MPI launcher")
    p.add_argument("--schemes", default="allreduce,allreduce:overlap",
                   help="comma-separated --distributed schemes; the first is the baseline")
    p.add_argument("--ranks", type=int, default=2, help="MPI ranks")
    p.add_argument("--model", default="lenet5", help="built-in model")
    p.add_argument("--batch", type=int, default=32, help="per-rank batch")
    p.add_argument("--samples", type=int, default=16384, help="training samples")
    p.add_argument("--threads", type=int, default=1, help="executor threads per rank")
    p.add_argument("--repetitions", type=int, default=5, help="rounds (one run per scheme each)")
    p.add_argument("--json", help="write the results here")
    return p.parse_args()


def run(a, scheme, out):
    cmd = [a.mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(a.ranks), a.deep500,
           "train", "--model", a.model, "--dataset", "fashion-mnist", "--subset", str(a.samples),
           "--test-subset", "256", "--batch-size", str(a.batch), "--threads", str(a.threads),
           "--prefetch-threads", "0", "--no-progress", "--distributed", scheme,
           "--metrics-json", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=1800)
    if r.returncode != 0:
        sys.exit(f"compare_schemes.py: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}")
    return json.load(open(out))["summary"]["samples_per_second"]


def main():
    a = parse_args()
    schemes = a.schemes.split(",")
    rates = {s: [] for s in schemes}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repetitions):
            for s in schemes:
                rates[s].append(run(a, s, os.path.join(tmp, "m.json")))
    base = schemes[0]
    rows = []
    print(f"{a.model}, {a.ranks} ranks x batch {a.batch}, {a.samples} samples, "
          f"{a.repetitions} interleaved rounds")
    print(f"{'scheme':>24} {'samples/s':>10} {'[min, max]':>18} {'step time / ' + base:>22}")
    for s in schemes:
        # Step time is inverse to throughput: ratio per round = base rate / this rate.
        per_round = [b / x for b, x in zip(rates[base], rates[s])]
        row = {"scheme": s, "samples_per_second": rates[s],
               "median": statistics.median(rates[s]),
               "step_time_ratio": {"median": statistics.median(per_round),
                                   "min": min(per_round), "max": max(per_round)}}
        rows.append(row)
        spread = f"[{min(rates[s]):.0f}, {max(rates[s]):.0f}]"
        r = row["step_time_ratio"]
        ratio = f"{r['median']:.3f} [{r['min']:.3f}, {r['max']:.3f}]"
        print(f"{s:>24} {row['median']:>10.0f} {spread:>18} {ratio:>22}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "ranks": a.ranks, "batch": a.batch,
                       "samples": a.samples, "schemes": rows}, f, indent=1)


if __name__ == "__main__":
    main()
