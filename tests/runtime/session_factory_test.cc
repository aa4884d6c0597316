// The session seams: implementations chosen by target prefix, and the per-step rendezvous
// from an injected manager.
#include <gtest/gtest.h>

#include <set>

#include "graph/builder/ops.h"
#include "runtime/direct_session.h"
#include "runtime/server.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

// y = -x, with x on CPU:0 and y on CPU:1.
GraphSpec TwoDeviceGraph(float x_value = 3.0f) {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root.WithOpName("x").WithDevice("/cpu:0"), Tensor::Scalar(x_value));
  ops::Neg(root.WithOpName("y").WithDevice("/cpu:1"), x);
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  return def;
}

SessionConfig TwoCpus() {
  SessionConfig config;
  config.device_count = {{"CPU", 2}};
  config.constant_folding = false;  // the graph's constants must cross devices at run time
  return config;
}

// Sessions for "echo://" targets: a direct session that remembers the target it was made for.
class EchoFactory final : public SessionFactory {
 public:
  StatusOr<std::unique_ptr<Session>> NewSession(const std::string& target, const SessionConfig& config,
                                                const GraphSpec& graph) override {
    targets.push_back(target);
    ASSIGN_OR_RETURN(std::unique_ptr<DirectSession> s, DirectSession::Create(config, graph));
    return std::unique_ptr<Session>(std::move(s));
  }
  Status Reset(const std::string& target, const std::vector<std::string>&) override {
    resets.push_back(target);
    return Status::OK();
  }
  std::vector<std::string> targets, resets;
};

TEST(SessionFactoryTest, TargetsGoToTheFactoryOfTheirLongestPrefix) {
  static auto* echo = new std::shared_ptr<EchoFactory>(std::make_shared<EchoFactory>());
  static auto* echo_long = new std::shared_ptr<EchoFactory>(std::make_shared<EchoFactory>());
  static const bool registered = SessionFactory::Register("echo://", *echo).ok() &&
                                 SessionFactory::Register("echo://special/", *echo_long).ok();
  ASSERT_TRUE(registered);
  EXPECT_EQ(SessionFactory::Register("echo://", *echo).code(), Code::kAlreadyExists);

  auto a = Session::Create("echo://host:1", TwoCpus(), TwoDeviceGraph());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Session::Create("echo://special/x", TwoCpus(), TwoDeviceGraph());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*echo)->targets, std::vector<std::string>{"echo://host:1"});
  EXPECT_EQ((*echo_long)->targets, std::vector<std::string>{"echo://special/x"});
  EXPECT_EQ(testing::Fetch(**a, "y").data<float>()[0], -3.0f);
  EXPECT_TRUE(Session::Reset("echo://host:1", {""}).ok());
  EXPECT_EQ((*echo)->resets, std::vector<std::string>{"echo://host:1"});

  auto unknown = Session::Create("grpc://localhost:2222", TwoCpus(), TwoDeviceGraph());
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_NE(unknown.status().message().find("local://"), std::string::npos) << unknown.status();
}

// Counts what a session asks of its rendezvous manager.
class CountingRendezvousMgr final : public RendezvousMgr {
 public:
  std::shared_ptr<Rendezvous> Find(int64_t step_id) override {
    std::lock_guard<std::mutex> lock(mu);
    found.insert(step_id);
    return inner.Find(step_id);
  }
  StatusOr<std::shared_ptr<Rendezvous>> FindForPeer(int64_t step_id) override { return inner.FindForPeer(step_id); }
  void Cleanup(int64_t step_id) override {
    std::lock_guard<std::mutex> lock(mu);
    cleaned.insert(step_id);
    inner.Cleanup(step_id);
  }
  size_t LiveSteps() override { return inner.LiveSteps(); }
  std::mutex mu;
  std::set<int64_t> found, cleaned;
  IntraProcessRendezvousMgr inner;
};

TEST(SessionFactoryTest, EachStepGetsItsRendezvousFromTheInjectedManager) {
  auto mgr = std::make_shared<CountingRendezvousMgr>();
  auto session = DirectSession::Create(TwoCpus(), TwoDeviceGraph(), {.devices = nullptr, .resources = nullptr, .rendezvous = mgr});
  ASSERT_TRUE(session.ok()) << session.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(testing::Fetch(**session, "y").data<float>()[0], -3.0f);
  EXPECT_EQ(mgr->found.size(), 3u);  // one rendezvous per step, by distinct step ids
  EXPECT_EQ(mgr->cleaned, mgr->found);
  EXPECT_EQ(mgr->LiveSteps(), 0u);

  // A step on one device has nothing to exchange and asks for none.
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {"x"}, {}, &out).ok());
  EXPECT_EQ(mgr->found.size(), 3u);
}

TEST(SessionFactoryTest, SessionsOnOneServerShareItsRendezvousManager) {
  auto server = Server::CreateLocal(TwoCpus());
  ASSERT_TRUE(server.ok());
  // The two graphs send different values under the same rendezvous key ("x:0" from CPU:0
  // to CPU:1): were two steps to share a step id, one would receive the other's.
  auto a = Session::Create((*server)->target(), {}, TwoDeviceGraph(3.0f));
  auto b = Session::Create((*server)->target(), {}, TwoDeviceGraph(5.0f));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::thread> threads;
  for (const auto& run : {std::pair{a->get(), -3.0f}, std::pair{b->get(), -5.0f}}) {
    threads.emplace_back([s = run.first, want = run.second] {
      for (int i = 0; i < 200; ++i) EXPECT_EQ(testing::Fetch(*s, "y").data<float>()[0], want);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace tessera
