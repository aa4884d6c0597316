#!/usr/bin/env bash
# One GPU check, one command. On a machine with an NVIDIA GPU and the CUDA runtime:
#
#   scripts/gpu_check.sh run DIR
#       runs every GPU test binary one after another (never two on one GPU at once), the CLI's
#       GPU training (one GPU, two logical GPUs mirrored and with a parameter device), then the
#       GPU benchmarks beside PyTorch's (bench/torch_cnn_gpu.py), ROUNDS rounds interleaved, and
#       prints one table of ratios. DIR is a Release build folder (built on that machine as
#       ../shared/gpu/README.md says) or a pack made on another machine by
#
#   scripts/gpu_check.sh pack BUILD_DIR PACK_DIR
#       stripped GPU test and benchmark binaries and the CLI, the libraries they need that a bare
#       GPU host lacks (every one but glibc's, the C++ runtime's and CUDA's own) and Fashion-MNIST,
#       in PACK_DIR/pack.tar.xz, for a GPU host with none of our Debian packages.
#
# Environment: ROUNDS (benchmark rounds, default 3), MIN_TIME (seconds a benchmark runs, 0.5),
# OUT (logs, benchmark JSON and the CLI's step traces; default ./gpu_check_out).
set -uo pipefail

readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly TESTS=(gpu_device_test cublas_library_test gpu_kernels_test gpu_all_reduce_test gpu_replicate_test
                gpu_capture_test gpu_train_test)
readonly BENCHES=(gpu_bench gpu_replication_bench)

die() { echo "gpu_check: $*" >&2; exit 2; }

pack() {
  local build="$1" dest="$2"
  local stage
  stage="$(mktemp -d)" || die "no temporary folder"
  mkdir -p "$stage/bin" "$stage/lib" "$stage/data" "$dest" || die "cannot make $dest"
  local t
  for t in "${TESTS[@]}"; do cp "$build/tests/devices/gpu/$t" "$stage/bin/" || die "$build has no $t: a CUDA Release build?"; done
  for t in "${BENCHES[@]}"; do cp "$build/bench/$t" "$stage/bin/" || die "$build has no bench/$t"; done
  cp "$build/tools/tessera" "$stage/bin/" || die "$build has no tools/tessera"
  strip "$stage"/bin/*
  # The host has glibc, the C++ runtime and CUDA (runtime, cuDNN, cuBLAS, NCCL) of its own.
  ldd "$stage"/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcudart|libcudnn[a-z_]*|libcublas[A-Za-z]*|libnccl)\.so' |
    xargs -r cp -L -t "$stage/lib/"
  cp -r "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}" "$stage/data/fashion-mnist" || die "no Fashion-MNIST"
  # The binaries share most of their bytes (the engine and its kernels): a dictionary larger
  # than all of them together keeps one copy, a third of the size xz's default gives.
  tar -C "$stage" -cf - bin lib data | xz -T2 -6 --lzma2=preset=6,dict=256MiB >"$dest/pack.tar.xz" || die "tar failed"
  rm -rf "$stage"
  du -h "$dest/pack.tar.xz"
}

# Sets BIN (where the binaries are) and the library path for a build folder or a pack.
use_binaries() {
  local dir="$1"
  local site
  site="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)"
  local cuda_libs="/usr/local/cuda/lib64"
  local lib
  for lib in cudnn nccl cublas cuda_runtime; do
    [[ -d "$site/nvidia/$lib/lib" ]] && cuda_libs="$cuda_libs:$site/nvidia/$lib/lib"
  done
  if [[ -f "$dir/pack.tar.xz" ]]; then
    local unpacked="${TMPDIR:-/tmp}/tessera_gpu_pack"
    rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -C "$unpacked" -xJf "$dir/pack.tar.xz" || die "cannot unpack"
    BIN="$unpacked/bin"
    export FASHION_MNIST_DIR="$unpacked/data/fashion-mnist"
    export LD_LIBRARY_PATH="$unpacked/lib:$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    BIN="$(mktemp -d)"
    local t
    for t in "${TESTS[@]}"; do ln -s "$(realpath "$dir/tests/devices/gpu/$t")" "$BIN/$t"; done
    for t in "${BENCHES[@]}"; do ln -s "$(realpath "$dir/bench/$t")" "$BIN/$t"; done
    ln -s "$(realpath "$dir/tools/tessera")" "$BIN/tessera"
    export LD_LIBRARY_PATH="$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

# Each test binary alone on the GPU; a line per binary: passed, skipped, failed.
run_tests() {
  local failed=0 t
  for t in "${TESTS[@]}"; do
    local log="$OUT/$t.log"
    local start=$SECONDS
    timeout 600 "$BIN/$t" --gtest_color=no >"$log" 2>&1
    local rc=$?
    local passed skipped
    passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log")"
    skipped="$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log")"
    printf '%-22s rc=%-3s passed %-4s skipped %-3s %4ss\n' "$t" "$rc" "${passed:-0}" "${skipped:-0}" $((SECONDS - start))
    if [[ $rc -ne 0 ]]; then
      failed=1
      grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -20
      tail -5 "$log"
    fi
    grep -E '^\[  SKIPPED \] [A-Za-z]' "$log" | grep -v ' ms)$' | head -5
  done
  return $failed
}

# The CLI's GPU training: one epoch each way, its accuracy, and a trace of one step.
run_training() {
  local failed=0 name
  local -A modes=([one_gpu]="" [mirrored_2_logical]="--virtual-gpus 2 --mode mirrored"
                  [parameter_device_2_logical]="--virtual-gpus 2 --mode parameter-device")
  for name in one_gpu mirrored_2_logical parameter_device_2_logical; do
    local start=$SECONDS
    # shellcheck disable=SC2086
    timeout 300 "$BIN/tessera" train --device gpu ${modes[$name]} --epochs 1 --no-progress \
      --trace "$OUT/trace_$name.json" >"$OUT/train_$name.log" 2>&1 || failed=1
    printf '%-28s %4ss  %s\n' "$name" $((SECONDS - start)) "$(grep -i -E 'accuracy|error' "$OUT/train_$name.log" | tail -1)"
  done
  return $failed
}

run_benchmarks() {
  local r
  for ((r = 1; r <= ROUNDS; ++r)); do
    local b
    for b in "${BENCHES[@]}"; do
      timeout 600 "$BIN/$b" --benchmark_min_time="$MIN_TIME" --benchmark_format=json \
        --benchmark_out="$OUT/$b.$r.json" >/dev/null 2>"$OUT/$b.$r.err" || echo "$b failed in round $r"
    done
    timeout 600 python3 "$HERE/bench/torch_cnn_gpu.py" >"$OUT/torch.$r.json" 2>"$OUT/torch.$r.err" ||
      echo "torch_cnn_gpu.py failed in round $r"
  done
  python3 "$HERE/scripts/gpu_check_table.py" "$OUT" "$ROUNDS"
}

main() {
  case "${1:-}" in
    pack) [[ $# -eq 3 ]] || die "usage: gpu_check.sh pack BUILD_DIR PACK_DIR"; pack "$2" "$3" ;;
    run)
      [[ $# -eq 2 ]] || die "usage: gpu_check.sh run BUILD_DIR|PACK_DIR"
      ROUNDS="${ROUNDS:-3}" MIN_TIME="${MIN_TIME:-0.5}" OUT="${OUT:-$PWD/gpu_check_out}"
      mkdir -p "$OUT" || die "cannot make $OUT"
      use_binaries "$2"
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || die "no NVIDIA GPU here"
      date -u '+%Y-%m-%d %H:%M UTC'
      local status=0
      echo "== tests, one binary at a time"; run_tests || status=1
      echo "== tessera train --device gpu, one epoch"; run_training || status=1
      echo "== benchmarks beside PyTorch, $ROUNDS rounds interleaved"; run_benchmarks || status=1
      exit $status
      ;;
    *) die "usage: gpu_check.sh pack BUILD_DIR PACK_DIR | run BUILD_DIR|PACK_DIR" ;;
  esac
}

main "$@"
