#!/usr/bin/env bash
# Sanitizer builds of the whole tree with clang (cmake/Sanitizers.cmake).
#
#   scripts/sanitize.sh build address BUILD  ASan+UBSan (a report aborts the
#        process), libFuzzer coverage and the harnesses of tests/fuzz
#   scripts/sanitize.sh test address BUILD   that build's unit tests (ctest -L unit)
#   scripts/sanitize.sh build thread BUILD   TSan, without oneDNN (its OpenMP
#        runtime, libgomp, is invisible to TSan); OpenMP is clang's libomp,
#        which reports its synchronisation to TSan through Archer
#   scripts/sanitize.sh test thread BUILD    the threaded parts under TSan:
#        data loader and prefetching, the trainer, per-node threads, the
#        in-process communicator and the distributed schemes' threads, and the
#        optimized executor's parallel kernels
#
# ctest runs the address build and tests (labels sanitize and fuzz) when
# configured with -DDEEP500_SANITIZER_TESTS=ON. The
# libtorch plugin, CUDA and benchmarks are left out of both builds.
set -euo pipefail
step=${1:-} mode=${2:-} build=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
usage() {
  echo "usage: scripts/sanitize.sh build|test address|thread BUILD_DIR" >&2
  exit 2
}
[ -n "$build" ] || usage

case $mode in
  address) flags=(-DDEEP500_SANITIZE=address,undefined -DDEEP500_FUZZ=ON)
           targets=(deep500 deep500_unit_tests deep500_plugin_tests deep500_train_cli_tests
                    deep500_fuzzers) ;;
  thread) flags=(-DDEEP500_SANITIZE=thread -DDEEP500_WITH_ONEDNN=OFF)
          targets=(deep500_unit_tests) ;;
  *) usage ;;
esac

case $step in
  build)
    mkdir -p "$build"
    env -u MAKEFLAGS cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DDEEP500_WITH_TORCH=OFF -DDEEP500_WITH_CUDA=OFF \
      -DDEEP500_BUILD_BENCHMARKS=OFF -DPython3_EXECUTABLE=/usr/bin/python3 "${flags[@]}" \
      > "$build/configure.log" 2>&1 || { tail -30 "$build/configure.log"; exit 1; }
    env -u MAKEFLAGS cmake --build "$build" -j2 --target "${targets[@]}" > "$build/build.log" 2>&1 ||
      { grep -B2 -A12 'FAILED:' "$build/build.log" | head -80; exit 1; }
    echo "sanitize ($mode): built ${targets[*]} in $build"
    ;;
  test)
    if [ "$mode" = address ]; then
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
      export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp"
      ctest --test-dir "$build" -L unit -j2 --output-on-failure
    else
      export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
      export OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so
      "$build/tests/deep500_unit_tests" --gtest_brief=1 \
        --gtest_filter='DataLoaderTest.*:SamplersTest.*:Trainer.*:NodeThreads.*:OptimizedExecutorThreads.*:OptimizedExecutorTest.*:OptimizedTraining.*:EigenBackend.*:SyntheticDataset.*:*InProcess*:Schemes.*:*SynchronousScheme*:DistributedTraining.*:FusionBuffer.*'
    fi
    ;;
  *) usage ;;
esac
