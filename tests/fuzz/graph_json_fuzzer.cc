// Feeds arbitrary bytes to the JSON graph loader, then builds, places and runs what loads:
// nothing may crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/serialize/graph_json.h"
#include "tests/fuzz/run_fuzzed_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<GraphSpec> def = GraphSpecFromJson(text);
  if (def.ok()) RunFuzzedGraph(*def);
  return 0;
}
