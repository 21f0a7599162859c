#!/usr/bin/python3
"""PyTorch's side of the peer benchmark (docs/peer-benchmarks.md).

Same command line and JSON line as bench_network_runner and ort_runner.js:

    /usr/bin/python3 torch_runner.py MODEL.onnx INPUT.npy --threads N --warmup W --reps R
        [--max-seconds S] [--save-output OUT.npy] [--arch NAME] [--state-dict FILE.pt]

With --suite the network is one of scripts/model_suite.py's (--arch, default
the name of the directory holding MODEL.onnx), rebuilt with that script's
seeds and perturbation, which gives it the exported model's weights (run.py
checks the outputs against PyTorch's reference output). Otherwise the
network is rebuilt from torchvision (--arch, default: the name of the
directory holding MODEL.onnx, as scripts/make_models.py lays it out) and gets
the ONNX model's weights: make_models.py exports with initializer names equal
to state_dict names, so every initializer is loaded by name and the load
checks that nothing is missing but BatchNorm's num_batches_tracked. The
conversion runs in a child process (onnx's protobuf of the whole model would
otherwise count in this process's peak RSS) and is cached in --state-dict
(default: none, converted on every run).

Runs with torch.set_num_threads(N), model.eval() under torch.inference_mode().
The JSON reports which BLAS library the process mapped (torch 1.13 from
Debian uses the system libblas.so.3 for matrix multiplies).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def max_rss_kib():
    """Peak resident set of this process image, KiB: VmHWM of /proc/self/status
    (not ru_maxrss, which Linux carries over from the parent across exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def convert(model_path, out_path):
    """Child-process mode: ONNX initializers -> torch.save({name: tensor})."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    proto = onnx.load(model_path)
    state = {t.name: torch.from_numpy(np.array(numpy_helper.to_array(t)))
             for t in proto.graph.initializer}
    tmp = f"{out_path}.tmp{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, out_path)


def mapped_blas():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            base = os.path.basename(p)
            if "blas" in base.lower() or "mkl_" in base.lower():
                libs.add(os.path.realpath(p))
    return sorted(libs)


def torchvision_with_onnx_weights(args, arch, torch, torchvision):
    """The torchvision network `arch` with MODEL.onnx's initializers (through
    --state-dict, converted in a child process when absent)."""
    t_load = time.perf_counter()
    state_path = args.state_dict
    tmpdir = None
    if not state_path or not os.path.exists(state_path):
        if not state_path:
            tmpdir = tempfile.mkdtemp(prefix="torch_runner-")
            state_path = os.path.join(tmpdir, "state_dict.pt")
        subprocess.run([sys.executable, os.path.abspath(__file__), args.model, args.input,
                        "--convert-to", state_path], check=True)
    convert_seconds = time.perf_counter() - t_load
    state = torch.load(state_path)
    if tmpdir:
        os.remove(state_path)
        os.rmdir(tmpdir)
    model = getattr(torchvision.models, arch)(weights=None)
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.endswith("num_batches_tracked")]
    if missing or result.unexpected_keys:
        raise SystemExit(f"torch_runner: {arch} weights from {args.model} do not match the "
                         f"state_dict: missing {missing[:5]}, unexpected "
                         f"{result.unexpected_keys[:5]}")
    return model, convert_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("input")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=0)
    parser.add_argument("--save-output", default="")
    parser.add_argument("--arch", default="")
    parser.add_argument("--state-dict", default="")
    parser.add_argument("--suite", action="store_true",
                        help="a scripts/model_suite.py network: rebuilt from its seeds")
    parser.add_argument("--convert-to", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.convert_to:
        convert(args.model, args.convert_to)
        return 0
    if args.threads < 1 or args.reps < 1 or args.warmup < 0 or args.max_seconds < 0:
        parser.error("--threads and --reps must be >= 1, --warmup and --max-seconds >= 0")

    rss_start = max_rss_kib()
    import numpy as np
    import torch
    import torchvision
    torch.set_num_threads(args.threads)
    arch = args.arch or os.path.basename(os.path.dirname(os.path.abspath(args.model)))

    t_load = time.perf_counter()
    convert_seconds = 0.0
    if args.suite:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "scripts"))
        import model_suite
        model = model_suite.build(arch, torch, torchvision)
        model_suite.perturb(model, torch)
    else:
        model, convert_seconds = torchvision_with_onnx_weights(args, arch, torch, torchvision)
    model.eval()
    x = torch.from_numpy(np.load(args.input))
    load_seconds = time.perf_counter() - t_load
    rss_loaded = max_rss_kib()

    seconds = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        y = model(x)
        first_run_seconds = time.perf_counter() - t0
        for _ in range(1, args.warmup):
            model(x)
        elapsed = 0.0
        while len(seconds) < args.reps:
            t0 = time.perf_counter()
            model(x)
            dt = time.perf_counter() - t0
            seconds.append(dt)
            elapsed += dt
            if args.max_seconds > 0 and elapsed >= args.max_seconds and len(seconds) >= 3:
                break
    if args.save_output:
        tmp = f"{args.save_output}.tmp{os.getpid()}.npy"
        np.save(tmp, y.numpy())
        os.replace(tmp, args.save_output)

    s = sorted(seconds)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    batch = int(x.shape[0]) if x.dim() else 1
    out = {
        "runner": "pytorch",
        "version": torch.__version__,
        "torchvision": torchvision.__version__,
        "arch": arch,
        "blas_libraries": mapped_blas(),
        "blas_info": next((p.split("=", 1)[1] for p in torch.__config__.show().replace(",", " ")
                           .split() if p.startswith("BLAS_INFO=")), "unknown"),
        "mkldnn_enabled": torch.backends.mkldnn.is_available(),
        "model": args.model,
        "input": args.input,
        "batch": batch,
        "threads": args.threads,
        "torch_threads": torch.get_num_threads(),
        "warmup": max(args.warmup, 1),
        "reps": n,
        "seconds": seconds,
        "summary": {"median": med, "min": s[0], "max": s[-1]},
        "samples_per_s": batch / med,
        "load_seconds": load_seconds,
        "convert_seconds": convert_seconds,
        "first_run_seconds": first_run_seconds,
        "rss_start_kib": rss_start,
        "rss_loaded_kib": rss_loaded,
        "peak_rss_kib": max_rss_kib(),
        "rss_method": "VmHWM of /proc/self/status",
    }
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
