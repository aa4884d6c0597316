#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, then configures, builds and runs a
# consumer project that uses find_package(Tessera) and links Tessera::tessera.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR PREFIX_PATH [CMAKE_ARG...]
# PREFIX_PATH (colon-separated, may be empty) is where the consumer finds Tessera's
# dependencies, after the temporary prefix; CMAKE_ARGs (dependency hints) go to its cmake.
set -euo pipefail
build_dir=$1
source_dir=$2
prefix_path=${3//:/;}
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/install/consumer" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix${prefix_path:+;$prefix_path}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
