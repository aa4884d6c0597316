// Feeds arbitrary bytes to the session config reader, then makes a session from what it
// accepts and runs a small graph on it: nothing may crash, hang or trip a sanitizer.
// Thread counts and devices are capped before the session is made (each accepted config
// would otherwise keep pools of up to 1024 threads for the rest of the run), which the
// reader's own limits are not.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/builder/ops.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  StatusOr<SessionConfig> config = SessionConfig::FromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!config.ok()) return 0;
  config->inter_op_parallelism_threads = std::min(config->inter_op_parallelism_threads, 2);
  config->intra_op_parallelism_threads = std::min(config->intra_op_parallelism_threads, 2);
  config->use_per_session_threads = false;
  for (auto& [type, count] : config->device_count) count = std::min(count, 4);
  config->host_memory_limit_mb = std::min<int64_t>(config->host_memory_limit_mb, 256);
  static const GraphSpec* graph = [] {
    Scope root = Scope::NewRootScope();
    Output x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
    ops::Sum(root.WithOpName("y").WithDevice("/cpu:1"), ops::MatMul(root, x, x), {0, 1});
    auto* def = new GraphSpec;
    if (!root.ToSpec(def).ok()) std::abort();
    return def;
  }();
  StatusOr<std::unique_ptr<Session>> session = Session::Create(*config, *graph);
  if (!session.ok()) return 0;
  std::vector<Tensor> out;
  (void)(*session)->Run({}, {"y"}, {}, &out);
  return 0;
}
