#!/usr/bin/env python3
"""Fuzzes the Python module's public functions with hostile arguments.

Each trial is a call of a public function (operators, executors, training,
communicators, history and results) in which one or more arguments are
replaced by hostile values: wrong types, None, huge, negative, NaN or zero
sizes, empty, 0-d, non-contiguous, read-only and object arrays, shape texts
that overflow, callbacks and datasets that raise, misbehave or return the
wrong things. Trials run in batches in child interpreters. A finding is:

* a child killed by a signal (SIGSEGV, SIGABRT: heap corruption) or a hang
  past --call-timeout; a batch that dies is replayed call by call to name
  the call;
* an exception other than deep500.Error, TypeError or ValueError (a
  MemoryError from std::bad_alloc, a RuntimeError or IndexError carrying a
  raw C++ message), or a deep500.Error / ValueError whose message is not one
  line or names a C++ type (std::...).

    /usr/bin/python3 tests/fuzz/python_fuzz.py --seconds 60 --seed 1 --json report.json

PYTHONPATH must reach the module (build/python). Exit 1 when there are
findings (each printed with the call that reproduces it), 0 otherwise.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, math, os, sys, traceback
import numpy as np
import onnx
from onnx import helper, TensorProto
import deep500

WORK = sys.argv[1]
MODEL = os.path.join(WORK, "relu.onnx")
if not os.path.exists(MODEL):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), MODEL)

def raising(*a, **k):
    raise ArithmeticError("planted")

def readonly():
    a = np.ones((2, 4), np.float32)
    a.setflags(write=False)
    return a

class BadLen:
    def __len__(self): raise ArithmeticError("planted len")
    def __getitem__(self, i): return {}

class Data:
    """A Python dataset that misbehaves in one way (kind)."""
    num_classes = 2
    def __init__(self, kind): self.kind = kind
    def __len__(self): return {"empty": 0, "negative": -1}.get(self.kind, 8)
    def __getitem__(self, i):
        k = self.kind
        if k == "raises": raise KeyError(i)
        if k == "none": return None
        if k == "strlabel": return {"input": np.zeros((1, 28, 28), np.float32), "label": "cat"}
        if k == "ragged": return {"input": np.zeros((1, 28, i + 1), np.float32), "label": 1}
        if k == "nan": return {"input": np.full((1, 28, 28), np.nan, np.float32), "label": 1}
        if k == "biglabel": return {"input": np.zeros((1, 28, 28), np.float32), "label": 2**40}
        if k == "objarray": return {"input": np.array([object()] * 4), "label": 1}
        return {"input": np.zeros((1, 28, 28), np.float32), "label": np.int64(i % 2)}

class Rule:
    hyper_parameters = {"lr": 0.1}
    def update_rule(self, *a): pass

class BadRule:
    def __init__(self, kind): self.kind = kind
    def __call__(self):
        r = Rule()
        if self.kind == "hyper_none": r.hyper_parameters = None
        if self.kind == "hyper_text": r.hyper_parameters = {"lr": "fast"}
        if self.kind == "rule_raises": r.update_rule = raising
        return r

HOSTILE = {
    "none": lambda: None, "int": lambda: 7, "neg": lambda: -1, "huge": lambda: 2**63,
    "float": lambda: 1.5, "nan": lambda: float("nan"), "inf": lambda: float("inf"),
    "str": lambda: "x", "empty_str": lambda: "", "nul_str": lambda: "a\0b",
    "list": lambda: [1, "a"], "dict": lambda: {"a": 1}, "callable": lambda: raising,
    "arr_empty": lambda: np.zeros((0, 4), np.float32), "arr_0d": lambda: np.float32(3),
    "arr_f64": lambda: np.ones((2, 4)), "arr_int": lambda: np.ones((2, 4), np.int64),
    "arr_noncontig": lambda: np.ones((4, 8), np.float32)[:, ::2],
    "arr_readonly": lambda: readonly(),
    "arr_obj": lambda: np.array([object(), None]), "arr_bool": lambda: np.ones((2, 4), bool),
    "arr_str": lambda: np.array(["a", "bb"]), "arr_big": lambda: np.ones((1, 2**20), np.float16),
    "arr_nan": lambda: np.full((2, 4), np.nan, np.float32),
    "shape_overflow": lambda: "x:float32:99999999999x99999999999",
    "shape_neg": lambda: "x:float32:-3x4", "shape_bad": lambda: "x:complex:4",
    "badlen": lambda: BadLen(),
}

def x(): return np.ones((2, 4), np.float32)

def spec(kind="ok"):
    if kind == "ok": return deep500.op("Relu")
    return {"unknown_op": lambda: deep500.op("NoSuchOp"), "bad_attr": lambda: deep500.op("Relu", alpha=float("nan")),
            "opset": lambda: deep500.op("Relu", opset=-5), "outputs": lambda: deep500.op("Split", outputs=2**31 - 1),
            "conv_huge": lambda: deep500.op("Conv", pads=[2**40] * 4)}[kind]()

def ranks(size, body, timeout=5.0):
    return deep500.in_process_ranks(size, body, timeout_seconds=timeout)

# Call templates: name -> function(args) with args a list the fuzzer mutates.
CALLS = {
    "run_operator": (lambda a: deep500.run_operator(a[0], a[1], a[2]),
                     lambda: [spec(), [x()], "reference"]),
    "check_operator": (lambda a: deep500.check_operator(a[0], a[1], a[2]),
                       lambda: [spec(), [x()], "onednn"]),
    "check_gradient": (lambda a: deep500.check_gradient(a[0], a[1], a[2]),
                       lambda: [spec(), [x()], "reference"]),
    "operator_forward": (lambda a: deep500.Operator(a[0], a[1], a[2]).forward(a[3]),
                         lambda: [spec(), [x()], "onednn", [x()]]),
    "benchmark_operator": (lambda a: deep500.benchmark_operator(a[0], a[1], a[2], min_reps=a[3],
                                                                min_time=a[4], cache=a[5]),
                           lambda: [spec(), ["x:float32:4"], ["reference"], 1, 0.0, "hot"]),
    "as_tensor": (lambda a: deep500.as_tensor(a[0]), lambda: [x()]),
    "summarize": (lambda a: deep500.summarize(a[0]), lambda: [[1.0, 2.0, 3.0]]),
    "op": (lambda a: deep500.op(a[0], opset=a[1], outputs=a[2]), lambda: ["Relu", 17, -1]),
    "model": (lambda a: deep500.Model(a[0]), lambda: [MODEL]),
    "inference": (lambda a: deep500.Executor(deep500.Model(MODEL), a[0], a[1]).inference(a[2]),
                  lambda: ["optimized", 0, {"x": x()}]),
    "backprop": (lambda a: deep500.Executor(deep500.Model(MODEL), "reference").backprop(a[0], a[1]),
                 lambda: [{"x": x()}, "y"]),
    "train": (lambda a: deep500.train(builtin=a[0], dataset=a[1], epochs=a[2], batch_size=a[3],
                                      optimizer=a[4], progress=False, prefetch_threads=0),
              lambda: ["mlp", Data("ok"), 1, 4, "sgd"]),
    "register_optimizer": (lambda a: (deep500.register_optimizer(a[0], a[1]),
                                      deep500.train(builtin="mlp", dataset=Data("ok"), epochs=1,
                                                    batch_size=4, optimizer=a[0], progress=False,
                                                    prefetch_threads=0)),
                           lambda: ["fuzz_rule", Rule]),
    "communicator": (lambda a: ranks(a[0], lambda c: getattr(c, a[1])(*a[2])),
                     lambda: [2, "allreduce", [x()]]),
    "kept_communicator": (lambda a: getattr(ranks(a[0], lambda c: c)[0], a[1])(*a[2]),
                          lambda: [1, "barrier", []]),
    "in_process_ranks": (lambda a: ranks(a[0], a[1], a[2]), lambda: [2, lambda c: c.rank, 5.0]),
    "history": (lambda a: deep500.history(a[0], a[1], a[2]),
                lambda: [os.path.join(WORK, "history.sqlite"), "", ""]),
    "load_results": (lambda a: deep500.load_results(a[0], a[1]),
                     lambda: ["1", os.path.join(WORK, "history.sqlite")]),
    "scoreboard": (lambda a: deep500.scoreboard(a[0], a[1]),
                   lambda: ["test_accuracy:max", os.path.join(WORK, "history.sqlite")]),
}
SPECIALS = {  # replacements that only make sense at one place
    ("run_operator", 0): ["unknown_op", "bad_attr", "opset", "outputs", "conv_huge"],
    ("train", 1): ["raises", "none", "strlabel", "ragged", "nan", "biglabel", "objarray", "empty",
                   "negative"],
    ("register_optimizer", 1): ["hyper_none", "hyper_text", "rule_raises"],
    ("communicator", 1): ["send", "recv", "broadcast", "reduce", "allgather", "gather",
                          "barrier", "split", "sendrecv"],
    ("kept_communicator", 1): ["send", "recv", "broadcast", "allreduce", "barrier", "split"],
}

def hostile_for(name, i, choice):
    if choice.startswith("special:"):
        kind = choice.split(":", 1)[1]
        if name == "train": return Data(kind)
        if name == "register_optimizer": return BadRule(kind)
        if name in ("communicator", "kept_communicator"): return kind
        return spec(kind)
    return HOSTILE[choice]()

def one_line_c_free(message):
    return "\n" not in message.strip() and "std::" not in message

def run_trial(trial):
    name, replacements = trial["call"], trial["replace"]
    fn, make = CALLS[name]
    args = make()
    for i, choice in replacements:
        if i < len(args): args[i] = hostile_for(name, i, choice)
    try:
        fn(args)
        return "ok"
    except deep500.Error as e:
        return "ok" if one_line_c_free(str(e)) else "message: " + repr(str(e))
    except ValueError as e:
        return "ok" if one_line_c_free(str(e)) else "message: " + repr(str(e))
    except TypeError:
        return "ok"
    except (ArithmeticError, KeyError) as e:  # a planted Python error surfacing as itself
        return "ok" if "planted" in str(e) or isinstance(e, KeyError) else "exception: " + repr(e)
    except BaseException as e:
        return f"exception {type(e).__name__}: {str(e)[:300]}"

for line in sys.stdin:
    trial = json.loads(line)
    verdict = run_trial(trial)
    print(json.dumps({"id": trial["id"], "verdict": verdict}), flush=True)
'''


def make_trial(rng, calls, specials, hostile, tid):
    name = rng.choice(calls)
    arity = {"run_operator": 3, "check_operator": 3, "check_gradient": 3, "operator_forward": 4,
             "benchmark_operator": 6, "as_tensor": 1, "summarize": 1, "op": 3, "model": 1,
             "inference": 3, "backprop": 2, "train": 5, "register_optimizer": 2,
             "communicator": 3, "kept_communicator": 3, "in_process_ranks": 3, "history": 3,
             "load_results": 2, "scoreboard": 2}[name]
    replace = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        i = rng.randrange(arity)
        special = specials.get((name, i))
        method_name = name.endswith("communicator") and i == 1  # a name, not a value
        if special and (method_name or rng.random() < 0.6):
            replace.append([i, "special:" + rng.choice(special)])
        else:
            replace.append([i, rng.choice(hostile)])
    return {"id": tid, "call": name, "replace": replace}


def run_batch(trials, work, call_timeout):
    """Runs trials in one child; returns (verdicts by id, the id that killed it or None, why)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, work], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdicts = {}
    try:
        out, err = child.communicate("".join(json.dumps(t) + "\n" for t in trials),
                                     timeout=call_timeout * len(trials) + 30)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        for line in out.splitlines():
            v = json.loads(line)
            verdicts[v["id"]] = v["verdict"]
        return verdicts, "timeout", err[-2000:]
    for line in out.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        verdicts[v["id"]] = v["verdict"]
    if child.returncode != 0:
        return verdicts, f"exit {child.returncode}", err[-2000:]
    return verdicts, None, ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", type=int, default=25)
    p.add_argument("--call-timeout", type=float, default=30)
    p.add_argument("--json", help="write the counts and findings here")
    a = p.parse_args()
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as work:
        # What the child knows (names and choices), learnt from a child itself.
        names = subprocess.run(
            [sys.executable, "-c", CHILD.split("for line in sys.stdin")[0] +
             "print(json.dumps([list(CALLS), {f'{k[0]}|{k[1]}': v for k, v in SPECIALS.items()},"
             " list(HOSTILE)]))", work], stdout=subprocess.PIPE, text=True, check=True).stdout
        calls, specials_text, hostile = json.loads(names)
        specials = {(k.split("|")[0], int(k.split("|")[1])): v for k, v in specials_text.items()}
        start, trials_run, batches, findings, tid = time.time(), 0, 0, [], 0
        while time.time() - start < a.seconds:
            trials = []
            for _ in range(a.batch):
                trials.append(make_trial(rng, calls, specials, hostile, tid))
                tid += 1
            verdicts, died, why = run_batch(trials, work, a.call_timeout)
            batches += 1
            if died:  # replay the rest one by one to name the call
                for t in trials:
                    if t["id"] in verdicts:
                        continue
                    v, d, w = run_batch([t], work, a.call_timeout)
                    if d:
                        findings.append({"trial": t, "finding": d, "stderr": w})
                    else:
                        verdicts.update(v)
            for t in trials:
                if verdicts.get(t["id"], "ok") != "ok":
                    findings.append({"trial": t, "finding": verdicts[t["id"]]})
            trials_run += len(trials)
        report = {"seconds": round(time.time() - start, 1), "trials": trials_run,
                  "batches": batches, "seed": a.seed, "findings": findings}
    for f in findings:
        print("FINDING:", json.dumps(f)[:1500])
    print(f"python fuzz: {trials_run} calls in {batches} interpreters, {report['seconds']} s, "
          f"{len(findings)} findings (seed {a.seed})")
    if a.json:
        with open(a.json, "w") as out:
            json.dump(report, out, indent=1)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
