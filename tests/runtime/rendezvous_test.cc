#include "runtime/intra_process_rendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/rendezvous_mgr.h"

namespace tessera {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

TEST(RendezvousKeyTest, TheKeyNamesBothDevicesTheIncarnationTheTensorAndTheFrame) {
  EXPECT_EQ(Rendezvous::CreateKey(kCpu0, 0xabcdef12345ULL, kCpu1, "x:0"),
            StrCat(kCpu0, ";abcdef12345;", kCpu1, ";x:0;0:0"));
  EXPECT_EQ(Rendezvous::CreateKey(kCpu1, 1, kCpu0, "^y", "2:7"), StrCat(kCpu1, ";1;", kCpu0, ";^y;2:7"));
}

TEST(IntraProcessRendezvousTest, SendBeforeRecvHandsOverTheSameBuffer) {
  IntraProcessRendezvous r;
  Tensor t = Tensor::FromVector<float>({1, 2, 3});
  ASSERT_TRUE(r.Send("k", t).ok());
  bool called = false;
  r.RecvAsync("k", [&](const Status& s, const Tensor& v) {
    called = true;
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(v.raw_data(), t.raw_data());  // no copy
  });
  EXPECT_TRUE(called);
}

TEST(IntraProcessRendezvousTest, RecvBeforeSendIsCalledBackOnTheSendersThread) {
  IntraProcessRendezvous r;
  std::thread::id receiver_thread;
  std::atomic<bool> called{false};
  r.RecvAsync("k", [&](const Status& s, const Tensor& v) {
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(v.flat<int32_t>()[0], 7);
    receiver_thread = std::this_thread::get_id();
    called = true;
  });
  EXPECT_FALSE(called);
  std::thread::id sender;
  std::thread t([&] {
    sender = std::this_thread::get_id();
    ASSERT_TRUE(r.Send("k", Tensor::FromVector<int32_t>({7})).ok());
  });
  t.join();
  EXPECT_TRUE(called);
  EXPECT_EQ(receiver_thread, sender);
}

TEST(IntraProcessRendezvousTest, KeysAreIndependentAndQueued) {
  IntraProcessRendezvous r;
  ASSERT_TRUE(r.Send("a", Tensor::FromVector<int32_t>({1})).ok());
  ASSERT_TRUE(r.Send("a", Tensor::FromVector<int32_t>({2})).ok());
  ASSERT_TRUE(r.Send("b", Tensor::FromVector<int32_t>({3})).ok());
  std::vector<int> got;
  for (const char* k : {"b", "a", "a"}) {
    r.RecvAsync(k, [&](const Status& s, const Tensor& v) { got.push_back(v.flat<int32_t>()[0]); });
  }
  EXPECT_EQ(got, (std::vector<int>{3, 1, 2}));
}

TEST(IntraProcessRendezvousTest, AbortFailsWaitersAndLaterCalls) {
  IntraProcessRendezvous r;
  Status waiting;
  r.RecvAsync("k", [&](const Status& s, const Tensor&) { waiting = s; });
  r.StartAbort(errors::Cancelled("stop"));
  EXPECT_EQ(waiting.code(), Code::kCancelled);
  EXPECT_EQ(r.Send("k", Tensor::FromVector<float>({1})).code(), Code::kCancelled);
  Status later;
  r.RecvAsync("other", [&](const Status& s, const Tensor&) { later = s; });
  EXPECT_EQ(later.code(), Code::kCancelled);
  // The first abort wins.
  r.StartAbort(errors::Internal("second"));
  Status third;
  r.RecvAsync("x", [&](const Status& s, const Tensor&) { third = s; });
  EXPECT_EQ(third.message(), "stop");
}

TEST(IntraProcessRendezvousTest, DestructionFailsReceiversStillWaiting) {
  Status s;
  {
    IntraProcessRendezvous r;
    r.RecvAsync("k", [&](const Status& st, const Tensor&) { s = st; });
  }
  EXPECT_EQ(s.code(), Code::kCancelled);
}

TEST(IntraProcessRendezvousTest, ConcurrentSendersAndReceiversEachGetTheirTensor) {
  IntraProcessRendezvous r;
  constexpr int kKeys = 2000;
  std::vector<std::atomic<int>> got(kKeys);
  std::thread sender([&] {
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(r.Send(StrCat("k", i), Tensor::FromVector<int32_t>({i})).ok());
  });
  std::thread receiver([&] {
    for (int i = kKeys - 1; i >= 0; --i) {
      r.RecvAsync(StrCat("k", i), [&got, i](const Status& s, const Tensor& v) {
        got[i] = s.ok() ? v.flat<int32_t>()[0] : -1;
      });
    }
  });
  sender.join();
  receiver.join();
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(got[i].load(), i);
}

// A peer may ask for steps that never run here: each is forgotten after the timeout, its
// receivers told why, and no more than the cap wait at once.
TEST(RendezvousMgrTest, StepsOnlyPeersAskedForExpireAndAreCapped) {
  IntraProcessRendezvousMgr mgr({.max_unclaimed_steps = 3, .unclaimed_timeout = std::chrono::milliseconds(100)});
  std::atomic<int> aborted{0};
  for (int64_t step = 1; step <= 3; ++step) {
    auto r = mgr.FindForPeer(step);
    ASSERT_TRUE(r.ok()) << r.status();
    (*r)->RecvAsync("k", [&aborted](const Status& s, const Tensor&) {
      if (s.code() == Code::kAborted) ++aborted;
    });
  }
  auto again = mgr.FindForPeer(2);  // one already there is no new one
  ASSERT_TRUE(again.ok());
  auto fourth = mgr.FindForPeer(4);
  EXPECT_EQ(fourth.status().code(), Code::kResourceExhausted) << fourth.status();
  EXPECT_EQ(mgr.LiveSteps(), 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(mgr.LiveSteps(), 0u);
  EXPECT_EQ(aborted.load(), 3);
  EXPECT_TRUE(mgr.FindForPeer(4).ok());
}

// The same peer receive before the step starts here is the normal order of a cluster: a
// step its local run claims does not expire, and the receive gets the sent tensor.
TEST(RendezvousMgrTest, AStepThatStartsHereIsClaimedAndDoesNotExpire) {
  IntraProcessRendezvousMgr mgr({.max_unclaimed_steps = 1, .unclaimed_timeout = std::chrono::milliseconds(50)});
  auto early = mgr.FindForPeer(7);
  ASSERT_TRUE(early.ok());
  Status got = errors::Unknown("not called");
  (*early)->RecvAsync("k", [&got](const Status& s, const Tensor&) { got = s; });
  std::shared_ptr<Rendezvous> run = mgr.Find(7);
  EXPECT_EQ(run, *early);
  EXPECT_TRUE(mgr.FindForPeer(8).ok());  // 7 no longer counts against the cap
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(mgr.LiveSteps(), 1u);  // 8 expired; 7 stays until its cleanup
  ASSERT_TRUE(run->Send("k", Tensor::Scalar(1.0f)).ok());
  EXPECT_TRUE(got.ok()) << got;
  mgr.Cleanup(7);
  EXPECT_EQ(mgr.LiveSteps(), 0u);
}

}  // namespace
}  // namespace tessera
