#!/usr/bin/env python3
"""Strong and weak scaling of `deep500 train --distributed` on 1, 2, 4 ... ranks.

Strong scaling: a fixed global batch (--batch) split over N ranks, the same samples.
Weak scaling: a fixed per-rank batch (--batch) and N times the samples.
Each configuration runs --repetitions times, interleaved (1, 2, 4, 1, 2, 4, ...) so
that drift of the shared machine hits every rank count alike; the figure is the
training throughput (samples/s of all ranks, from --metrics-json), median and
range. Efficiency = throughput(N) / (N x throughput(1)).

  benchmarks/distributed/scaling.py --deep500 build/recipes/deep500 --ranks 1,2,4
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
    p.add_argument("--ranks", default="1,2,4", help="rank counts, e.g. 1,2,4")
    p.add_argument("--scheme", default="allreduce", help="--distributed scheme")
    p.add_argument("--model", default="lenet5", help="built-in model")
    p.add_argument("--batch", type=int, default=32,
                   help="strong: the global batch; weak: the per-rank batch")
    p.add_argument("--samples", type=int, default=8192,
                   help="strong: training samples; weak: samples per rank")
    p.add_argument("--repetitions", type=int, default=3, help="runs per configuration")
    p.add_argument("--json", help="write the results here")
    return p.parse_args()


def train(a, ranks, batch, samples, out):
    cmd = [a.mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(ranks), a.deep500,
           "train", "--model", a.model, "--dataset", "fashion-mnist", "--subset", str(samples),
           "--test-subset", "256", "--batch-size", str(batch), "--threads", "1",
           "--prefetch-threads", "0", "--no-progress", "--distributed", a.scheme,
           "--metrics-json", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=1800)
    if r.returncode != 0:
        sys.exit(f"scaling.py: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}")
    m = json.load(open(out))
    d = m["distributed"]["per_rank"]
    comm = max(x["communication_seconds"] for x in d)
    return m["summary"]["samples_per_second"], comm / max(m["summary"]["seconds"], 1e-9)


def study(a, kind, ranks, tmp):
    runs = {n: [] for n in ranks}
    comm = {n: [] for n in ranks}
    for rep in range(a.repetitions):
        for n in ranks:
            if kind == "strong":
                if a.batch % n:
                    sys.exit(f"scaling.py: --batch {a.batch} does not split over {n} ranks")
                batch, samples = a.batch // n, a.samples
            else:
                batch, samples = a.batch, a.samples * n
            rate, share = train(a, n, batch, samples, os.path.join(tmp, f"{kind}{n}.json"))
            runs[n].append(rate)
            comm[n].append(share)
    base = statistics.median(runs[ranks[0]]) / ranks[0]
    rows = []
    for n in ranks:
        med = statistics.median(runs[n])
        rows.append({"ranks": n, "samples_per_second": {"median": med, "min": min(runs[n]),
                                                         "max": max(runs[n]), "runs": runs[n]},
                     "efficiency": med / (n * base),
                     "communication_share": statistics.median(comm[n])})
    return rows


def main():
    a = parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    out = {"scheme": a.scheme, "model": a.model, "batch": a.batch, "samples": a.samples,
           "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("strong", "weak"):
            out[kind] = study(a, kind, ranks, tmp)
            print(f"{kind} scaling ({a.scheme}, {a.model}, "
                  f"{'global' if kind == 'strong' else 'per-rank'} batch {a.batch}):")
            print(f"{'ranks':>6} {'samples/s':>12} {'[min, max]':>20} {'efficiency':>11} "
                  f"{'comm share':>11}")
            for r in out[kind]:
                s = r["samples_per_second"]
                spread = f"[{s['min']:.0f}, {s['max']:.0f}]"
                print(f"{r['ranks']:>6} {s['median']:>12.0f} {spread:>20} "
                      f"{r['efficiency']:>11.2f} {r['communication_share']:>11.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
