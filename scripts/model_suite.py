#!/usr/bin/python3
"""The broad model suite (issue 15): networks of the families real models use,
exported from Debian's torch/torchvision to ONNX as a new user would.

    /usr/bin/python3 scripts/model_suite.py [OUT_DIR] [--nets NAME ...] [--batch16] [--force]
        (default OUT_DIR: build/model_suite; default: every network of SUITE)

For each network (seeded random weights, torch.manual_seed(0), eval mode,
BatchNorm statistics and zero biases perturbed as scripts/make_models.py
does, so that a kernel ignoring them fails) it writes OUT_DIR/<network>/:
    model.onnx        the exporter's default opset (14 with torch 1.13),
                      initializer names equal to state_dict names (no constant
                      folding, BatchNorm kept: benchmarks/peers/torch_runner.py
                      loads the weights by name), dynamic batch dimension "N"
    x.npy, y.npy      a seeded batch-1 input and PyTorch's float32 output
    x2.npy, y2.npy    the same at batch 2 (a second batch size for the tests)
    x16.npy, y16.npy  with --batch16 only: the same at batch 16 (benchmarks;
                      the heavy part of the export, so the tests do without)
and OUT_DIR/manifest.json: per network its family, input and output names,
operator types, node and parameter counts and max |y|; the sha256 of every
file; versions and settings. A network whose files match the manifest is not
exported again. Generated files are build products: never commit them.

build(name, torch, torchvision) is also what torch_runner.py uses to rebuild
a suite network in PyTorch.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

# Bump when the layout or the export procedure changes (invalidates caches).
FORMAT_VERSION = 3
SETTINGS = {"model_seed": 0, "input_seed": 1, "batch16_seed": 2, "perturb_seed": 3,
            "batch2_seed": 4,
            "opset_version": 14, "do_constant_folding": False,
            "training": "TrainingMode.PRESERVE", "model_mode": "eval"}

# name: (family, input shape at batch 1, input kind)
IMAGE = [1, 3, 224, 224]
SUITE = {
    "resnet18": ("ResNet", IMAGE, "image"),
    "resnext50_32x4d": ("ResNeXt", IMAGE, "image"),
    "mobilenet_v2": ("MobileNet v2", IMAGE, "image"),
    "mobilenet_v3_small": ("MobileNet v3", IMAGE, "image"),
    "efficientnet_b0": ("EfficientNet", IMAGE, "image"),
    "shufflenet_v2_x1_0": ("ShuffleNet", IMAGE, "image"),
    "regnet_y_400mf": ("RegNet", IMAGE, "image"),
    "densenet121": ("DenseNet", IMAGE, "image"),
    "googlenet": ("Inception", IMAGE, "image"),
    "inception_v3": ("Inception", [1, 3, 299, 299], "image"),
    "squeezenet1_1": ("SqueezeNet", IMAGE, "image"),
    "mnasnet1_0": ("MNASNet", IMAGE, "image"),
    "alexnet": ("AlexNet", IMAGE, "image"),
    "convnext_tiny": ("ConvNeXt", IMAGE, "image"),
    "vit_b_16": ("ViT", IMAGE, "image"),
    "swin_t": ("Swin", IMAGE, "image"),
    "lraspp_mobilenet_v3_large": ("segmentation (Resize)", [1, 3, 256, 256], "image"),
    "transformer_encoder": ("transformer encoder (BERT-like)", [1, 128], "tokens"),
    "lstm": ("LSTM", [1, 32, 64], "sequence"),
    "gru": ("GRU", [1, 32, 64], "sequence"),
}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_families  # noqa: E402  (the families torchvision lacks)
SUITE.update({name: f[:3] for name, f in model_families.FAMILIES.items()})
VOCABULARY = 8000  # transformer_encoder's token ids are in [0, VOCABULARY)


def sequence_modules(torch):
    nn = torch.nn

    class Encoder(nn.Module):
        """BERT-like: token and position embeddings, 2 post-norm encoder layers
        (d 256, 4 heads, GELU feed-forward 1024), a classifier on token 0."""

        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(VOCABULARY, 256)
            self.positions = nn.Parameter(0.02 * torch.randn(1, 128, 256))
            layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu",
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(256)
            self.classifier = nn.Linear(256, 2)

        def forward(self, ids):
            h = self.tokens(ids) + self.positions[:, :ids.shape[1]]
            return self.classifier(self.norm(self.encoder(h))[:, 0])

    class Recurrent(nn.Module):
        """2-layer bidirectional LSTM or GRU (64 -> 128 each way), a classifier
        on the last step."""

        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(64, 128, num_layers=2, bidirectional=True, batch_first=True)
            self.classifier = nn.Linear(256, 10)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.classifier(out[:, -1])

    return Encoder, Recurrent


def build(name, torch, torchvision):
    """The suite network `name` (fresh, untrained), in eval mode."""
    torch.manual_seed(SETTINGS["model_seed"])
    models = torchvision.models
    if name in model_families.FAMILIES:
        return model_families.build(name, torch, torchvision)
    if name == "transformer_encoder":
        model = sequence_modules(torch)[0]()
    elif name in ("lstm", "gru"):
        model = sequence_modules(torch)[1](torch.nn.LSTM if name == "lstm" else torch.nn.GRU)
    elif name == "lraspp_mobilenet_v3_large":
        class Segmentation(torch.nn.Module):  # the model returns {"out": ...}
            def __init__(self):
                super().__init__()
                self.net = models.segmentation.lraspp_mobilenet_v3_large(
                    weights=None, weights_backbone=None, num_classes=21)

            def forward(self, x):
                return self.net(x)["out"]
        model = Segmentation()
    elif name in ("googlenet", "inception_v3"):
        # torch's default initialisation: torchvision's own (init_weights=True,
        # truncated normal std 0.1) makes inception_v3's output ~1e13.
        model = getattr(models, name)(weights=None, aux_logits=False, init_weights=False)
    else:
        model = getattr(models, name)(weights=None)
    return model.eval()


def make_input(name, batch, seed, torch):
    _, shape, kind = SUITE[name]
    g = torch.Generator().manual_seed(seed)
    shape = [batch] + shape[1:]
    if kind == "tokens":
        return torch.randint(0, VOCABULARY, shape, generator=g)
    return torch.randn(*shape, generator=g)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def perturb(model, torch):
    """make_models.py's perturbation: realistic BatchNorm statistics, no zero biases."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_models
    make_models.SETTINGS["perturb_seed"] = SETTINGS["perturb_seed"]
    make_models.perturb(model, torch)


def export(name, net_dir, batch16, torch, torchvision, onnx):
    model = build(name, torch, torchvision)
    perturb(model, torch)
    x = make_input(name, 1, SETTINGS["input_seed"], torch)
    inputs = {"x": x, "x2": make_input(name, 2, SETTINGS["batch2_seed"], torch)}
    if batch16:
        inputs["x16"] = make_input(name, 16, SETTINGS["batch16_seed"], torch)
    path = os.path.join(net_dir, "model.onnx")
    opset = model_families.FAMILIES.get(name, (None,) * 3 + (SETTINGS["opset_version"],))[3]
    torch.onnx.export(model, x, path, opset_version=opset,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    for xname, xin in inputs.items():
        with torch.no_grad():
            yout = model(xin)
        np.save(os.path.join(net_dir, xname + ".npy"), xin.numpy())
        np.save(os.path.join(net_dir, "y" + xname[1:] + ".npy"), yout.numpy())
        if xname == "x":
            y = yout
    family, _, kind = SUITE[name]
    return {"family": family, "input_kind": kind, "model": "model.onnx", "input": "x.npy",
            "output": "y.npy", "batch2_input": "x2.npy", "batch2_output": "y2.npy",
            **({"batch16_input": "x16.npy", "batch16_output": "y16.npy"} if batch16 else {}),
            "input_name": "x", "output_name": "y",
            "ops": sorted({n.op_type for n in proto.graph.node}),
            "nodes": len(proto.graph.node), "opset": proto.opset_import[0].version,
            "parameters": sum(p.numel() for p in model.parameters()),
            "output_max_abs": float(y.abs().max())}


def load_manifest(out_dir):
    try:
        with open(os.path.join(out_dir, "manifest.json")) as f:
            m = json.load(f)
    except (OSError, ValueError):
        return None
    if m.get("format_version") != FORMAT_VERSION or m.get("settings") != SETTINGS:
        return None
    return m


def is_current(out_dir, manifest, name, batch16):
    """True when `name`'s files are all present with their recorded hashes
    (and include batch 16 when asked for)."""
    if manifest is None or name not in manifest.get("networks", {}):
        return False
    if batch16 and "batch16_input" not in manifest["networks"][name]:
        return False
    files = {k: v for k, v in manifest.get("files", {}).items() if k.startswith(name + "/")}
    return bool(files) and all(
        os.path.isfile(os.path.join(out_dir, rel)) and sha256(os.path.join(out_dir, rel)) == h
        for rel, h in files.items())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir", nargs="?", default="build/model_suite")
    p.add_argument("--nets", nargs="+", default=list(SUITE), choices=list(SUITE), metavar="NAME",
                   help="networks to export (default: all): " + ", ".join(SUITE))
    p.add_argument("--batch16", action="store_true",
                   help="also x16.npy/y16.npy (batch 16, for benchmarks/peers/run.py)")
    p.add_argument("--force", action="store_true",
                   help="export the networks named again even when current")
    args = p.parse_args()
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    old = load_manifest(out_dir)
    todo = [n for n in args.nets if args.force or not is_current(out_dir, old, n, args.batch16)]
    manifest = old or {"format_version": FORMAT_VERSION, "generator": "scripts/model_suite.py",
                       "settings": SETTINGS, "networks": {}, "files": {}}
    if not todo:
        print(f"model_suite: {out_dir} is up to date ({len(args.nets)} networks)")
        return 0

    import onnx
    import torch
    import torchvision
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_models
    make_models.disable_initializer_dedup(torch)
    manifest["versions"] = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                            "onnx": onnx.__version__, "numpy": np.__version__}
    for name in todo:
        print(f"model_suite: exporting {name}", flush=True)
        # Each network is built in a temporary sibling and swapped in whole, and
        # the manifest is rewritten after each: an interrupted run keeps the
        # networks already done and never leaves a half-written one.
        tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir)
        try:
            entry = export(name, tmp, args.batch16, torch, torchvision, onnx)
            final = os.path.join(out_dir, name)
            if os.path.exists(final):
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        manifest["networks"][name] = entry
        manifest["files"] = {k: v for k, v in manifest["files"].items()
                             if not k.startswith(name + "/")}
        for f in sorted(os.listdir(final)):
            manifest["files"][f"{name}/{f}"] = sha256(os.path.join(final, f))
        with open(os.path.join(out_dir, "manifest.json.tmp"), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        os.replace(os.path.join(out_dir, "manifest.json.tmp"),
                   os.path.join(out_dir, "manifest.json"))
    print(f"model_suite: wrote {len(todo)} networks to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
