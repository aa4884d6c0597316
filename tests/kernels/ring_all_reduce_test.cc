// The ring algorithm on its own: N members over one in-process rendezvous.
#include "kernels/collectives/ring_all_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <numeric>

#include "runtime/intra_process_rendezvous.h"

namespace tessera {
namespace {

std::string Dev(int i) { return StrCat("/job:localhost/replica:0/task:0/device:CPU:", i); }

// Member r's input element i: small integers, so float sums are exact in any order.
template <typename T>
T InputValue(int r, int64_t i) {
  return static_cast<T>(((i * 7 + r * 13) % 11) - 5 + r);
}

template <typename T>
T Expected(ReduceOp op, int size, int64_t i) {
  T acc = InputValue<T>(0, i);
  for (int r = 1; r < size; ++r) {
    T v = InputValue<T>(r, i);
    acc = op == ReduceOp::kMax ? std::max(acc, v) : op == ReduceOp::kMin ? std::min(acc, v) : acc + v;
  }
  if (op == ReduceOp::kMean) acc = static_cast<T>(acc / static_cast<T>(size));
  return acc;
}

struct Result {
  std::vector<Tensor> outputs;
  std::vector<Status> statuses;
};

template <typename T>
Result RunRing(int size, int64_t n, ReduceOp op, bool in_place, bool wire_float16 = false,
               ThreadPool* pool = nullptr, int64_t wrong_size_member = -1) {
  IntraProcessRendezvous rendezvous;
  Result result;
  result.outputs.resize(size);
  result.statuses.resize(size);
  std::vector<Tensor> inputs(size);
  std::mutex mu;
  std::condition_variable cv;
  int pending = size;
  for (int r = 0; r < size; ++r) {
    int64_t len = r == wrong_size_member ? n + 1 : n;
    inputs[r] = Tensor(DataTypeToEnum<T>::value, TensorShape({len}));
    for (int64_t i = 0; i < len; ++i) inputs[r].data<T>()[i] = InputValue<T>(r, i);
    result.outputs[r] = in_place ? inputs[r] : Tensor(DataTypeToEnum<T>::value, TensorShape({len}));
  }
  // Start the members in reverse, so receivers often wait before their senders start.
  for (int r = size - 1; r >= 0; --r) {
    RingAllReduce::Params p;
    p.rank = r;
    p.size = size;
    p.device = Dev(r);
    p.incarnation = 10 + r;
    p.prev_device = Dev((r + size - 1) % size);
    p.prev_incarnation = 10 + (r + size - 1) % size;
    p.next_device = Dev((r + 1) % size);
    p.name = "test";
    p.op = op;
    p.wire_float16 = wire_float16;
    p.pool = pool;
    RingAllReduce::Start(p, &rendezvous, inputs[r], result.outputs[r], [&, r](const Status& s) {
      if (!s.ok()) rendezvous.StartAbort(s);  // what the session does on an error
      std::lock_guard<std::mutex> lock(mu);
      result.statuses[r] = s;
      if (--pending == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  return result;
}

template <typename T>
void ExpectReduced(const Result& res, ReduceOp op, int size, int64_t n) {
  for (int r = 0; r < size; ++r) {
    ASSERT_TRUE(res.statuses[r].ok()) << res.statuses[r];
    const T* out = res.outputs[r].data<T>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], Expected<T>(op, size, i)) << "member " << r << " element " << i << " of " << n;
    }
  }
}

class RingTest : public ::testing::TestWithParam<int> {};

TEST_P(RingTest, EveryReductionAndDtypeForOddAndTinySizes) {
  const int size = GetParam();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{size - 1}, int64_t{size + 1}, int64_t{17}, int64_t{1001}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(StrCat("n=", n, " op=", static_cast<int>(op), " in_place=", in_place));
        ExpectReduced<float>(RunRing<float>(size, n, op, in_place), op, size, n);
        ExpectReduced<double>(RunRing<double>(size, n, op, in_place), op, size, n);
        ExpectReduced<int32_t>(RunRing<int32_t>(size, n, op, in_place), op, size, n);
      }
    }
  }
}

TEST_P(RingTest, LargeTensorsMoveInSeveralPiecesReducedOnAPool) {
  const int size = GetParam();
  auto owned = ThreadPool::Create("ring_test", 2);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  const int64_t n = (3 << 20) + 5;  // 12 MiB of float32: several pieces per chunk
  ExpectReduced<float>(RunRing<float>(size, n, ReduceOp::kSum, false, false, &pool), ReduceOp::kSum, size, n);
}

TEST_P(RingTest, Float16OnTheWireLeavesEveryMemberTheSameBits) {
  const int size = GetParam();
  const int64_t n = 999;
  Result res = RunRing<float>(size, n, ReduceOp::kMean, false, /*wire_float16=*/true);
  for (int r = 0; r < size; ++r) {
    ASSERT_TRUE(res.statuses[r].ok()) << res.statuses[r];
    EXPECT_EQ(0, std::memcmp(res.outputs[r].raw_data(), res.outputs[0].raw_data(), n * sizeof(float)));
  }
  for (int64_t i = 0; i < n; ++i) {
    float want = Expected<float>(ReduceOp::kMean, size, i);
    EXPECT_NEAR(res.outputs[0].data<float>()[i], want, std::abs(want) * 1e-3 + 1e-3);
  }
}

TEST_P(RingTest, AMemberWithAnotherSizeFailsTheReduction) {
  const int size = GetParam();
  Result res = RunRing<float>(size, 40, ReduceOp::kSum, false, false, nullptr, /*wrong_size_member=*/1);
  bool named = false;
  for (const Status& s : res.statuses) {
    EXPECT_FALSE(s.ok());
    named |= s.message().find("same dtype and shape") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

INSTANTIATE_TEST_SUITE_P(Members, RingTest, ::testing::Values(2, 3, 4));

TEST(RingTest, OneMemberCopiesItsInput) {
  Result res = RunRing<int32_t>(1, 5, ReduceOp::kSum, false);
  ExpectReduced<int32_t>(res, ReduceOp::kSum, 1, 5);
}

TEST(RingTest, ParseReduceOp) {
  EXPECT_EQ(*ParseReduceOp("mean"), ReduceOp::kMean);
  EXPECT_EQ(ParseReduceOp("prod").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
