#!/usr/bin/env bash
# Sets up, builds and runs every test: the Release suite and the Python package's (pip
# install . into a venv, then pytest: scripts/python_package.sh), then the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, short libFuzzer runs on the JSON graph
# loader (running what it loads), feeds, session configs, DecodeCSV, the IDX reader, the
# checkpoint reader and the requests a cluster task decodes, and the concurrent suites
# (executor, session, scenarios, rendezvous, multi-device, ring all-reduce, replication,
# queues, servers, datasets, thread pools, checkpoint files) under ThreadSanitizer, and last
# the quick suite again in a fresh minimal Debian 12 root (tests/fresh_machine), which
# proves scripts/setup.sh installs everything; TESSERA_FRESH_MACHINE=0 skips that.
# TESSERA_QUICK=1 runs the Release suite only. Warnings fail these builds (TESSERA_WERROR=OFF
# to let a newer compiler's new warnings through).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export TESSERA_WERROR=${TESSERA_WERROR:-ON}
start=$(date +%s)

scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 300
scripts/python_package.sh >/dev/null

if [ "${TESSERA_QUICK:-0}" != 1 ]; then
  scripts/build.sh asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan_suppressions.txt \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 600
  # A fixed seed keeps CI's fuzzing repeatable; set TESSERA_FUZZ_SEED=0 to explore.
  fuzz() {  # fuzzer, corpus in tests/fuzz, seconds, max input length
    local corpus="build-asan/$1-corpus" log="build-asan/$1.log"
    mkdir -p "$corpus"
    cp "tests/fuzz/$2"/* "$corpus/"
    if ! "build-asan/tests/fuzz/$1" -seed="${TESSERA_FUZZ_SEED:-1}" -max_total_time="$3" -max_len="$4" \
        "$corpus" >"$log" 2>&1; then
      tail -n 60 "$log"
      return 1
    fi
    tail -n 1 "$log"
  }
  fuzz graph_json_fuzzer corpus "${TESSERA_FUZZ_SECONDS:-30}" 4096
  fuzz graph_def_fuzzer graphdef_corpus "${TESSERA_GRAPHDEF_FUZZ_SECONDS:-20}" 4096
  fuzz feed_fuzzer feed_corpus "${TESSERA_FEED_FUZZ_SECONDS:-10}" 1024
  fuzz config_fuzzer config_corpus "${TESSERA_CONFIG_FUZZ_SECONDS:-10}" 1024
  fuzz decode_csv_fuzzer csv_corpus "${TESSERA_CSV_FUZZ_SECONDS:-15}" 1024
  fuzz idx_fuzzer idx_corpus "${TESSERA_IDX_FUZZ_SECONDS:-10}" 4096
  fuzz checkpoint_fuzzer checkpoint_corpus "${TESSERA_CKPT_FUZZ_SECONDS:-10}" 4096
  fuzz bundle_fuzzer bundle_corpus "${TESSERA_BUNDLE_FUZZ_SECONDS:-15}" 4096
  fuzz saved_model_fuzzer saved_model_corpus "${TESSERA_SAVED_MODEL_FUZZ_SECONDS:-20}" 65536
  fuzz tensor_codec_fuzzer tensor_corpus "${TESSERA_TENSOR_FUZZ_SECONDS:-10}" 1024
  fuzz rpc_request_fuzzer rpc_corpus "${TESSERA_RPC_FUZZ_SECONDS:-15}" 4096
  fuzz cluster_resolver_fuzzer resolver_corpus "${TESSERA_RESOLVER_FUZZ_SECONDS:-10}" 1024

  scripts/build.sh tsan executor_test session_test subgraph_test scenarios_test rendezvous_test \
    multi_device_test ring_all_reduce_test replicate_test queue_test server_test queue_runner_test dataset_test \
    thread_pool_test checkpoint_file_test fake_device_test session_factory_test bfc_allocator_test cluster_server_test \
    remote_rendezvous_test grpc_session_test cluster_session_test conditional_accumulator_test sync_replicas_test \
    direct_transport_test remote_all_reduce_test collective_meeting_test ring_schedule_test master_session_test \
    cluster_resolver_test
  TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan_suppressions.txt" ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" \
    --timeout 600 -R 'Executor|Session|Scenario|Subgraph|Rendezvous|MultiDevice|Ring|Replicate|Queue|Server|Coordinator|Dataset|ThreadPool|CheckpointFile|FakeDevice|BFCAllocator|Accumulator|SyncReplicas|Direct|RemoteAllReduce|CollectiveMeeting|ClusterResolver'

  if [ "${TESSERA_FRESH_MACHINE:-1}" = 0 ]; then
    echo "test.sh: fresh-machine check skipped (TESSERA_FRESH_MACHINE=0)"
  elif [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
    echo "test.sh: fresh-machine check skipped: it needs root or passwordless sudo for chroot"
  else
    tests/fresh_machine/fresh_debian.sh
  fi
fi
echo "test.sh: done in $(( $(date +%s) - start )) s"
