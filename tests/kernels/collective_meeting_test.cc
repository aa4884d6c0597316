// Members of a collective meeting from several threads, and steps cancelled while they wait.
#include "kernels/collectives/collective_meeting.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tessera {
namespace {

struct Member {
  int rank = 0;
  std::thread::id joined_on;
};

struct Outcome {
  std::mutex mu;
  std::vector<std::vector<int>> runs;  // the ranks of each run, in the order handed over
  std::vector<std::thread::id> run_on;
  std::vector<std::pair<int, Status>> aborted;
};

CollectiveMeeting<Member> MakeMeeting(Outcome* outcome) {
  return CollectiveMeeting<Member>(
      [outcome](std::vector<Member>& members) {
        std::lock_guard<std::mutex> lock(outcome->mu);
        std::vector<int> ranks;
        for (const Member& m : members) ranks.push_back(m.rank);
        outcome->runs.push_back(ranks);
        outcome->run_on.push_back(std::this_thread::get_id());
      },
      [outcome](Member& m, const Status& s) {
        std::lock_guard<std::mutex> lock(outcome->mu);
        outcome->aborted.emplace_back(m.rank, s);
      });
}

TEST(CollectiveMeetingTest, TheLastToJoinRunsEveryMemberInRankOrder) {
  Outcome outcome;
  CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
  CancellationManager cancellation;
  for (int order : {0, 1}) {
    std::vector<int> ranks = order == 0 ? std::vector<int>{2, 0, 3, 1} : std::vector<int>{1, 3, 0, 2};
    for (size_t i = 0; i < ranks.size(); ++i) {
      ASSERT_TRUE(meeting.Join("g;" + std::to_string(order), 4, ranks[i], Member{ranks[i], {}}, &cancellation).ok());
      EXPECT_EQ(outcome.runs.size(), i + 1 == ranks.size() ? static_cast<size_t>(order + 1) : static_cast<size_t>(order));
    }
    EXPECT_EQ(outcome.runs.back(), (std::vector<int>{0, 1, 2, 3}));
  }
  EXPECT_EQ(meeting.waiting(), 0u);
  EXPECT_TRUE(outcome.aborted.empty());
}

TEST(CollectiveMeetingTest, ManyGroupsJoinedFromManyThreadsEachRunOnce) {
  Outcome outcome;
  CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
  constexpr int kGroups = 200, kSize = 4;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int rank = 0; rank < kSize; ++rank) {
    threads.emplace_back([&, rank] {
      for (int g = 0; g < kGroups; ++g) {
        if (!meeting.Join("step;" + std::to_string(g), kSize, rank, Member{rank, {}}, nullptr).ok()) ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(outcome.runs.size(), static_cast<size_t>(kGroups));
  for (const auto& run : outcome.runs) EXPECT_EQ(run, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(meeting.waiting(), 0u);
}

TEST(CollectiveMeetingTest, ACancelledStepAbortsTheWaitingMembersAndLateOnes) {
  Outcome outcome;
  CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
  CancellationManager cancellation;
  ASSERT_TRUE(meeting.Join("g", 3, 0, Member{0, {}}, &cancellation).ok());
  ASSERT_TRUE(meeting.Join("g", 3, 2, Member{2, {}}, &cancellation).ok());
  EXPECT_TRUE(outcome.aborted.empty());
  cancellation.StartCancel();
  ASSERT_EQ(outcome.aborted.size(), 2u);
  for (const auto& [rank, status] : outcome.aborted) {
    EXPECT_EQ(status.code(), Code::kCancelled);
    EXPECT_NE(status.message().find("'g'"), std::string::npos) << status;
  }
  // The third member arrives after the cancellation: it is aborted at once, not left waiting.
  ASSERT_TRUE(meeting.Join("g", 3, 1, Member{1, {}}, &cancellation).ok());
  ASSERT_EQ(outcome.aborted.size(), 3u);
  EXPECT_EQ(outcome.aborted.back().first, 1);
  EXPECT_TRUE(outcome.runs.empty());
  EXPECT_EQ(meeting.waiting(), 0u);
}

TEST(CollectiveMeetingTest, ACompletedGroupIgnoresALaterCancellation) {
  Outcome outcome;
  CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
  CancellationManager cancellation;
  ASSERT_TRUE(meeting.Join("g", 2, 1, Member{1, {}}, &cancellation).ok());
  ASSERT_TRUE(meeting.Join("g", 2, 0, Member{0, {}}, &cancellation).ok());
  cancellation.StartCancel();
  EXPECT_EQ(outcome.runs.size(), 1u);
  EXPECT_TRUE(outcome.aborted.empty());
}

TEST(CollectiveMeetingTest, BadRanksAndSizesAreThisMembersError) {
  Outcome outcome;
  CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
  EXPECT_EQ(meeting.Join("g", 2, 2, Member{2, {}}, nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(meeting.Join("g", 0, 0, Member{0, {}}, nullptr).code(), Code::kInvalidArgument);
  ASSERT_TRUE(meeting.Join("g", 3, 0, Member{0, {}}, nullptr).ok());
  Status twice = meeting.Join("g", 3, 0, Member{0, {}}, nullptr);
  EXPECT_EQ(twice.code(), Code::kInvalidArgument);
  EXPECT_NE(twice.message().find("joined twice"), std::string::npos) << twice;
  Status other_size = meeting.Join("g", 4, 1, Member{1, {}}, nullptr);
  EXPECT_EQ(other_size.code(), Code::kInvalidArgument);
  EXPECT_NE(other_size.message().find("says the group has 4"), std::string::npos) << other_size;
  EXPECT_TRUE(outcome.runs.empty());
}

TEST(CollectiveMeetingTest, CancellingWhileMembersJoinNeverLosesOne) {
  for (int trial = 0; trial < 50; ++trial) {
    Outcome outcome;
    CollectiveMeeting<Member> meeting = MakeMeeting(&outcome);
    CancellationManager cancellation;
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 4; ++rank) {
      threads.emplace_back([&, rank] { ASSERT_TRUE(meeting.Join("g", 4, rank, Member{rank, {}}, &cancellation).ok()); });
    }
    std::thread canceller([&] { cancellation.StartCancel(); });
    for (auto& t : threads) t.join();
    canceller.join();
    // Every member either ran with the others or was aborted; none is left waiting.
    const size_t ran = outcome.runs.empty() ? 0 : outcome.runs[0].size();
    EXPECT_EQ(ran + outcome.aborted.size(), 4u) << "trial " << trial;
    EXPECT_TRUE(ran == 0 || ran == 4);
    EXPECT_EQ(meeting.waiting(), 0u);
  }
}

}  // namespace
}  // namespace tessera
