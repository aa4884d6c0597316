#!/usr/bin/env bash
# Configures and builds one flavour of Tessera. Usage: scripts/build.sh [release|asan]
#   release: build/       g++, Release, tests + benchmarks + examples
#   asan:    build-asan/  clang, -fsanitize=address,undefined, tests + the libFuzzer target
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release)
    dir=build
    flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)
    dir=build-asan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++
           -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_BENCH=OFF) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
