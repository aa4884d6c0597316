// A session on a benchmark's graph with both pools sized to `threads` (and the remapper on
// or off), or nullptr after
// marking the benchmark skipped with the error. Shared by the benchmarks that time
// Session::Run.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>

#include "graph/builder/scope.h"
#include "runtime/session.h"

namespace tessera::bench {

inline std::unique_ptr<Session> SessionOrSkip(const Scope& root, int threads, benchmark::State& state,
                                              bool remapping = true) {
  GraphSpec def;
  Status s = root.ToSpec(&def);
  SessionConfig config;
  config.remapping = remapping;
  config.inter_op_parallelism_threads = threads;
  config.intra_op_parallelism_threads = threads;
  config.constant_folding = false;  // the graphs time ops on constants: folded, they would run once
  StatusOr<std::unique_ptr<Session>> session = s.ok() ? Session::Create(config, def) : StatusOr<std::unique_ptr<Session>>(s);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return nullptr;
  }
  return std::move(*session);
}

}  // namespace tessera::bench
