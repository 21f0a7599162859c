#!/usr/bin/env python3
"""The architecture's rules, checked on the source tree (ctest: layering).

1. A layer includes only itself and the layers below it
   (deep <- metrics <- operators <- network <- training, validation <- recipes;
   frameworks/ implements the levels and may include any of them). No level
   includes frameworks/, except the command line's one call to
   frameworks/register_all.h.
2. network/, training/ and validation/ name no backend in code (comments are
   not code): capability queries and plan hints (operators/plan_hints.h)
   stand where a backend name would.
3. getenv appears in one settings file per layer at most (tests and
   benchmarks aside).
4. No two files or folders of a layer have names that differ only by a
   plural (optimizer.h / optimizers.h / optimizers/): a name says what the
   file holds.

Usage: check_layering.py ROOT   prints one line per violation, exit 1 if any.
       check_layering.py --self-test   plants one violation of each kind in a
       temporary tree and checks that every one is reported.
"""
import os
import re
import sys
import tempfile

ALLOWED = {
    "deep": {"deep"},
    "metrics": {"deep", "metrics"},
    "operators": {"deep", "metrics", "operators"},
    "network": {"deep", "metrics", "operators", "network"},
    "training": {"deep", "metrics", "operators", "network", "training"},
    "validation": {"deep", "metrics", "operators", "network", "training", "validation"},
    "distributed": {"deep", "metrics", "operators", "network", "training", "distributed"},
    "recipes": {"deep", "metrics", "operators", "network", "training", "validation",
                "distributed", "recipes"},
    "frameworks": {"deep", "metrics", "operators", "network", "training", "frameworks"},
}
# The one include of frameworks/ a level may make: the command line registers the backends.
FRAMEWORK_ENTRY = {"recipes": {"frameworks/register_all.h"}}
BACKEND_FREE = ("network", "training", "validation")
BACKEND_NAMES = re.compile(r"\b(onednn|dnnl|mkldnn|eigen|libtorch|torch|aten|cudnn|cublas|cuda|nccl)\b",
                           re.IGNORECASE)
# Per layer, the one file allowed to read the environment.
SETTINGS_FILES = {
    "metrics": "metrics/context.cc",        # records OMP_* etc. in every result
    "network": "network/executor_options.cc",
    "frameworks": "frameworks/settings.cc",
    "distributed": "distributed/mpi_communicator.cc",  # the launcher's OMPI_*/PMI_* variables
    "recipes": "recipes/format/environment.cc",  # a recipe's allowed environment, set for its task
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([a-z_]+)/([^">]+)[">]')


def strip_comments(text):
    """C++ source without // and /* */ comments (string literals kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(root, layer):
    for base, _, files in os.walk(os.path.join(root, layer)):
        for f in sorted(files):
            if f.endswith((".h", ".cc", ".cu", ".hpp", ".cpp")):
                yield os.path.join(base, f)


def plural_pairs(root, layer):
    for base, dirs, files in os.walk(os.path.join(root, layer)):
        stems = {n.split(".")[0] for n in dirs + files}
        for stem in sorted(stems):
            if stem + "s" in stems:
                rel = os.path.relpath(os.path.join(base, stem), root)
                yield f"{rel}*: names '{stem}' and '{stem}s' differ only by a plural"


def check(root):
    problems = []
    for layer in ALLOWED:
        problems.extend(plural_pairs(root, layer))
    for layer, allowed in ALLOWED.items():
        for path in sources(root, layer):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for number, line in enumerate(text.splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in ALLOWED:
                    continue
                target = m.group(1)
                header = f"{target}/{m.group(2)}"
                if target == "frameworks" and header in FRAMEWORK_ENTRY.get(layer, set()):
                    continue
                if target not in allowed:
                    why = "into frameworks/" if target == "frameworks" else f"up into {target}/"
                    problems.append(f"{rel}:{number}: includes {header}: {layer}/ may not include {why}")
            code = strip_comments(text)
            if layer in BACKEND_FREE:
                for number, line in enumerate(code.splitlines(), 1):
                    if INCLUDE.match(line):
                        continue  # an include is checked as an include
                    for m in BACKEND_NAMES.finditer(line):
                        problems.append(f"{rel}:{number}: names the backend '{m.group(0)}' "
                                        f"({layer}/ asks capabilities, operators/plan_hints.h)")
            if "getenv" in code and SETTINGS_FILES.get(layer) != rel:
                where = SETTINGS_FILES.get(layer)
                problems.append(f"{rel}: reads the environment; {layer}/ may only in "
                                f"{where}" if where else f"{rel}: reads the environment; "
                                f"{layer}/ has no settings file that may")
    return problems


def self_test():
    planted = {
        "network/up.h": '#include "training/trainer.h"\n',
        "training/fw.cc": '#include "frameworks/onednn/common.h"\n',
        "validation/name.cc": 'const char* b = "cudnn";  // comment mentioning eigen is fine\n',
        "training/env.cc": 'auto v = std::getenv("X");\n',
        "recipes/ok.cc": '#include "frameworks/register_all.h"\n// onednn in a comment\n',
        "network/ok.cc": '// uses oneDNN? no: a comment\n#include "operators/registry.h"\n',
        "training/sampler.h": "\n",
        "training/samplers.h": "\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in planted.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        found = check(root)
    expected = ["network/up.h:1: includes training/trainer.h",
                "training/fw.cc:1: includes frameworks/onednn/common.h",
                "validation/name.cc:1: names the backend 'cudnn'",
                "training/env.cc: reads the environment",
                "training/sampler*: names 'sampler' and 'samplers'"]
    missing = [e for e in expected if not any(p.startswith(e) for p in found)]
    extra = [p for p in found if not any(p.startswith(e) for e in expected)]
    for m in missing:
        print("self-test: not reported:", m)
    for e in extra:
        print("self-test: reported wrongly:", e)
    print(f"self-test: {len(expected) - len(missing)} of {len(expected)} planted violations "
          f"reported, {len(extra)} false reports")
    return 1 if missing or extra else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
