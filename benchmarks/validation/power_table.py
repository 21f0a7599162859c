#!/usr/bin/env python3
"""Power of the reference-band criteria (docs/validation.md): how often a
correct run passes, and how often a run with a planted bug fails.

1. `deep500 run RECIPE --record-reference P` records a pool of P seeded runs
   (seeds 1..P, --pool) with the base overrides (--set).
2. The recipe, judged by `METRIC curve within the reference band` for every
   --metrics entry, runs --fresh times on seeds the pool never saw, each
   against a reference of --reference-members members drawn from the pool
   (a seeded draw per run: a test's false-alarm rate holds over references,
   not for one reference, whose tails 20 members estimate only roughly):
   the pass count estimates 1 - the false-alarm rate (at most --alpha per
   criterion, stated).
3. Each planted bug (a recipe override: a hyper-parameter, or
   training.planted_bugs) runs --bug-runs times on fresh seeds: the fail
   count is the criteria's power against it.
4. With --ranks R, the recipe runs distributed (R MPI ranks of --scheme at
   the same global batch) --bug-runs times correct, and as often with each
   distributed planted bug: one rank's gradient dropped, and the gradient
   mean divided by R - 1 instead of R.
Prints a Markdown table; exit 0 (the counts are the result, not a verdict).

  benchmarks/validation/power_table.py --deep500 build/recipes/deep500
"""
import argparse
import os
import random
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
                   help="base override PATH=VALUE (repeatable; replaces the default, "
                        "training.epochs=3)")
    p.add_argument("--metrics", default="train_loss",
                   help="the curves judged, comma-separated")
    p.add_argument("--alpha", type=float, default=5, help="the band's false-alarm rate, percent")
    p.add_argument("--reference-members", type=int, default=19)
    p.add_argument("--pool", type=int, default=0,
                   help="runs recorded to draw references from (default: 2 x --reference-members)")
    p.add_argument("--fresh", type=int, default=20, help="correct runs on new seeds")
    p.add_argument("--bug-runs", type=int, default=10, help="runs per planted bug")
    p.add_argument("--bug", action="append", dest="bugs",
                   help="NAME=PATH=VALUE[;PATH=VALUE]: a planted bug as overrides "
                        "(repeatable; default: the learning rate x1.5, momentum 0.99 and 5%% "
                        "of the labels shuffled)")
    p.add_argument("--ranks", type=int, default=0,
                   help="also run distributed on this many ranks (0: not)")
    p.add_argument("--scheme", default="allreduce", help="the distributed runs' scheme")
    p.add_argument("--first-seed", type=int, default=1000,
                   help="the first fresh seed (the correct runs'; each later row's further on)")
    p.add_argument("--out", help="working folder (default: a temporary one)")
    args = p.parse_args()
    if args.sets is None:
        args.sets = ["training.epochs=3"]
    args.pool = args.pool or 2 * args.reference_members
    if (args.reference_members < 2 or args.pool < args.reference_members or args.fresh < 1 or
            args.bug_runs < 0 or args.ranks == 1):
        p.error("--reference-members >= 2, --pool >= --reference-members, --fresh >= 1, "
                "--bug-runs >= 0, --ranks 0 or >= 2")
    if args.first_seed <= args.pool:
        p.error("--first-seed must lie above the pool's seeds 1..--pool")
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
                          str(args.pool)] + sets_argv(args.sets) +
                   ["--set", "criteria=[]"])
    m = re.search(r"reference log of \d+ members at global batch \d+ in (\S+)", text)
    if not m:
        sys.exit(f"power_table: no reference log written:\n{text}")
    return m.group(1)


def drawn_reference(args, pool, draw, out):
    """A reference log of --reference-members members of `pool`, drawn with seed `draw`."""
    with open(pool, encoding="utf-8") as f:
        log = yaml.safe_load(f)
    for e in log["ensembles"]:
        keep = sorted(random.Random(draw).sample(range(len(e["seeds"])), args.reference_members))
        e["seeds"] = [e["seeds"][k] for k in keep]
        e["curves"] = {m: [c[k] for k in keep] for m, c in e["curves"].items()}
    path = os.path.join(out, f"reference-{draw}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(log, f)
    return path


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
    path = os.path.join(out, f"judged-{os.path.basename(reference)}")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(recipe, f)
    return path


def training_field(args, key, fallback):
    """A field of the recipe's training section (after --set overrides of it)."""
    for s in args.sets:
        if s.startswith(f"training.{key}="):
            return yaml.safe_load(s.split("=", 1)[1])
    with open(args.recipe, encoding="utf-8") as f:
        training = yaml.safe_load(f).get("training", {})
    return training.get(key, fallback)


def bugs(args):
    if args.bugs:
        return [(b.split("=", 1)[0], b.split("=", 1)[1].split(";")) for b in args.bugs]
    lr = float(training_field(args, "hyper", {}).get("lr", 0.01))
    return [("learning rate x1.5", [f"training.hyper.lr={lr * 1.5:g}"]),
            ("momentum 0.99 instead of 0.9", ["training.hyper.momentum=0.99"]),
            ("labels shuffled for 5% of samples", ["training.planted_bugs=[labels-shuffled:0.05]"])]


def distributed_rows(args):
    """(name, overrides) of the distributed runs: correct, then each planted bug."""
    batch = int(training_field(args, "batch_size", 64))
    if batch % args.ranks:
        sys.exit(f"power_table: global batch {batch} is not divisible by --ranks {args.ranks}")
    base = [f"training.batch_size={batch // args.ranks}",
            f"training.distributed={{ranks: {args.ranks}, scheme: {args.scheme}}}"]
    label = f"{args.ranks} ranks, {args.scheme}"
    return [(f"none ({label})", base),
            (f"rank 1's gradient dropped ({label})",
             base + ["training.planted_bugs=[gradient-dropped:1]"]),
            (f"mean divided by {args.ranks - 1} ranks, not {args.ranks} ({label})",
             base + [f"training.planted_bugs=[mean-divisor:{args.ranks - 1}]"])]


def failures(args, pool, out, extra, seeds):
    failed = 0
    for seed in seeds:
        judged = judged_recipe(args, drawn_reference(args, pool, seed, out), out)
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
        pool = record_reference(args, out)
        first = args.first_seed  # fresh seeds, far from the pool's 1..P
        failed = failures(args, pool, out, [], range(first, first + args.fresh))
        print(f"Power of `{args.metrics}` band criteria at {args.alpha:g}% "
              f"({os.path.basename(args.recipe)}, {' '.join(args.sets)}; "
              f"references: {args.reference_members} members drawn from {args.pool})\n")
        print("| runs | planted bug | runs | failed | passed |")
        print("|---|---|---|---|---|")
        print(f"| correct code | none | {args.fresh} | {failed} | {args.fresh - failed} |", flush=True)
        rows = [("planted bug", name, extra) for name, extra in bugs(args)]
        if args.ranks:
            rows += [("correct code" if k == 0 else "planted bug", name, extra)
                     for k, (name, extra) in enumerate(distributed_rows(args))]
        for k, (kind, name, extra) in enumerate(rows):
            start = first + max(100, args.fresh, args.bug_runs) * (k + 1)
            seeds = range(start, start + args.bug_runs)
            f = failures(args, pool, out, extra, seeds)
            print(f"| {kind} | {name} (`{' '.join(extra)}`) | {args.bug_runs} | {f} | "
                  f"{args.bug_runs - f} |", flush=True)


if __name__ == "__main__":
    main()
