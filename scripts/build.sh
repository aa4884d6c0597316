#!/usr/bin/env bash
# Configures and builds one flavour of Tessera, or only the named targets of it.
# Usage: scripts/build.sh [release|asan|tsan] [TARGET...]
#   release: build/       g++, Release, tests + benchmarks + examples
#   asan:    build-asan/  clang, -fsanitize=address,undefined, tests + the libFuzzer target
#   tsan:    build-tsan/  clang, -fsanitize=thread, tests
# The sanitizer flavours build without GPU devices (ASan must be told to leave the CUDA
# driver's mappings alone and TSan cannot see the driver's threads),
# and the release flavour already compiles every GPU source.
# TESSERA_WERROR=ON|OFF sets whether warnings fail the build (scripts/test.sh sets ON); when
# unset, a build directory keeps what it had (OFF in a new one).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
shift || true
case "$flavour" in
  release)
    dir=build
    flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)
    dir=build-asan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
           -DTESSERA_SANITIZE=ON -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_BENCH=OFF -DTESSERA_CUDA=OFF) ;;
  tsan)
    dir=build-tsan
    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang
           -DTESSERA_SANITIZE_THREAD=ON -DTESSERA_BUILD_BENCH=OFF -DTESSERA_CUDA=OFF) ;;
  *) echo "usage: $0 [release|asan|tsan]" >&2; exit 2 ;;
esac
[ -z "${TESSERA_WERROR:-}" ] || flags+=(-DTESSERA_WERROR="$TESSERA_WERROR")
cmake -S . -B "$dir" -G Ninja "${flags[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
