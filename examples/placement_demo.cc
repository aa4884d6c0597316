// Builds a small two-tower model with the C++ API, places it over four virtual CPU devices
// (variables on CPU:0 by a device function, one tower each on CPU:1 and CPU:2, the sum
// where it falls by default), prints the placement log and the placement as data, then
// runs it.
#include <cstdio>

#include "graph/builder/ops.h"
#include "runtime/session.h"

using namespace tessera;

int main() {
  Scope root = Scope::NewRootScope();
  // Like tf.device(fn): variables to the parameter device, everything else left alone.
  Scope params = root.WithDeviceFunction([](const Node& n) {
    return n.op() == "VariableV2" ? std::string("/cpu:0") : n.requested_device();
  });
  auto w = ops::Variable(params.WithOpName("w"), TensorShape({3, 2}), DataType::kFloat);
  ops::Assign(params.ColocateWith(w).WithOpName("init"), w,
                          Tensor::FromVector<float>({1, 0, 0, 1, 1, 1}, TensorShape({3, 2})));
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat, TensorShape({-1, 3}));

  std::vector<Input> towers;
  for (int i = 0; i < 2; ++i) {
    Scope tower = params.NewSubScope("tower_" + std::to_string(i)).WithDevice("/cpu:" + std::to_string(i + 1));
    auto h = ops::Relu(tower.WithOpName("h"), ops::MatMul(tower.WithOpName("xw"), x, w));
    towers.push_back(ops::Mul(tower.WithOpName("scaled"), h, static_cast<float>(i + 1)));
  }
  ops::Sum(root.WithOpName("total"), ops::AddN(root.WithOpName("sum"), towers), {0, 1});

  GraphSpec def;
  if (Status s = root.ToSpec(&def); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  SessionConfig config;
  config.device_count = {{"CPU", 4}};
  config.log_device_placement = true;
  auto session = Session::Create(config, def);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }

  std::printf("Placement as data (node -> device, reason):\n");
  for (const PlacementRecord& r : (*session)->placement()) {
    std::printf("  %-16s %-52s %s\n", r.node.c_str(), r.device.c_str(),
                std::string(PlacementReasonName(r.reason)).c_str());
  }

  std::vector<Tensor> out;
  Status s = (*session)->Run({}, {}, {"init"}, &out);
  if (s.ok()) {
    Tensor batch = Tensor::FromVector<float>({1, 2, 3, -4, 5, -6}, TensorShape({2, 3}));
    s = (*session)->Run({{"x", batch}}, {"sum", "total"}, {}, &out);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("sum   = %s\ntotal = %s\n", out[0].DebugString().c_str(), out[1].DebugString().c_str());
  return 0;
}
