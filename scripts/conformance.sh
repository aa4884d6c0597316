#!/usr/bin/env bash
# Runs the conformance cases through `tessera run` and TensorFlow's tf.compat.v1 Session
# and compares values, devices and errors. Installs TensorFlow on first use
# (scripts/peers.sh); CI does not run this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --peers
scripts/build.sh release >/dev/null
py=$(scripts/peers.sh)
"$py" conformance/run.py build/tools/tessera "$@"
