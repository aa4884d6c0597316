// What every graph fuzzer does with a graph that loaded: builds, places and runs it. Runs
// have a deadline, which kernels and input pipelines honour, and a small memory limit, so
// graphs that would compute or hold without end end in DeadlineExceeded or
// ResourceExhausted like any other error.
#pragma once

#include <string>
#include <vector>

#include "graph/graph_spec.h"
#include "runtime/session.h"

namespace tessera {

inline void RunFuzzedGraph(const GraphSpec& def) {
  if (def.nodes.size() > 64) return;
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  config.inter_op_parallelism_threads = 1;
  config.intra_op_parallelism_threads = 1;
  config.operation_timeout_in_ms = 500;
  config.host_memory_limit_mb = 256;
  StatusOr<std::unique_ptr<Session>> session = Session::Create(config, def);
  if (!session.ok()) return;
  // Nodes without outputs first (iterator initializers, NoOps), then every output, so that
  // kernels and pipelines meet fuzzed values.
  std::vector<std::string> targets, fetches;
  for (const Node* n : (*session)->graph().nodes()) {
    if (n->num_outputs() == 0) targets.push_back(n->name());
    for (int i = 0; i < n->num_outputs(); ++i) fetches.push_back(n->name() + ":" + std::to_string(i));
  }
  std::vector<Tensor> out;
  if (!targets.empty()) (void)(*session)->Run({}, {}, targets, &out);
  (void)(*session)->Run({}, fetches, {}, &out);
}

}  // namespace tessera
