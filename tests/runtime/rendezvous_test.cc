#include "runtime/intra_process_rendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace tessera
