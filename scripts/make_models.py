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

Training networks (TRAINING_NETWORKS: lenet5, resnet20, mobilenet_v2, transformer and the six
families of scripts/model_families.py), for Level 2 and benchmarks/training_step.cc, go to
OUT_DIR/<network>_train/:
    model.onnx          the network WITH its loss: inputs x (float32 Nx..., int64
                        token ids [N, 128] for the transformer) and
                        labels (int64 N; N x H x W for the segmentation families,
                        N x 64 tokens for attention_variants), output loss = mean
                        softmax cross-entropy (SoftmaxCrossEntropyLoss); opset 14
                        (16 for spatial_sampling's GridSample), exported with
                        TrainingMode.TRAINING and no constant folding, so every
                        BatchNormalization has training_mode=1 and outputs its
                        updated running mean/var (network/training_state.h);
                        initializer names are "net.<state_dict name>"
    x.npy, labels.npy   a seeded batch of 4; loss.npy the loss PyTorch computes
    grads/<init>.npy    d(loss)/d(parameter) from PyTorch in float64 (the
                        float32 model's own gradients are off by up to ~4e-2
                        relative after BatchNorm backward at this batch size)
    grads32/<init>.npy  PyTorch's float32 gradients (how far float32 rounding
                        alone takes a framework from grads/)
    state/<init>.npy    the running mean/var after that forward pass (from the
                        exported initializers: the exporter's tracing run has
                        already updated them once), with
                        ONNX semantics (biased batch variance; PyTorch's own
                        running_var uses the unbiased one)
  lenet5:   1x28x28, conv5x5(6, pad 2)+ReLU+maxpool2, conv5x5(16)+ReLU+maxpool2,
            fc 120, 84, 10 (ReLU between).
  resnet20: He et al. 2016 CIFAR ResNet-20 (3 stages x 3 basic blocks, 16/32/64
            channels, BatchNorm), option-B shortcuts (1x1 conv stride 2 + BatchNorm
            where the shape changes), 3x32x32 input, 10 classes.

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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_families  # noqa: E402 (the families torchvision lacks, scripts/model_families.py)

TRAINING_NETWORKS = ["lenet5", "resnet20", "mobilenet_v2", "transformer"] + list(
    model_families.TRAINING)
# Bump when the output layout or generation procedure changes (invalidates caches).
FORMAT_VERSION = 2
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

TRAINING_SETTINGS = {
    "opset_version": 14,
    "do_constant_folding": False,
    "training": "TrainingMode.TRAINING",
    "model_mode": "train",
    "model_seed": 0,
    "input_seed": 1,
    "perturb_seed": 3,
    "batch": 4,
    "input_shapes": {"lenet5": [1, 28, 28], "resnet20": [3, 32, 32],
                     "mobilenet_v2": [3, 224, 224], "transformer": [128],
                     **{n: f[1][1:] for n, f in model_families.FAMILIES.items()}},
    "classes_and_label_shapes": {**{n: [10, []] for n in ["lenet5", "resnet20", "mobilenet_v2",
                                                         "transformer"]},
                                 **{n: list(t) for n, t in model_families.TRAINING.items()}},
    "family_opsets": {n: max(14, f[3]) for n, f in model_families.FAMILIES.items()},
    "token_vocabulary": 8000,
    "mobilenet_v2": "torchvision mobilenet_v2(num_classes=10, dropout=0.0)",
    "transformer": "token + position embeddings, 2 post-norm encoder layers (d 256, 4 heads, "
                   "GELU feed-forward 1024, dropout 0), LayerNorm, a 10-class head on token 0",
    "loss": "F.cross_entropy(net(x), labels) (mean)",
    "dynamic_axes": {"x": {"0": "N"}, "labels": {"0": "N"}},
    "resnet20_shortcut": "option B (1x1 conv + BatchNorm)",
    "reference_gradients": "float64",
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
    if manifest.get("training_settings") != TRAINING_SETTINGS:
        return False
    if sorted(manifest.get("training_networks", {})) != sorted(TRAINING_NETWORKS):
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


def training_modules(torch):
    """LeNet5, ResNet20 and WithLoss module classes (also used by benchmarks/training)."""
    nn = torch.nn
    F = torch.nn.functional

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:  # option B
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + self.shortcut(x))

    class ResNet20(nn.Module):
        def __init__(self, num_classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            layers, cin = [], 16
            for cout, stride in ((16, 1), (32, 2), (64, 2)):
                blocks = []
                for b in range(3):
                    blocks.append(BasicBlock(cin, cout, stride if b == 0 else 1))
                    cin = cout
                layers.append(nn.Sequential(*blocks))
            self.layer1, self.layer2, self.layer3 = layers
            self.fc = nn.Linear(64, num_classes)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    class Transformer(nn.Module):
        """The model suite's BERT-like encoder (scripts/model_suite.py) with a
        10-class head."""

        def __init__(self):
            super().__init__()
            d = 256
            self.tokens = nn.Embedding(TRAINING_SETTINGS["token_vocabulary"], d)
            self.positions = nn.Parameter(0.02 * torch.randn(1, 128, d))
            layer = nn.TransformerEncoderLayer(d, 4, 1024, dropout=0.0, activation="gelu",
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.classifier = nn.Linear(d, 10)

        def forward(self, ids):
            h = self.tokens(ids) + self.positions[:, :ids.shape[1]]
            return self.classifier(self.norm(self.encoder(h))[:, 0])

    def mobilenet_v2():
        import torchvision
        return torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0)

    class WithLoss(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x, labels):
            return F.cross_entropy(self.net(x), labels)

    def family(name):
        import torchvision
        return lambda: model_families.training_module(name, torch, torchvision)

    return {"lenet5": LeNet5, "resnet20": ResNet20, "mobilenet_v2": mobilenet_v2,
            "transformer": Transformer, "WithLoss": WithLoss,
            **{name: family(name) for name in model_families.TRAINING}}


def export_training_network(name, net_dir, torch, onnx):
    mods = training_modules(torch)
    torch.manual_seed(TRAINING_SETTINGS["model_seed"])
    model = mods["WithLoss"](mods[name]())
    perturb(model, torch)
    model.train()
    n = TRAINING_SETTINGS["batch"]
    g = torch.Generator().manual_seed(TRAINING_SETTINGS["input_seed"])
    shape = TRAINING_SETTINGS["input_shapes"][name]
    if name == "transformer":  # token ids
        x = torch.randint(0, TRAINING_SETTINGS["token_vocabulary"], (n, *shape), generator=g)
    else:
        x = torch.randn(n, *shape, generator=g)
    classes, label_shape = TRAINING_SETTINGS["classes_and_label_shapes"][name]
    labels = torch.randint(0, classes, (n, *label_shape), generator=g)
    opset = TRAINING_SETTINGS["family_opsets"].get(name, TRAINING_SETTINGS["opset_version"])

    model_path = os.path.join(net_dir, "model.onnx")
    exported = copy.deepcopy(model)  # export runs forward (updating running stats)
    torch.onnx.export(exported, (x, labels), model_path,
                      opset_version=opset, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["x", "labels"], output_names=["loss"],
                      dynamic_axes={"x": {0: "N"}, "labels": {0: "N"}})
    proto = onnx.load(model_path)
    onnx.checker.check_model(proto, full_check=True)
    initializers = sorted(t.name for t in proto.graph.initializer)
    expected = sorted(k for k in model.state_dict() if not k.endswith("num_batches_tracked"))
    if initializers != expected:
        raise SystemExit(f"{name}: ONNX initializers differ from state_dict entries")
    for node in proto.graph.node:
        if node.op_type == "BatchNormalization":
            mode = [a.i for a in node.attribute if a.name == "training_mode"]
            if mode != [1] or len(node.output) != 3:
                raise SystemExit(f"{name}: BatchNormalization {node.name} not in training mode")

    # The exporter's tracing forward updated the copy's running statistics, so
    # the initializers are the ground truth: load them back (all of them).
    import onnx.numpy_helper
    with torch.no_grad():
        sd = model.state_dict()
        for t in proto.graph.initializer:
            sd[t.name].copy_(torch.from_numpy(onnx.numpy_helper.to_array(t).copy()))

    # Running statistics with ONNX semantics, from each BatchNorm's input.
    state = {}
    hooks = []
    for mname, module in model.named_modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            def hook(mod, inp, mname=mname):
                xin = inp[0].detach()
                dims = [0] + list(range(2, xin.dim()))
                m = 1 - mod.momentum
                state[mname + ".running_mean"] = m * mod.running_mean + (1 - m) * xin.mean(dims)
                state[mname + ".running_var"] = (m * mod.running_var +
                                                 (1 - m) * xin.var(dims, unbiased=False))
            hooks.append(module.register_forward_pre_hook(hook))
    model.zero_grad(set_to_none=True)
    loss = model(x, labels)  # pre-hooks run before the module updates its buffers
    loss.backward()
    for h in hooks:
        h.remove()
    # Reference gradients in float64 (PyTorch's float32 ones are off by up to
    # ~4e-2 relative after the BatchNorm backward at batch 4).
    model64 = copy.deepcopy(model).double()
    model64.zero_grad(set_to_none=True)
    model64(x if not x.is_floating_point() else x.double(), labels).backward()
    grads64 = dict(model64.named_parameters())

    np.save(os.path.join(net_dir, "x.npy"), x.numpy())
    np.save(os.path.join(net_dir, "labels.npy"), labels.numpy())
    np.save(os.path.join(net_dir, "loss.npy"), loss.detach().numpy())
    os.makedirs(os.path.join(net_dir, "grads"))
    os.makedirs(os.path.join(net_dir, "grads32"))
    os.makedirs(os.path.join(net_dir, "state"))
    gradients, gradients32, states = {}, {}, {}
    for pname, p in model.named_parameters():
        rel = f"grads/{pname}.npy"
        np.save(os.path.join(net_dir, rel), grads64[pname].grad.numpy())
        gradients[pname] = rel
        rel32 = f"grads32/{pname}.npy"  # PyTorch's float32 gradients: its own rounding
        np.save(os.path.join(net_dir, rel32), p.grad.numpy())
        gradients32[pname] = rel32
    for sname, t in sorted(state.items()):
        rel = f"state/{sname}.npy"
        np.save(os.path.join(net_dir, rel), t.detach().numpy())
        states[sname] = rel
    return {
        "model": "model.onnx", "input": "x.npy", "labels": "labels.npy", "loss": "loss.npy",
        "input_name": "x", "labels_name": "labels", "loss_name": "loss",
        "ops": sorted({n.op_type for n in proto.graph.node}),
        "nodes": len(proto.graph.node),
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_bytes": os.path.getsize(model_path),
        "gradients": gradients, "gradients_float32": gradients32, "state": states,
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
        training_networks = {}
        for name in TRAINING_NETWORKS:
            net_dir = os.path.join(tmp, name + "_train")
            os.makedirs(net_dir)
            print(f"make_models: exporting {name} (training, with loss)", flush=True)
            entry = export_training_network(name, net_dir, torch, onnx)
            entry["dir"] = name + "_train"
            training_networks[name] = entry
        files = {}
        for root, _, names in os.walk(tmp):
            for n in sorted(names):
                full = os.path.join(root, n)
                files[os.path.relpath(full, tmp)] = sha256(full)
        manifest = {"format_version": FORMAT_VERSION, "generator": "scripts/make_models.py",
                    "versions": versions(), "settings": SETTINGS, "networks": networks,
                    "training_settings": TRAINING_SETTINGS,
                    "training_networks": training_networks,
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
