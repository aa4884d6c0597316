#!/usr/bin/env bash
# Sets up, builds, then runs the main job: the seeds' CNN trained on Fashion-MNIST for two
# epochs, mirrored over two virtual CPU devices (RMSProp, lr 1e-3, global batch 128), with
# the placement summary, a progress line per epoch and the test accuracy; it writes a
# checkpoint, a Chrome trace of one step and the inference graphs to out/, then classifies
# test images from the checkpoint and runs the frozen graph through `tessera run`.
# Arguments go to `tessera train` (e.g. --epochs 1 --devices 1 --threads 1).
# Then the short demos: a TensorFlow 1.x script in Python, placement, replication and the
# JSON command line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release >/dev/null
mkdir -p out
echo "== tessera train (the seeds' CNN on Fashion-MNIST) =="
build/tools/tessera train --epochs 2 --devices 2 --mode mirrored --batch 128 --threads 2 \
  --checkpoint out/fashion_cnn.ckpt --trace out/train_step_trace.json \
  --inference-graph out/fashion_cnn_inference.json --frozen-graph out/fashion_cnn_frozen.json "$@"
echo
echo "== examples/classify (the checkpoint restored into the inference graph) =="
build/examples/classify out/fashion_cnn_inference.json out/fashion_cnn.ckpt
echo
echo "== tessera run out/fashion_cnn_frozen.json (one test image, an ankle boot) =="
build/tools/tessera run out/fashion_cnn_frozen.json --feed images=tests/tools/ankle_boot.json --fetch classes
echo
echo "== examples/python/tour.py (a TF1 script on tessera.compat.v1; pip install . into build-python/venv) =="
python=$(TESSERA_PYTHON_TESTS=0 scripts/python_package.sh)
"$python" examples/python/tour.py
echo
echo "== examples/placement_demo (C++ API) =="
build/examples/placement_demo
echo
echo "== examples/mirrored_demo (data-parallel training over three devices) =="
build/examples/mirrored_demo
echo
echo "== tessera run examples/linear.json (JSON graph, CLI) =="
build/tools/tessera run examples/linear.json --fetch y,loss \
  --feed 'x={"dtype": "float32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}' \
  --config examples/four_cpus.json --log-device-placement --show-partitions
