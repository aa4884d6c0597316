#!/usr/bin/env bash
# Installs the built tree into a temporary prefix, builds examples/classify.c against it the
# way a C embedder would (pkg-config only, no CMake), and classifies with MODEL.
# Usage: c_api_pkgconfig_test.sh BUILD_DIR SOURCE_DIR MODEL
set -euo pipefail
build_dir=$1
source_dir=$2
model=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name tessera.pc | head -1)")
export PKG_CONFIG_PATH="$pc"
# shellcheck disable=SC2046 # pkg-config's words are separate flags
cc -std=c11 -Wall -Werror "$source_dir/examples/classify.c" -o "$work/classify_c" $(pkg-config --cflags --libs tessera) -lz
LD_LIBRARY_PATH="$(pkg-config --variable=libdir tessera)" "$work/classify_c" "$model" images classes 100
