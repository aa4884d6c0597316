#!/usr/bin/env bash
# Sets up, builds, then runs the demo: a graph built with the C++ API placed over four
# virtual CPU devices, with its placement log and result, and the same kind of graph
# from JSON through `tessera run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release >/dev/null
echo "== examples/placement_demo (C++ API) =="
build/examples/placement_demo
echo
echo "== tessera run examples/linear.json (JSON graph, CLI) =="
build/tools/tessera run examples/linear.json --fetch y,loss \
  --feed 'x={"dtype": "float32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}' \
  --config examples/four_cpus.json --log-device-placement
