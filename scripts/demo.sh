#!/usr/bin/env bash
# Sets up, builds, then runs the demo: a graph built with the C++ API placed over four
# virtual CPU devices, with its placement log and result; a model trained data-parallel in
# mirrored mode; and a graph from JSON through `tessera run` with its partitions.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release >/dev/null
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
