// ThreadPool: parallel loops cover their range once, from outside the pool and from its
// own threads, including when every pool thread is inside a loop at once or busy elsewhere,
// and back to back from several callers, where helpers linger and join the next loop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/thread_pool.h"

namespace tessera {
namespace {

TEST(ThreadPoolTest, ParallelForCoversTheRangeOnce) {
  auto owned = ThreadPool::Create("test", 3);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  std::vector<std::atomic<int>> hits(100000);
  pool.ParallelFor(static_cast<int64_t>(hits.size()), 100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
}

// Loops back to back, from two callers at once, of sizes from one block to many: a helper
// lingering after one loop joins another and must run only that loop's blocks.
TEST(ThreadPoolTest, LoopsBackToBackFromTwoCallersEachCoverTheirRangeOnce) {
  auto owned = ThreadPool::Create("test", 2);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  auto caller = [&pool](int seed) {
    for (int round = 0; round < 300; ++round) {
      std::vector<std::atomic<int>> hits(1 + (round * 7919 + seed * 104729) % 5000);
      pool.ParallelFor(static_cast<int64_t>(hits.size()), 20, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round << ", " << i;
    }
  };
  std::thread other(caller, 2);
  caller(1);
  other.join();
}

// Two callers begin two-block loops at the same moment, again and again, on a pool of two:
// each loop must get a thread of the pool beside its caller (a lingering helper it claimed,
// or a woken one), never leave its second block to its caller while the helper joins the
// other loop. Each block waits for its loop's other block to start, so a loop whose blocks
// ran one after the other shows as a block that waited in vain.
TEST(ThreadPoolTest, LoopsBegunAtOnceEachGetAHelper) {
  auto owned = ThreadPool::Create("test", 2);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  std::atomic<int> ready{0}, lonely_blocks{0};
  auto caller = [&](int rounds) {
    // Both callers start each round's loop together, and stop at the first lonely block.
    for (int round = 0; round < rounds && lonely_blocks.load() == 0; ++round) {
      ready.fetch_add(1);
      while (ready.load() < 2 * (round + 1) && lonely_blocks.load() == 0) std::this_thread::yield();
      std::atomic<int> started{0};
      pool.ParallelFor(2, int64_t{1} << 30, [&](int64_t, int64_t) {
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
        if (started.load() < 2) lonely_blocks.fetch_add(1);
      });
    }
  };
  std::thread other(caller, 200);
  caller(200);
  other.join();
  EXPECT_EQ(lonely_blocks.load(), 0);
}

// An async op's completion can continue a kernel on a pool thread; that kernel's own
// parallel loop must not wait for threads that are all busy waiting.
TEST(ThreadPoolTest, EveryPoolThreadInAParallelForAtOnceFinishes) {
  constexpr int kThreads = 2;
  auto owned = ThreadPool::Create("test", kThreads);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  std::mutex mu;
  std::condition_variable cv;
  int started = 0, finished = 0;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < kThreads; ++t) {
    pool.Schedule([&] {
      {
        // Hold every thread here until all are inside, so none is free for the loops.
        std::unique_lock<std::mutex> lock(mu);
        ++started;
        cv.notify_all();
        cv.wait(lock, [&] { return started == kThreads; });
      }
      pool.ParallelFor(1 << 20, 1000, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return finished == kThreads; }));
  EXPECT_EQ(total.load(), int64_t{kThreads} << 20);
}

// A loop called from outside while every pool thread is busy elsewhere: the caller runs
// every block itself rather than wait for a thread, and the helpers it scheduled, starting
// once the threads are free and the loop is long over, find nothing left to run.
TEST(ThreadPoolTest, ALoopWhoseHelpersCannotStartFinishesOnTheCaller) {
  constexpr int kThreads = 2;
  auto owned = ThreadPool::Create("test", kThreads);
  ASSERT_TRUE(owned.ok());
  ThreadPool& pool = **owned;
  std::mutex mu;
  std::condition_variable cv;
  int busy = 0;
  bool release = false;
  for (int t = 0; t < kThreads; ++t) {
    pool.Schedule([&] {
      std::unique_lock<std::mutex> lock(mu);
      ++busy;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return busy == kThreads; });
  }
  std::vector<int> hits(1 << 16);
  pool.ParallelFor(static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];  // not atomic: only the caller may run
  });
  for (int h : hits) ASSERT_EQ(h, 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  owned->reset();  // waits for the held threads and the late helpers, before what they read goes
}

}  // namespace
}  // namespace tessera
