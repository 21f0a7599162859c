#!/usr/bin/env bash
# The main job: the default recipe, LeNet-5 on Fashion-MNIST with its
# convergence criterion (test accuracy >= 0.89 by epoch 5), through the
# recipe runner. Results go to results/fashion_mnist_lenet/<UTC timestamp>/
# and the run is recorded in results/history.sqlite (deep500 history).
# Extra arguments go to `deep500 run`, e.g. --set training.epochs=1.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
bash scripts/bootstrap.sh
"$BUILD_DIR"/recipes/deep500 run recipes/fashion_mnist_lenet.yaml "$@"
