#!/usr/bin/env bash
# Installs what building, testing and the demo need, from Debian's packages, on a machine that
# has only Debian 12's base system: tests/fresh_machine/fresh_debian.sh proves it. Idempotent
# and quiet when everything is already there. Packages install without what they merely
# recommend, so anything the build needs from a recommendation is named here.
# --peers adds what the side-by-side scripts need: a Python virtualenv, and OpenMPI for the
# cross-process all-reduce.
set -euo pipefail

packages=(cmake ninja-build g++ clang libclang-rt-dev ccache
          libeigen3-dev libtbb-dev nlohmann-json3-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
          # oneDNN's CMake config looks for OpenCL, which libdnnl-dev only recommends.
          libdnnl-dev ocl-icd-opencl-dev
          # the cluster's RPCs: gRPC, protobuf and their code generators; gRPC's CMake package
          # finds re2 through pkg-config
          libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc pkg-config
          # regular expressions of string ops (StaticRegexFullMatch), TensorFlow's engine
          libre2-dev
          dataset-fashion-mnist
          # the Python package: a virtualenv to build it in (pip install .) and Python's headers
          python3 python3-venv python3-dev
          # tests/fresh_machine/fresh_debian.sh
          debootstrap
          # the launchers the cluster tests start jobs with: a one-node Slurm and Open MPI's mpirun;
          # ip and tc for their emulated hosts (tests/tools/emulated_hosts.sh)
          slurm-wlm munge openmpi-bin iproute2
          # Gloo, the all-reduce between machines (kernels/collectives/gloo_all_reduce.h)
          libgloo-dev)
[ "${1:-}" = --peers ] && packages+=(libopenmpi-dev openmpi-bin)
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
