#!/usr/bin/env bash
# Installs the Debian packages deep500 needs (only the missing ones) and
# builds the project into build/ (override with BUILD_DIR). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

mapfile -t wanted < <(grep -v '^#' scripts/packages.txt | tr ' ' '\n' | sed '/^$/d')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian's python modules (onnx, torch, numpy) are visible to /usr/bin/python3 only.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE=/usr/bin/python3 ${DEEP500_CMAKE_ARGS:-} >/dev/null
ninja -C "$BUILD_DIR" -j"${JOBS:-2}"
