#!/usr/bin/env bash
# Fails when a tracked C++ file is not clang-formatted (.clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cc' '*.cpp' '*.cu' 2>/dev/null || true)
[ -z "$files" ] && exit 0
if ! echo "$files" | xargs clang-format --dry-run --Werror 2>/tmp/deep500-format.log; then
  head -20 /tmp/deep500-format.log
  echo "format check failed: run  git ls-files '*.h' '*.cc' | xargs clang-format -i"
  exit 1
fi
echo "format check: $(echo "$files" | wc -l) files clean"
