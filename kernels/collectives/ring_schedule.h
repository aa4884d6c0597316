// RingSchedule: a ring all-reduce among members that can read each other's memory (logical
// GPUs of one physical GPU, or peer GPUs), as the list of steps an engine enqueues on the
// members' streams. It moves the same chunks as RingAllReduce (ring_all_reduce.h), so both
// give the same values: member m reads from member m-1, the tensor cut into `size` chunks,
// size-1 reduce steps then size-1 copy steps.
//
//   for (const RingStep& s : RingSchedule(size, elements)) { wait for s's dependencies; run s; }
//
// Ordering, which the steps need and which suffices (ring_schedule_test proves it for every
// size and aliasing): step t of member m runs after member m's step t-1 and after member
// `from`'s step t-1, a member's step -1 being its input ready and its output allocated.
// After its last step, work that reuses member m's input or output must wait for member
// m's last step and member m+1's (the last to read m's buffers). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

struct RingStep {
  int member = 0;     // whose output the step writes
  int step = 0;       // 0 .. RingStepCount(size) - 1
  int from = 0;       // the member read: member - 1, mod size
  bool reduce = false;  // out[m][range] = in[m][range] (op) src; else out[m][range] = src
  // The source: `from`'s input on the first step, its output after.
  bool from_input = false;
  // The last reduction of this chunk: the member applies what happens once per element (a
  // mean's division, float16-on-the-wire rounding) so that every copy gets the same bits.
  bool finish = false;
  int64_t begin = 0;  // element range, possibly empty (fewer elements than members)
  int64_t end = 0;
};

inline int RingStepCount(int size) { return size > 1 ? 2 * (size - 1) : 0; }

// Ordered by step, then member. Empty for one member (its output is its input).
std::vector<RingStep> RingSchedule(int size, int64_t elements);

}  // namespace tessera
