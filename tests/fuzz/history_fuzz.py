#!/usr/bin/env python3
"""Fuzzes the results history (recipes/results/history.h) through the real commands.

A real history of two recorded runs (the MLP recipe, made once) is damaged
in one way per trial: flipped bytes, a truncation, a foreign or impossible
schema version, a dropped or altered table, text that is not UTF-8 or not
JSON in a row, NULLs where values belong, or another process holding its
lock. Then `deep500 history`, `history --json`, `compare`, `scoreboard`,
`reproduce` and `run` (and Python's `deep500.history`) are pointed at it. A
finding is a command killed by a signal, an internal error (exit 3), a
hang, an error that is not one line, or a read-only command that changed
the file.

    /usr/bin/python3 tests/fuzz/history_fuzz.py build/recipes/deep500 --seconds 60 --seed 1

PYTHONPATH must reach the module (build/python) for the Python reader.
Exit 1 when there are findings, 0 otherwise.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(SOURCE, "recipes", "fashion_mnist_mlp.yaml")


def digest(path):
    h = hashlib.sha256()
    for p in (path, path + "-wal"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def sql(db, *statements):
    c = sqlite3.connect(db)
    try:
        for s in statements:
            c.execute(*s) if isinstance(s, tuple) else c.execute(s)
        c.commit()
    finally:
        c.close()


def damage(rng, db):
    """Damages `db` one way; returns a lock holder to close afterwards (or None) and what was done."""
    kind = rng.choice(["flip", "flip", "truncate", "version", "drop", "alter", "bad_utf8",
                       "bad_json", "nulls", "lock", "huge_ids"])
    if kind in ("flip", "truncate"):
        sql(db, "PRAGMA wal_checkpoint(TRUNCATE)")
        data = bytearray(open(db, "rb").read())
        if kind == "flip":
            for _ in range(rng.choice([1, 2, 8])):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            data = data[:rng.randrange(len(data))]
        open(db, "wb").write(bytes(data))
        return None, kind
    if kind == "version":
        v = rng.choice([-1, -3, 2, 99, 2**31 - 1, -2**31])
        sql(db, f"PRAGMA user_version = {v}")
        return None, f"user_version {v}"
    if kind == "drop":
        table = rng.choice(["runs", "metrics", "criteria"])
        sql(db, "PRAGMA foreign_keys = OFF", f"DROP TABLE {table}")
        return None, f"drop {table}"
    if kind == "alter":
        sql(db, "ALTER TABLE runs RENAME COLUMN hostname TO host")
        return None, "rename column"
    if kind == "bad_utf8":
        col = rng.choice(["recipe", "resolved_recipe", "results_dir", "status"])
        sql(db, "PRAGMA ignore_check_constraints = ON",
            (f"UPDATE runs SET {col} = CAST(? AS TEXT) WHERE id = 1", (b"\xff\xfe\xc3",)))
        return None, f"bad utf-8 in {col}"
    if kind == "bad_json":
        sql(db, "UPDATE runs SET resolved_recipe = '{not json' WHERE id = 1")
        return None, "bad json"
    if kind == "nulls":
        sql(db, "PRAGMA writable_schema = ON",
            "UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') WHERE name = 'runs'")
        sql(db, "UPDATE runs SET seconds = NULL, started_utc = NULL WHERE id = 1")
        return None, "nulls"
    if kind == "huge_ids":
        sql(db, "UPDATE runs SET id = 9223372036854775807 WHERE id = 2",
            "UPDATE metrics SET run_id = 9223372036854775807 WHERE run_id = 2")
        return None, "huge id"
    holder = sqlite3.connect(db, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")
    return holder, "write lock held"


def commands(cli, db, out):
    h = ["--history", db]
    return [("history", [cli, "history"] + h, True),
            ("history --json", [cli, "history", "--json"] + h, True),
            ("compare 1 2", [cli, "compare", "1", "2"] + h, True),
            ("scoreboard", [cli, "scoreboard", "--objectives", "test_accuracy:max"] + h, True),
            ("python history", [sys.executable, "-c",
                                "import sys, deep500\ntry:\n deep500.history(sys.argv[1])\n"
                                "except deep500.Error as e:\n print('deep500: error:', e)\n"
                                " sys.exit(2)", db], True),
            ("reproduce 1", [cli, "reproduce", "1", "--output-dir", out, "--no-progress",
                             "--no-plots"] + h, False),
            ("run", [cli, "run", RECIPE, "--output-dir", out, "--no-progress", "--no-plots",
                     "--set", "training.epochs=1"] + h, False)]


def check(name, cmd, read_only, db, timeout):
    before = digest(db)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"{name}: hung past {timeout} s"
    errors = [l for l in r.stdout.splitlines() if "error:" in l]
    if r.returncode < 0:
        return f"{name}: killed by signal {-r.returncode}: {r.stdout[-500:]}"
    if r.returncode == 3 or "internal error" in r.stdout:
        return f"{name}: internal error: {r.stdout[-500:]}"
    if r.returncode not in (0, 1, 2):
        return f"{name}: exit {r.returncode}: {r.stdout[-500:]}"
    if r.returncode == 2 and (len(errors) != 1 or "Traceback" in r.stdout):
        return f"{name}: not one error line: {r.stdout[-500:]}"
    if read_only and digest(db) != before:
        return f"{name}: a read-only command changed the history"
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cli", help="the deep500 executable")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--json", help="write the counts and findings here")
    a = p.parse_args()
    rng = random.Random(a.seed)
    findings, trials, runs = [], 0, 0
    with tempfile.TemporaryDirectory() as work:
        pristine = os.path.join(work, "pristine.sqlite")
        for _ in range(2):
            subprocess.run([a.cli, "run", RECIPE, "--output-dir", work, "--history", pristine,
                            "--no-progress", "--no-plots"], check=True, stdout=subprocess.DEVNULL)
        sql(pristine, "PRAGMA wal_checkpoint(TRUNCATE)")
        start = time.time()
        while time.time() - start < a.seconds:
            db, out = os.path.join(work, "h.sqlite"), os.path.join(work, "out")
            for p in (db, db + "-wal", db + "-shm"):
                if os.path.exists(p):
                    os.remove(p)
            shutil.copy(pristine, db)
            holder, what = damage(rng, db)
            name, cmd, read_only = rng.choice(commands(a.cli, db, out))
            finding = check(name, cmd, read_only, db, a.timeout)
            if holder:
                holder.close()
            trials += 1
            runs += name in ("run", "reproduce 1")
            if finding:
                findings.append({"damage": what, "finding": finding})
                print("FINDING:", what, "->", finding[:800])
    print(f"history fuzz: {trials} damaged histories through the commands ({runs} runs), "
          f"{len(findings)} findings (seed {a.seed})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"trials": trials, "runs": runs, "findings": findings}, f, indent=1)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
