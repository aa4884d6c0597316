#include "kernels/collectives/ring_schedule.h"

namespace tessera {

std::vector<RingStep> RingSchedule(int size, int64_t elements) {
  std::vector<RingStep> steps;
  const auto mod = [size](int x) { return ((x % size) + size) % size; };
  // Chunk boundaries as RingAllReduce cuts them.
  const auto chunk_begin = [&](int c) { return elements * c / size; };
  for (int t = 0; t < RingStepCount(size); ++t) {
    const bool scatter = t < size - 1;
    for (int m = 0; m < size; ++m) {
      RingStep s;
      s.member = m;
      s.step = t;
      s.from = mod(m - 1);
      s.reduce = scatter;
      s.from_input = t == 0;
      s.finish = t == size - 2;
      const int chunk = scatter ? mod(m - t - 1) : mod(m - (t - (size - 1)));
      s.begin = chunk_begin(chunk);
      s.end = chunk_begin(chunk + 1);
      steps.push_back(s);
    }
  }
  return steps;
}

}  // namespace tessera
