// Data-parallel training of a linear model y = x w + b over three virtual CPU devices in
// mirrored mode: a copy of w and b per device, gradients all-reduced, copies identical.
#include <cstdio>
#include <cstring>
#include <random>

#include "runtime/session.h"
#include "training/replicate.h"

using namespace tessera;

int main() {
  constexpr int kTowers = 3, kBatch = 30, kPerTower = kBatch / kTowers;
  Scope root = Scope::NewRootScope();
  ReplicateOptions options;
  options.mode = ReplicationMode::kMirrored;
  options.devices = {"/cpu:0", "/cpu:1", "/cpu:2"};
  auto model = [](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, TensorShape({kPerTower, 2}));
    auto t = ops::Placeholder(s.WithOpName("t"), DataType::kFloat, TensorShape({kPerTower, 1}));
    auto w = tower.Variable("w", Tensor::FromVector<float>({0, 0}, TensorShape({2, 1})));
    auto b = tower.Variable("b", Tensor::FromVector<float>({0}));
    auto err = ops::Sub(s, ops::BiasAdd(s, ops::MatMul(s, x, w), b), t);
    out->outputs.push_back(ops::Mean(s.WithOpName("loss"), ops::Square(s, err), {0, 1}));
    // The gradient of the mean squared error, written with ops.
    auto scale = 2.0f / kPerTower;
    out->grads = {{ops::Mul(s, ops::MatMul(s, x, err, {.transpose_a = true}), scale), w},
                  {ops::Mul(s, ops::Sum(s, err, {0}), scale), b}};
  };
  auto rep = Replicate(root, options, model, GradientDescent(0.1));
  if (!rep.ok()) {
    fprintf(stderr, "%s\n", rep.status().ToString().c_str());
    return 1;
  }
  GraphSpec def;
  Status s = root.ToSpec(&def);
  SessionConfig config;
  config.device_count = {{"CPU", kTowers}};
  auto session = Session::Create(config, def);
  if (!s.ok() || !session.ok()) {
    fprintf(stderr, "%s\n", (s.ok() ? session.status() : s).ToString().c_str());
    return 1;
  }
  std::vector<Tensor> out;
  s = (*session)->Run({}, {}, {rep->init.name()}, &out);

  // Targets t = 3 x0 - 2 x1 + 1, each tower fed its tenth of the batch.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1, 1);
  RunOptions run_options;
  run_options.output_partition_graphs = true;
  RunMetadata metadata;
  for (int step = 0; s.ok() && step <= 100; ++step) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (int i = 0; i < kTowers; ++i) {
      Tensor x(DataType::kFloat, TensorShape({kPerTower, 2})), t(DataType::kFloat, TensorShape({kPerTower, 1}));
      for (int r = 0; r < kPerTower; ++r) {
        float a = u(rng), c = u(rng);
        x.data<float>()[2 * r] = a;
        x.data<float>()[2 * r + 1] = c;
        t.data<float>()[r] = 3 * a - 2 * c + 1;
      }
      feeds.emplace_back("tower_" + std::to_string(i) + "/x", x);
      feeds.emplace_back("tower_" + std::to_string(i) + "/t", t);
    }
    s = (*session)->Run(run_options, feeds, {rep->towers[0].outputs[0].name()}, {rep->train.name()}, &out,
                        &metadata);
    if (s.ok() && step % 25 == 0) printf("step %3d  tower_0 loss %.6f\n", step, out[0].flat<float>()[0]);
  }
  if (!s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  for (const GraphSpec& part : metadata.partition_graphs) {
    int sends = 0, recvs = 0, all_reduces = 0;
    for (const NodeSpec& n : part.nodes) {
      sends += n.op == "_Send";
      recvs += n.op == "_Recv";
      all_reduces += n.op == "AllReduce";
    }
    printf("%s: %zu nodes, %d _Send, %d _Recv, %d AllReduce\n", part.nodes.front().device.c_str(),
           part.nodes.size(), sends, recvs, all_reduces);
  }
  std::vector<std::string> copies;
  for (const Output& w : rep->variables["w"]) copies.push_back(w.name());
  s = (*session)->Run({}, copies, {}, &out);
  for (size_t i = 0; s.ok() && i < out.size(); ++i) {
    bool same = std::memcmp(out[i].raw_data(), out[0].raw_data(), out[0].TotalBytes()) == 0;
    printf("%-12s = %s%s\n", copies[i].c_str(), out[i].DebugString().c_str(),
           i == 0 ? "" : same ? "  (bit-identical to w)" : "  (DIFFERS)");
  }
  return s.ok() ? 0 : 1;
}
