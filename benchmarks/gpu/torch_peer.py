#!/usr/bin/env python3
"""PyTorch as the peer of deep500's operator results, on the same device.

Reads the JSON of `deep500 op bench ... --json FILE` (each row's `problem`
holds its inputs and attributes), times the same operator in PyTorch on
tensors that already live on the device (as deep500's GPU backend does),
forward and backward, and prints per problem: deep500's median, PyTorch's,
their ratio, deep500's percent of the measured peak; then the geometric mean
of the ratios per operator and pass.

    deep500 op bench Conv --shapes recipes/deepbench/resnet50_conv.txt --batch 1,32 \\
        --backend cudnn --backward --json conv.json
    python3 benchmarks/gpu/torch_peer.py conv.json --device cuda --markdown conv.md

On a GPU: cudnn.benchmark on and TF32 off on PyTorch's side (deep500's cuda.math
fp32 and cudnn.conv_algorithm benchmark are its defaults); every time is the
median of CUDA-event-timed calls. On the CPU (--device cpu) the host clock.
Operators: Conv (1-D, 2-D), Gemm, MatMul, Relu, Sigmoid, Tanh, MaxPool, AveragePool,
Softmax, LogSoftmax.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def parse_inputs(text):
    """'x:float32:1x3x8x8 w:float32:4x3x3x3' -> [(name, shape), ...]"""
    out = []
    for spec in text.split():
        name, dtype, shape = spec.split(":")
        if dtype != "float32":
            raise SystemExit(f"torch_peer: only float32 problems, got {spec}")
        out.append((name, [] if shape == "scalar" else [int(d) for d in shape.split("x")]))
    return out


def parse_attributes(text):
    attrs = {}
    for entry in text.split():
        key, value = entry.split("=", 1)
        try:
            attrs[key] = [int(v) for v in value.split(",")] if "," in value else int(value)
        except ValueError:
            try:
                attrs[key] = float(value)
            except ValueError:
                attrs[key] = value
    return attrs


def as_list(v):
    return v if isinstance(v, list) else [v]


def conv(attrs):
    def run(x, w, b=None):
        nd = x.dim() - 2
        pads = as_list(attrs.get("pads", [0] * (2 * nd)))
        if pads[:nd] != pads[nd:]:
            raise SystemExit("torch_peer: asymmetric pads")
        fn = F.conv1d if nd == 1 else F.conv2d
        return fn(x, w, b, stride=as_list(attrs.get("strides", 1)), padding=pads[:nd],
                  dilation=as_list(attrs.get("dilations", 1)), groups=attrs.get("group", 1))
    return run


def gemm(attrs):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)

    def run(a, b, c=None):
        a = a.t() if ta else a
        b = b.t() if tb else b
        if c is None:
            return alpha * (a @ b)
        return torch.addmm(c.expand(a.shape[0], b.shape[1]), a, b, beta=beta, alpha=alpha)
    return run


def pool(kind, attrs):
    def run(x):
        nd = x.dim() - 2
        pads = as_list(attrs.get("pads", [0] * (2 * nd)))[:nd]
        k, s = as_list(attrs["kernel_shape"]), as_list(attrs.get("strides", 1))
        if kind == "max":
            fn = F.max_pool1d if nd == 1 else F.max_pool2d
            return fn(x, k, s, pads)
        fn = F.avg_pool1d if nd == 1 else F.avg_pool2d
        return fn(x, k, s, pads, count_include_pad=bool(attrs.get("count_include_pad", 0)))
    return run


def operator(op, attrs):
    table = {
        "Conv": lambda: conv(attrs),
        "Gemm": lambda: gemm(attrs),
        "MatMul": lambda: torch.matmul,
        "Relu": lambda: torch.relu,
        "Sigmoid": lambda: torch.sigmoid,
        "Tanh": lambda: torch.tanh,
        "MaxPool": lambda: pool("max", attrs),
        "AveragePool": lambda: pool("average", attrs),
        "Softmax": lambda: (lambda x: torch.softmax(x, attrs.get("axis", -1))),
        "LogSoftmax": lambda: (lambda x: torch.log_softmax(x, attrs.get("axis", -1))),
    }
    if op not in table:
        raise SystemExit(f"torch_peer: no PyTorch peer for {op}")
    return table[op]()


def median_seconds(fn, device, reps, warmup):
    for _ in range(warmup):
        fn()
    samples = []
    if device.type == "cuda":
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(reps):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop) / 1e3)
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def time_row(row, device, reps, warmup):
    problem = row["problem"]
    fn = operator(row["name"], parse_attributes(problem.get("attributes", "")))
    backward = row["labels"]["pass"] == "backward"
    gen = torch.Generator(device="cpu").manual_seed(42)
    tensors = [(torch.rand(shape, generator=gen) * 2 - 1).to(device).requires_grad_(backward)
               for _, shape in parse_inputs(problem["inputs"])]
    if not backward:
        with torch.no_grad():
            return median_seconds(lambda: fn(*tensors), device, reps, warmup)
    y = fn(*tensors)
    gy = torch.rand(y.shape, generator=gen).to(device) * 2 - 1
    return median_seconds(
        lambda: torch.autograd.grad(y, tensors, gy, retain_graph=True), device, reps, warmup)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", help="deep500 op bench --json files")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--json", help="write the rows and geometric means to this file")
    p.add_argument("--markdown", help="write the table to this file")
    a = p.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("SKIPPED: PyTorch sees no CUDA device")
            return 77
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rows, ratios = [], {}
    for path in a.results:
        with open(path) as f:
            for r in json.load(f)["results"]:
                labels = r["labels"]
                if labels.get("transfers") == "included":
                    continue
                ours = r["statistics"]["median"]
                theirs = time_row(r, device, a.reps, a.warmup)
                peak = r.get("percent_of_peak", {})
                rows.append({"op": r["name"], "problem": labels["problem"], "pass": labels["pass"],
                             "backend": labels["backend"], "deep500_s": ours, "torch_s": theirs,
                             "ratio": ours / theirs, "percent_of_peak": peak.get("flops", 0),
                             "percent_of_bandwidth": peak.get("bandwidth", 0),
                             "implementation": labels.get("implementation", "")})
                ratios.setdefault((r["name"], labels["pass"]), []).append(ours / theirs)
    lines = [f"| operator | problem | pass | deep500 | PyTorch | ratio | % peak FLOP/s | % peak BW |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['problem']} | {r['pass']} | {r['deep500_s'] * 1e6:.1f} us "
                     f"| {r['torch_s'] * 1e6:.1f} us | {r['ratio']:.2f} | "
                     f"{r['percent_of_peak']:.1f} | {r['percent_of_bandwidth']:.1f} |")
    means = {f"{op} {pas}": geomean(v) for (op, pas), v in sorted(ratios.items())}
    lines.append("")
    for key, g in means.items():
        worst = max(ratios[tuple(key.split(" "))])
        lines.append(f"geometric mean of deep500/PyTorch, {key}: {g:.3f} (largest {worst:.2f})")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    lines.insert(0, f"PyTorch {torch.__version__} on {name}\n")
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": rows,
                       "geomean": means}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
