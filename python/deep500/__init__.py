"""deep500: measuring, validating and reproducing deep learning (C++ library).

The compiled part is deep500._core; this package re-exports it with a few
conveniences that only convert arguments (docs/python.md).
"""
from ._core import (as_tensor, backends, benchmark_operator, built_backends, check_gradient,
                    check_operator, Communicator, compare_runs, devices, Error, Executor, history,
                    in_process_ranks, launched_by_mpirun, load_results, Model, mpi_world,
                    op_check, Operator, OperatorSpec, optimizers, plot, register_operator,
                    register_optimizer, report, run_operator, run_recipe, run_training,
                    scoreboard, summarize, TrainingState, TrainingTask)

__all__ = ["as_tensor", "backends", "benchmark_operator", "built_backends", "check_gradient",
           "check_operator", "Communicator", "compare_runs", "devices", "Error", "Executor",
           "history",
           "in_process_ranks", "launched_by_mpirun", "load_results", "Model", "mpi_world", "op",
           "op_check", "Operator", "OperatorSpec", "optimizers", "plot", "register_operator",
           "register_optimizer", "report", "run_operator", "run_recipe", "run_training",
           "scoreboard",
           "summarize", "train", "TrainingState", "TrainingTask"]


def _attribute_text(name, value):
    """NAME=VALUE as `deep500 op --attr` takes it: lists comma-separated."""
    if isinstance(value, (list, tuple)):
        return f"{name}=" + ",".join(repr(v) if isinstance(v, float) else str(v) for v in value)
    return f"{name}={value!r}" if isinstance(value, float) else f"{name}={value}"


def op(op_type, opset=17, domain="", outputs=-1, **attributes):
    """An OperatorSpec: op("Conv", pads=[1, 1, 1, 1], strides=[2, 2])."""
    spec = OperatorSpec()
    spec.op_type, spec.opset, spec.domain, spec.outputs = op_type, opset, domain, outputs
    spec.attrs = [_attribute_text(k, v) for k, v in attributes.items()]
    return spec


def train(events=(), dataset=None, test_dataset=None, communicator=None, **fields):
    """Trains as `deep500 train` does: train(builtin="lenet5",
    dataset="fashion-mnist", epochs=1, ...); fields are TrainingTask's;
    dataset: a spec (as --dataset) or a Python dataset (len() and
    [index] -> {"input": array, "label": int}), test_dataset likewise;
    events: objects with training event methods (after_epoch(state), ...);
    communicator: mpi_world() to train with the `scheme` field on every rank."""
    task = TrainingTask()
    if isinstance(dataset, str):
        task.dataset, dataset = dataset, None
    for name, value in fields.items():
        if not hasattr(task, name):
            raise Error(f"train: unknown field '{name}' (TrainingTask has "
                        f"{', '.join(n for n in dir(task) if not n.startswith('_'))})")
        setattr(task, name, value)
    return run_training(task, list(events), dataset, test_dataset, communicator)
