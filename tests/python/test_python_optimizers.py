"""Update rules written in Python: registered by name, used by the same
training task as the C++ optimizers, checkpointed state included."""
import numpy as np
import pytest

import deep500


class PyMomentum:
    """SGD with heavy-ball momentum, torch's semantics (the buffer starts as
    the first gradient): the Python twin of the C++ optimizer "momentum"."""
    hyper_parameters = {"lr": 0.01, "momentum": 0.9}

    def update_rule(self, step, name, param, grad, slot, hyper):
        v = slot("v")
        v *= np.float32(hyper["momentum"])
        v += grad
        param -= np.float32(hyper["lr"]) * v


class Exploding:
    def update_rule(self, step, name, param, grad, slot, hyper):
        raise ArithmeticError(f"step {step}: {name}")


deep500.register_optimizer("py_momentum", PyMomentum)
deep500.register_optimizer("py_exploding", Exploding)


def lenet5(optimizer, tmp_path):
    return deep500.train(builtin="lenet5", dataset="fashion-mnist", epochs=1, batch_size=64,
                         optimizer=optimizer, hyper={"lr": 0.05, "momentum": 0.9},
                         progress=False, save_params=str(tmp_path / optimizer))


def test_python_momentum_trains_lenet5_as_its_cpp_twin(tmp_path):
    assert "py_momentum" in deep500.optimizers() and "momentum" in deep500.optimizers()
    cpp, py = lenet5("momentum", tmp_path), lenet5("py_momentum", tmp_path)
    assert cpp["final_test_accuracy"] > 0.8, cpp["summary"]
    assert abs(py["final_test_accuracy"] - cpp["final_test_accuracy"]) <= 0.005, \
        (py["summary"], cpp["summary"])
    worst = max(float(np.max(np.abs(np.load(tmp_path / "momentum" / f.name) - np.load(f))))
                for f in (tmp_path / "py_momentum").iterdir())
    assert worst < 1e-3, f"parameters differ by {worst}"


def test_unknown_hyper_parameters_and_python_errors_are_errors():
    with pytest.raises(deep500.Error, match="unknown hyper-parameter 'beta'"):
        deep500.train(builtin="lenet5", dataset="fashion-mnist", subset=64, progress=False,
                      optimizer="py_momentum", hyper={"beta": 1.0})
    with pytest.raises(deep500.Error, match="ArithmeticError: step 1: "):
        deep500.train(builtin="lenet5", dataset="fashion-mnist", subset=64, progress=False,
                      optimizer="py_exploding")


def test_python_optimizer_state_is_checkpointed_and_resumed(tmp_path):
    """Two epochs straight = one epoch, a checkpoint, and a resumed second
    epoch: the Python rule's slots come back from the checkpoint."""
    common = dict(builtin="lenet5", dataset="fashion-mnist", subset=512, test_subset=64,
                  batch_size=64, optimizer="py_momentum", hyper={"lr": 0.05, "momentum": 0.9},
                  progress=False, executor="reference", prefetch_threads=0)
    deep500.train(epochs=2, save_params=str(tmp_path / "straight"), **common)
    deep500.train(epochs=1, checkpoint=str(tmp_path / "one.h5"), **common)
    deep500.train(epochs=2, resume=str(tmp_path / "one.h5"), save_params=str(tmp_path / "resumed"),
                  **common)
    files = sorted(p.name for p in (tmp_path / "straight").iterdir())
    assert len(files) == 10
    for f in files:
        assert np.array_equal(np.load(tmp_path / "straight" / f),
                              np.load(tmp_path / "resumed" / f)), f
