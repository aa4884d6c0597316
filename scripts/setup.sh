#!/usr/bin/env bash
# Installs what building and testing Tessera needs, from Debian's packages. Idempotent and
# quiet when everything is already there.
set -euo pipefail

packages=(cmake ninja-build g++ clang libclang-rt-14-dev ccache
          libeigen3-dev libtbb-dev nlohmann-json3-dev zlib1g-dev libdnnl-dev libgtest-dev libgmock-dev libbenchmark-dev
          dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
