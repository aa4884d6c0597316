// Ops that exist only in tests, to observe the executor: registered into the global
// registries by RegisterTestOps() (idempotent, thread-safe).
//
//   TestRecord(tag, sleep_ms): sleeps, then appends tag and when it slept to RecordedSpans();
//                               stateful.
//   TestMeet(group, expected):  waits (up to 2 s) until `expected` TestMeet kernels of the
//                               group run at once; records the most that ever did.
//   TestBlock():                async; completes only when its step is cancelled.
//   TestFail(message):          fails with InvalidArgument(message).
//   TestThrow(what):            throws std::bad_alloc when what is "bad_alloc", else
//                               std::runtime_error(what).
//   TestInlineAsync(value):     async; outputs the scalar value, calling done before
//                               ComputeAsync returns.
//   TestIntraThreads(n):        runs a ParallelFor of n heavy units and records the
//                               distinct threads that ran them.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

void RegisterTestOps();

struct RecordedSpan {
  std::string tag;
  std::chrono::steady_clock::time_point start, end;
};
std::vector<std::string> RecordedTags();
std::vector<RecordedSpan> RecordedSpans();
void ClearRecordedTags();

int MaxMeetConcurrency();
void ResetMeet();

std::set<std::thread::id> IntraThreadsSeen();
void ClearIntraThreadsSeen();

}  // namespace tessera::testing
