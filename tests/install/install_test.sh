#!/bin/sh
# Installs deep500 into a temporary prefix and uses it as a user would: the
# installed command and Python module run from the prefix alone, and the two examples
# (operators/examples/swish, benchmarks/examples) build out of the tree with
# find_package(deep500 CONFIG REQUIRED) against that prefix, then run.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -eu
build=$1 src=$2 work=$3
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/deep500 lib/libdeep500_core.so lib/libdeep500_operators.so \
         lib/libdeep500_network.so lib/libdeep500_training.so lib/libdeep500_frameworks.so \
         include/deep500/operators/custom_op_abi.h include/deep500/deep/tensor.h \
         include/deep500/metrics/runner.h lib/cmake/deep500/deep500Config.cmake \
         lib/cmake/deep500/deep500ConfigVersion.cmake lib/cmake/deep500/deep500Targets.cmake; do
  [ -e "$prefix/$f" ] || fail "missing $prefix/$f"
done

# The installed command loads deep500's libraries from the prefix, not the build tree.
prefix=$(cd "$prefix" && pwd -P)
ldd "$prefix/bin/deep500" | awk '/libdeep500/ {print $3}' | xargs -n1 readlink -f > "$work/ldd.txt"
[ -s "$work/ldd.txt" ] || fail "ldd lists no deep500 library"
if grep -v "^$prefix/lib/" "$work/ldd.txt"; then fail "libraries resolved outside $prefix"; fi
"$prefix/bin/deep500" --version > "$work/version.txt"
grep -q "^deep500 " "$work/version.txt" || fail "deep500 --version printed: $(cat "$work/version.txt")"
if "$prefix/bin/deep500" settings | grep "libtorch.plugin" > "$work/plugin.txt"; then
  grep -q "$prefix/lib/" "$work/plugin.txt" || fail "libtorch plugin not looked up in the prefix: $(cat "$work/plugin.txt")"
fi

# The installed command plots a run without the source tree: a one-operator
# op matrix recipe (its criterion `cells >= 100` fails: exit 1), then plot.
rc=0
(cd "$work" && "$prefix/bin/deep500" run "$src/recipes/op_matrix.yaml" --output-dir "$work/runs" \
  --no-plots --no-progress --set op_matrix.ops=[Relu] --set op_matrix.backends=[reference] \
  --set op_matrix.speed=false --set op_matrix.peak=false > "$work/run.txt" 2>&1) || rc=$?
[ "$rc" -le 1 ] || { cat "$work/run.txt"; fail "the op matrix run failed (exit $rc)"; }
run_dir=$(ls -d "$work"/runs/op_matrix/*/ | head -n 1)
"$prefix/bin/deep500" plot "$run_dir" --out "$work/plots" > "$work/plot.txt" 2>&1 ||
  { cat "$work/plot.txt"; fail "deep500 plot of the installed command failed"; }
[ -s "$work/plots/op_matrix.png" ] || fail "no op_matrix.png: $(cat "$work/plot.txt")"

# The Python module imports from the prefix alone and loads the prefix's libraries.
PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c '
import sys, numpy, deep500
assert deep500.__file__.startswith(sys.argv[1]), deep500.__file__
(y,) = deep500.run_operator(deep500.op("Relu"), [numpy.array([-1.0, 2.0], dtype=numpy.float32)])
assert y.tolist() == [0.0, 2.0], y
' "$prefix/lib/python3/dist-packages/deep500" || fail "the installed Python module does not work"
ldd "$prefix"/lib/python3/dist-packages/deep500/_core*.so | awk '/libdeep500/ {print $3}' |
  xargs -n1 readlink -f > "$work/ldd-python.txt"
if grep -v "^$prefix/lib/" "$work/ldd-python.txt"; then fail "the module loads libraries outside $prefix"; fi

configure() {  # SOURCE BUILD: a user's configure against the prefix, default build type
  env -u MAKEFLAGS cmake -S "$1" -B "$2" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$2.log" 2>&1 ||
    { cat "$2.log"; fail "configuring $1 failed"; }
  grep -q "^deep500_DIR:PATH=$prefix/lib/cmake/deep500$" "$2/CMakeCache.txt" ||
    fail "$1 found deep500 elsewhere: $(grep deep500_DIR "$2/CMakeCache.txt")"
  grep -q "^CMAKE_BUILD_TYPE:STRING=Release$" "$2/CMakeCache.txt" || fail "$1 does not default to Release"
  env -u MAKEFLAGS cmake --build "$2" > "$2.build.log" 2>&1 || { cat "$2.build.log"; fail "building $1 failed"; }
}

configure "$src/operators/examples/swish" "$work/swish"
plugin=$work/swish/libdeep500_swish.so
"$prefix/bin/deep500" op check Swish --domain com.example --plugin "$plugin" \
  --input X:float32:2x37 --attr beta=1.5 --grad > "$work/check.txt" ||
  { cat "$work/check.txt"; fail "op check of the installed plugin failed"; }
grep -q "gradient X" "$work/check.txt" || fail "no gradient row: $(cat "$work/check.txt")"
"$prefix/bin/deep500" op bench Swish --domain com.example --plugin "$plugin" \
  --input X:float32:4096 --min-time 0.01 --max-time 0.1 --json "$work/bench.json" > "$work/bench.txt" ||
  { cat "$work/bench.txt"; fail "op bench of the installed plugin failed"; }
grep -q "\"$plugin\": \"Release\"" "$work/bench.json" ||
  fail "the results do not name the plugin's build type: $(grep -A2 plugins "$work/bench.json")"

configure "$src/benchmarks/examples" "$work/bench"
"$work/bench/deep500_custom_op_benchmark" --benchmark_min_time=0.01 > "$work/custom_bench.txt" 2>&1 ||
  { cat "$work/custom_bench.txt"; fail "the custom benchmark failed"; }
grep -q "BM_Saxpy" "$work/custom_bench.txt" && grep -q "saxpy" "$work/custom_bench.txt" ||
  fail "custom benchmark output lacks its rows: $(cat "$work/custom_bench.txt")"
echo "install test: passed ($prefix)"
