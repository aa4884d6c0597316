// Feeds arbitrary bytes to the JSON graph loader, then builds, places and (for small
// graphs) runs what loads: nothing may crash, hang or trip a sanitizer. Graphs with an
// iterator are not run: a dataset may rightly never end (a repeat of a filter that passes
// nothing), which no timeout interrupts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/graph_json.h"
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
  config.operation_timeout_in_ms = 1000;
  StatusOr<std::unique_ptr<Session>> session = Session::Create(config, *def);
  if (!session.ok()) return 0;
  for (const Node* n : (*session)->graph().nodes()) {
    if (n->op() == "IteratorGetNext") return 0;
  }
  // Fetch every output whose size is known and modest, so kernels meet fuzzed values.
  std::vector<std::string> fetches;
  for (const Node* n : (*session)->graph().nodes()) {
    for (int i = 0; i < n->num_outputs(); ++i) {
      int64_t elems = n->output_shape(i).num_elements();
      if (elems >= 0 && elems <= 4096) fetches.push_back(n->name() + ":" + std::to_string(i));
    }
  }
  std::vector<Tensor> out;
  (void)(*session)->Run({}, fetches, {}, &out);
  return 0;
}
