#!/usr/bin/env bash
# The installed package with its dependencies under another prefix, as on a machine where
# they are not in /usr: a temporary prefix links to the system's include/, lib/ and share/,
# the consumer may not search the system's own prefixes (so it is told where the compiler,
# ninja and pkg-config, which gRPC's package finds re2 with, are), and only the prefix path handed to install_test.sh leads to the
# dependencies.
# Usage: relocated_deps_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
deps=$(mktemp -d)
trap 'rm -rf "$deps"' EXIT
for d in include lib share; do ln -s "/usr/$d" "$deps/$d"; done
"$(dirname "$0")/install_test.sh" "$1" "$2" "$deps" \
  -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF \
  -DCMAKE_CXX_COMPILER="$(command -v c++)" -DCMAKE_MAKE_PROGRAM="$(command -v ninja)" \
  -DPKG_CONFIG_EXECUTABLE="$(command -v pkg-config)"
