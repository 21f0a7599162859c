"""Misuse of the module from Python is a deep500.Error (or a TypeError/
ValueError) with a one-line message, never a crash of the interpreter.
Each case runs in a fresh interpreter, so that a crash is a failed test
(its signal shows in the return code), not a dead test run; the cases are
ones that used to crash (SIGSEGV, heap corruption) or leak C++ messages."""
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import numpy as np, deep500
class Blobs:
    num_classes = 2
    def __init__(self, n=64, label=None):
        self.n, self.label = n, label
    def __len__(self): return self.n
    def __getitem__(self, i):
        label = self.label if self.label is not None else np.int64(i % 2)
        return {"input": np.zeros((1, 28, 28), np.float32), "label": label}
def expect(error, match, call):
    try:
        call()
    except error as e:
        assert match in str(e) and "\\n" not in str(e), repr(str(e))
        print("ok")
        return
    raise AssertionError("no error")
"""


def run(case):
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(case)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), \
        f"exit {r.returncode} (negative: killed by that signal):\n{r.stdout}"


@pytest.mark.parametrize("hyper, says", [
    ("None", "hyper_parameters must be a dict of numbers, got NoneType"),
    ("{'lr': 'fast'}", "hyper_parameters['lr'] must be a number, got str"),
    ("{'lr': float('nan')}", "hyper_parameters['lr'] must be finite"),
])
def test_a_malformed_update_rule_is_an_error(hyper, says):
    run(f"""
    class Bad:
        hyper_parameters = {hyper}
        def update_rule(self, *args): pass
    deep500.register_optimizer("bad", Bad)
    expect(deep500.Error, "{says}",
           lambda: deep500.train(builtin="mlp", dataset=Blobs(), progress=False, optimizer="bad"))
    """)


def test_a_text_label_is_an_error_not_heap_corruption():
    run("""
    expect(deep500.Error, "field 'label' is text",
           lambda: deep500.train(builtin="mlp", dataset=Blobs(label="cat"), progress=False))
    """)


def test_a_huge_class_count_is_an_error_not_a_memory_error():
    run("""
    b = Blobs()
    b.num_classes = 10 ** 15
    expect(deep500.Error, "num_classes is 1000000000000000, expected 0..16777216",
           lambda: deep500.train(builtin="mlp", dataset=b, progress=False))
    """)


def test_a_training_state_kept_after_train_is_a_snapshot():
    run("""
    class Keep:
        def __init__(self): self.states = []
        def after_epoch(self, s): self.states.append(s)
    keep = Keep()
    deep500.train(builtin="mlp", dataset=Blobs(), epochs=2, progress=False, events=[keep])
    assert [s.epoch for s in keep.states] == [0, 1], [s.epoch for s in keep.states]
    assert keep.states[1].step > keep.states[0].step > 0
    expect(deep500.Error, "the event has returned", lambda: keep.states[0].request_stop("late"))
    """)
