// Feeds arbitrary bytes to the JSON graph loader, then builds, places and runs what loads:
// nothing may crash, hang or trip a sanitizer. Runs have a deadline, which kernels and
// input pipelines honour, and a small memory limit, so graphs that would compute or hold
// without end end in DeadlineExceeded or ResourceExhausted like any other error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/serialize/graph_json.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<GraphDef> def = GraphDefFromJson(text);
  if (!def.ok() || def->nodes.size() > 64) return 0;
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  config.inter_op_parallelism_threads = 1;
  config.intra_op_parallelism_threads = 1;
  config.operation_timeout_in_ms = 500;
  config.host_memory_limit_mb = 256;
  StatusOr<std::unique_ptr<Session>> session = Session::Create(config, *def);
  if (!session.ok()) return 0;
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
  return 0;
}
