"""Type stubs of deep500._core (the pybind11 extension), for editors.

tests/python/test_stubs.py checks that they name exactly the extension's public
functions and classes and the same parameters."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

class Error(RuntimeError): ...

def backends() -> List[str]: ...
def built_backends() -> List[str]: ...
def optimizers() -> List[str]: ...
def as_tensor(value: Any) -> np.ndarray: ...
def summarize(samples: List[float]) -> Dict[str, Any]: ...

class OperatorSpec:
    op_type: str
    domain: str
    opset: int
    outputs: int
    attrs: List[str]
    def __init__(self) -> None: ...

class Operator:
    implementation: str
    def __init__(self, spec: OperatorSpec, inputs: Sequence[Optional[np.ndarray]],
                 backend: str = "reference") -> None: ...
    def forward(self, inputs: Sequence[Optional[np.ndarray]]) -> List[np.ndarray]: ...

def run_operator(spec: OperatorSpec, inputs: Sequence[Optional[np.ndarray]],
                 backend: str = "reference") -> List[np.ndarray]: ...
def check_operator(spec: OperatorSpec, inputs: Sequence[Optional[np.ndarray]], backend: str,
                   reference: Optional[Callable[[List[np.ndarray]], List[np.ndarray]]] = None
                   ) -> Dict[str, Any]: ...
def devices() -> List[Dict[str, str]]: ...
def benchmark_operator(spec: OperatorSpec, inputs: List[str], backends: List[str] = ...,
                       backward: bool = False, threads: int = 0, min_reps: int = 0,
                       min_time: float = 0.0, cache: str = "hot",
                       include_transfers: bool = False) -> Dict[str, Any]: ...
def op_check(spec: OperatorSpec, inputs: List[str], backends: List[str] = ...,
             grad: bool = False, seed: int = 42, isolate: bool = True) -> Dict[str, Any]: ...
def check_gradient(spec: OperatorSpec, inputs: Sequence[Optional[np.ndarray]],
                   backend: str) -> Dict[str, Any]: ...
def register_operator(op_type: str, cls: type, domain: str = "", backend: str = "python",
                      inputs: int = 1, outputs: int = 1) -> None: ...
def register_optimizer(name: str, cls: type) -> None: ...

class Model:
    path: str
    opsets: Dict[str, int]
    inputs: List[str]
    outputs: List[str]
    parameters: List[str]
    def __init__(self, path: str) -> None: ...

class Executor:
    name: str
    settings: List[Tuple[str, str]]
    def __init__(self, model: Model, executor: str = "optimized", threads: int = 0) -> None: ...
    def inference(self, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]: ...
    def backprop(self, inputs: Dict[str, np.ndarray],
                 loss: str) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]: ...

class Communicator:
    rank: int
    size: int
    name: str
    timeout_seconds: float
    traffic: Dict[str, Dict[str, int]]
    def allreduce(self, value: Any, op: str = "sum") -> np.ndarray: ...
    def broadcast(self, value: Any, root: int = 0) -> np.ndarray: ...
    def reduce(self, value: Any, op: str = "sum", root: int = 0) -> np.ndarray: ...
    def allgather(self, value: Any) -> np.ndarray: ...
    def reduce_scatter(self, value: Any, op: str = "sum") -> np.ndarray: ...
    def alltoall(self, value: Any) -> np.ndarray: ...
    def send(self, value: Any, dest: int, tag: int = 0) -> None: ...
    def recv(self, like: Any, source: int, tag: int = 0) -> np.ndarray: ...
    def sendrecv(self, value: Any, dest: int, like: Any, source: int,
                 tag: int = 0) -> np.ndarray: ...
    def split(self, color: int, key: int = 0) -> Communicator: ...
    def barrier(self) -> None: ...

def mpi_world() -> Communicator: ...
def launched_by_mpirun() -> bool: ...
def in_process_ranks(size: int, body: Callable[[Communicator], Any],
                     timeout_seconds: float = 60.0) -> List[Any]: ...

class TrainingState:
    epochs: int
    epoch: int
    batches_per_epoch: int
    batch: int
    step: int
    batch_loss: float
    test_accuracy: float
    test_loss: float
    seconds: float
    epoch_loss: float
    epoch_accuracy: float
    def request_stop(self, reason: str) -> None: ...

class TrainingTask:
    model: str
    builtin: str
    logits: str
    loss: str
    input: str
    labels: str
    dataset: str
    optimizer: str
    hyper: Dict[str, float]
    lr_schedule: str
    epochs: int
    batch_size: int
    seed: int
    threads: int
    executor: str
    settings: List[str]
    checkpoint: str
    resume: str
    target_accuracy: float
    stop_at_target: bool
    time_limit: float
    subset: int
    test_subset: int
    prefetch_threads: int
    augment: List[str]
    progress: bool
    metrics_json: str
    save_params: str
    save_model: str
    scheme: str
    shard: str
    comm_timeout: float
    def __init__(self) -> None: ...

def run_training(task: TrainingTask, events: List[Any] = ..., train_data: Any = None,
                 test_data: Any = None, communicator: Optional[Communicator] = None
                 ) -> Dict[str, Any]: ...
def history(path: str = "results/history.sqlite", recipe: str = "",
            since: str = "") -> List[Dict[str, Any]]: ...
def load_results(ref: str, history: str = "results/history.sqlite") -> Dict[str, Any]: ...
def compare_runs(a: str, b: str, history: str = "results/history.sqlite",
                 alpha: float = 0.05) -> Dict[str, Any]: ...
def scoreboard(objectives: str, history: str = "results/history.sqlite", recipe: str = "",
               since: str = "", plot_dir: str = "") -> Dict[str, Any]: ...
def plot(runs: List[str], out_dir: str = "") -> str: ...
def report(runs: List[str] = ..., out: str = "report.html", compare: bool = False,
           history_page: bool = False, history: str = "results/history.sqlite",
           recipe: str = "", since: str = "", metrics: str = "", plots: bool = True) -> str: ...
def run_recipe(recipe: str, overrides: List[str] = ..., output_dir: str = "results",
               history: str = "", plots: bool = False, progress: bool = False,
               record_reference: int = 0, label: str = "") -> Dict[str, Any]: ...
