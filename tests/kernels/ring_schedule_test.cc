// The ring schedule on its own: every pair of steps touching the same memory is ordered by
// the dependencies ring_schedule.h states, and running the steps in any order those allow
// gives every member the reduction.
#include "kernels/collectives/ring_schedule.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tessera {
namespace {

// Steps as a graph: node (m, t) for t = -1 (input ready), 0..L-1 (the schedule) and L
// (later work of member m that reuses its buffers).
struct StepGraph {
  int size;
  int steps;  // L
  int Id(int m, int t) const { return m * (steps + 2) + t + 1; }
  int Nodes() const { return size * (steps + 2); }
};

using DepsFn = std::function<std::vector<std::pair<int, int>>(const StepGraph&, int m, int t, int from)>;

// The ordering ring_schedule.h promises.
std::vector<std::pair<int, int>> StatedDeps(const StepGraph& g, int m, int t, int from) {
  if (t == g.steps) return {{m, t - 1}, {(m + 1) % g.size, t - 1}};
  return {{m, t - 1}, {from, t - 1}};
}

// The same without the wait for the member read: must not be enough.
std::vector<std::pair<int, int>> OwnStepOnly(const StepGraph& g, int m, int t, int) {
  if (t == g.steps) return {{m, t - 1}};
  return {{m, t - 1}};
}

struct Access {
  int buffer;
  int64_t begin, end;
  bool write;
};

struct Model {
  StepGraph g;
  std::vector<std::vector<int>> deps;  // by node id
  std::vector<std::vector<Access>> accesses;
  std::vector<const RingStep*> step_of;  // nullptr for the start and end nodes
  std::vector<RingStep> schedule;
};

// Buffers: member m's input 2m and output 2m+1, or one buffer m when reduced in place.
Model Build(int size, int64_t n, bool in_place, const DepsFn& deps_fn) {
  Model model{{size, RingStepCount(size)}, {}, {}, {}, RingSchedule(size, n)};
  const StepGraph& g = model.g;
  model.deps.resize(g.Nodes());
  model.accesses.resize(g.Nodes());
  model.step_of.assign(g.Nodes(), nullptr);
  auto in = [&](int m) { return in_place ? m : 2 * m; };
  auto out = [&](int m) { return in_place ? m : 2 * m + 1; };
  for (int m = 0; m < size; ++m) {
    for (int edge : {-1, g.steps}) {
      model.accesses[g.Id(m, edge)] = {{in(m), 0, n, true}, {out(m), 0, n, true}};
    }
    for (auto [dm, dt] : deps_fn(g, m, g.steps, (m + size - 1) % size)) model.deps[g.Id(m, g.steps)].push_back(g.Id(dm, dt));
  }
  for (const RingStep& s : model.schedule) {
    const int id = g.Id(s.member, s.step);
    model.step_of[id] = &s;
    for (auto [dm, dt] : deps_fn(g, s.member, s.step, s.from)) model.deps[id].push_back(g.Id(dm, dt));
    auto& acc = model.accesses[id];
    acc.push_back({s.from_input ? in(s.from) : out(s.from), s.begin, s.end, false});
    if (s.reduce) acc.push_back({in(s.member), s.begin, s.end, false});
    acc.push_back({out(s.member), s.begin, s.end, true});
  }
  return model;
}

// Pairs of nodes that touch overlapping memory, one writing, with neither ordered before the other.
std::vector<std::string> Races(const Model& model) {
  const int nodes = model.g.Nodes();
  std::vector<std::vector<bool>> before(nodes, std::vector<bool>(nodes, false));  // before[a][b]: a precedes b
  std::function<void(int, int)> mark = [&](int root, int node) {
    for (int d : model.deps[node]) {
      if (!before[d][root]) {
        before[d][root] = true;
        mark(root, d);
      }
    }
  };
  for (int v = 0; v < nodes; ++v) mark(v, v);
  std::vector<std::string> races;
  for (int a = 0; a < nodes; ++a) {
    for (int b = a + 1; b < nodes; ++b) {
      if (before[a][b] || before[b][a]) continue;
      for (const Access& x : model.accesses[a]) {
        for (const Access& y : model.accesses[b]) {
          const bool overlap = x.buffer == y.buffer && x.begin < y.end && y.begin < x.end;
          if (overlap && (x.write || y.write)) races.push_back(std::to_string(a) + "~" + std::to_string(b));
        }
      }
    }
  }
  return races;
}

TEST(RingScheduleTest, TheStatedOrderLeavesNoRaceForAnySizeOrAliasing) {
  for (int size = 1; size <= 8; ++size) {
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{1001}}) {
      for (bool in_place : {false, true}) {
        EXPECT_TRUE(Races(Build(size, n, in_place, StatedDeps)).empty())
            << "size " << size << ", " << n << " elements, in place " << in_place;
      }
    }
  }
}

TEST(RingScheduleTest, WithoutWaitingForTheMemberReadStepsRace) {
  for (int size = 2; size <= 5; ++size) {
    EXPECT_FALSE(Races(Build(size, 100, /*in_place=*/false, OwnStepOnly)).empty()) << "size " << size;
  }
}

// Runs the steps in a random order the dependencies allow, as streams may.
std::vector<std::vector<double>> Simulate(const Model& model, const std::vector<std::vector<double>>& inputs,
                                          bool mean, std::mt19937* rng) {
  const int size = model.g.size;
  std::vector<std::vector<double>> in = inputs, out(size, std::vector<double>(inputs[0].size(), -1));
  std::vector<int> waiting(model.g.Nodes());
  std::vector<std::vector<int>> users(model.g.Nodes());
  for (int v = 0; v < model.g.Nodes(); ++v) {
    waiting[v] = static_cast<int>(model.deps[v].size());
    for (int d : model.deps[v]) users[d].push_back(v);
  }
  std::vector<int> ready;
  for (int v = 0; v < model.g.Nodes(); ++v) {
    if (waiting[v] == 0) ready.push_back(v);
  }
  while (!ready.empty()) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(*rng);
    const int v = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    if (const RingStep* s = model.step_of[v]) {
      const auto& src = s->from_input ? in[s->from] : out[s->from];
      for (int64_t i = s->begin; i < s->end; ++i) {
        double value = s->reduce ? in[s->member][i] + src[i] : src[i];
        if (s->finish && mean) value /= size;
        out[s->member][i] = value;
      }
    }
    for (int u : users[v]) {
      if (--waiting[u] == 0) ready.push_back(u);
    }
  }
  if (size == 1) out = in;
  return out;
}

TEST(RingScheduleTest, AnyOrderTheDependenciesAllowGivesEveryMemberTheMean) {
  std::mt19937 rng(7);
  for (int size : {1, 2, 3, 4, 7}) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{10}, int64_t{257}}) {
      std::vector<std::vector<double>> inputs(size, std::vector<double>(n));
      std::vector<double> want(n, 0);
      for (int m = 0; m < size; ++m) {
        for (int64_t i = 0; i < n; ++i) {
          inputs[m][i] = static_cast<double>((i * 5 + m * 3) % 17);
          want[i] += inputs[m][i] / size;
        }
      }
      const Model model = Build(size, n, false, StatedDeps);
      for (int trial = 0; trial < 20; ++trial) {
        auto out = Simulate(model, inputs, /*mean=*/true, &rng);
        for (int m = 0; m < size; ++m) {
          for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(out[m][i], want[i], 1e-12) << size << " " << n << " " << m;
          EXPECT_EQ(out[m], out[0]) << "member " << m << " differs from member 0";
        }
      }
    }
  }
}

TEST(RingScheduleTest, ChunksCoverTheTensorOnceForEachMemberInEachPhase) {
  for (int size = 2; size <= 6; ++size) {
    const int64_t n = 23;
    std::vector<std::vector<int>> reduced(size, std::vector<int>(n)), copied(size, std::vector<int>(n));
    int finishes = 0;
    for (const RingStep& s : RingSchedule(size, n)) {
      EXPECT_EQ(s.from, (s.member + size - 1) % size);
      for (int64_t i = s.begin; i < s.end; ++i) ++(s.reduce ? reduced : copied)[s.member][i];
      finishes += s.finish ? 1 : 0;
    }
    EXPECT_EQ(finishes, size);  // each chunk is finished once, by its owner
    for (int m = 0; m < size; ++m) {
      for (int64_t i = 0; i < n; ++i) {
        int chunk = 0;
        while (n * (chunk + 1) / size <= i) ++chunk;
        // Member m reduces every chunk but its own, which it sends first, and receives
        // every chunk but m+1, which it finished.
        EXPECT_EQ(reduced[m][i], chunk == m ? 0 : 1) << "member " << m << " element " << i;
        EXPECT_EQ(copied[m][i], chunk == (m + 1) % size ? 0 : 1) << "member " << m << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tessera
