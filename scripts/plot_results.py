#!/usr/bin/env python3
"""Plots of deep500 recipe runs, from their results.json (deep500 plot, and
deep500 run after each run).

Training runs: loss and accuracy against epoch and against training time,
every run given overlaid, as training_curves.png and training_curves.svg.
Inference runs: the SingleStream latency distribution of every run (a
histogram of every query's time, p50/p90/p99 marked) as latency.png/.svg.
Conformance runs: passed, failed and skipped cases per suite as
conformance.png/.svg. Operator benchmarks: GFLOP/s of every problem and
backend with the median's confidence interval as whiskers and the measured
peak as a line, as operator_benchmark.png/.svg. With --scoreboard FILE (what `deep500 scoreboard
--plot DIR` writes): the runs on the first two objectives, the Pareto front
joined, as scoreboard.png/.svg. With --matrix FILE (what `deep500 op matrix --json FILE`
writes): a heat map of every case and pass (rows) by backend (columns), each timed cell
coloured by its time relative to the fastest backend of its row, failed and refused cells
marked, as op_matrix.png/.svg (also for `task: op_matrix` runs).

Runs judged against a reference log's seed ensembles (results.json's
reference_figures): each band criterion's band (the reference mean and
the band's edges against epoch) with every run's curve overlaid (an
ensemble's mean, with its members' curves as thin lines), and each
epochs_to criterion's reference epochs-to-target as a histogram with every
run's marked, as reference_band.png/.svg.

Studies (runs of a recipe with sweep: axes, results.json's study): the
speedup metric and the parallel efficiency against the member's ranks, one
line per value of the other axes, the repeats' confidence interval as
whiskers, and each member's time split into compute, communication and the
rest (the members' mean), as study.png/.svg.

Usage: plot_results.py --out DIR RUN_DIR...
       plot_results.py --out DIR --scoreboard SCOREBOARD.json
       plot_results.py --out DIR --matrix MATRIX.json
Exit 0 with one line naming the files; 3 with one line when matplotlib is
not installed (Debian: python3-matplotlib); 2 for a missing or malformed
results.json; 4 with one line when drawing failed.
"""
import argparse
import json
import os
import sys
import warnings


def load_run(run_dir):
    path = os.path.join(run_dir, "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
        stamp = os.path.basename(os.path.normpath(run_dir))
        label = results.get("label") or ""  # what tells the run from others (run --label)
        return results["recipe"]["name"], f"{label}, {stamp}" if label else stamp, results
    except (OSError, ValueError, KeyError) as e:
        print(f"plots: {path}: {e}")
        sys.exit(2)


def training_curves(runs, out_dir, plt):
    """Nothing (no empty figure) when no run finished an epoch."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    plotted = False
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
            plotted = True
    if not plotted:
        plt.close(fig)
        return []
    for row, name in enumerate(("training loss", "test accuracy")):
        axes[row][0].set_xlabel("epoch")
        axes[row][1].set_xlabel("training time (s)")
        for col in (0, 1):
            axes[row][col].set_ylabel(name)
            axes[row][col].grid(True, alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.suptitle("deep500 training curves")
    fig.tight_layout()
    return save(fig, out_dir, "training_curves", plt)


def reference_bands(runs, out_dir, plt):
    """One panel per reference-ensemble criterion; the band of the last run showing it (an
    ensemble's folder comes after its members': the band of their mean)."""
    panels = {}
    for recipe, stamp, results in runs:
        for figure in results.get("reference_figures", []):
            if "kind" not in figure:  # could not be drawn (its "error" says why)
                continue
            panels.setdefault(figure["criterion"], []).append((f"{recipe} {stamp}", figure))
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (criterion, shown) in zip(axes[0], panels.items()):
        band_label, first = shown[-1]
        if first["kind"] == "band":
            epochs = list(range(1, len(first["mean"]) + 1))
            ax.fill_between(epochs, first["low"], first["high"], alpha=0.25,
                            label=f"reference band (for {band_label})")
            ax.plot(epochs, first["mean"], linestyle="--", color="black", label="reference mean")
            for i, (label, figure) in enumerate(shown):
                ax.plot(range(1, len(figure["run"]) + 1), figure["run"], marker="o", label=label,
                        color=f"C{i + 1}")
                for member in figure.get("members", []):  # an ensemble's members, thin
                    ax.plot(range(1, len(member) + 1), member, color=f"C{i + 1}", alpha=0.35,
                            linewidth=0.8)
            ax.set_xlabel("epoch")
            ax.set_ylabel(first["metric"])
        else:
            reference = [e for e in first["reference"] if e > 0]
            ax.hist(reference, bins=range(1, max(reference + [1]) + 2), align="left",
                    rwidth=0.8, alpha=0.5, label="reference members")
            for i, (label, figure) in enumerate(shown):
                reached = [e for e in figure["run"] if e > 0]
                if reached:
                    ax.axvline(sum(reached) / len(reached), linestyle="--", color=f"C{i + 1}",
                               label=label)
            ax.set_xlabel("epochs to target")
            ax.set_ylabel("reference members")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(criterion, fontsize="small")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle("deep500 runs against the reference ensembles")
    fig.tight_layout()
    return save(fig, out_dir, "reference_band", plt)


def save(fig, out_dir, name, plt):
    written = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{name}.{ext}")
        fig.savefig(path)
        written.append(path)
    plt.close(fig)
    return written


def latency_distribution(runs, out_dir, plt):
    fig, ax = plt.subplots(figsize=(9, 5))
    for recipe, stamp, results in runs:
        for scenario in results["inference"].get("scenarios", []):
            if scenario.get("scenario") != "SingleStream":
                continue
            ms = [1e3 * t for t in scenario.get("result", {}).get("seconds", [])]
            if not ms:
                continue
            line = ax.hist(ms, bins=min(50, max(5, len(ms) // 4)), alpha=0.5,
                           label=f"{recipe} {stamp}")[2][0]
            for p, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
                value = 1e3 * scenario.get(f"{p}_seconds", 0)
                ax.axvline(value, color=line.get_facecolor(), linestyle=style,
                           label=f"{p} {value:.3g} ms")
    ax.set_xlabel("query latency (ms)")
    ax.set_ylabel("queries")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle("deep500 SingleStream latency")
    fig.tight_layout()
    return save(fig, out_dir, "latency", plt)


def conformance_counts(runs, out_dir, plt):
    fig, ax = plt.subplots(figsize=(9, 5))
    bars = []
    for recipe, stamp, results in runs:
        metrics = results.get("metrics", {})
        suites = sorted({k.rsplit(".", 1)[0] for k in metrics if k.endswith(".passed")})
        for suite in suites:
            counts = [metrics.get(f"{suite}.{c}", {}).get("value", 0)
                      for c in ("passed", "failed", "skipped")]
            bars.append((f"{suite}\n{stamp}" if len(runs) > 1 else suite, counts))
    bottom = [0] * len(bars)
    for i, (status, color) in enumerate((("passed", "tab:green"), ("failed", "tab:red"),
                                         ("skipped", "tab:gray"))):
        values = [b[1][i] for b in bars]
        ax.bar([b[0] for b in bars], values, bottom=bottom, color=color, label=status)
        bottom = [x + y for x, y in zip(bottom, values)]
    ax.set_ylabel("cases")
    ax.legend()
    fig.suptitle("deep500 ONNX conformance")
    fig.tight_layout()
    return save(fig, out_dir, "conformance", plt)


def operator_benchmark(runs, out_dir, plt):
    rows, peaks = [], []
    for recipe, stamp, results in runs:
        bench = results["operator_benchmark"]
        if "peak" in bench:
            peaks.append((stamp, bench["peak"]["gflops"]))
        for r in bench.get("results", []):
            labels = r.get("labels", {})
            median = r.get("statistics", {}).get("median", 0)
            flops = r.get("counters", {}).get("flops", 0)
            if median <= 0 or flops <= 0:
                continue
            ci = r.get("statistics", {})
            # GFLOP/s of the median, whiskers from the median's confidence interval.
            low = flops / ci.get("ci_high", median) / 1e9
            high = flops / max(ci.get("ci_low", median), 1e-12) / 1e9
            value = flops / median / 1e9
            rows.append((f"{r.get('name', '')} {labels.get('problem', '')}",
                         labels.get("backend", "") + ("" if len(runs) == 1 else f" {stamp}"),
                         value, value - low, high - value))
    if not rows:
        return []
    problems = list(dict.fromkeys(r[0] for r in rows))
    backends = list(dict.fromkeys(r[1] for r in rows))
    width = 0.8 / len(backends)
    fig, ax = plt.subplots(figsize=(min(24, max(8, 0.45 * len(problems) + 2)), 6.5))
    for i, backend in enumerate(backends):
        mine = {r[0]: r for r in rows if r[1] == backend}
        xs = [j + i * width for j, p in enumerate(problems) if p in mine]
        ax.bar(xs, [mine[p][2] for p in problems if p in mine], width,
               yerr=[[mine[p][3] for p in problems if p in mine],
                     [mine[p][4] for p in problems if p in mine]],
               capsize=2, label=backend)
    for stamp, gflops in peaks:
        ax.axhline(gflops, color="black", linestyle="--",
                   label=f"measured peak {gflops:.4g} GFLOP/s")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(problems))])
    ax.set_xticklabels(problems, rotation=75, ha="right", fontsize="x-small")
    ax.set_ylabel("GFLOP/s (median, 95% CI)")
    ax.legend(fontsize="small")
    fig.suptitle("deep500 operator benchmark")
    fig.tight_layout()
    return save(fig, out_dir, "operator_benchmark", plt)


def scoreboard(path, out_dir, plt):
    try:
        with open(path, encoding="utf-8") as f:
            board = json.load(f)
        objectives = board["objectives"]
        entries = board["entries"]
    except (OSError, ValueError, KeyError) as e:
        print(f"plots: {path}: {e}")
        sys.exit(2)
    if len(objectives) < 2:
        return []
    fig, ax = plt.subplots(figsize=(8, 6))
    front = sorted((e for e in entries if e["front"] == 1), key=lambda e: e["values"][0])
    rest = [e for e in entries if e["front"] != 1]
    ax.scatter([e["values"][0] for e in rest], [e["values"][1] for e in rest], color="tab:gray",
               label="dominated")
    ax.plot([e["values"][0] for e in front], [e["values"][1] for e in front], "o-",
            color="tab:red", label="Pareto front")
    for e in entries:
        ax.annotate(f"run {e['run']}", (e["values"][0], e["values"][1]), fontsize="small",
                    textcoords="offset points", xytext=(4, 4))
    for axis, o in zip(("x", "y"), objectives):
        label = f"{o['metric']} ({'higher' if o['maximize'] else 'lower'} is better)"
        (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.suptitle("deep500 scoreboard")
    fig.tight_layout()
    return save(fig, out_dir, "scoreboard", plt)


def op_matrix(path, out_dir, plt):
    try:
        with open(path, encoding="utf-8") as f:
            matrix = json.load(f)
    except (OSError, ValueError) as e:
        print(f"plots: {path}: {e}")
        sys.exit(2)
    return op_matrix_heat_map(matrix, path, out_dir, plt)


def op_matrix_heat_map(matrix, path, out_dir, plt):
    try:
        backends = matrix["backends"]
        cells = matrix["cells"]
        rows = []
        at = {}
        for c in cells:
            row = (c["case"], c["pass"])
            if row not in at:
                rows.append(row)
                at[row] = {}
            at[row][c["backend"]] = c
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"plots: {path}: {e}")
        sys.exit(2)
    if not rows:
        return []
    import math
    # log2 of the time relative to the fastest: 0 (fastest) .. 4 (16x or slower).
    values = [[math.nan] * len(backends) for _ in rows]
    fig, ax = plt.subplots(figsize=(3.5 + 1.6 * len(backends), 1 + 0.28 * len(rows)))
    for i, row in enumerate(rows):
        for j, b in enumerate(backends):
            c = at[row].get(b)
            if c is None:
                continue
            if c["ratio_to_fastest"]:
                values[i][j] = min(4.0, math.log2(c["ratio_to_fastest"]))
                text = f"{c['ratio_to_fastest']:.2f}x"
            else:
                text = {"FAILED": "FAILED", "refused": "refused"}.get(c["status"], c["status"])
            ax.text(j, i, text, ha="center", va="center", fontsize="x-small",
                    color="tab:red" if c["status"] == "FAILED" else "black")
    image = ax.imshow(values, cmap="RdYlGn_r", vmin=0, vmax=4, aspect="auto")
    ax.set_xticks(range(len(backends)), backends)
    ax.set_yticks(range(len(rows)), [f"{case} ({p})" for case, p in rows], fontsize="x-small")
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("log2(time / fastest backend's)")
    peak = matrix.get("peak", {}).get("flops_per_second", 0)
    title = "deep500 op matrix"
    if peak:
        title += f" (peak {peak * 1e-9:.0f} GFLOP/s)"
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "op_matrix", plt)


def study_groups(study):
    """Members grouped by their values of every axis but the ranks (a line each)."""
    others = [a for a in study["axes"] if not a.endswith("distributed.ranks")]
    groups = {}
    for m in study["members"]:
        key = ", ".join(f"{a.rsplit('.', 1)[-1]}={m['point'][a]}" for a in others) or "members"
        groups.setdefault(key, []).append(m)
    return groups


def study_figure(study, title, out_dir, plt):
    """Scaling curves with intervals, efficiency, and the time breakdown per member."""
    metric = study["speedup_metric"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    for key, members in study_groups(study).items():
        members = sorted(members, key=lambda m: m["ranks"])
        ranks = [m["ranks"] for m in members]
        values = [m["metrics"].get(metric, {}).get("value") for m in members]
        low = [m["metrics"].get(metric, {}).get("ci_low") for m in members]
        high = [m["metrics"].get(metric, {}).get("ci_high") for m in members]
        shown = [(r, v, lo, hi) for r, v, lo, hi in zip(ranks, values, low, high) if v is not None]
        if shown:
            xs, ys, los, his = zip(*shown)
            errors = [[y - lo if lo is not None else 0 for y, lo in zip(ys, los)],
                      [hi - y if hi is not None else 0 for y, hi in zip(ys, his)]]
            axes[0].errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=key)
        effic = [(m["ranks"], m["efficiency"]) for m in members if m["efficiency"] is not None]
        if effic:
            axes[1].plot(*zip(*effic), marker="o", label=key)
    axes[0].set_xlabel("ranks")
    axes[0].set_ylabel(metric + " (interval over repeats)")
    axes[1].axhline(1.0, color="black", linestyle="--", linewidth=0.8)
    axes[1].set_xlabel("ranks")
    axes[1].set_ylabel("efficiency (speedup x baseline ranks / ranks)")
    axes[1].set_title(f"baseline: {study['baseline']}", fontsize="small")
    for ax in axes[:2]:
        ax.set_xticks(sorted({m["ranks"] for m in study["members"]}))
        ax.legend(fontsize="x-small")
    labels = [m["label"] for m in study["members"]]
    bottom = [0.0] * len(labels)
    for part in ("compute_seconds", "communication_seconds"):
        heights = [m["metrics"].get(part, {}).get("value") or 0.0 for m in study["members"]]
        axes[2].bar(range(len(labels)), heights, bottom=bottom, label=part.split("_")[0])
        bottom = [b + h for b, h in zip(bottom, heights)]
    rest = [max(0.0, (m["metrics"].get("seconds", {}).get("value") or 0.0) - b)
            for m, b in zip(study["members"], bottom)]
    axes[2].bar(range(len(labels)), rest, bottom=bottom, label="other")
    axes[2].set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize="x-small")
    axes[2].set_ylabel("seconds (mean over repeats)")
    axes[2].legend(fontsize="x-small")
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_dir, "study", plt)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the plot files")
    parser.add_argument("--scoreboard", help="a scoreboard JSON file to plot instead of runs")
    parser.add_argument("--matrix", help="an op matrix JSON file to plot instead of runs")
    parser.add_argument("runs", nargs="*", help="results folders (holding results.json)")
    args = parser.parse_args()
    if not args.runs and not args.scoreboard and not args.matrix:
        parser.error("give results folders, --scoreboard FILE or --matrix FILE")
    warnings.simplefilter("ignore")  # matplotlib's notes would reach deep500's terminal
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots: not rendered: matplotlib is not installed (Debian: python3-matplotlib)")
        sys.exit(3)
    runs = [load_run(d) for d in args.runs]
    os.makedirs(args.out, exist_ok=True)
    try:
        written = render(args, runs, plt)
    except Exception as e:  # one line, not a traceback (deep500 reports it as an error)
        print(f"plots: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(4)
    print("plots: " + (", ".join(written) if written else "nothing to plot for these runs"))


def render(args, runs, plt):
    """Every plot the runs (or --scoreboard, --matrix) call for; the files written."""
    written = []
    for task, plot in (("training", training_curves), ("inference", latency_distribution),
                       ("conformance", conformance_counts),
                       ("operator_benchmark", operator_benchmark)):
        if any(task in r[2] for r in runs):
            written += plot([r for r in runs if task in r[2]], args.out, plt)
    written += reference_bands(runs, args.out, plt)
    for name, run, results in runs:  # a study: its scaling figure (the last one given)
        if "study" in results:
            written += study_figure(results["study"], f"{name}: study", args.out, plt)
    for name, run, results in runs:  # an op matrix run: its heat map (the last one given)
        if "op_matrix" in results:
            written += op_matrix_heat_map(results["op_matrix"], f"{name} run {run}", args.out, plt)
    if args.scoreboard:
        written += scoreboard(args.scoreboard, args.out, plt)
    if args.matrix:
        written += op_matrix(args.matrix, args.out, plt)
    return written


if __name__ == "__main__":
    main()
