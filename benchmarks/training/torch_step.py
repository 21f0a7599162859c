#!/usr/bin/python3
"""PyTorch's side of the training-step benchmark (docs/training-benchmark.md).

    /usr/bin/python3 benchmarks/training/torch_step.py NETWORK MODEL.onnx X.npy LABELS.npy
        --threads N --warmup W --reps R [--max-seconds S] [--lr 0.01] [--momentum 0.9]
        [--save-step DIR] [--float64]

NETWORK (lenet5 | resnet20 | mobilenet_v2 | transformer | a family of
scripts/model_families.py) is built from scripts/make_models.py's module
definitions and loaded with MODEL.onnx's initializers (the same weights the
deep500 side starts from), in train mode. One step = zero_grad(set_to_none),
loss = cross_entropy(net(x), labels), backward, torch.optim.SGD(momentum).step().
--save-step writes the first step's loss.npy and updated <parameter>.npy.
Prints one JSON line. Thread count: torch.set_num_threads (run.py also sets
OMP/MKL/OPENBLAS_NUM_THREADS and, with --openblas, LD_LIBRARY_PATH).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("network")
    p.add_argument("model")
    p.add_argument("x")
    p.add_argument("labels")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--max-seconds", type=float, default=60)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--save-step")
    p.add_argument("--float64", action="store_true",
                   help="run in float64 (the like-with-like check's exact side)")
    a = p.parse_args()

    import onnx
    import onnx.numpy_helper
    import torch
    import make_models
    torch.set_num_threads(a.threads)
    mods = make_models.training_modules(torch)
    model = mods["WithLoss"](mods[a.network]())
    proto = onnx.load(a.model)
    state = {t.name: torch.from_numpy(onnx.numpy_helper.to_array(t).copy())
             for t in proto.graph.initializer}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise SystemExit(f"initializers do not match the module: missing {missing}, "
                         f"unexpected {unexpected}")
    model.train()
    x = torch.from_numpy(np.load(a.x))
    if a.float64:
        model = model.double()
        x = x.double() if x.is_floating_point() else x  # token ids stay integers
    labels = torch.from_numpy(np.load(a.labels))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x, labels)
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    first_loss = float(step())
    first_step = time.perf_counter() - t0
    if a.save_step:
        os.makedirs(a.save_step, exist_ok=True)
        np.save(os.path.join(a.save_step, "loss.npy"), np.float64(first_loss))
        for name, prm in model.named_parameters():
            np.save(os.path.join(a.save_step, name + ".npy"), prm.detach().numpy())
    for _ in range(a.warmup - 1):
        step()
    seconds, elapsed = [], 0.0
    while len(seconds) < a.reps:
        s = time.perf_counter()
        last = step()
        dt = time.perf_counter() - s
        seconds.append(dt)
        elapsed += dt
        if elapsed >= a.max_seconds and len(seconds) >= 3:
            break
    print(json.dumps({
        "runner": "pytorch", "torch": torch.__version__, "threads": a.threads,
        "torch_threads": torch.get_num_threads(), "batch": int(x.shape[0]),
        "warmup": a.warmup, "reps": len(seconds), "seconds": seconds,
        "first_step_seconds": first_step, "first_loss": first_loss, "last_loss": float(last),
        "blas": torch.__config__.show().replace("\n", " | ")[:600],
        "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
    }))


if __name__ == "__main__":
    main()
