#!/usr/bin/python3
"""Training-step benchmark: deep500 vs PyTorch 1.13, side by side in one run.

    /usr/bin/python3 benchmarks/training/run.py [--build-dir build] [--openblas]
        [--threads 1 2] [--rounds 5] [--warmup 3] [--reps 8] [--json OUT.json] [--markdown]
        [--baseline-setting NAME=VALUE ...]

Networks (scripts/make_models.py training exports, loss in the graph):
  lenet5        batch 64, the first 64 Fashion-MNIST training images (/255) and labels
  resnet20      batch 128, synthetic N(0,1) 3x32x32 images and uniform labels (seed 0)
  mobilenet_v2  batch 32, synthetic N(0,1) 3x224x224 images and uniform labels (seed 0)
  transformer   batch 32, uniform token ids [32, 128] below 8000 and labels (seed 0)
Per round (fresh processes; the order of the two sides alternates between
rounds), per network and thread count: benchmarks/training_step.cc
(bench_training_step) and benchmarks/training/torch_step.py, each `--warmup`
untimed steps and `--reps` timed steps. Reported per network/threads: median
step time of each side over all rounds' steps, the spread (CV, min-max of the
per-round medians), and the ratio deep500/PyTorch of the medians with a 95%
percentile-bootstrap interval. Before timing, one step from the same initial
weights on both sides must give the same loss and updated parameters within
1e-4 relative (max |a-b| / max |b| per tensor), so like is compared with like;
where PyTorch's own float32 step is further than that from the float64 step
(torch_step.py --float64), deep500 must be at most 4x as far from float64 as
PyTorch is (the allowance of tests/models/training_networks_test.cc: float32
sums in another order land elsewhere within PyTorch's own error).
--baseline-setting adds a third side timed in the same rounds: deep500 with
those settings (bench_training_step --setting NAME=VALUE each; `deep500
settings` lists them), e.g. executor.backward_hints=false
onednn.direct_loops=false, the code paths before the training shortcuts,
reported against PyTorch and against the deep500 side (before/after). Each
deep500 side's JSON records the settings it ran with ("settings").
"""

import argparse
import gzip
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FASHION = "/usr/share/datasets/fashion-mnist"
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import model_families  # noqa: E402 (the families of scripts/model_families.py)

NETWORKS = {"lenet5": 64, "resnet20": 128, "mobilenet_v2": 32, "transformer": 32,
            "video_conv3d": 8, "aspp_segmentation": 16, "unet_transpose": 16,
            "audio_frontend": 32, "attention_variants": 32, "spatial_sampling": 32}
CHECK_TOLERANCE = 1e-4
FLOAT32_FACTOR = 4  # x PyTorch's float32 distance from float64, as the model tests allow


def peers():
    spec = importlib.util.spec_from_file_location("peers_run",
                                                  os.path.join(ROOT, "benchmarks/peers/run.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def log(*parts):
    print("[training]", *parts, file=sys.stderr, flush=True)


def make_data(network, batch, out_dir):
    if network == "lenet5":
        with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
            head = f.read(16)
            assert int.from_bytes(head[:4], "big") == 2051, "not an idx3 image file"
            x = np.frombuffer(f.read(batch * 28 * 28), dtype=np.uint8)
        with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
            assert int.from_bytes(f.read(8)[:4], "big") == 2049, "not an idx1 label file"
            labels = np.frombuffer(f.read(batch), dtype=np.uint8)
        x = (x.astype(np.float32) / 255.0).reshape(batch, 1, 28, 28)
        labels = labels.astype(np.int64)
        source = f"Fashion-MNIST train[0:{batch}]"
    elif network == "transformer":
        rng = np.random.default_rng(0)
        x = rng.integers(0, 8000, size=(batch, 128)).astype(np.int64)
        labels = rng.integers(0, 10, size=batch).astype(np.int64)
        source = "uniform token ids below 8000, seed 0"
    elif network in model_families.TRAINING:
        classes, label_shape = model_families.TRAINING[network]
        rng = np.random.default_rng(0)
        shape = model_families.FAMILIES[network][1][1:]
        x = rng.standard_normal((batch, *shape), dtype=np.float32)
        labels = rng.integers(0, classes, size=(batch, *label_shape)).astype(np.int64)
        source = f"synthetic N(0,1), {classes} classes, seed 0"
    else:
        side = 32 if network == "resnet20" else 224
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, 3, side, side), dtype=np.float32)
        labels = rng.integers(0, 10, size=batch).astype(np.int64)
        source = "synthetic N(0,1), seed 0"
    xp, lp = os.path.join(out_dir, f"{network}_x.npy"), os.path.join(out_dir, f"{network}_labels.npy")
    np.save(xp, x)
    np.save(lp, labels)
    return xp, lp, source


def command(side, exe, network, model, xp, lp, threads, warmup, reps, save=None, settings=()):
    common = ["--threads", str(threads), "--warmup", str(warmup), "--reps", str(reps),
              "--lr", "0.01", "--momentum", "0.9"]
    if save:
        common += ["--save-step", save]
    if side == "deep500":
        return [exe, model, xp, lp] + common + [a for s in settings for a in ("--setting", s)]
    return ["/usr/bin/python3", os.path.join(HERE, "torch_step.py"), network, model, xp,
            lp] + common


def compare_step(d_dir, t_dir):
    worst, where = 0.0, ""
    for name in sorted(os.listdir(t_dir)):
        a = np.load(os.path.join(d_dir, name)).astype(np.float64)
        b = np.load(os.path.join(t_dir, name)).astype(np.float64)
        if a.shape != b.shape and a.size == b.size:
            a = a.reshape(b.shape)
        rel = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
        if rel > worst:
            worst, where = rel, name[:-4]
    return worst, where


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--models-dir")
    p.add_argument("--exe", help="bench_training_step (default: BUILD_DIR/benchmarks/...)")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--networks", nargs="+", default=list(NETWORKS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--reps", type=int, default=8)
    p.add_argument("--openblas", action="store_true",
                   help="PyTorch with OpenBLAS, as benchmarks/peers/run.py --openblas")
    p.add_argument("--baseline-setting", nargs="+", metavar="NAME=VALUE",
                   help="also time a 'baseline' deep500 side with these settings (passed as "
                        "bench_training_step --setting NAME=VALUE) in the same rounds, e.g. "
                        "executor.backward_hints=false onednn.direct_loops=false: before/after")
    p.add_argument("--json")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    for s in a.baseline_setting or []:
        if "=" not in s or s.startswith("="):
            p.error(f"--baseline-setting {s!r}: expected NAME=VALUE")
    pr = peers()
    models_dir = a.models_dir or os.path.join(a.build_dir, "models")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts/make_models.py"), models_dir],
                   check=True, stdout=subprocess.DEVNULL)
    exe = a.exe or os.path.join(a.build_dir, "benchmarks", "bench_training_step")
    if not os.path.exists(exe):
        raise SystemExit(f"{exe} missing: build with -DDEEP500_BUILD_BENCHMARKS=ON "
                         "(ninja bench_training_step)")
    openblas = pr.ensure_openblas() if a.openblas else None
    tmp = tempfile.mkdtemp(prefix="training-bench-")
    report = {"cpu": pr.cpu_model(), "loadavg_start": pr.loadavg(), "host": platform.node(),
              "rounds": a.rounds, "warmup": a.warmup, "reps": a.reps, "openblas": openblas,
              "cases": []}
    for network in a.networks:
        batch = NETWORKS[network]
        model = os.path.join(models_dir, f"{network}_train", "model.onnx")
        xp, lp, source = make_data(network, batch, tmp)
        # Like with like: one step from the same weights, on both sides and in
        # float64 (PyTorch's float32 step is itself off by up to ~1e-3 relative
        # at small batches, after BatchNorm backward).
        sides = {"deep500": [], "pytorch": [], "pytorch64": ["--float64"]}
        dirs = {s: os.path.join(tmp, f"{network}_{s}_step") for s in sides}
        check = {}
        for side, extra_args in sides.items():
            env = pr.runner_env("deep500" if side == "deep500" else "pytorch", 1, openblas, False)
            kind = "deep500" if side == "deep500" else "pytorch"
            check[side] = pr.run_one(command(kind, exe, network, model, xp, lp, 1, 1, 1,
                                             dirs[side]) + extra_args, env, 600)
        vs_torch = compare_step(dirs["deep500"], dirs["pytorch"])
        vs_exact = compare_step(dirs["deep500"], dirs["pytorch64"])
        torch_vs_exact = compare_step(dirs["pytorch"], dirs["pytorch64"])
        ok = vs_torch[0] <= CHECK_TOLERANCE or vs_exact[0] <= max(
            CHECK_TOLERANCE, FLOAT32_FACTOR * torch_vs_exact[0])
        log(f"{network}: first-step loss deep500 {check['deep500']['first_loss']:.7f} "
            f"pytorch {check['pytorch']['first_loss']:.7f} float64 "
            f"{check['pytorch64']['first_loss']:.7f}; worst relative difference of "
            f"loss/updated parameters: deep500 vs PyTorch {vs_torch[0]:.1e} ({vs_torch[1]}), "
            f"deep500 vs float64 {vs_exact[0]:.1e}, PyTorch vs float64 {torch_vs_exact[0]:.1e}")
        check_report = {"loss_deep500": check["deep500"]["first_loss"],
                        "loss_pytorch": check["pytorch"]["first_loss"],
                        "loss_float64": check["pytorch64"]["first_loss"],
                        "deep500_vs_pytorch": vs_torch, "deep500_vs_float64": vs_exact,
                        "pytorch_vs_float64": torch_vs_exact, "ok": ok}
        for threads in a.threads:
            names = ["deep500", "pytorch"] + (["baseline"] if a.baseline_setting else [])
            samples = {s: [] for s in names}
            round_medians = {s: [] for s in names}
            extra = {}
            for r in range(a.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                if r % 2:
                    order.reverse()
                for side in order:
                    env = pr.runner_env("pytorch" if side == "pytorch" else "deep500", threads,
                                        openblas, False)
                    kind = "deep500" if side == "baseline" else side
                    settings = a.baseline_setting if side == "baseline" else ()
                    res = pr.run_one(command(kind, exe, network, model, xp, lp, threads,
                                             a.warmup, a.reps, settings=settings), env, 1800)
                    samples[side] += res["seconds"]
                    round_medians[side].append(float(np.median(res["seconds"])))
                    extra[side] = {k: res[k] for k in ("blas", "torch_threads", "settings")
                                   if k in res}
                log(f"{network} t{threads} round {r + 1}/{a.rounds}: " +
                    ", ".join(f"{s} {round_medians[s][-1] * 1e3:.1f} ms" for s in names))
            sd, st = pr.summarize(samples["deep500"]), pr.summarize(samples["pytorch"])
            case = {"network": network, "batch": batch, "data": source, "threads": threads,
                    "deep500": sd, "pytorch": st, "round_medians": round_medians,
                    "ratio": sd["median"] / st["median"],
                    "ratio_ci95": pr.bootstrap_ratio(samples["deep500"], samples["pytorch"]),
                    "check": check_report,
                    "pytorch_info": extra.get("pytorch", {}),
                    "deep500_settings": extra.get("deep500", {}).get("settings")}
            if a.baseline_setting:
                sb = pr.summarize(samples["baseline"])
                case["baseline"] = dict(sb, settings=a.baseline_setting,
                                        settings_ran=extra.get("baseline", {}).get("settings"),
                                        ratio=sb["median"] / st["median"],
                                        ratio_ci95=pr.bootstrap_ratio(samples["baseline"],
                                                                      samples["pytorch"]),
                                        speedup_ci95=pr.bootstrap_ratio(samples["baseline"],
                                                                        samples["deep500"]))
            report["cases"].append(case)
    report["loadavg_end"] = pr.loadavg()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    lines = ["| network | batch | threads | deep500 median ms (CV) | PyTorch median ms (CV) | "
             "ratio deep500/PyTorch [95% CI] | per-round medians ms deep500 / PyTorch | "
             "first-step check: vs PyTorch / vs float64 (PyTorch vs float64) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in report["cases"]:
        d, t = c["deep500"], c["pytorch"]
        rm = c["round_medians"]
        lines.append(
            f"| {c['network']} | {c['batch']} | {c['threads']} | {d['median'] * 1e3:.1f} "
            f"({d['cv']:.2f}) | {t['median'] * 1e3:.1f} ({t['cv']:.2f}) | {c['ratio']:.2f} "
            f"[{c['ratio_ci95'][0]:.2f}, {c['ratio_ci95'][1]:.2f}] | "
            f"{min(rm['deep500']) * 1e3:.1f}-{max(rm['deep500']) * 1e3:.1f} / "
            f"{min(rm['pytorch']) * 1e3:.1f}-{max(rm['pytorch']) * 1e3:.1f} | "
            f"{'ok' if c['check']['ok'] else 'FAIL'} {c['check']['deep500_vs_pytorch'][0]:.1e} / "
            f"{c['check']['deep500_vs_float64'][0]:.1e} "
            f"({c['check']['pytorch_vs_float64'][0]:.1e}) |")
    if any("baseline" in c for c in report["cases"]):
        lines += ["", "| network | threads | baseline (--setting " +
                  " --setting ".join(a.baseline_setting) + ") median ms (CV) | "
                  "baseline/PyTorch [95% CI] | baseline/deep500 [95% CI] | "
                  "per-round medians ms baseline |", "|---|---|---|---|---|---|"]
        for c in report["cases"]:
            b = c["baseline"]
            rb = c["round_medians"]["baseline"]
            lines.append(
                f"| {c['network']} | {c['threads']} | {b['median'] * 1e3:.1f} ({b['cv']:.2f}) | "
                f"{b['ratio']:.2f} [{b['ratio_ci95'][0]:.2f}, {b['ratio_ci95'][1]:.2f}] | "
                f"{b['median'] / c['deep500']['median']:.2f} [{b['speedup_ci95'][0]:.2f}, "
                f"{b['speedup_ci95'][1]:.2f}] | {min(rb) * 1e3:.1f}-{max(rb) * 1e3:.1f} |")
    print("\n".join(lines) if a.markdown else json.dumps(report, indent=1))
    return 0 if all(c["check"]["ok"] for c in report["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
