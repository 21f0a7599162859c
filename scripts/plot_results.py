#!/usr/bin/env python3
"""Plots of deep500 recipe runs, from their results.json (deep500 plot, and
deep500 run after each run).

Training runs: loss and accuracy against epoch and against training time,
every run given overlaid, as training_curves.png and training_curves.svg.

Usage: plot_results.py --out DIR RUN_DIR...
Exit 0 with one line naming the files; 3 with one line when matplotlib is
not installed (Debian: python3-matplotlib); 2 for a missing or malformed
results.json.
"""
import argparse
import json
import os
import sys


def load_run(run_dir):
    path = os.path.join(run_dir, "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
        return results["recipe"]["name"], os.path.basename(os.path.normpath(run_dir)), results
    except (OSError, ValueError, KeyError) as e:
        print(f"plots: {path}: {e}")
        sys.exit(2)


def training_curves(runs, out_dir, plt):
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for recipe, stamp, results in runs:
        metrics = results.get("metrics", {})
        elapsed = metrics.get("elapsed_seconds", {}).get("per_epoch", [])
        label = f"{recipe} {stamp}"
        for row, name in enumerate(("train_loss", "test_accuracy")):
            values = metrics.get(name, {}).get("per_epoch", [])
            shown = [(i + 1, t, v) for i, (t, v) in enumerate(zip(elapsed, values)) if v >= 0]
            if not shown:
                continue
            epochs, times, ys = zip(*shown)
            axes[row][0].plot(epochs, ys, marker="o", label=label)
            axes[row][1].plot(times, ys, marker="o", label=label)
    for row, name in enumerate(("training loss", "test accuracy")):
        axes[row][0].set_xlabel("epoch")
        axes[row][1].set_xlabel("training time (s)")
        for col in (0, 1):
            axes[row][col].set_ylabel(name)
            axes[row][col].grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.suptitle("deep500 training curves")
    fig.tight_layout()
    written = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"training_curves.{ext}")
        fig.savefig(path)
        written.append(path)
    plt.close(fig)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the plot files")
    parser.add_argument("runs", nargs="+", help="results folders (holding results.json)")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots: not rendered: matplotlib is not installed (Debian: python3-matplotlib)")
        sys.exit(3)
    runs = [load_run(d) for d in args.runs]
    os.makedirs(args.out, exist_ok=True)
    written = []
    if any("training" in r[2] for r in runs):
        written += training_curves([r for r in runs if "training" in r[2]], args.out, plt)
    print("plots: " + (", ".join(written) if written else "nothing to plot for these runs"))


if __name__ == "__main__":
    main()
