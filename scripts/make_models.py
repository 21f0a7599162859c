#!/usr/bin/python3
"""Exports real networks from PyTorch to ONNX with reference outputs and gradients.

Run with Debian's interpreter (torch 1.13, torchvision 0.14, onnx 1.12):
    /usr/bin/python3 scripts/make_models.py [OUT_DIR]     (default: build/models)

For each network (resnet18, mobilenet_v2, squeezenet1_1; weights=None,
torch.manual_seed(0), eval mode) it writes under OUT_DIR/<network>/:
    model.onnx          opset 13, no constant folding, TrainingMode.PRESERVE
                        (BatchNorm kept as a node; initializer names equal
                        state_dict names), dynamic batch dimension "N"
    x.npy, y.npy        seeded 1x3x224x224 float32 input and PyTorch's output
    y_float64.npy       the same model run in float64 (how far y.npy itself is
                        from exact, for judging tolerances)
    x16.npy, y16.npy    batch-16 input and output (benchmarks)
    grads/<init>.npy    d(sum(y))/d(initializer) for every trainable parameter
                        (all are ONNX initializers; buffers get no gradient)
and OUT_DIR/manifest.json with the name mapping, sha256 of every file,
versions and export settings. When a valid manifest is already present
(same settings, every file present with the recorded hash) nothing is redone.
Generated files are build products: never commit them.

Two deliberate departures from a bare export, both recorded in the manifest:
  * torch 1.13's exporter merges initializers with equal values in eval mode
    (e.g. every freshly initialised BatchNorm weight with every running_var,
    all ones). That makes one ONNX initializer stand for several PyTorch
    tensors, some of them buffers, so its gradient has no PyTorch counterpart.
    The merge pass is disabled, and the script checks that initializers are
    exactly the state_dict entries (minus num_batches_tracked).
  * Freshly initialised BatchNorm layers are the identity up to eps, and most
    biases are zero, so a kernel that ignored mean/var/scale/bias would still
    pass. After seeding, BatchNorm running statistics and affine parameters and
    all-zero biases get seeded random values (see perturb()).
"""

import argparse
import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

NETWORKS = ["resnet18", "mobilenet_v2", "squeezenet1_1"]
# Bump when the output layout or generation procedure changes (invalidates caches).
FORMAT_VERSION = 1
SETTINGS = {
    "opset_version": 13,
    "do_constant_folding": False,
    "training": "TrainingMode.PRESERVE",
    "model_mode": "eval",
    "weights": None,
    "model_seed": 0,
    "input_seed": 1,
    "batch16_seed": 2,
    "perturb_seed": 3,
    "input_shape": [1, 3, 224, 224],
    "batch16_shape": [16, 3, 224, 224],
    "input_distribution": "standard normal float32",
    "loss": "y.sum()",
    "dynamic_axes": {"x": {"0": "N"}, "y": {"0": "N"}},
    "deduplicate_initializers": False,
    "perturbation": "BatchNorm running_mean ~ 0.1*N(0,1), running_var ~ U(0.5,1.5), "
                    "weight ~ 1+0.1*N(0,1), bias ~ 0.1*N(0,1); all-zero parameters "
                    "~ 0.01*N(0,1)",
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions():
    import onnx
    import torch
    import torchvision
    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "onnx": onnx.__version__, "numpy": np.__version__}


def manifest_is_valid(out_dir):
    """True when out_dir/manifest.json matches these settings and every file hash."""
    path = os.path.join(out_dir, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return False
    if manifest.get("format_version") != FORMAT_VERSION or manifest.get("settings") != SETTINGS:
        return False
    if sorted(manifest.get("networks", {})) != sorted(NETWORKS):
        return False
    files = manifest.get("files", {})
    if not files:
        return False
    for rel, digest in files.items():
        full = os.path.join(out_dir, rel)
        if not os.path.isfile(full) or sha256(full) != digest:
            return False
    return True


def perturb(model, torch):
    g = torch.Generator().manual_seed(SETTINGS["perturb_seed"])
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                n = module.num_features
                module.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                module.running_var.copy_(0.5 + torch.rand(n, generator=g))
                module.weight.copy_(1 + 0.1 * torch.randn(n, generator=g))
                module.bias.copy_(0.1 * torch.randn(n, generator=g))
        for _, p in model.named_parameters():
            if torch.count_nonzero(p) == 0:
                p.copy_(0.01 * torch.randn(p.shape, generator=g))


def disable_initializer_dedup(torch):
    # torch/onnx/utils.py calls _C._jit_pass_onnx_deduplicate_initializers by
    # attribute lookup at export time; replacing it keeps every parameter.
    name = "_jit_pass_onnx_deduplicate_initializers"
    if hasattr(torch._C, name):
        setattr(torch._C, name, lambda graph, params_dict, is_train: params_dict)


def export_network(name, net_dir, torch, torchvision, onnx):
    torch.manual_seed(SETTINGS["model_seed"])
    model = getattr(torchvision.models, name)(weights=None)
    model.eval()
    perturb(model, torch)

    x = torch.randn(*SETTINGS["input_shape"],
                    generator=torch.Generator().manual_seed(SETTINGS["input_seed"]))
    x16 = torch.randn(*SETTINGS["batch16_shape"],
                      generator=torch.Generator().manual_seed(SETTINGS["batch16_seed"]))

    model_path = os.path.join(net_dir, "model.onnx")
    torch.onnx.export(model, x, model_path, opset_version=SETTINGS["opset_version"],
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    proto = onnx.load(model_path)
    onnx.checker.check_model(proto, full_check=True)

    initializers = [t.name for t in proto.graph.initializer]
    expected = [k for k in model.state_dict() if not k.endswith("num_batches_tracked")]
    if sorted(initializers) != sorted(expected):
        missing = sorted(set(expected) - set(initializers))[:5]
        extra = sorted(set(initializers) - set(expected))[:5]
        raise SystemExit(f"{name}: ONNX initializers differ from state_dict entries "
                         f"(missing {missing}, extra {extra}); was the model folded "
                         "or were initializers merged?")
    bn_nodes = sum(1 for n in proto.graph.node if n.op_type == "BatchNormalization")
    bn_modules = sum(1 for m in model.modules()
                     if isinstance(m, torch.nn.modules.batchnorm._BatchNorm))
    if bn_nodes != bn_modules:
        raise SystemExit(f"{name}: {bn_modules} BatchNorm modules but {bn_nodes} "
                         "BatchNormalization nodes")

    # Forward and backward of loss = y.sum() in float32.
    model.zero_grad(set_to_none=True)
    y = model(x)
    y.sum().backward()
    with torch.no_grad():
        y16 = model(x16)
        y64 = copy.deepcopy(model).double()(x.double())

    np.save(os.path.join(net_dir, "x.npy"), x.numpy())
    np.save(os.path.join(net_dir, "y.npy"), y.detach().numpy())
    np.save(os.path.join(net_dir, "y_float64.npy"), y64.numpy())
    np.save(os.path.join(net_dir, "x16.npy"), x16.numpy())
    np.save(os.path.join(net_dir, "y16.npy"), y16.numpy())

    grads_dir = os.path.join(net_dir, "grads")
    os.makedirs(grads_dir)
    gradients = {}
    init_set = set(initializers)
    for pname, p in model.named_parameters():
        if pname not in init_set:  # cannot happen after the check above; kept explicit
            continue
        if p.grad is None:
            raise SystemExit(f"{name}: parameter {pname} got no gradient")
        rel = f"grads/{pname}.npy"
        np.save(os.path.join(net_dir, rel), p.grad.numpy())
        gradients[pname] = {"initializer": pname, "file": rel}

    ops = sorted({n.op_type for n in proto.graph.node})
    return {
        "model": "model.onnx",
        "input": "x.npy",
        "output": "y.npy",
        "output_float64": "y_float64.npy",
        "batch16_input": "x16.npy",
        "batch16_output": "y16.npy",
        "input_name": "x",
        "output_name": "y",
        "ops": ops,
        "nodes": len(proto.graph.node),
        "parameters": sum(p.numel() for p in model.parameters()),
        "buffers_without_gradient": sorted(set(initializers) - set(gradients)),
        "gradients": gradients,
        "output_stats": {"max_abs": float(y.abs().max()),
                         "max_abs_diff_float64": float((y.double() - y64).abs().max())},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default="build/models")
    parser.add_argument("--force", action="store_true", help="regenerate even when cached")
    args = parser.parse_args()
    out_dir = os.path.abspath(args.out_dir)

    if not args.force and manifest_is_valid(out_dir):
        print(f"make_models: {out_dir} is up to date")
        return 0

    import onnx
    import torch
    import torchvision
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    disable_initializer_dedup(torch)

    os.makedirs(os.path.dirname(out_dir) or ".", exist_ok=True)
    # Build everything in a temporary sibling, then swap it in: an interrupted
    # run never leaves a half-written directory that looks valid.
    tmp = tempfile.mkdtemp(prefix=".models-", dir=os.path.dirname(out_dir))
    try:
        networks = {}
        for name in NETWORKS:
            net_dir = os.path.join(tmp, name)
            os.makedirs(net_dir)
            print(f"make_models: exporting {name}", flush=True)
            networks[name] = export_network(name, net_dir, torch, torchvision, onnx)
        files = {}
        for root, _, names in os.walk(tmp):
            for n in sorted(names):
                full = os.path.join(root, n)
                files[os.path.relpath(full, tmp)] = sha256(full)
        manifest = {"format_version": FORMAT_VERSION, "generator": "scripts/make_models.py",
                    "versions": versions(), "settings": SETTINGS, "networks": networks,
                    "files": dict(sorted(files.items()))}
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"make_models: wrote {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
