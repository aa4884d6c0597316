// An input pipeline with the C++ API: range(10) -> map(x * x) -> repeat(3) -> batch(7),
// read through an initializable iterator, one batch per Session::Run, until the end.
#include <cstdio>

#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"

using namespace tessera;

int main() {
  Scope root = Scope::NewRootScope();
  ops::Dataset ds = ops::RangeDataset(root, 0, 10);
  ds = ops::Map(root, ds, [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{ops::Mul(s, x[0], x[0])};
  });
  ds = ops::Batch(root, ops::Repeat(root, ds, 3), 7);
  ops::Iterator it = ops::InitializableIterator(root.WithOpName("it"), ds);
  std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);

  GraphSpec def;
  if (Status s = root.ToSpec(&def); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  auto session = Session::Create({}, def);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  if (Status s = (*session)->Run({}, {}, {it.initializer.name()}, nullptr); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<Tensor> out;
  Status s;
  while ((s = (*session)->Run({}, {next[0].name()}, {}, &out)).ok()) {
    std::printf("%s\n", out[0].DebugString().c_str());
  }
  std::printf("%s\n", s.ToString().c_str());
  if (s.code() != Code::kOutOfRange) return 1;
  return 0;
}
