#!/usr/bin/python3
"""Side-by-side network benchmark: deep500 vs ONNX Runtime vs PyTorch.

    /usr/bin/python3 benchmarks/peers/run.py [--build-dir build] [--openblas] [--quick] ...

For each network (resnet18, mobilenet_v2, squeezenet1_1 from
scripts/make_models.py), for threads in (1, 2), for batch in (1, 16), the
three runners run interleaved in rounds, a fresh process per runner and
round, the order rotated each round (ABC, BCA, CAB, ...). Every process does
its own warm-up and timed repetitions and prints one JSON line; the samples of
all rounds are pooled per runner and summarised here with one implementation
(median, p90, 95% CI of the median, CV, min), so all three are treated alike.

Ratios ours/peer are ratios of medians with a 95% bootstrap interval
(samples resampled per runner, 2000 times); peak memory is the largest
getrusage ru_maxrss of any round's process. Outputs of the three are compared
(max abs difference at batch 1 and 16) before any number is trusted.

deep500's first round of every cell also profiles 3 untimed runs node by
node: the reference kernels' share of its node time, listed for the five
largest cells; the run exits 1 when a cell's share is above
--max-reference-share (10%): a model then runs on a kernel no fast backend
has.

Writes results/peers/<UTC timestamp>/peers.json, peers.md and the raw JSON
lines (raw.jsonl); prints the markdown table. Not part of ctest.
See docs/peer-benchmarks.md.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NETWORKS = ["resnet18", "mobilenet_v2", "squeezenet1_1"]
RUNNERS = ["deep500", "onnxruntime", "pytorch"]
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
SYSTEM_BLAS_ALTERNATIVE = "libblas.so.3-x86_64-linux-gnu"


def suite_networks():
    """scripts/model_suite.py's networks, in its order."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import model_suite
    return list(model_suite.SUITE)


def log(*parts):
    print("[peers]", *parts, file=sys.stderr, flush=True)


# ----------------------------------------------------------------- statistics


def median_ci_ranks(n, confidence=0.95):
    """1-based order-statistic ranks (j, k) bounding the median with coverage
    >= confidence (Binomial(n, 1/2)); same rule as metrics/statistics.h."""
    from math import comb
    if n < 1:
        return None
    pmf = [comb(n, i) / 2.0 ** n for i in range(n + 1)]
    best = None
    for j in range(1, n // 2 + 1):
        k = n + 1 - j
        coverage = sum(pmf[j:k])  # P(j <= B < k)
        if coverage >= confidence:
            best = (j, k)
        else:
            break
    return best


def summarize(samples):
    s = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(s)
    med = float(np.median(s))
    mean = float(s.mean())
    sd = float(s.std(ddof=1)) if n > 1 else 0.0
    ranks = median_ci_ranks(n)
    ci = [float(s[ranks[0] - 1]), float(s[ranks[1] - 1])] if ranks else [float(s[0]), float(s[-1])]
    return {"n": n, "median": med, "p90": float(np.percentile(s, 90)), "min": float(s[0]),
            "max": float(s[-1]), "mean": mean, "cv": sd / mean if mean > 0 else 0.0,
            "ci95_median": ci, "ci_valid": ranks is not None}


def bootstrap_ratio(a, b, iterations=2000, seed=0):
    """95% percentile-bootstrap interval of median(a)/median(b)."""
    rng = np.random.default_rng(seed)
    a = np.asarray(a)
    b = np.asarray(b)
    ma = np.median(rng.choice(a, size=(iterations, len(a)), replace=True), axis=1)
    mb = np.median(rng.choice(b, size=(iterations, len(b)), replace=True), axis=1)
    r = ma / mb
    return [float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))]


# -------------------------------------------------------------------- set-up


def ensure_node_modules():
    if os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        return
    log("node_modules missing: npm install (onnxruntime-node, CPU only)")
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL_CUDA="skip")
    subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=HERE, env=env, check=True)


def ensure_openblas():
    """OpenBLAS for the PyTorch runner only, without touching the system BLAS.

    `apt-get install libopenblas0-pthread` would register OpenBLAS as the
    system-wide libblas.so.3 alternative (it has the higher priority), which
    silently changes every other program's BLAS. Instead the package is
    fetched with `apt-get download` and unpacked into benchmarks/peers/.openblas;
    torch_runner.py gets it through LD_LIBRARY_PATH. An OpenBLAS the system
    already has (OPENBLAS_DIR) is used as is. Returns the library directory.
    """
    if os.path.exists(os.path.join(OPENBLAS_DIR, "libblas.so.3")):
        return OPENBLAS_DIR
    local = os.path.join(HERE, ".openblas")
    libdir = local + OPENBLAS_DIR
    if os.path.exists(os.path.join(libdir, "libblas.so.3")):
        return libdir
    log("--openblas: apt-get download libopenblas0-pthread, unpacked into "
        f"{local} (the system BLAS is left alone)")
    tmp = local + ".download"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    os.chmod(tmp, 0o777)  # apt's sandbox user writes the .deb
    subprocess.run(["apt-get", "download", "libopenblas0-pthread"], cwd=tmp, check=True)
    debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
    if len(debs) != 1:
        raise SystemExit(f"apt-get download left {debs} in {tmp}")
    subprocess.run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), local], check=True)
    shutil.rmtree(tmp, ignore_errors=True)
    if not os.path.exists(os.path.join(libdir, "libblas.so.3")):
        raise SystemExit(f"no libblas.so.3 under {libdir} after unpacking {debs[0]}")
    return libdir


def current_blas_alternative():
    try:
        return os.path.realpath(f"/etc/alternatives/{SYSTEM_BLAS_ALTERNATIVE}")
    except OSError:
        return "unknown"


def ensure_runner(build_dir):
    exe = os.path.join(build_dir, "benchmarks", "bench_network_runner")
    if not os.path.exists(exe):
        log(f"{exe} missing: building target bench_network_runner")
        subprocess.run(["cmake", "--build", build_dir, "--target", "bench_network_runner"],
                       check=True)
    return exe


def ensure_models(models_dir, nets, suite, batch16):
    if suite:  # exports only what is missing or changed
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "model_suite.py"),
                        models_dir, "--nets"] + nets + (["--batch16"] if batch16 else []),
                       check=True)
        return
    if all(os.path.exists(os.path.join(models_dir, n, "model.onnx")) for n in nets):
        return
    log(f"models missing: scripts/make_models.py {models_dir}")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "make_models.py"),
                    models_dir], check=True)


# ------------------------------------------------------------------- running


def runner_command(runner, args, exe, model, x, threads, warmup, reps, max_seconds, save,
                   state_dict, profile=0):
    common = [model, x, "--threads", str(threads), "--warmup", str(warmup), "--reps", str(reps),
              "--max-seconds", str(max_seconds)]
    if save:
        common += ["--save-output", save]
    if runner == "deep500":
        cmd = [exe] + common
        if args.executor:
            cmd += ["--executor", args.executor]
        if profile:  # untimed runs after the timed ones: where deep500's time goes
            cmd += ["--profile", str(profile)]
        return cmd
    if runner == "onnxruntime":
        return ["node", os.path.join(HERE, "ort_runner.js")] + common + (
            ["--no-spin"] if args.no_spin else [])
    if args.suite:
        return ["/usr/bin/python3", os.path.join(HERE, "torch_runner.py")] + common + ["--suite"]
    return ["/usr/bin/python3", os.path.join(HERE, "torch_runner.py")] + common + [
        "--state-dict", state_dict]


def runner_env(runner, threads, openblas, no_spin):
    """Thread variables for every runner; OpenBLAS (a directory) for PyTorch only."""
    env = dict(os.environ)
    if no_spin:  # OpenMP users (deep500's oneDNN, PyTorch); ORT gets --no-spin
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    if runner == "pytorch" and openblas:
        env["LD_LIBRARY_PATH"] = openblas + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
    return env


def run_one(cmd, env, timeout):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    wall = time.perf_counter() - t0
    line = next((l for l in reversed(p.stdout.splitlines()) if l.startswith("{")), None)
    if p.returncode != 0 or line is None:
        raise RuntimeError(f"{' '.join(cmd)} failed (rc {p.returncode}):\n{p.stdout[-2000:]}"
                           f"\n{p.stderr[-2000:]}")
    result = json.loads(line)
    if "error" in result:
        raise RuntimeError(f"{' '.join(cmd)}: {result['error']}")
    result["process_wall_seconds"] = wall
    return result


def compare_outputs(paths, reference):
    out = {}
    arrays = {r: np.load(p) for r, p in paths.items() if p and os.path.exists(p)}
    ref = np.load(reference) if os.path.exists(reference) else None
    scale = float(np.abs(ref).max()) if ref is not None else None
    names = sorted(arrays)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if arrays[a].shape != arrays[b].shape:
                out[f"{a}-{b}"] = f"shape {arrays[a].shape} vs {arrays[b].shape}"
            else:
                out[f"{a}-{b}"] = float(np.abs(arrays[a] - arrays[b]).max())
        if ref is not None:
            out[f"{a}-make_models"] = (float(np.abs(arrays[a] - ref).max())
                                       if arrays[a].shape == ref.shape else "shape mismatch")
    out["max_abs_output"] = scale
    diffs = [v for k, v in out.items() if k != "max_abs_output"]
    out["agree"] = bool(scale is not None and len(arrays) >= 1
                        and all(isinstance(v, float) and v <= 1e-3 * scale for v in diffs))
    return out


# -------------------------------------------------------------------- report


def fmt_ratio(r):
    if r is None:
        return "n/a"
    return f"{r['ratio']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"


def geometric_means(cells):
    """Per (threads, batch) and peer: the geometric mean over networks of the
    ratio deep500 / peer, and the network with the largest ratio."""
    groups = {}
    for c in cells:
        for peer, r in c["ratio"].items():
            groups.setdefault((c["threads"], c["batch"], peer), []).append((r["ratio"], c["network"]))
    out = []
    for (threads, batch, peer), rs in sorted(groups.items()):
        worst = max(rs)
        out.append({"threads": threads, "batch": batch, "peer": peer, "networks": len(rs),
                    "geometric_mean": float(np.exp(np.mean(np.log([r for r, _ in rs])))),
                    "worst": {"network": worst[1], "ratio": worst[0]}})
    return out


PROFILE_RUNS = 3  # deep500's untimed profiled runs in round 0 of every cell


def reference_ops(nodes):
    """Op types that ran on reference kernels, by their summed median seconds."""
    seconds = {}
    for n in nodes:
        if n["implementation"].split(":")[0] == "reference":
            seconds[n["op_type"]] = seconds.get(n["op_type"], 0) + n["median_s"]
    return sorted(seconds.items(), key=lambda kv: -kv[1])


def reference_lines(report):
    """The five cells with the largest reference share, and their reference ops."""
    cells = [c for c in report["cells"] if "reference_share" in c["runners"].get("deep500", {})]
    cells.sort(key=lambda c: -c["runners"]["deep500"]["reference_share"])
    lines = ["", "Reference kernels' share of deep500's node time (median of "
             f"{PROFILE_RUNS} profiled runs per node), the largest five:", "",
             "| network | thr | batch | reference share | reference ops (ms) |", "|---|---|---|---|---|"]
    for c in cells[:5]:
        d = c["runners"]["deep500"]
        ops = ", ".join(f"{op} {1e3 * t:.2f}" for op, t in d["reference_ops"]) or "none"
        lines.append(f"| {c['network']} | {c['threads']} | {c['batch']} | "
                     f"{100 * d['reference_share']:.1f}% | {ops} |")
    return lines


def markdown(report):
    lines = []
    ctx = report["context"]
    d5_exec = sorted({c["runners"]["deep500"].get("executor", "?") for c in report["cells"]
                      if "deep500" in c["runners"]})
    lines.append(f"# Peer benchmark {report['timestamp']}")
    lines.append("")
    lines.append(f"- machine: {ctx['cpu']} ({ctx['logical_cpus']} logical CPUs), load average "
                 f"before/after {ctx['loadavg_start']} / {ctx['loadavg_end']}")
    lines.append(f"- deep500 executor: {', '.join(d5_exec)}; backends built: "
                 f"{', '.join(report['versions'].get('deep500_backends', []))}")
    lines.append(f"- ONNX Runtime {report['versions'].get('onnxruntime', '?')} (npm onnxruntime-node,"
                 f" CPU EP, graphOptimizationLevel all, inter_op 1)")
    lines.append(f"- PyTorch {report['versions'].get('pytorch', '?')}, BLAS: "
                 f"{report['versions'].get('pytorch_blas', '?')}")
    lines.append(f"- rounds x reps per process: batch 1 {report['settings']['rounds_b1']} x "
                 f"{report['settings']['reps_b1']}, batch 16 {report['settings']['rounds_b16']} x "
                 f"{report['settings']['reps_b16']}; warm-up {report['settings']['warmup']} / "
                 f"{report['settings']['warmup_b16']} per process; fresh process per round, "
                 f"order rotated; timed loop capped at {report['settings']['max_seconds']} s "
                 f"per process (>= 3 reps); idle threads "
                 + ("sleep (--no-spin)" if report['settings']['no_spin'] else
                    "spin (library defaults)"))
    lines.append("- ratio = median(deep500) / median(peer) of seconds per run, with a 95% "
                 "bootstrap interval; < 1 means deep500 is faster. Memory: peak RSS "
                 "(ru_maxrss) of the whole process, ratio deep500 / peer.")
    lines.append("")
    lines.append("| network | thr | batch | deep500 ms | ORT ms | PyTorch ms | deep500/ORT | "
                 "deep500/PyTorch | samples/s d5 / ORT / PT | peak RSS MiB d5 / ORT / PT | "
                 "mem d5/ORT | mem d5/PT |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in report["cells"]:
        r = c["runners"]

        def ms(name):
            return f"{1e3 * r[name]['summary']['median']:.1f}" if name in r else "n/a"

        def sps(name):
            return f"{r[name]['samples_per_s']:.1f}" if name in r else "n/a"

        def mib(name):
            return f"{r[name]['peak_rss_kib'] / 1024:.0f}" if name in r else "n/a"

        mem = c["memory_ratio"]
        lines.append(
            f"| {c['network']} | {c['threads']} | {c['batch']} | {ms('deep500')} | "
            f"{ms('onnxruntime')} | {ms('pytorch')} | {fmt_ratio(c['ratio'].get('onnxruntime'))} "
            f"| {fmt_ratio(c['ratio'].get('pytorch'))} | {sps('deep500')} / {sps('onnxruntime')} / "
            f"{sps('pytorch')} | {mib('deep500')} / {mib('onnxruntime')} / {mib('pytorch')} | "
            + (f"{mem['onnxruntime']:.2f}" if mem.get("onnxruntime") else "n/a") + " | "
            + (f"{mem['pytorch']:.2f}" if mem.get("pytorch") else "n/a") + " |")
    lines.append("")
    lines.append("Geometric means over the networks (deep500 / peer, ratio of medians):")
    lines.append("")
    lines.append("| thr | batch | peer | networks | geometric mean | largest |")
    lines.append("|---|---|---|---|---|---|")
    for g in report.get("geometric_means", []):
        lines.append(f"| {g['threads']} | {g['batch']} | {g['peer']} | {g['networks']} | "
                     f"{g['geometric_mean']:.2f} | {g['worst']['network']} "
                     f"{g['worst']['ratio']:.2f} |")
    lines.append("")
    lines.append("Output agreement (max abs difference; reference = PyTorch's exported output):")
    lines.append("")
    lines.append("| network | batch | max abs output | deep500-ORT | deep500-PyTorch | ORT-PyTorch "
                 "| agree (<= 1e-3 x max) |")
    lines.append("|---|---|---|---|---|---|---|")
    for key, a in report["agreement"].items():
        net, batch = key.rsplit("/b", 1)

        def g(k):
            v = a.get(k)
            return f"{v:.2e}" if isinstance(v, float) else str(v)

        lines.append(f"| {net} | {batch} | {g('max_abs_output')} | {g('deep500-onnxruntime')} | "
                     f"{g('deep500-pytorch')} | {g('onnxruntime-pytorch')} | {a['agree']} |")
    lines.extend(reference_lines(report))
    warn = [f"{c['network']} t{c['threads']} b{c['batch']} {n}: CV {s['summary']['cv']:.2f}"
            for c in report["cells"] for n, s in c["runners"].items() if s["summary"]["cv"] > 0.1]
    if warn:
        lines.append("")
        lines.append("Wide spread (CV > 0.10): " + "; ".join(warn))
    return "\n".join(lines) + "\n"


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--suite", action="store_true",
                   help="the broad model suite (scripts/model_suite.py; default networks: all of "
                        "it, models in BUILD_DIR/model_suite)")
    p.add_argument("--models-dir", default="",
                   help="default: BUILD_DIR/models, or BUILD_DIR/model_suite with --suite")
    p.add_argument("--out", default=os.path.join(ROOT, "results", "peers"))
    p.add_argument("--nets", nargs="+", default=None, choices=NETWORKS + suite_networks(),
                   help="default: " + " ".join(NETWORKS) + " (with --suite: the suite's)")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 16], choices=[1, 16])
    p.add_argument("--runners", nargs="+", default=RUNNERS, choices=RUNNERS)
    p.add_argument("--executor", default="", help="deep500 executor (default: optimized if "
                   "registered, else reference)")
    p.add_argument("--rounds-b1", type=int, default=3)
    p.add_argument("--rounds-b16", type=int, default=2)
    p.add_argument("--reps-b1", type=int, default=10, help="timed reps per process, batch 1")
    p.add_argument("--reps-b16", type=int, default=3, help="timed reps per process, batch 16")
    p.add_argument("--warmup", type=int, default=2, help="warm-up runs per process, batch 1")
    p.add_argument("--warmup-b16", type=int, default=1, help="warm-up runs per process, batch 16")
    p.add_argument("--max-seconds", type=float, default=3.0,
                   help="cap on one process's timed loop (it still does >= 3 reps)")
    p.add_argument("--timeout", type=float, default=300, help="per process")
    p.add_argument("--openblas", action="store_true",
                   help="run PyTorch with OpenBLAS (OPENBLAS_CORETYPE=SkylakeX); fetched with "
                   "apt-get download into benchmarks/peers/.openblas if the system has none")
    p.add_argument("--no-spin", action="store_true",
                   help="idle threads sleep instead of spinning: OMP_WAIT_POLICY=PASSIVE for "
                   "all, session.intra_op.allow_spinning=0 for ONNX Runtime (use on shared or "
                   "oversubscribed machines)")
    p.add_argument("--quick", action="store_true", help="1 round, few reps (smoke test)")
    p.add_argument("--max-reference-share", type=float, default=0.10,
                   help="exit 1 when deep500 spends more of a cell's node time in reference "
                        "kernels (default 0.10)")
    args = p.parse_args()
    if args.quick:
        args.rounds_b1, args.rounds_b16, args.reps_b1, args.reps_b16 = 1, 1, 3, 2
        args.warmup, args.warmup_b16 = 1, 1
    build_dir = os.path.abspath(args.build_dir)
    if args.nets is None:
        args.nets = suite_networks() if args.suite else NETWORKS
    models_dir = os.path.abspath(args.models_dir or os.path.join(
        build_dir, "model_suite" if args.suite else "models"))

    if "onnxruntime" in args.runners:
        ensure_node_modules()
    openblas = ensure_openblas() if args.openblas else None
    exe = ensure_runner(build_dir) if "deep500" in args.runners else None
    ensure_models(models_dir, args.nets, args.suite, 16 in args.batches)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out_dir = os.path.join(os.path.abspath(args.out), stamp)
    os.makedirs(os.path.join(out_dir, "outputs"), exist_ok=True)
    cache = os.path.join(out_dir, "cache")
    os.makedirs(cache, exist_ok=True)

    report = {"timestamp": stamp, "settings": {
        "nets": args.nets, "threads": args.threads, "batches": args.batches,
        "runners": args.runners, "rounds_b1": args.rounds_b1, "rounds_b16": args.rounds_b16,
        "reps_b1": args.reps_b1, "reps_b16": args.reps_b16, "warmup": args.warmup,
        "warmup_b16": args.warmup_b16,
        "max_seconds": args.max_seconds, "executor": args.executor or "(default)",
        "openblas": openblas, "no_spin": args.no_spin, "process_per_round": True, "order": "rotated per round"},
        "context": {"cpu": cpu_model(), "logical_cpus": os.cpu_count(),
                    "affinity_cpus": len(os.sched_getaffinity(0)), "loadavg_start": loadavg(),
                    "hostname": platform.node(), "system_blas": current_blas_alternative()},
        "versions": {}, "cells": [], "agreement": {}}
    raw = open(os.path.join(out_dir, "raw.jsonl"), "w")
    t_start = time.perf_counter()

    # PyTorch weights: converted once per network from the ONNX initializers.
    if "pytorch" in args.runners and not args.suite:  # suite networks are rebuilt from seeds
        for net in args.nets:
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_runner.py"),
                            os.path.join(models_dir, net, "model.onnx"), "-",
                            "--convert-to", os.path.join(cache, f"{net}.pt")], check=True)

    for net in args.nets:
        model = os.path.join(models_dir, net, "model.onnx")
        for threads in args.threads:
            for batch in args.batches:
                x = os.path.join(models_dir, net, "x.npy" if batch == 1 else "x16.npy")
                rounds = args.rounds_b1 if batch == 1 else args.rounds_b16
                reps = args.reps_b1 if batch == 1 else args.reps_b16
                warmup = args.warmup if batch == 1 else args.warmup_b16
                per_runner = {r: [] for r in args.runners}
                save_paths = {}
                for rnd in range(rounds):
                    k = rnd % len(args.runners)
                    order = args.runners[k:] + args.runners[:k]
                    for runner in order:
                        save = None
                        if rnd == 0 and threads == args.threads[0]:
                            save = os.path.join(out_dir, "outputs", f"{net}_b{batch}_{runner}.npy")
                            save_paths[runner] = save
                        cmd = runner_command(runner, args, exe, model, x, threads, warmup,
                                             reps, args.max_seconds, save,
                                             os.path.join(cache, f"{net}.pt"),
                                             PROFILE_RUNS if rnd == 0 else 0)
                        res = run_one(cmd, runner_env(runner, threads, openblas, args.no_spin),
                                      args.timeout)
                        res["round"] = rnd
                        res["network"] = net
                        raw.write(json.dumps(res) + "\n")
                        raw.flush()
                        per_runner[runner].append(res)
                        log(f"{net} t{threads} b{batch} round {rnd} {runner}: median "
                            f"{1e3 * res['summary']['median']:.2f} ms, peak "
                            f"{res['peak_rss_kib'] / 1024:.0f} MiB"
                            + (f" ({res['executor']})" if runner == "deep500" else ""))
                if save_paths:
                    ref = os.path.join(models_dir, net, "y.npy" if batch == 1 else "y16.npy")
                    report["agreement"][f"{net}/b{batch}"] = compare_outputs(save_paths, ref)
                cell = {"network": net, "threads": threads, "batch": batch, "runners": {},
                        "ratio": {}, "memory_ratio": {}}
                for runner, results in per_runner.items():
                    seconds = [s for r in results for s in r["seconds"]]
                    summ = summarize(seconds)
                    last = results[-1]
                    entry = {"summary": summ, "samples_per_s": batch / summ["median"],
                             "seconds": seconds,
                             "round_medians": [r["summary"]["median"] for r in results],
                             "peak_rss_kib": max(r["peak_rss_kib"] for r in results),
                             "rss_start_kib": min(r["rss_start_kib"] for r in results),
                             "rss_loaded_kib": max(r["rss_loaded_kib"] for r in results),
                             "load_seconds": float(np.median([r["load_seconds"]
                                                              for r in results]))}
                    for key in ("executor", "implementations", "blas_libraries", "version"):
                        if key in last:
                            entry[key] = last[key]
                    if runner == "deep500" and "reference_share" in results[0]:
                        entry["reference_share"] = results[0]["reference_share"]
                        entry["reference_ops"] = reference_ops(results[0]["nodes"])
                    cell["runners"][runner] = entry
                    if runner == "deep500":
                        report["versions"]["deep500_executor"] = last.get("executor")
                        report["versions"]["deep500_backends"] = last.get("backends_built", [])
                    elif runner == "onnxruntime":
                        report["versions"]["onnxruntime"] = last.get("version")
                    else:
                        report["versions"]["pytorch"] = last.get("version")
                        libs = last.get("blas_libraries") or ["none mapped"]
                        report["versions"]["pytorch_blas"] = ", ".join(libs) + (
                            " (OPENBLAS_CORETYPE=SkylakeX)" if args.openblas else "")
                if "deep500" in cell["runners"]:
                    ours = cell["runners"]["deep500"]
                    for peer in ("onnxruntime", "pytorch"):
                        if peer not in cell["runners"]:
                            continue
                        theirs = cell["runners"][peer]
                        cell["ratio"][peer] = {
                            "ratio": ours["summary"]["median"] / theirs["summary"]["median"],
                            "ci95": bootstrap_ratio(ours["seconds"], theirs["seconds"]),
                            "ratio_of_min": ours["summary"]["min"] / theirs["summary"]["min"]}
                        cell["memory_ratio"][peer] = ours["peak_rss_kib"] / theirs["peak_rss_kib"]
                report["cells"].append(cell)

    raw.close()
    report["geometric_means"] = geometric_means(report["cells"])
    shutil.rmtree(cache, ignore_errors=True)
    report["context"]["loadavg_end"] = loadavg()
    report["context"]["total_seconds"] = time.perf_counter() - t_start
    with open(os.path.join(out_dir, "peers.json"), "w") as f:
        json.dump(report, f, indent=1)
    table = markdown(report)
    with open(os.path.join(out_dir, "peers.md"), "w") as f:
        f.write(table)
    print(table)
    log(f"wrote {out_dir}/peers.json, peers.md, raw.jsonl "
        f"({report['context']['total_seconds']:.0f} s)")
    bad = [k for k, a in report["agreement"].items() if not a["agree"]]
    if bad:
        log(f"WARNING: outputs disagree for {', '.join(bad)}: do not trust those ratios")
        return 1
    over = [c for c in report["cells"] if c["runners"].get("deep500", {}).get(
        "reference_share", 0) > args.max_reference_share]
    if over:
        log(f"FAILED: {len(over)} cells spend more than {100 * args.max_reference_share:.0f}% "
            f"of deep500's node time in reference kernels: " + "; ".join(
                f"{c['network']} t{c['threads']} b{c['batch']}" for c in over))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
