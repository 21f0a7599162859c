"""Seed corpora for the harnesses of tests/fuzz, one folder per harness.

Usage: make_seeds.py SEEDS_DIR WRITE_SEEDS_PROGRAM
Datasets, CLI text and recipe inputs start with the byte that picks the
reader or parser (see fuzz_datasets.cc, fuzz_cli_text.cc, fuzz_recipe.cc).
"""
import glob
import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

TESTDATA = "/usr/share/libonnx-testdata/data/node"
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A recipe with every manifest inline (fuzz_recipe reads it from a scratch
# file, where relative manifest paths lead nowhere).
TINY_RECIPE = {
    "name": "tiny", "version": "1.0.0", "description": "a fuzz seed",
    "hardware": {"name": "any", "version": "1.0.0", "description": "x", "cores": ">= 1",
                 "isa": ["sse2"], "gpus": {"count": 0}},
    "software": {"name": "sw", "version": "1.0.0", "description": "x",
                 "requires": {"deep500": ">=0.1"}, "threads": 1, "executor": "optimized"},
    "dataset": {"name": "noise", "version": "1.0.0", "description": "synthetic",
                "format": "synthetic", "splits": {"train": 64, "test": 32},
                "shape": [1, 28, 28], "classes": 10},
    "model": {"name": "mlp", "version": "1.0.0", "description": "built in", "builtin": "mlp",
              "inputs": [{"name": "input", "type": "float32", "shape": ["N", 1, 28, 28]}]},
    "reference_log": {"name": "ref", "version": "1.0.0", "description": "x",
                      "metrics": {"test_accuracy": {"value": 0.1, "tolerance": "5%"}}},
    "task": "training",
    "training": {"optimizer": "momentum", "hyper": {"lr": 0.1}, "epochs": 1,
                 "lr_schedule": "cosine", "augment": ["flip"]},
    "criteria": ["test_accuracy >= 0.1 by epoch 1", "time_to_accuracy(0.1) <= 10 s",
                 "within 5% of the reference log"],
}


def write(folder, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.md5(data).hexdigest()[:12]), "wb") as f:
        f.write(data)


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def npz_bytes(compressed, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def idx_bytes(array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def main(seeds, write_seeds):
    arrays = [np.zeros((2, 3), np.float32), np.arange(5, dtype=np.int64), np.array(3.5),
              np.ones((1, 2, 2), np.float16), np.array([True, False]), np.zeros((0, 4)),
              np.arange(6, dtype=np.uint8).reshape(2, 3).T]
    for a in arrays:
        write(f"{seeds}/npy", npy_bytes(a))
    pbs = sorted(glob.glob(f"{TESTDATA}/*/test_data_set_0/*.pb"))
    for path in pbs[::max(1, len(pbs) // 300)]:
        write(f"{seeds}/tensor_proto", open(path, "rb").read())
    models = sorted(glob.glob(f"{TESTDATA}/*/model.onnx"))
    for path in models[::max(1, len(models) // 300)]:
        write(f"{seeds}/model", open(path, "rb").read())
    # Every past finding (tests/fuzz/regressions) seeds its harness again.
    regressions = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")
    for path in sorted(glob.glob(f"{regressions}/model-*.onnx")):
        write(f"{seeds}/model", open(path, "rb").read())
    for path in sorted(glob.glob(f"{regressions}/checkpoint-*.h5")):
        write(f"{seeds}/checkpoint", open(path, "rb").read())
    for path in sorted(glob.glob(f"{regressions}/recipe-*.bin")):
        write(f"{seeds}/recipe", open(path, "rb").read())
    for s in ["4096", "512K", "1.5G", "8GiB", "2x3x224x224", "9223372036854775807x2", "-1x5",
              "0x99999999999"]:
        write(f"{seeds}/sizes", s.encode())

    images = np.arange(2 * 4 * 4).reshape(2, 4, 4)
    labels = np.array([3, 7])
    write(f"{seeds}/datasets", b"\0" + idx_bytes(images))
    write(f"{seeds}/datasets", b"\1" + gzip.compress(idx_bytes(labels)))
    write(f"{seeds}/datasets", b"\1" + idx_bytes(labels))
    cifar10 = bytes([4]) + bytes(range(256)) * 12
    write(f"{seeds}/datasets", b"\2" + cifar10 * 2)
    cifar100 = bytes([3, 42]) + bytes(range(256)) * 12
    write(f"{seeds}/datasets", b"\3" + gzip.compress(cifar100))
    npz = npz_bytes(False, input=np.zeros((3, 2), np.float32), label=np.array([0, 1, 1]))
    write(f"{seeds}/datasets", b"\4" + npz)
    write(f"{seeds}/datasets", b"\5" + npz_bytes(True, x=np.ones((2, 2), np.uint8)))

    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(f"{tmp}/ckpt")
        os.makedirs(f"{tmp}/h5")
        subprocess.run([write_seeds, f"{tmp}/ckpt", f"{tmp}/h5"], check=True)
        for path in sorted(glob.glob(f"{tmp}/ckpt/*")):
            write(f"{seeds}/checkpoint", open(path, "rb").read())
        for path in sorted(glob.glob(f"{tmp}/h5/*")):
            write(f"{seeds}/datasets", b"\6" + open(path, "rb").read())

    # CLI text: byte % 8 picks the parser, byte / 8 % 6 the op type
    # (Conv, Gemm, MatMul, Add, Resize, Pad).
    shape_file = "# problems\nmb2ic8ih14oc16oh14kh3ph1\ng2mb1ic4ih7oc4kh1\n"
    texts = [(0, shape_file), (1, "mb1ic3ih8oc4kh3\n"), (8, "m128n256k512\n"),
             (17, "Nx64x56x56:Nx64x56x56\n"), (24, "2x3:3 # add\n\n4:4\n"),
             (2, "x:float32:1x3x224x224"), (3, "x:int64:Nx4"), (2, "y:f16:scalar"),
             (4, "group=2"), (4, "kernel_shape=3,3"), (36, "mode=linear"),
             (44, "pads=1,2"), (6, "executor.buffer_reuse=false"),
             (6, "executor.time_limit_seconds=1.5"), (7, "memory.budget=64M"),
             (6, "executor.max_nesting_depth=3")]
    for selector, text in texts:
        write(f"{seeds}/cli_text", bytes([selector]) + text.encode())

    # Recipes: byte 0 a recipe file (2: with --set overrides), 1 a
    # results.json (JSON is YAML, so the recipe seed is written as JSON too).
    recipe = json.dumps(TINY_RECIPE, indent=1).encode()
    write(f"{seeds}/recipe", b"\0" + recipe)
    write(f"{seeds}/recipe", b"\2" + recipe)
    # Seed ensembles, a reference log holding them and the criteria they judge.
    ensembles = dict(TINY_RECIPE, ensemble={"repeat": 3, "olympic": True, "confidence": 0.9},
                     criteria=["test_accuracy curve within the reference band at 1%",
                               "epochs_to(test_accuracy >= 0.1) within the reference distribution",
                               "epochs_to(test_accuracy >= 0.1) no faster than the reference"])
    ensembles["reference_log"] = dict(TINY_RECIPE["reference_log"], ensembles=[
        {"batch_size": 32, "seeds": [1, 2], "curves": {"test_accuracy": [[0.1, 0.2], [0.15, 0.3]]}},
        {"batch_size": 128, "seeds": [1, 2, 3],
         "curves": {"test_accuracy": [[0.1], [0.12], [0.2]]}}])
    ensembles["training"] = dict(TINY_RECIPE["training"], batch_size=64)
    write(f"{seeds}/recipe", b"\0" + json.dumps(ensembles, indent=1).encode())
    planted = dict(TINY_RECIPE, training=dict(TINY_RECIPE["training"],
                                              planted_bugs=["labels-shuffled:0.05"]))
    write(f"{seeds}/recipe", b"\0" + json.dumps(planted, indent=1).encode())
    for path in sorted(glob.glob(f"{SOURCE}/recipes/**/*.yaml", recursive=True)):
        write(f"{seeds}/recipe", b"\0" + open(path, "rb").read())
    results = {"recipe": {"name": "tiny", "version": "1.0.0"}, "status": "passed",
               "resolved_recipe": TINY_RECIPE, "machine": {"cores": 2}, "software": {"deep500": "0.1.0"},
               "metrics": {"test_accuracy": {"value": 0.5, "trials": 32},
                           "samples_per_second": {"value": 10, "samples": [9, 10, 11]}}}
    write(f"{seeds}/recipe", b"\1" + json.dumps(results).encode())
    write(f"{seeds}/recipe", b"\4" + b"training.epochs=3")
    write(f"{seeds}/recipe", b"\4" + b"test_accuracy:max,seconds:min")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
