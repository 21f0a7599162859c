#!/usr/bin/env python3
"""What calling deep500 from Python costs, measured side by side in one run.

1. Operator call: a prepared operator (deep500.Operator) run from a Python loop
   against the same forward() run from a C++ loop, interleaved repetition by
   repetition; the overhead per call is (Python - C++) / calls.
2. Training step: LeNet-5 on Fashion-MNIST with a Python update rule (the
   Python twin of "momentum", tests/python) against the C++ "momentum",
   interleaved; the ratio is step time Python / C++.
Medians with 95% confidence intervals (deep500.summarize: the C++ statistics).

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/overhead.py --json overhead.json
"""
import argparse
import json
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


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", default="Relu", help="operator type (default Relu)")
    p.add_argument("--shape", default="1x64", help="its input shape (default 1x64)")
    p.add_argument("--backend", default="reference", help="its backend (default reference)")
    p.add_argument("--calls", type=int, default=20000, help="calls per repetition")
    p.add_argument("--repetitions", type=int, default=15, help="repetitions per side")
    p.add_argument("--samples", type=int, default=16384, help="training samples per run")
    p.add_argument("--rounds", type=int, default=5, help="training runs per side")
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


def training_overhead(a):
    deep500.register_optimizer("overhead_py_momentum", PyMomentum)
    common = dict(builtin="lenet5", dataset="fashion-mnist", subset=a.samples, test_subset=256,
                  epochs=1, batch_size=64, progress=False, hyper={"lr": 0.05, "momentum": 0.9})
    sides = {"cpp": [], "python": []}
    for _ in range(a.rounds):
        for side, name in (("cpp", "momentum"), ("python", "overhead_py_momentum")):
            out = deep500.train(optimizer=name, **common)
            sides[side].append(out["seconds"] / out["steps"])
    ratio = [p / c for p, c in zip(sides["python"], sides["cpp"])]
    return {"samples": a.samples, "cpp_step_seconds": deep500.summarize(sides["cpp"]),
            "python_step_seconds": deep500.summarize(sides["python"]),
            "python_over_cpp": deep500.summarize(ratio)}


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
    print(f"LeNet-5 step (batch 64): C++ momentum {ci(step['cpp_step_seconds'], 1e3)} ms, Python "
          f"update rule {ci(step['python_step_seconds'], 1e3)} ms; Python / C++ "
          f"{ci(step['python_over_cpp'])}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"operator_call": op, "training_step": step}, f, indent=1)


if __name__ == "__main__":
    main()
