// Feeds arbitrary bytes, read as a JSON tensor the way `tessera run --feed` reads them, to
// placeholders of every dtype and unknown shape that flow into shape-sensitive kernels:
// nothing may crash, hang or trip a sanitizer, and every error is a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/builder/ops.h"
#include "graph/serialize/graph_json.h"
#include "runtime/session.h"

namespace {

using namespace tessera;

// One session, made once: x feeds MatMul, Sum, Reshape, BroadcastTo, Fill, Cast and
// ConcatV2, each fetched on its own so that one failing kernel does not hide the others.
struct Fixture {
  std::unique_ptr<Session> session;
  std::vector<std::string> fetches;
  std::map<DataType, std::string> placeholders;

  Fixture() {
    Scope root = Scope::NewRootScope();
    for (DataType dt : {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64}) {
      const std::string name = StrCat("x_", DataTypeName(dt));
      Output x = ops::Placeholder(root.WithOpName(name), dt);
      placeholders[dt] = name;
      const Scope s = root.NewSubScope(name);
      fetches.push_back(ops::Sum(s, x, Tensor::FromVector<int32_t>({0})).name());
      fetches.push_back(ops::Reshape(s, x, Tensor::FromVector<int32_t>({-1})).name());
      fetches.push_back(ops::Cast(s, x, DataType::kFloat).name());
      fetches.push_back(ops::Concat(s, {x, x}, 0).name());
      if (dt == DataType::kFloat || dt == DataType::kDouble) fetches.push_back(ops::MatMul(s, x, x).name());
      if (dt == DataType::kInt32 || dt == DataType::kInt64) {
        fetches.push_back(ops::Fill(s, x, 1.0f).name());
        fetches.push_back(ops::BroadcastTo(s, 1.0f, x).name());
      }
    }
    GraphSpec def;
    if (!root.ToSpec(&def).ok()) std::abort();
    SessionConfig config;
    config.operation_timeout_in_ms = 500;
    config.host_memory_limit_mb = 256;
    config.inter_op_parallelism_threads = 1;
    config.intra_op_parallelism_threads = 1;
    auto s = Session::Create(config, def);
    if (!s.ok()) std::abort();
    session = std::move(*s);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture;
  StatusOr<Tensor> t = TensorFromJsonText(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) return 0;
  auto placeholder = fixture->placeholders.find(t->dtype());
  if (placeholder == fixture->placeholders.end()) return 0;
  const std::string prefix = placeholder->second + "/";
  for (const std::string& fetch : fixture->fetches) {
    if (!fetch.starts_with(prefix)) continue;
    std::vector<Tensor> out;
    (void)fixture->session->Run({{placeholder->second, *t}}, {fetch}, {}, &out);
  }
  return 0;
}
