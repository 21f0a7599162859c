#!/usr/bin/env python3
"""What calling deep500 from Python costs, measured side by side in one run.

1. Operator call: a prepared operator (deep500.Operator) run from a Python loop
   against the same forward() run from a C++ loop, interleaved repetition by
   repetition; the overhead per call is (Python - C++) / calls.
2. Training step: LeNet-5 on Fashion-MNIST, three sides interleaved run by
   run: driven from C++ (the `deep500 train` command), driven from Python
   (deep500.train, same task), and driven from Python with a Python update
   rule (the twin of "momentum", tests/python) in place of the C++ one, and
   with a rule that does nothing (the cost of the calls alone). The ratios
   are step time Python / C++ and Python rule / C++ rule.
Medians with 95% confidence intervals (deep500.summarize: the C++ statistics).

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/overhead.py --json overhead.json
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

import deep500


class PyMomentum:
    """Heavy-ball SGD, torch's semantics: the Python twin of "momentum"."""
    hyper_parameters = {"lr": 0.01, "momentum": 0.9}

    def update_rule(self, step, name, param, grad, slot, hyper):
        v = slot("v")
        v *= np.float32(hyper["momentum"])
        v += grad
        param -= np.float32(hyper["lr"]) * v


class PyNothing:
    """An update rule that changes nothing: what calling into Python costs."""
    hyper_parameters = {"lr": 0.01, "momentum": 0.9}

    def update_rule(self, step, name, param, grad, slot, hyper):
        pass


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", default="Relu", help="operator type (default Relu)")
    p.add_argument("--shape", default="1x64", help="its input shape (default 1x64)")
    p.add_argument("--backend", default="reference", help="its backend (default reference)")
    p.add_argument("--calls", type=int, default=20000, help="calls per repetition")
    p.add_argument("--repetitions", type=int, default=15, help="repetitions per side")
    p.add_argument("--samples", type=int, default=16384, help="training samples per run")
    p.add_argument("--rounds", type=int, default=5, help="training runs per side")
    p.add_argument("--cli", default=shutil.which("deep500") or "build/recipes/deep500",
                   help="the deep500 command (default: on PATH, else build/recipes/deep500)")
    p.add_argument("--json", help="write the results here")
    return p.parse_args()


def operator_overhead(a):
    x = np.random.default_rng(0).standard_normal(
        [int(d) for d in a.shape.split("x")]).astype(np.float32)
    op = deep500.Operator(deep500.op(a.op), [x], a.backend)
    op.forward([x])
    per_call_py, per_call_cpp, overhead = [], [], []
    for _ in range(a.repetitions):
        start = time.perf_counter()
        for _ in range(a.calls):
            op.forward([x])
        py = (time.perf_counter() - start) / a.calls
        cpp = op._time_forward_from_cpp([x], a.calls) / a.calls
        per_call_py.append(py)
        per_call_cpp.append(cpp)
        overhead.append(py - cpp)
    return {"op": a.op, "shape": a.shape, "backend": a.backend,
            "implementation": op.implementation, "calls": a.calls,
            "python_seconds": deep500.summarize(per_call_py),
            "cpp_seconds": deep500.summarize(per_call_cpp),
            "overhead_seconds": deep500.summarize(overhead)}


TRAINING = dict(builtin="lenet5", dataset="fashion-mnist", test_subset=256, epochs=2,
                batch_size=64, progress=False, hyper={"lr": 0.05, "momentum": 0.9})


def warm_step_seconds(metrics):
    """Seconds per step of the last epoch: the first pays for process start-up
    and first-use costs, which a Python session has already paid."""
    epoch = metrics["epochs"][-1]
    return epoch["seconds"] / -(-epoch["samples"] // TRAINING["batch_size"])


def step_seconds_from_cli(a, tmp):
    """One `deep500 train` run of the same task."""
    path = os.path.join(tmp, "metrics.json")
    subprocess.run([a.cli, "train", "--model", "lenet5", "--dataset", "fashion-mnist",
                    "--subset", str(a.samples), "--test-subset", "256", "--epochs", "2",
                    "--batch-size", "64", "--optimizer", "momentum", "--hyper",
                    "lr=0.05,momentum=0.9", "--no-progress", "--metrics-json", path],
                   check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        return warm_step_seconds(json.load(f))


def step_seconds_from_python(a, optimizer):
    return warm_step_seconds(deep500.train(optimizer=optimizer, subset=a.samples,
                                           **TRAINING)["metrics"])


def training_overhead(a):
    deep500.register_optimizer("overhead_py_momentum", PyMomentum)
    deep500.register_optimizer("overhead_py_nothing", PyNothing)
    sides = {"cpp": [], "python": [], "python_rule": [], "python_empty_rule": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            sides["cpp"].append(step_seconds_from_cli(a, tmp))
            sides["python"].append(step_seconds_from_python(a, "momentum"))
            sides["python_rule"].append(step_seconds_from_python(a, "overhead_py_momentum"))
            sides["python_empty_rule"].append(step_seconds_from_python(a, "overhead_py_nothing"))
    ratio = lambda num, den: deep500.summarize([n / d for n, d in zip(sides[num], sides[den])])
    return {"samples": a.samples,
            **{f"{side}_step_seconds": deep500.summarize(t) for side, t in sides.items()},
            "python_over_cpp": ratio("python", "cpp"),
            "python_rule_over_cpp_rule": ratio("python_rule", "python"),
            "python_empty_rule_over_cpp_rule": ratio("python_empty_rule", "python")}


def ci(s, scale=1.0, digits=3):
    return (f"{s['median'] * scale:.{digits}f} [{s['ci_low'] * scale:.{digits}f}, "
            f"{s['ci_high'] * scale:.{digits}f}]")


def main():
    a = parse_args()
    op = operator_overhead(a)
    print(f"{a.op} {a.shape} on {op['implementation']}: Python {ci(op['python_seconds'], 1e6, 2)} "
          f"us per call, C++ {ci(op['cpp_seconds'], 1e6, 2)} us; overhead "
          f"{ci(op['overhead_seconds'], 1e6, 2)} us")
    step = training_overhead(a)
    print(f"LeNet-5 step (batch 64): from C++ {ci(step['cpp_step_seconds'], 1e3)} ms, from "
          f"Python {ci(step['python_step_seconds'], 1e3)} ms, Python / C++ "
          f"{ci(step['python_over_cpp'])}; with the Python update rule "
          f"{ci(step['python_rule_step_seconds'], 1e3)} ms, Python rule / C++ rule "
          f"{ci(step['python_rule_over_cpp_rule'])}; an empty Python rule / C++ rule "
          f"{ci(step['python_empty_rule_over_cpp_rule'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"operator_call": op, "training_step": step}, f, indent=1)


if __name__ == "__main__":
    main()
