#!/usr/bin/env python3
"""Runs every command line shown in README.md and docs/*.md, so that the docs
promise only what runs (tests/CMakeLists.txt: ctest docs_commands).

Per document, in a fresh work directory (links to the repository's top-level
entries but results/, `build` to the build directory, $PREFIX an empty
install prefix):

* A fenced block right after a line ending in "`PATH`:" is written to PATH,
  so programs and scripts shown in the docs are compiled and run as shown.
* Every line of a ```sh / ```bash block is a command (a trailing backslash
  continues it, "&&" separates commands, "# ..." is a comment, `D=...` and
  `export VAR=...` set variables for the following lines):
  - deep500, also as `mpirun [OPTIONS] deep500 ...` (run through mpirun, with
    --allow-run-as-root --oversubscribe added; `mpirun ... build/benchmarks/X`
    follows the benchmark rule below; `mpirun ... python3 SCRIPT` runs and
    must exit 0): every --option named must exist in the subcommand's --help; a
    usage line ([...], ..., |) is checked for that only. Otherwise the line
    must parse (`deep500 --parse-only ...` exits 0), and unless it names a
    placeholder for the user's own input (an ALL-CAPS word such as MODEL.onnx,
    DIR, NAME) it is run and must exit 0 ("# exits N" in its comment: N).
    A run still going after --timeout seconds counts as parsed and running.
  - cmake -S/--build/--install of a project other than deep500 itself, a
    Python script written from the doc, `python3 -c`, compare.py and programs
    the doc built: run, must exit 0.
  - Scripts and benchmark programs of the repository: every --option must be
    in their --help (Python) or the program must accept it (benchmarks);
    bash scripts are syntax-checked (bash -n): they are the main job and the
    test command themselves.
  - Building and testing deep500 itself (cmake -S ., ninja, ctest) is what
    this test runs inside of: reported, not run.
Unknown command kinds fail, so a new kind of command gets a rule here.
An option named in the prose (an inline `--option ...` span) must be in the
--help of deep500, of a benchmark program or of a repository script.
"""
import argparse
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]+(\.[A-Za-z0-9]+)?$")
FILE_LINE = re.compile(r"`([^`]+)`:\s*$")
COMMAND_LANGS = {"sh", "bash", "shell"}


class Doc:
    def __init__(self, path):
        self.path = path
        self.files = []     # (name, text)
        self.unchecked = []  # line numbers of commands in blocks that are not ```sh
        self.commands = []  # (line number, text, comment)


def parse_doc(path):
    doc = Doc(path)
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```([\w+-]*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        lang = fence.group(1)
        previous = next((l for l in reversed(lines[:i]) if l.strip()), "")
        start = i + 1
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            i += 1
        body = lines[start:i]
        i += 1
        named = FILE_LINE.search(previous)
        if named and lang not in COMMAND_LANGS:
            doc.files.append((named.group(1), "\n".join(body) + "\n"))
        elif lang not in COMMAND_LANGS:
            for n, line in enumerate(body, start + 1):
                if re.match(r"^\s*(\$D|deep500) [a-z][\w-]*(\s|$)", line):
                    doc.unchecked.append(n)
        else:
            pending, first = "", None
            for n, line in enumerate(body, start + 1):
                text = line.strip()
                if not text or (text.startswith("#") and not pending):
                    continue
                if first is None:
                    first = n
                if text.endswith("\\"):
                    pending += text[:-1] + " "
                    continue
                doc.commands.append((first, pending + text))
                pending, first = "", None
    return doc


def split_comment(text):
    lexer = shlex.shlex(text, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    # The comment starts at an unquoted '#' preceded by whitespace.
    quote = None
    for k, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or text[k - 1].isspace()):
            return text[:k].strip(), text[k + 1:].strip()
    return text.strip(), ""


def is_placeholder(token):
    for part in re.split(r"[=:,/]", token):
        if PLACEHOLDER.match(part):
            return True
    return False


def is_usage_line(tokens):
    """[OPTIONAL], (A|B), ...; not a KEY=[list] value such as criteria=[...]."""
    def optional(t):
        return (t.startswith(("[", "(")) or t.endswith(("]", ")"))) and "=[" not in t
    return any(t in ("...", "|") or optional(t) or "|" in t for t in tokens)


class Checker:
    def __init__(self, args):
        self.args = args
        self.build = pathlib.Path(args.build).resolve()
        self.repo = pathlib.Path(args.repo).resolve()
        self.deep500 = self.build / "recipes" / "deep500"
        self.failures = []
        self.counts = {}
        self.help_cache = {}
        self.seconds = []  # (seconds, command) of every command run: the slowest are printed

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def fail(self, where, message):
        self.failures.append(f"{where}: {message}")

    def run(self, argv, cwd, env, timeout=None):
        """(exit code or None on timeout, output). `> FILE` in argv sends stdout there.
        On timeout the process group gets SIGTERM, then SIGKILL a minute later."""
        stdout = subprocess.PIPE
        if ">" in argv:
            k = argv.index(">")
            stdout = open(pathlib.Path(cwd or ".") / argv[k + 1], "w")
            argv = argv[:k] + argv[k + 2:]
        start = time.monotonic()
        try:
            return self.run_process(argv, cwd, env, timeout, stdout)
        finally:
            self.seconds.append((time.monotonic() - start, " ".join(argv)))

    def run_process(self, argv, cwd, env, timeout, stdout):
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=stdout,
                             stderr=subprocess.STDOUT if stdout == subprocess.PIPE else subprocess.PIPE,
                             text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
            return p.returncode, out if out is not None else err
        except subprocess.TimeoutExpired:
            # As a user's Ctrl-C would: deep500 records the run as
            # interrupted (later lines, `compare 1 2`, may refer to it).
            os.killpg(p.pid, signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
            return None, out if out is not None else err

    def deep500_help(self, binary, words):
        key = (binary, tuple(words))
        if key not in self.help_cache:
            _, out = self.run([binary] + list(words) + ["--help"], None, os.environ.copy(), 60)
            self.help_cache[key] = out
        return self.help_cache[key]

    def check_deep500(self, where, binary, tokens, comment, cwd, env, launcher=()):
        """`launcher`: an mpirun prefix the run goes through (parsing does not)."""
        words = []
        top = self.deep500_help(binary, [])
        if tokens and not tokens[0].startswith("-") and re.search(rf"^\s+{re.escape(tokens[0])}\s", top, re.M):
            words.append(tokens[0])
            sub = self.deep500_help(binary, words)
            if len(tokens) > 1 and re.search(rf"^\s+{re.escape(tokens[1])}\s", sub, re.M) and "Subcommands:" in sub:
                words.append(tokens[1])
        help_text = self.deep500_help(binary, words)
        for t in tokens:
            if re.match(r"^--?[A-Za-z]", t):
                name = t.split("=", 1)[0]
                if not re.search(rf"(^|[\s,]){re.escape(name)}([\s,={{]|$)", help_text, re.M):
                    self.fail(where, f"option {name} is not in `deep500 {' '.join(words)} --help`")
                    return
        if is_usage_line([t for t in tokens if t != ">"]):
            self.count("deep500 usage lines: options exist")
            return
        parsed = tokens[:tokens.index(">")] if ">" in tokens else tokens
        rc, out = self.run([binary, "--parse-only"] + parsed, cwd, env, 60)
        if rc != 0:
            self.fail(where, f"does not parse (exit {rc}): {out.strip()}")
            return
        if any(is_placeholder(t) for t in list(tokens) + list(launcher)):
            self.count("deep500 templates (user's own inputs): parsed")
            return
        expected = int(m.group(1)) if (m := re.search(r"exits (\d)", comment)) else 0
        rc, out = self.run(list(launcher) + [binary] + tokens, cwd, env, self.args.timeout)
        if rc is None:
            self.count(f"deep500 commands: parsed, still running after {self.args.timeout:g} s")
        elif rc != expected:
            self.fail(where, f"exit {rc}, expected {expected}:\n{out[-2000:]}")
        else:
            self.count("deep500 commands: ran to completion")

    def check_python(self, where, tokens, cwd, env):
        if tokens and tokens[0] == "-c":  # python3 -c "...": run, must exit 0
            rc, out = self.run([sys.executable] + tokens, cwd, env, self.args.timeout)
            if rc != 0:
                self.fail(where, f"exit {rc}:\n{out[-2000:]}")
            else:
                self.count("python -c lines: ran")
            return
        script = pathlib.Path(cwd) / tokens[0]
        if tokens[0].startswith("/usr/share/benchmark/") or (script.exists() and not str(script.resolve()).startswith(str(self.repo))):
            rc, out = self.run([sys.executable] + tokens, cwd, env, self.args.timeout)
            if rc != 0:
                self.fail(where, f"exit {rc}:\n{out[-2000:]}")
            else:
                self.count("programs and scripts from the docs: ran")
            return
        if not script.exists():
            self.fail(where, f"{tokens[0]} does not exist")
            return
        rc, out = self.run([sys.executable, tokens[0], "--help"], cwd, env, 60)
        for t in tokens[1:]:
            if t.startswith("--") and not re.search(rf"{re.escape(t.split('=')[0])}\b", out):
                self.fail(where, f"option {t} is not in `{tokens[0]} --help`")
                return
        self.count("repository scripts: options exist")

    def check_command(self, where, text, cwd, env, aliases):
        command, comment = split_comment(text)
        if not command:
            return
        for part in command.split("&&"):
            self.check_one(where, part.strip(), comment, cwd, env, aliases)

    def check_one(self, where, command, comment, cwd, env, aliases):
        if re.match(r"^\w+=\S+$", command):  # D=build/recipes/deep500
            name, value = command.split("=", 1)
            aliases[name] = value
            env[name] = value
            return
        if command.startswith("export "):
            name, value = command[len("export "):].split("=", 1)
            env[name] = expand(value, env)
            return
        tokens = [expand(t, env) for t in shlex.split(command)]
        while tokens and re.match(r"^[A-Z_]+=", tokens[0]):  # OMP_NUM_THREADS=1 program ...
            tokens.pop(0)
        head = tokens[0]
        launcher = []
        if head in ("mpirun", "mpiexec"):  # mpirun [OPTIONS] deep500 ...: run through mpirun
            k = next((i for i, t in enumerate(tokens) if t == "deep500" or t.endswith("/deep500")
                      or t.startswith("build/benchmarks/") or t.endswith("python3")), None)
            if k is None:
                self.fail(where, "mpirun of something other than deep500, a benchmark or python3")
                return
            launcher = tokens[:k] + [f for f in ("--allow-run-as-root", "--oversubscribe")
                                     if f not in tokens[:k]]
            tokens, head = tokens[k:], tokens[k]
            if head.endswith("python3"):  # a script from the doc, on every rank: must exit 0
                rc, out = self.run(launcher + tokens, cwd, env, self.args.timeout)
                if rc != 0:
                    self.fail(where, f"exit {rc}:\n{out[-2000:]}")
                else:
                    self.count("python scripts under mpirun: ran")
                return
        if head == "deep500" or head.endswith("/deep500") or head.endswith("recipes/deep500"):
            binary = shutil.which("deep500", path=env.get("PATH")) if head == "deep500" else None
            binary = binary or str(self.deep500)
            self.check_deep500(where, binary, tokens[1:], comment, cwd, env, launcher)
        elif head == "cmake" and ("-S" in tokens and tokens[tokens.index("-S") + 1] == "."):
            self.count("deep500's own build and tests: not run here")
        elif head == "cmake" and "--build" in tokens and tokens[tokens.index("--build") + 1] == "build":
            self.count("deep500's own build and tests: not run here")
        elif head == "cmake":
            rc, out = self.run(tokens, cwd, env, 600)
            if rc != 0:
                self.fail(where, f"exit {rc}:\n{out[-3000:]}")
            else:
                self.count("cmake commands: ran")
        elif head in ("ninja", "ctest"):
            self.count("deep500's own build and tests: not run here")
        elif head == "bash":
            script = pathlib.Path(cwd) / tokens[1]
            rc, out = self.run(["bash", "-n", tokens[1]], cwd, env, 60) if script.exists() else (1, "missing")
            if rc != 0:
                self.fail(where, f"{tokens[1]}: {out.strip()}")
            else:
                self.count("bash scripts: exist, syntax checked")
        elif head.endswith("python3"):
            self.check_python(where, tokens[1:], cwd, env)
        elif head.startswith("build/benchmarks/"):
            program = pathlib.Path(cwd) / head
            rc, out = self.run([str(program), "--help"], cwd, env, 60) if program.exists() else (1, "missing")
            if rc != 0:
                self.fail(where, f"{head} --help: exit {rc} {out.strip()[-500:]}")
                return
            for t in tokens[1:]:
                if t.startswith("--") and t.split("=")[0] not in out:
                    self.fail(where, f"option {t} is not in `{head} --help`")
                    return
            self.count("benchmark programs: exist, options exist")
        elif (pathlib.Path(cwd) / head).exists() and os.access(pathlib.Path(cwd) / head, os.X_OK):
            rc, out = self.run(tokens, cwd, env, self.args.timeout)
            if rc != 0:
                self.fail(where, f"exit {rc}:\n{out[-2000:]}")
            else:
                self.count("programs and scripts from the docs: ran")
        else:
            self.fail(where, f"no rule for the command '{head}' (tests/docs/check_docs.py)")

    def known_options_text(self):
        """The --help of every deep500 subcommand, benchmark program and script."""
        if hasattr(self, "_known"):
            return self._known
        texts, queue = [], [[]]
        while queue:
            words = queue.pop()
            text = self.deep500_help(str(self.deep500), words)
            texts.append(text)
            if "Subcommands:" in text:
                for line in text.split("Subcommands:")[1].split("\n"):
                    if m := re.match(r"^  (\S+)\s", line):
                        queue.append(words + [m.group(1)])
        for program in sorted((self.build / "benchmarks").glob("bench_*")):
            texts.append(self.run([str(program), "--help"], None, os.environ.copy(), 60)[1])
        scratch = pathlib.Path(self.args.work) / "help"
        scratch.mkdir(parents=True, exist_ok=True)
        for script in sorted(self.repo.glob("benchmarks/**/*.py")) + sorted(self.repo.glob("scripts/*.py")):
            if "argparse" in script.read_text():  # others may take --help as an argument
                texts.append(self.run([sys.executable, str(script), "--help"], str(scratch),
                                      os.environ.copy(), 120)[1])
        self._known = "\n".join(texts)
        return self._known

    def check_prose_options(self, path):
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", text):
            if not re.match(r"^--[a-z]", span):
                continue
            name = re.split(r"[\s=]", span, 1)[0]
            if not re.search(rf"(^|[\s,\[]){re.escape(name)}([\s,=\]{{]|$)", self.known_options_text(), re.M):
                self.fail(str(path.relative_to(self.repo)), f"the prose names `{name}`, which no --help lists")
            else:
                self.count("options named in the prose: exist")

    def check_doc(self, path):
        self.check_prose_options(path)
        doc = parse_doc(path)
        for line in doc.unchecked:
            self.fail(f"{path.relative_to(self.repo)}:{line}",
                      "a deep500 command outside a ```sh block (use ```sh so that it is checked)")
        if not doc.commands:
            return
        work = pathlib.Path(self.args.work) / path.stem
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        # Not results/: the docs' runs start from an empty run history, not
        # from the runs (perhaps interrupted) of whoever tests in this tree.
        for entry in self.repo.iterdir():
            if entry.name not in ("build", ".git", "results") and not entry.name.startswith("build-"):
                (work / entry.name).symlink_to(entry)
        (work / "build").symlink_to(self.build)
        env = os.environ.copy()
        env["PREFIX"] = str(work / "prefix")
        for name, text in doc.files:
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        aliases = {}
        for line, text in doc.commands:
            where = f"{path.relative_to(self.repo)}:{line}"
            if self.args.verbose:
                print(f"{where}: {text}", flush=True)
            self.check_command(where, text, str(work), env, aliases)


def expand(token, env):
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), token)


SELF_TEST_DOC = """# a doc with one mistake of each kind

`ok.txt`:

```text
written
```

```sh
deep500 op check Relu --input x:float32:4 --nosuch-option 1
deep500 op check Relu --input x:float32:4 --backend onednnn
deep500 op check OPTYPE --input NAME:dtype:shape [--grad]
deep500 op check Relu --input x:float32:4   # passes
deep500 op check Relu --input x:float32:4 --backend onednnn   # exits 2
deep500 infer MODEL.onnx --output-dir out
frobnicate --now
```
"""


def self_test(args):
    """The checker finds each kind of mistake (and passes the rest)."""
    work = pathlib.Path(args.work) / "self-test"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    doc = work / "doc.md"
    doc.write_text(SELF_TEST_DOC)
    args.work = str(work / "run")
    checker = Checker(args)
    checker.repo = work
    checker.check_doc(doc)
    failures = "\n".join(checker.failures)
    expected = ["doc.md:10: option --nosuch-option is not in `deep500 op check --help`",
                "doc.md:11: exit 2, expected 0", "doc.md:16: no rule for the command 'frobnicate'"]
    problems = [e for e in expected if e not in failures]
    if len(checker.failures) != len(expected):
        problems.append(f"{len(checker.failures)} failures, expected {len(expected)}:\n{failures}")
    want = {"deep500 usage lines: options exist": 1, "deep500 commands: ran to completion": 2,
            "deep500 templates (user's own inputs): parsed": 1}
    if checker.counts != want:
        problems.append(f"counts {checker.counts}, expected {want}")
    if (work / "run" / "doc" / "ok.txt").read_text() != "written\n":
        problems.append("the `ok.txt`: block was not written")
    for p in problems:
        print(f"self-test FAILED: {p}")
    print("self-test:", "FAILED" if problems else "passed")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--self-test", action="store_true", help="check the checker")
    parser.add_argument("docs", nargs="*", help="default: README.md and docs/*.md")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args)
    checker = Checker(args)
    repo = pathlib.Path(args.repo).resolve()
    docs = [pathlib.Path(d).resolve() for d in args.docs] or \
        [repo / "README.md"] + sorted((repo / "docs").glob("*.md"))
    for d in docs:
        checker.check_doc(d)
    for kind, n in sorted(checker.counts.items()):
        print(f"{n:4d}  {kind}")
    for f in checker.failures:
        print(f"FAILED {f}")
    total = sum(checker.counts.values())
    # Where the test's time goes (CI runs it on two cores beside the others).
    for seconds, command in sorted(checker.seconds, reverse=True)[:8]:
        print(f"{seconds:7.1f} s  {command[:150]}")
    print(f"docs commands: {total} checked, {len(checker.failures)} failed")
    return 1 if checker.failures or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
