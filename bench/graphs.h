// The three benchmark graph shapes, as edge lists over node ids 0..n-1 (every edge goes
// from a lower id to a higher one), shared by the Tessera and oneTBB benchmarks so both
// run exactly the same shape.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace tessera::bench {

struct Shape {
  int num_nodes = 0;
  std::vector<std::pair<int, int>> edges;  // (src, dst)
};

// 0 -> 1 -> 2 -> ... -> n-1
inline Shape Chain(int n) {
  Shape s{n, {}};
  for (int i = 1; i < n; ++i) s.edges.emplace_back(i - 1, i);
  return s;
}

// 0 -> {1 .. n-2} -> n-1
inline Shape FanOutFanIn(int n) {
  Shape s{n, {}};
  for (int i = 1; i < n - 1; ++i) {
    s.edges.emplace_back(0, i);
    s.edges.emplace_back(i, n - 1);
  }
  return s;
}

// Node i > 0 depends on min(i, 4) distinct earlier nodes chosen at random (fixed seed).
inline Shape RandomDag(int n, int fan_in = 4, uint32_t seed = 42) {
  Shape s{n, {}};
  std::mt19937 rng(seed);
  for (int i = 1; i < n; ++i) {
    std::vector<int> srcs;
    while (static_cast<int>(srcs.size()) < std::min(i, fan_in)) {
      int src = static_cast<int>(rng() % static_cast<uint32_t>(i));
      bool dup = false;
      for (int x : srcs) dup = dup || x == src;
      if (!dup) srcs.push_back(src);
    }
    for (int src : srcs) s.edges.emplace_back(src, i);
  }
  return s;
}

}  // namespace tessera::bench
