#!/usr/bin/env python3
"""Power of the reference-band criteria (docs/validation.md): how often a
correct run passes, and how often a run with a planted bug fails.

1. `deep500 run RECIPE --record-reference N` records the reference ensemble
   (seeds 1..N) with the base overrides (--set).
2. The recipe, judged by `METRIC curve within the reference band` for every
   --metrics entry, runs --fresh times on seeds the reference never saw: the
   pass count estimates 1 - the false-alarm rate (at most --alpha, stated).
3. Each planted bug (a recipe override) runs --bug-runs times on fresh seeds:
   the fail count is the criteria's power against it.
Prints a Markdown table; exit 0 (the counts are the result, not a verdict).

  benchmarks/validation/power_table.py --deep500 build/recipes/deep500
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
MANIFESTS = ("hardware", "software", "dataset", "model", "reference_log")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deep500", default="build/recipes/deep500", help="the deep500 program")
    p.add_argument("--recipe", default=os.path.join(SOURCE, "recipes", "fashion_mnist_mlp.yaml"))
    p.add_argument("--set", action="append", dest="sets",
                   default=["training.epochs=3", "training.subset=12000",
                            "training.test_subset=2000"],
                   help="base override PATH=VALUE (repeatable; replaces the defaults)")
    p.add_argument("--metrics", default="test_accuracy,train_loss",
                   help="the curves judged, comma-separated")
    p.add_argument("--alpha", type=float, default=5, help="the band's false-alarm rate, percent")
    p.add_argument("--reference-members", type=int, default=10)
    p.add_argument("--fresh", type=int, default=20, help="correct runs on new seeds")
    p.add_argument("--bug-runs", type=int, default=10, help="runs per planted bug")
    p.add_argument("--bug", action="append", dest="bugs",
                   help="NAME=PATH=VALUE[;PATH=VALUE]: a planted bug as overrides "
                        "(repeatable; default: the learning rate x1.5 and momentum 0.99)")
    p.add_argument("--out", help="working folder (default: a temporary one)")
    args = p.parse_args()
    if args.reference_members < 2 or args.fresh < 1 or args.bug_runs < 0:
        p.error("--reference-members >= 2, --fresh >= 1, --bug-runs >= 0")
    return args


def run(args, argv):
    r = subprocess.run([args.deep500] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"power_table: deep500 {' '.join(argv)} exited {r.returncode}:\n{r.stdout}")
    return r.returncode, r.stdout


def sets_argv(sets):
    return [a for s in sets for a in ("--set", s)]


def record_reference(args, out):
    rc, text = run(args, ["run", args.recipe, "--no-plots", "--no-progress", "--output-dir",
                          os.path.join(out, "reference"), "--record-reference",
                          str(args.reference_members)] + sets_argv(args.sets) +
                   ["--set", "criteria=[]"])
    m = re.search(r"reference log of \d+ members at global batch \d+ in (\S+)", text)
    if not m:
        sys.exit(f"power_table: no reference log written:\n{text}")
    return m.group(1)


def judged_recipe(args, reference, out):
    """The recipe with its manifests as absolute paths and the reference swapped in."""
    with open(args.recipe, encoding="utf-8") as f:
        recipe = yaml.safe_load(f)
    base = os.path.dirname(os.path.abspath(args.recipe))
    for key in MANIFESTS:
        if isinstance(recipe.get(key), str):
            recipe[key] = os.path.join(base, recipe[key])
    recipe["reference_log"] = reference
    recipe["criteria"] = [f"{m} curve within the reference band at {args.alpha:g}%"
                          for m in args.metrics.split(",")]
    path = os.path.join(out, "judged.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(recipe, f)
    return path


def base_lr(args):
    """The recipe's learning rate, for the default planted bug."""
    with open(args.recipe, encoding="utf-8") as f:
        hyper = yaml.safe_load(f).get("training", {}).get("hyper", {})
    return float(hyper.get("lr", 0.01))


def bugs(args):
    if args.bugs:
        return [(b.split("=", 1)[0], b.split("=", 1)[1].split(";")) for b in args.bugs]
    lr = base_lr(args)
    return [("learning rate x1.5", [f"training.hyper.lr={lr * 1.5:g}"]),
            ("momentum 0.99 instead of 0.9", ["training.hyper.momentum=0.99"])]


def failures(args, judged, out, extra, seeds):
    failed = 0
    for seed in seeds:
        rc, _ = run(args, ["run", judged, "--no-plots", "--no-progress", "--output-dir",
                           os.path.join(out, "runs")] + sets_argv(args.sets + extra) +
                    ["--set", f"training.seed={seed}"])
        failed += rc != 0
    return failed


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or tmp
        os.makedirs(out, exist_ok=True)
        judged = judged_recipe(args, record_reference(args, out), out)
        first = 1000  # fresh seeds, far from the reference's 1..N
        failed = failures(args, judged, out, [], range(first, first + args.fresh))
        print(f"Power of `{args.metrics}` band criteria at {args.alpha:g}% "
              f"({os.path.basename(args.recipe)}, {' '.join(args.sets)}; "
              f"reference: {args.reference_members} members)\n")
        print("| runs | planted bug | runs | failed | passed |")
        print("|---|---|---|---|---|")
        print(f"| correct code | none | {args.fresh} | {failed} | {args.fresh - failed} |")
        for k, (name, extra) in enumerate(bugs(args)):
            seeds = range(first + 100 * (k + 1), first + 100 * (k + 1) + args.bug_runs)
            f = failures(args, judged, out, extra, seeds)
            print(f"| planted bug | {name} (`{' '.join(extra)}`) | {args.bug_runs} | {f} | "
                  f"{args.bug_runs - f} |")


if __name__ == "__main__":
    main()
