#!/usr/bin/env bash
# Sets up, builds and runs every test: the Release suite, then the same suite under
# AddressSanitizer + UndefinedBehaviorSanitizer, short libFuzzer runs on the JSON graph
# loader and DecodeCSV, and the concurrent suites (executor, session, scenarios, rendezvous, multi-device,
# ring all-reduce, replication, queues, servers) under ThreadSanitizer.
# TESSERA_QUICK=1 runs the Release suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
start=$(date +%s)

scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 300

if [ "${TESSERA_QUICK:-0}" != 1 ]; then
  scripts/build.sh asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 600
  mkdir -p build-asan/fuzz-corpus
  cp tests/fuzz/corpus/* build-asan/fuzz-corpus/
  build-asan/tests/fuzz/graph_json_fuzzer -max_total_time="${TESSERA_FUZZ_SECONDS:-30}" \
    -max_len=4096 build-asan/fuzz-corpus 2>&1 | tail -n 1
  mkdir -p build-asan/csv-corpus
  cp tests/fuzz/csv_corpus/* build-asan/csv-corpus/
  build-asan/tests/fuzz/decode_csv_fuzzer -max_total_time="${TESSERA_CSV_FUZZ_SECONDS:-15}" \
    -max_len=1024 build-asan/csv-corpus 2>&1 | tail -n 1
  mkdir -p build-asan/idx-corpus
  cp tests/fuzz/idx_corpus/* build-asan/idx-corpus/
  build-asan/tests/fuzz/idx_fuzzer -max_total_time="${TESSERA_IDX_FUZZ_SECONDS:-10}" \
    -max_len=4096 build-asan/idx-corpus 2>&1 | tail -n 1

  scripts/build.sh tsan executor_test session_test subgraph_test scenarios_test rendezvous_test \
    multi_device_test ring_all_reduce_test replicate_test queue_test server_test queue_runner_test dataset_test
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" \
    --timeout 600 -R 'Executor|Session|Scenario|Subgraph|Rendezvous|MultiDevice|Ring|Replicate|Queue|Server|Coordinator|Dataset'
fi
echo "test.sh: done in $(( $(date +%s) - start )) s"
