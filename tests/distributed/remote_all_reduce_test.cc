// The all-reduce between tasks of a cluster, as a multi-worker step runs it: three servers
// in this process, each member reducing through its task's remote rendezvous, over each
// transport (gRPC, and the direct transport), by the engine's ring or by Gloo (whose
// members meet through that rendezvous), with float32 or float16 on the wire, for a tensor
// smaller than the ring, one that does not divide evenly, and one of many pieces. Every
// member ends with the reduction, bit for bit the same. Gloo's members that miss one fail
// naming it, and connect anew for the next reduction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <map>
#include <tuple>

#include "distributed/cluster_server.h"
#include "distributed/remote_rendezvous.h"
#include "kernels/collectives/gloo_all_reduce.h"
#include "kernels/collectives/ring_all_reduce.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using testing::FreePort;
using testing::LoopbackAddress;

constexpr int kMembers = 3;

// Parameters: direct transport on, float16 on the wire, Gloo rather than the ring.
class RemoteAllReduceTest : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {
 protected:
  void SetUp() override {
    if (std::get<2>(GetParam()) && !GlooAllReduce::Available()) GTEST_SKIP() << "this build has no Gloo";
    std::string spec = R"({"worker": [)";
    for (int i = 0; i < kMembers; ++i) spec += StrCat(i ? ", " : "", "\"", LoopbackAddress(FreePort()), "\"");
    auto cluster = ClusterSpec::FromJson(spec + "]}");
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    ClusterServerOptions options;
    options.direct_transport = std::get<0>(GetParam());
    for (int i = 0; i < kMembers; ++i) {
      auto server = ClusterServer::Create(*cluster, "worker", i, options);
      ASSERT_TRUE(server.ok()) << server.status();
      servers_.push_back(std::move(*server));
      channels_.push_back(std::make_shared<WorkerChannels>(*cluster, ""));
    }
    auto pool = ThreadPool::Create("reduce", 2);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = std::move(*pool);
  }

  static std::string Device(int rank) { return StrCat("/job:worker/replica:0/task:", rank, "/device:CPU:0"); }

  // Every member of `ranks` reduces its `inputs[rank]` in place; returns the outputs and
  // each member's status. Gloo's members are kept by name, as an AllReduce kernel keeps its.
  std::vector<Tensor> Reduce(std::vector<Tensor> inputs, ReduceOp op, const std::string& name,
                             std::vector<Status>* statuses = nullptr, std::vector<int> ranks = {0, 1, 2}) {
    const int64_t step = NewStepId();
    std::vector<std::unique_ptr<RemoteRendezvous>> rendezvous;
    std::vector<std::promise<Status>> done(kMembers);
    for (int rank = 0; rank < kMembers; ++rank) {
      rendezvous.push_back(std::make_unique<RemoteRendezvous>(servers_[rank]->local()->rendezvous()->Find(step),
                                                              "worker", rank, channels_[rank], step,
                                                              std::chrono::seconds(30)));
    }
    for (int rank : ranks) {
      auto reduced = [&done, rank](const Status& s) { done[rank].set_value(s); };
      if (std::get<2>(GetParam())) {
        Gloo(name, op, rank).Start(rendezvous[rank].get(), step, inputs[rank], inputs[rank], reduced);
        continue;
      }
      RingAllReduce::Params p;
      p.rank = rank;
      p.size = kMembers;
      p.device = Device(rank);
      p.prev_device = Device((rank + kMembers - 1) % kMembers);
      p.next_device = Device((rank + 1) % kMembers);
      p.name = name;
      p.op = op;
      p.wire_float16 = std::get<1>(GetParam());
      p.pool = pool_.get();
      RingAllReduce::Start(p, rendezvous[rank].get(), inputs[rank], inputs[rank], reduced);
    }
    for (int rank : ranks) {
      auto f = done[rank].get_future();
      EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "member " << rank;
      Status s = f.get();
      if (statuses != nullptr) {
        statuses->push_back(s);
      } else {
        EXPECT_TRUE(s.ok()) << "member " << rank << ": " << s;
      }
    }
    rendezvous.clear();
    for (auto& server : servers_) server->local()->rendezvous()->Cleanup(step);
    return inputs;
  }

  GlooAllReduce& Gloo(const std::string& name, ReduceOp op, int rank) {
    auto& members = gloo_[{name, op}];
    if (members.empty()) {
      for (int r = 0; r < kMembers; ++r) {
        GlooAllReduce::Params p;
        p.rank = r;
        p.size = kMembers;
        for (int m = 0; m < kMembers; ++m) p.devices.push_back(Device(m));
        p.incarnations.assign(kMembers, 0);
        p.hosts.assign(kMembers, "127.0.0.1");
        p.name = name;
        p.op = op;
        p.wire_float16 = std::get<1>(GetParam());
        // The case of a missing member waits its timeout out.
        p.timeout = name == "missing" ? std::chrono::seconds(1) : std::chrono::seconds(30);
        members.push_back(std::make_unique<GlooAllReduce>(std::move(p)));
      }
    }
    return *members[rank];
  }

  // Member r holds (r + 1) * ((i % 7) - 3): small integers, exact in float16 and in any sum.
  static std::vector<Tensor> Inputs(int64_t n) {
    std::vector<Tensor> inputs;
    for (int rank = 0; rank < kMembers; ++rank) {
      Tensor t(DataType::kFloat, TensorShape({n}));
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>((rank + 1) * ((i % 7) - 3));
      inputs.push_back(t);
    }
    return inputs;
  }

  std::vector<std::unique_ptr<ClusterServer>> servers_;
  std::vector<std::shared_ptr<WorkerChannels>> channels_;
  std::unique_ptr<ThreadPool> pool_;
  std::map<std::pair<std::string, ReduceOp>, std::vector<std::unique_ptr<GlooAllReduce>>> gloo_;
};

TEST_P(RemoteAllReduceTest, EveryMemberEndsWithTheSameSum) {
  // Fewer elements than members; a size no chunk divides; one of many pieces per chunk.
  for (int64_t n : {int64_t{1}, int64_t{1001}, int64_t{3} << 20}) {
    std::vector<Tensor> out = Reduce(Inputs(n), ReduceOp::kSum, StrCat("sum", n));
    for (int rank = 0; rank < kMembers; ++rank) {
      ASSERT_EQ(out[rank].NumElements(), n);
      for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 997)) {
        ASSERT_EQ(out[rank].data<float>()[i], 6.0f * ((i % 7) - 3)) << "member " << rank << " element " << i;
      }
      EXPECT_EQ(std::memcmp(out[rank].raw_data(), out[0].raw_data(), out[0].TotalBytes()), 0) << "member " << rank;
    }
  }
}

TEST_P(RemoteAllReduceTest, AMeanIsDividedOnceAndEveryCopyIsBitIdentical) {
  std::vector<Tensor> inputs = Inputs(4099);
  // Values whose mean float16 cannot hold exactly: every member must round it the same way.
  for (int rank = 0; rank < kMembers; ++rank) {
    for (int64_t i = 0; i < 4099; ++i) inputs[rank].data<float>()[i] = 0.1f * (rank + 1) + 1e-3f * i;
  }
  std::vector<Tensor> out = Reduce(inputs, ReduceOp::kMean, "mean");
  for (int64_t i = 0; i < 4099; i += 37) {
    EXPECT_NEAR(out[0].data<float>()[i], 0.2f + 1e-3f * i, std::get<1>(GetParam()) ? 2e-2 : 1e-5) << i;
  }
  for (int rank = 1; rank < kMembers; ++rank) {
    EXPECT_EQ(std::memcmp(out[rank].raw_data(), out[0].raw_data(), out[0].TotalBytes()), 0) << "member " << rank;
  }
}

TEST_P(RemoteAllReduceTest, MaxAndMinAgreeOnEveryMember) {
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<Tensor> out = Reduce(Inputs(5003), op, op == ReduceOp::kMax ? "max" : "min");
    for (int64_t i = 0; i < 5003; i += 13) {
      const float v = static_cast<float>((i % 7) - 3);
      // (r + 1) * v over r = 0..2: the largest is 3v for v > 0, v for v < 0.
      const float want = (op == ReduceOp::kMax) == (v > 0) ? 3 * v : v;
      for (int rank = 0; rank < kMembers; ++rank) ASSERT_EQ(out[rank].data<float>()[i], want) << rank << " " << i;
    }
  }
}

TEST_P(RemoteAllReduceTest, TheSameReductionRunsAgainAndAgain) {
  for (int round = 0; round < 3; ++round) {
    std::vector<Tensor> out = Reduce(Inputs(777), ReduceOp::kSum, "again");
    for (int rank = 0; rank < kMembers; ++rank) ASSERT_EQ(out[rank].data<float>()[776], 6.0f * ((776 % 7) - 3));
  }
}

// Gloo's own cases, once per transport.
using RemoteGlooTest = RemoteAllReduceTest;

TEST_P(RemoteGlooTest, MembersMissingOneFailNamingItAndConnectAnewAfterwards) {
  // Member 2 never comes: the others give up after their 1 s, naming the member they lack.
  std::vector<Status> statuses;
  Reduce(Inputs(100), ReduceOp::kSum, "missing", &statuses, {0, 1});
  ASSERT_EQ(statuses.size(), 2u);
  for (const Status& s : statuses) {
    EXPECT_EQ(s.code(), Code::kUnavailable) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("missing (Gloo, member")) << s;
  }
  EXPECT_THAT(std::string(statuses[1].message()), ::testing::HasSubstr("task:2")) << statuses[1];
  // With every member there the same members connect anew and reduce.
  std::vector<Tensor> out = Reduce(Inputs(100), ReduceOp::kSum, "missing");
  for (int rank = 0; rank < kMembers; ++rank) EXPECT_EQ(out[rank].data<float>()[99], 6.0f * ((99 % 7) - 3));
}

TEST_P(RemoteGlooTest, MembersOfDifferentSizesFailAndStayConnected) {
  std::vector<Tensor> inputs = Inputs(1000);
  inputs[1] = Inputs(999)[1];
  std::vector<Status> statuses;
  Reduce(inputs, ReduceOp::kSum, "sizes", &statuses);
  ASSERT_EQ(statuses.size(), 3u);
  for (const Status& s : statuses) {
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("every member needs the same dtype and element count"));
  }
  std::vector<Tensor> out = Reduce(Inputs(1000), ReduceOp::kSum, "sizes");
  for (int rank = 0; rank < kMembers; ++rank) EXPECT_EQ(out[rank].data<float>()[999], 6.0f * ((999 % 7) - 3));
}

INSTANTIATE_TEST_SUITE_P(Transports, RemoteGlooTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(false), ::testing::Values(true)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool, bool>>& info) {
                           return std::string(std::get<0>(info.param) ? "Direct" : "Grpc");
                         });

INSTANTIATE_TEST_SUITE_P(TransportsWiresAndBackends, RemoteAllReduceTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool, bool>>& info) {
                           return StrCat(std::get<0>(info.param) ? "Direct" : "Grpc",
                                         std::get<1>(info.param) ? "Float16" : "Float32",
                                         std::get<2>(info.param) ? "Gloo" : "Ring");
                         });

}  // namespace
}  // namespace tessera
