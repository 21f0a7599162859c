#!/bin/sh
# Runs the command when the machine has an NVIDIA GPU (the driver lists one in
# /proc/driver/nvidia/gpus, as deep500's hardware check sees it); otherwise
# prints SKIPPED and exits 77, which ctest reports as skipped, never passed.
if [ -z "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
  echo "SKIPPED: no NVIDIA GPU"
  exit 77
fi
exec "$@"
