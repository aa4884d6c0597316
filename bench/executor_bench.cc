// Executor overhead per node: graphs of 100,000 NoOps joined by control edges, run by
// Tessera's executor and by a oneTBB flow graph of continue_nodes of the same shape, at 1
// and 2 threads. Reported as ns/node (time of one whole graph run / nodes).
// BM_WhileLoop: a counting while_loop (TensorFlow 1.x's Enter/Merge/Switch/NextIteration/
// Exit) of 1,000 iterations beside 0 or 100,000 idle NoOps, reported as ns/iteration: an
// iteration should cost what its own nodes do, whatever the size of the graph around it.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "bench/graphs.h"
#include "runtime/device_mgr.h"
#include "runtime/executor.h"

namespace tessera::bench {
namespace {

constexpr int kNodes = 100000;

enum Kind { kChain, kFanOut, kDag };

const Shape& GetShape(int kind) {
  static const Shape shapes[] = {Chain(kNodes), FanOutFanIn(kNodes), RandomDag(kNodes)};
  return shapes[kind];
}

std::unique_ptr<Graph> NoOpGraph(const Shape& shape) {
  std::vector<std::vector<int>> deps(shape.num_nodes);
  for (auto [src, dst] : shape.edges) deps[dst].push_back(src);
  auto g = std::make_unique<Graph>();
  for (int i = 0; i < shape.num_nodes; ++i) {
    NodeSpec def;
    def.name = StrCat("n", i);
    def.op = "NoOp";
    for (int src : deps[i]) def.inputs.push_back(StrCat("^n", src));
    Node* n = *g->AddNode(def);
    n->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");
  }
  return g;
}

void BM_Tessera(benchmark::State& state) {
  const Shape& shape = GetShape(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  auto inter_pool = ThreadPool::Create("inter_op", threads);
  auto intra_pool = ThreadPool::Create("intra_op", 1);
  ThreadPool& inter = **inter_pool;
  ThreadPool& intra = **intra_pool;
  auto devices = std::move(DeviceMgr::CreateLocal({{"CPU", 1}}, &intra, HostMemoryBytes()).value());
  Executor::Params params;
  params.lookup_device = [&](const Node&) -> StatusOr<DeviceBase*> { return devices->devices()[0]; };
  auto exec = Executor::Create(NoOpGraph(shape), params);
  if (!exec.ok()) {
    state.SkipWithError(exec.status().ToString().c_str());
    return;
  }
  Executor::Args args;
  args.runner = &inter;
  for (auto _ : state) {
    Status s = (*exec)->Run(args);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["ns/node"] = benchmark::Counter(static_cast<double>(state.iterations()) * shape.num_nodes,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_TbbFlowGraph(benchmark::State& state) {
  using namespace oneapi::tbb;
  const Shape& shape = GetShape(static_cast<int>(state.range(0)));
  const int threads = static_cast<int>(state.range(1));
  global_control limit(global_control::max_allowed_parallelism, threads);
  task_arena arena(threads);
  arena.execute([&] {
    flow::graph g;
    std::vector<int> preds(shape.num_nodes, 0);
    for (auto [src, dst] : shape.edges) ++preds[dst];
    std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
    nodes.reserve(shape.num_nodes);
    for (int i = 0; i < shape.num_nodes; ++i) {
      nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
          g, [](const flow::continue_msg&) { return flow::continue_msg(); }));
    }
    for (auto [src, dst] : shape.edges) flow::make_edge(*nodes[src], *nodes[dst]);
    std::vector<int> roots;
    for (int i = 0; i < shape.num_nodes; ++i) {
      if (preds[i] == 0) roots.push_back(i);
    }
    for (auto _ : state) {
      for (int r : roots) nodes[r]->try_put(flow::continue_msg());
      g.wait_for_all();
    }
  });
  state.counters["ns/node"] = benchmark::Counter(static_cast<double>(state.iterations()) * shape.num_nodes,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

std::unique_ptr<Graph> CountingLoop(int iterations, int idle_nodes) {
  const auto node = [](std::string name, std::string op, std::vector<std::string> inputs, AttrMap attrs) {
    NodeSpec def;
    def.name = std::move(name);
    def.op = std::move(op);
    def.inputs = std::move(inputs);
    def.attrs = std::move(attrs);
    return def;
  };
  const auto constant = [&](std::string name, int32_t value) {
    return node(std::move(name), "Const", {}, {{"dtype", DataType::kInt32}, {"value", Tensor::Scalar(value)}});
  };
  const auto enter = [&](std::string name, std::string input, bool is_constant) {
    return node(std::move(name), "Enter", {std::move(input)},
                {{"T", DataType::kInt32}, {"frame_name", std::string("loop")}, {"is_constant", is_constant},
                 {"parallel_iterations", int64_t{10}}});
  };
  const AttrMap t = {{"T", DataType::kInt32}};
  GraphSpec def;
  def.nodes = {constant("zero", 0), constant("limit", iterations), constant("one", 1),
               enter("i", "zero", false), enter("n", "limit", true), enter("step", "one", true),
               node("merge", "Merge", {"i", "next"}, {{"T", DataType::kInt32}, {"N", int64_t{2}}}),
               node("less", "Less", {"merge", "n"}, t), node("cond", "LoopCond", {"less"}, {}),
               node("switch", "Switch", {"merge", "cond"}, t), node("exit", "Exit", {"switch:0"}, t),
               node("add", "Add", {"switch:1", "step"}, t), node("next", "NextIteration", {"add"}, t)};
  for (int i = 0; i < idle_nodes; ++i) def.nodes.push_back(node(StrCat("idle", i), "NoOp", {}, {}));
  auto g = Graph::FromSpec(def);
  if (!g.ok()) return nullptr;
  for (Node* n : (*g)->nodes()) n->set_assigned_device("/job:localhost/replica:0/task:0/device:CPU:0");
  return std::move(*g);
}

void BM_WhileLoop(benchmark::State& state) {
  constexpr int kIterations = 1000;
  auto inter_pool = ThreadPool::Create("inter_op", 1);
  auto intra_pool = ThreadPool::Create("intra_op", 1);
  auto devices = std::move(DeviceMgr::CreateLocal({{"CPU", 1}}, &**intra_pool, HostMemoryBytes()).value());
  Executor::Params params;
  params.lookup_device = [&](const Node&) -> StatusOr<DeviceBase*> { return devices->devices()[0]; };
  auto graph = CountingLoop(kIterations, static_cast<int>(state.range(0)));
  auto exec = graph != nullptr ? Executor::Create(std::move(graph), params)
                               : StatusOr<std::unique_ptr<Executor>>(errors::Internal("the loop graph"));
  if (!exec.ok()) {
    state.SkipWithError(exec.status().ToString().c_str());
    return;
  }
  Executor::Args args;
  args.runner = &**inter_pool;
  for (auto _ : state) {
    Status s = (*exec)->Run(args);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["ns/iteration"] = benchmark::Counter(static_cast<double>(state.iterations()) * kIterations,
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "threads"});
  for (int kind : {kChain, kFanOut, kDag}) {
    for (int threads : {1, 2}) b->Args({kind, threads});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

BENCHMARK(BM_Tessera)->Apply(Args);
BENCHMARK(BM_TbbFlowGraph)->Apply(Args);
BENCHMARK(BM_WhileLoop)->ArgName("idle_nodes")->Arg(0)->Arg(kNodes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
