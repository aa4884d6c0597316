#!/usr/bin/env bash
# Runs the conformance cases through TensorFlow's tf.compat.v1 Session and through
# `tessera run` on the GraphDef TensorFlow writes for each, and compares values, devices and
# errors; then trains the seeds' Keras CNN for one epoch in TensorFlow, freezes it and checks
# that `tessera run` and the C example classify the 10,000 test images as TensorFlow does;
# then checkpoints both ways through TensorFlow's own saver graphs, and Keras 3 models
# (applications, LSTM, GRU, a Transformer encoder) exported as SavedModels.
# Installs TensorFlow on first use (scripts/peers.sh); CI does not run this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --peers
scripts/build.sh release >/dev/null
py=$(scripts/peers.sh)
status=0
"$py" conformance/run.py build/tools/tessera "$@" || status=1
if [ $# -eq 0 ]; then
  "$py" conformance/keras_frozen.py build build/conformance || status=1
  "$py" conformance/checkpoints.py build build/conformance/checkpoints || status=1
  "$py" conformance/keras_models.py build build/conformance/keras_models || status=1
fi
exit $status
