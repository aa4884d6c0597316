#!/usr/bin/env bash
# Prints the path of a Python that has the side-by-side peers (tensorflow-cpu, numpy, and
# onnxruntime with tf2onnx for the SavedModel benchmark),
# creating a virtualenv under ~/.cache/tessera-peers on first use. Peers are for
# benchmarks and conformance only; nothing in the build or the test suite needs them.
set -euo pipefail
venv=${TESSERA_PEERS_VENV:-$HOME/.cache/tessera-peers}
if ! "$venv/bin/python" -c "import tensorflow, numpy, onnxruntime, tf2onnx, tf_keras" >/dev/null 2>&1; then
  echo "peers: installing tensorflow-cpu, numpy, onnxruntime, tf2onnx and tf_keras into $venv (large, once)" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check tensorflow-cpu numpy onnxruntime tf2onnx tf_keras >&2
fi
echo "$venv/bin/python"
