// A client of a ps/worker cluster started apart (bench/cluster_hosts_step.sh starts the
// servers on emulated hosts, TensorFlow's beside): through a session whose master is the
// worker, it times (1) the round trip of a step with one edge from the ps, x = 1 on the ps
// and y = x + 1 on the worker, and (2) a step that brings a 64 MiB tensor from the ps to the
// worker, which keeps one element of it. bench/tf_cluster_step.py times the same graphs on
// TensorFlow's server. Prints one JSON line: each one's median over rounds of the mean step.
//
//   cluster_step --target grpc://HOST:PORT [--rounds 5] [--runs 300] [--pulls 10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "distributed/grpc_session.h"
#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"

namespace tessera {
namespace {

constexpr char kPsCpu[] = "/job:ps/replica:0/task:0/device:CPU:0";
constexpr char kWorkerCpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr int64_t kPullElements = (int64_t{64} << 20) / 4;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Mean seconds of `runs` steps, for each of `rounds` rounds.
StatusOr<std::vector<double>> Time(Session& session, const std::string& fetch, int rounds, int runs,
                                   float want) {
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR(session.Run({}, {fetch}, {}, &out));
  std::vector<double> means;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i) {
      RETURN_IF_ERROR(session.Run({}, {fetch}, {}, &out));
      if (out[0].data<float>()[0] != want) return errors::Internal(fetch, " came back wrong");
    }
    means.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / runs);
  }
  return means;
}

Status Run(const std::string& target, int rounds, int runs, int pulls) {
  RegisterGrpcSessionFactory();
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x").WithDevice(kPsCpu), Tensor::Scalar<float>(1));
  ops::Add(root.WithOpName("y").WithDevice(kWorkerCpu), x, 1.0f);
  // The big tensor lives in a variable, so that making it is not part of the step.
  auto dims = ops::Const(root.WithOpName("dims").WithDevice(kPsCpu),
                         Tensor::FromVector<int32_t>({static_cast<int32_t>(kPullElements)}));
  auto init = ops::Fill(root.WithOpName("init_value").WithDevice(kPsCpu), dims, Tensor::Scalar<float>(3));
  auto big = ops::Variable(root.WithOpName("big").WithDevice(kPsCpu), TensorShape({kPullElements}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").WithDevice(kPsCpu), big, init);
  auto value = ops::Identity(root.WithOpName("value").WithDevice(kPsCpu), big);
  ops::Build(root.WithOpName("pulled").WithDevice(kWorkerCpu), "Slice", {value, {0}, {1}});
  GraphSpec def;
  RETURN_IF_ERROR(root.ToSpec(&def));
  SessionConfig config;
  config.constant_folding = false;  // y = 1 + 1 would be computed once, ahead
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Create(target, config, def));
  std::vector<Tensor> out;
  RETURN_IF_ERROR(session->Run({}, {}, {"init"}, &out));
  ASSIGN_OR_RETURN(std::vector<double> step, Time(*session, "y", rounds, runs, 2.0f));
  ASSIGN_OR_RETURN(std::vector<double> pull, Time(*session, "pulled", rounds, pulls, 3.0f));
  std::printf("{\"impl\": \"tessera\", \"step_us_median\": %.1f, \"step_us_min\": %.1f, \"pull_64mib_ms_median\": %.2f, "
              "\"pull_64mib_ms_min\": %.2f}\n",
              Median(step) * 1e6, *std::min_element(step.begin(), step.end()) * 1e6, Median(pull) * 1e3,
              *std::min_element(pull.begin(), pull.end()) * 1e3);
  session->Close();
  return Status::OK();
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  std::string target;
  int rounds = 5, runs = 300, pulls = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--target") == 0) target = argv[i + 1];
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--pulls") == 0) pulls = std::atoi(argv[i + 1]);
  }
  if (target.empty() || rounds < 1 || runs < 1 || pulls < 1) {
    std::fprintf(stderr, "usage: cluster_step --target grpc://HOST:PORT [--rounds 5] [--runs 300] [--pulls 10]\n");
    return 2;
  }
  tessera::Status s = tessera::Run(target, rounds, runs, pulls);
  if (!s.ok()) {
    std::fprintf(stderr, "cluster_step: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
