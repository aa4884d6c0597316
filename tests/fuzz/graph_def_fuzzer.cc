// Feeds arbitrary bytes to the TensorFlow GraphDef reader, binary and text (as the bytes
// themselves tell, like `tessera run` does), then builds, places and runs what loads:
// nothing may crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/serialize/tensorflow_graph.h"
#include "tests/fuzz/run_fuzzed_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  GraphDefImportOptions options;
  options.max_expanded_tensor_bytes = 1 << 20;
  StatusOr<GraphSpec> def = GraphSpecFromTensorFlow(bytes, SniffTensorFlowFormat(bytes), options);
  if (def.ok()) RunFuzzedGraph(*def);
  return 0;
}
