#!/usr/bin/env python3
"""An alpha-beta cost model of the Level 3 schemes, fitted here and extrapolated past one machine.

1. Fit: the ring allreduce time T(p, n) = 2(p-1) alpha + 2(p-1)/p n beta to the
   communicator's measured allreduce times (bench_allreduce --json, one file per
   rank count) by least squares on relative error; print every point's error.
2. Predict, for documented networks (a latency alpha_net and a bandwidth, to which
   the host's fitted per-byte cost is added), each scheme's communication time per
   step and the weak-scaling efficiency compute / (compute + communication) from 8
   to 1024 ranks, for the gradient sizes and measured compute times of LeNet-5 and
   ResNet-20; write the table (JSON) and a plot (matplotlib, SVG and PNG).
3. Fusion: predict per-tensor over fused allreduce time of ResNet-18's gradients
   (the allreduce scheme's buckets) on this host and on those networks.

  benchmarks/distributed/cost_model.py --bench ar2.json,ar4.json --plot docs/distributed-cost-model
"""
import argparse
import json
import math
import sys

import numpy as np

# Documented networks: per-message latency (s) and link bandwidth (bytes/s).
NETWORKS = {
    "25 Gb/s Ethernet (TCP)": {"alpha": 20e-6, "bandwidth": 25e9 / 8},
    "100 Gb/s InfiniBand EDR": {"alpha": 2e-6, "bandwidth": 100e9 / 8},
}
# Gradient bytes and one training step's compute time at one rank (measured
# on this machine: LeNet-5 at batch 32 by benchmarks/distributed/scaling.py,
# 26,117 samples/s; ResNet-20 at batch 128 in docs/training-benchmark.md, ~250 ms).
WORKLOADS = {
    "LeNet-5 (batch 32/rank)": {"bytes": 61706 * 4, "compute": 32 / 26117},
    "ResNet-20 (batch 128/rank)": {"bytes": 272474 * 4, "compute": 0.250},
}
RANKS = [8, 16, 32, 64, 128, 256, 512, 1024]


def resnet18_gradient_bytes():
    """ResNet-18's trainable tensors (torchvision), as bench_allreduce --gradients
    resnet18 allreduces them: convolutions, batch-norm scales and shifts, the
    classifier; float32 bytes in parameter order."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    c_in = 64
    for c_out in (64, 128, 256, 512):
        for block in range(2):
            first_in = c_in if block == 0 else c_out
            shapes += [(c_out, first_in, 3, 3), (c_out,), (c_out,), (c_out, c_out, 3, 3),
                       (c_out,), (c_out,)]
            if block == 0 and c_in != c_out:
                shapes += [(c_out, c_in, 1, 1), (c_out,), (c_out,)]
            c_in = c_out
    shapes += [(1000, 512), (1000,)]
    return [4 * math.prod(s) for s in shapes]


def fusion_buckets(tensor_bytes, first=1 << 20, rest=25 << 20):
    """Bucket sizes of the allreduce scheme: reverse order, a small first bucket."""
    buckets, limit = [0], first
    for b in reversed(tensor_bytes):
        if buckets[-1] and buckets[-1] + b > limit:
            buckets.append(0)
            limit = rest
        buckets[-1] += b
    return buckets


def fusion_ratio(p, tensor_bytes, alpha, beta):
    """Per-tensor over fused allreduce time of one gradient set (fused without
    copies: gradients produced in their buckets)."""
    ring = lambda n: 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta
    return sum(map(ring, tensor_bytes)) / sum(map(ring, fusion_buckets(tensor_bytes)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", required=True,
                   help="bench_allreduce --json files, comma-separated (2 and 4 ranks)")
    p.add_argument("--min-bytes", type=int, default=65536,
                   help="fit only sizes from this up (default 64 KiB)")
    p.add_argument("--max-bytes", type=int, default=16 << 20,
                   help="fit only sizes up to this (default 16 MiB: larger messages leave the "
                        "caches and run at memory bandwidth, another regime)")
    p.add_argument("--json", help="write the fit and the predictions here")
    p.add_argument("--plot", help="write PLOT.svg and PLOT.png (efficiency against ranks)")
    return p.parse_args()


def load_points(files, min_bytes, max_bytes):
    points = []
    for f in files:
        data = json.load(open(f))
        for row in data["bandwidth"]:
            if min_bytes <= row["bytes"] <= max_bytes:
                points.append((data["ranks"], row["bytes"], row["ours_seconds"]["median"]))
    if len(points) < 2:
        sys.exit("cost_model.py: fewer than 2 measured points to fit")
    return points


def ring_terms(p, n):
    return 2.0 * (p - 1), 2.0 * (p - 1) / p * n


def fit(points):
    a = np.array([[*ring_terms(p, n)] for p, n, _ in points])
    t = np.array([s for _, _, s in points])
    # Relative least squares: divide every row by its measured time.
    coef, *_ = np.linalg.lstsq(a / t[:, None], np.ones_like(t), rcond=None)
    alpha, beta = float(max(coef[0], 0.0)), float(coef[1])
    rows = []
    for (p, n, s), terms in zip(points, a):
        model = alpha * terms[0] + beta * terms[1]
        rows.append({"ranks": p, "bytes": n, "measured": s, "model": model,
                     "error": (model - s) / s})
    return alpha, beta, rows


def scheme_seconds(scheme, p, n, alpha, beta):
    """Communication seconds per step of `scheme` on p ranks, n gradient bytes."""
    ring = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta
    if scheme == "allreduce":
        return ring
    if scheme == "ps (1 server)":  # every gradient in, every parameter out, one link
        return 2 * alpha + 2 * (p - 1) * n * beta
    if scheme == "ps (p servers)":  # sharded over every rank: reduce-scatter + allgather
        return ring
    if scheme == "local-sgd:4":
        return ring / 4
    if scheme == "dpsgd":  # two neighbours, independent of p
        return 2 * (alpha + n * beta)
    raise ValueError(scheme)


SCHEMES = ["allreduce", "ps (1 server)", "ps (p servers)", "local-sgd:4", "dpsgd"]


def predict(beta_host):
    out = []
    for net, spec in NETWORKS.items():
        beta = 1 / spec["bandwidth"] + beta_host
        for work, w in WORKLOADS.items():
            for scheme in SCHEMES:
                for p in RANKS:
                    c = scheme_seconds(scheme, p, w["bytes"], spec["alpha"], beta)
                    out.append({"network": net, "workload": work, "scheme": scheme, "ranks": p,
                                "communication_seconds": c, "step_seconds": w["compute"] + c,
                                "efficiency": w["compute"] / (w["compute"] + c)})
    return out


def plot(predictions, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(WORKLOADS), len(NETWORKS), figsize=(11, 7), sharex=True,
                             sharey=True)
    for i, work in enumerate(WORKLOADS):
        for j, net in enumerate(NETWORKS):
            ax = axes[i][j]
            for scheme in SCHEMES:
                rows = [r for r in predictions
                        if r["network"] == net and r["workload"] == work and r["scheme"] == scheme]
                ax.plot([r["ranks"] for r in rows], [r["efficiency"] for r in rows], marker="o",
                        label=scheme)
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1.05)
            ax.set_title(f"{work}, {net}", fontsize=9)
            ax.grid(True, alpha=0.3)
            if i == len(WORKLOADS) - 1:
                ax.set_xlabel("ranks")
            if j == 0:
                ax.set_ylabel("weak-scaling efficiency")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Predicted efficiency (alpha-beta model fitted on this machine)")
    fig.tight_layout()
    fig.savefig(path + ".svg")
    fig.savefig(path + ".png", dpi=80)


def print_fusion(alpha_host, beta_host):
    """Per-tensor / fused allreduce time of ResNet-18's gradients: on this
    host (the fit) and on the documented networks."""
    grads = resnet18_gradient_bytes()
    rows = []
    print(f"\nResNet-18 gradients ({len(grads)} tensors, {sum(grads)} bytes, "
          f"{len(fusion_buckets(grads))} buckets): per-tensor / fused allreduce time")
    print(f"{'network':>26} " + " ".join(f"{p:>6}" for p in [2, 4] + RANKS))
    links = {"this host (fit)": (alpha_host, beta_host)}
    links.update({net: (spec["alpha"], 1 / spec["bandwidth"] + beta_host)
                  for net, spec in NETWORKS.items()})
    for net, (alpha, beta) in links.items():
        ratios = {p: fusion_ratio(p, grads, alpha, beta) for p in [2, 4] + RANKS}
        rows.append({"network": net, "ratios": ratios})
        print(f"{net:>26} " + " ".join(f"{r:>6.2f}" for r in ratios.values()))
    return rows


def main():
    a = parse_args()
    points = load_points(a.bench.split(","), a.min_bytes, a.max_bytes)
    alpha, beta, rows = fit(points)
    print(f"fit: alpha = {alpha * 1e6:.2f} us per message, beta = {beta * 1e9:.4f} ns/byte "
          f"({1 / beta / 1e9:.2f} GB/s), over {len(rows)} points")
    print(f"{'ranks':>6} {'bytes':>11} {'measured ms':>12} {'model ms':>10} {'error':>8}")
    for r in rows:
        print(f"{r['ranks']:>6} {r['bytes']:>11} {r['measured'] * 1e3:>12.3f} "
              f"{r['model'] * 1e3:>10.3f} {r['error'] * 100:>7.1f}%")
    worst = max(abs(r["error"]) for r in rows)
    print(f"largest error {worst * 100:.1f}%, median {np.median([abs(r['error']) for r in rows]) * 100:.1f}%")
    predictions = predict(beta)
    for net in NETWORKS:
        for work in WORKLOADS:
            print(f"\n{work} on {net}: efficiency (communication ms per step)")
            print(f"{'scheme':>16} " + " ".join(f"{p:>14}" for p in (8, 64, 1024)))
            for scheme in SCHEMES:
                cells = []
                for p in (8, 64, 1024):
                    r = next(x for x in predictions if x["network"] == net and x["workload"] == work
                             and x["scheme"] == scheme and x["ranks"] == p)
                    cells.append(f"{r['efficiency']:.2f} ({r['communication_seconds'] * 1e3:.2f})")
                print(f"{scheme:>16} " + " ".join(f"{c:>14}" for c in cells))
    fusion = print_fusion(alpha, beta)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"alpha": alpha, "beta": beta, "fit": rows, "networks": NETWORKS,
                       "workloads": WORKLOADS, "predictions": predictions, "fusion": fusion},
                      f, indent=1)
    if a.plot:
        plot(predictions, a.plot)
        print(f"\nwrote {a.plot}.svg and {a.plot}.png")


if __name__ == "__main__":
    main()
