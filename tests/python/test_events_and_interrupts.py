"""Training events written in Python, and Ctrl-C during long C++ work."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import deep500


class EarlyStopping:
    """Stops when the test accuracy has not improved for `patience` epochs."""

    def __init__(self, patience):
        self.patience, self.best, self.waited, self.seen = patience, -1.0, 0, []

    def after_epoch(self, state):
        self.seen.append((state.epoch, state.test_accuracy))
        if state.test_accuracy > self.best:
            self.best, self.waited = state.test_accuracy, 0
            return
        self.waited += 1
        if self.waited >= self.patience:
            state.request_stop(f"no improvement for {self.patience} epochs")


class StopAtStep:
    def __init__(self, step):
        self.step, self.batches = step, 0

    def after_training_batch(self, state):
        self.batches += 1
        if state.step >= self.step:
            state.request_stop("step reached")


def test_events_see_every_epoch_and_can_stop_training():
    stop = StopAtStep(5)
    out = deep500.train(builtin="mlp", dataset="synthetic:512,128:1x28x28:10:3", batch_size=32,
                        epochs=3, progress=False, events=[stop])
    assert out["stopped_early"] and out["stop_reason"] == "step reached", out
    assert out["steps"] == 5 and stop.batches == 5


def test_an_early_stopping_rule_in_python():
    rule = EarlyStopping(patience=1)
    out = deep500.train(builtin="mlp", dataset="synthetic:256,128:1x28x28:10:3", batch_size=32,
                        epochs=30, progress=False, hyper={"lr": 0.5}, events=[rule])
    # Synthetic labels are random: the test accuracy stops improving early.
    assert out["stopped_early"] and out["epochs_completed"] < 30, out["summary"]
    assert [e for e, _ in rule.seen] == list(range(out["epochs_completed"]))


def test_a_python_exception_in_an_event_is_an_error():
    class Failing:
        def after_epoch(self, state):
            raise KeyError("boom")
    with pytest.raises(deep500.Error, match="Python after_epoch raised KeyError"):
        deep500.train(builtin="mlp", dataset="synthetic:64,32:1x28x28:10:3", progress=False,
                      events=[Failing()])


SCRIPT = """
import sys, deep500
class Started:
    def before_training(self, state):
        print("training", flush=True)
try:
    deep500.train(builtin="lenet5", dataset="fashion-mnist", epochs=50, batch_size=8,
                  progress=False, metrics_json=sys.argv[1], events=[Started()])
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
"""


def interrupted_metrics(script, args, ready, settle):
    """Runs `script` in a fresh interpreter, sends SIGINT `settle` seconds
    after it prints `ready`, and asserts it raised KeyboardInterrupt (exit
    130) within 10 s; the metrics JSON it wrote (its first argument)."""
    job = subprocess.Popen([sys.executable, "-c", script] + [str(a) for a in args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=os.environ.copy())
    assert job.stdout.readline().strip() == ready
    time.sleep(settle)
    start = time.monotonic()
    job.send_signal(signal.SIGINT)
    out, _ = job.communicate(timeout=60)
    assert job.returncode == 130 and "KeyboardInterrupt" in out, out
    assert time.monotonic() - start < 10, "it stops at once"
    written = json.load(open(args[0]))
    assert written["summary"]["interrupted"] is True, written["summary"]
    return written


def test_ctrl_c_stops_training_cleanly_and_raises_keyboard_interrupt(tmp_path):
    interrupted_metrics(SCRIPT, [tmp_path / "metrics.json"], "training", 0.5)  # into the batches


SLOW_DATASET = """
import sys, time, numpy as np, deep500
class Slow:
    num_classes = 2
    def __len__(self): return 2000
    def __getitem__(self, i):
        if i == 1: print("reading", flush=True)
        time.sleep(0.02)  # 40 s for one pass over the labels
        return {"input": np.zeros((1, 28, 28), np.float32), "label": np.int64(i % 2)}
try:
    deep500.train(builtin="mlp", dataset=Slow(), epochs=1, batch_size=4, progress=False,
                  prefetch_threads=int(sys.argv[2]), metrics_json=sys.argv[1])
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("prefetch", [0, 2])
def test_ctrl_c_while_a_python_dataset_is_read_stops_at_once(tmp_path, prefetch):
    """Before the first batch, the class histogram (DatasetBias) reads every
    label: Ctrl-C there stops it too, and no partial histogram is recorded."""
    written = interrupted_metrics(SLOW_DATASET, [tmp_path / "metrics.json", prefetch], "reading",
                                  1.0)  # it used to read all 2000 samples first
    assert "counts" not in written["dataset_bias"], written["dataset_bias"]
