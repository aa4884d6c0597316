// FIFOQueue throughput between two threads: a producer enqueues small tensors while the
// benchmark thread dequeues them, through Session::Run (what a program does) and on the
// Queue resource directly (the queue's own cost).
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>

#include "graph/builder/ops.h"
#include "kernels/resources/queue.h"
#include "runtime/session.h"

namespace tessera::bench {
namespace {

void BM_FifoQueueThroughSessions(benchmark::State& state) {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueue(root.WithOpName("q"), {DataType::kFloat}, {.shapes = {TensorShape({4})}, .capacity = 1000});
  auto x = ops::Placeholder(root.WithOpName("x"), DataType::kFloat);
  ops::QueueEnqueue(root.WithOpName("enqueue"), q, {x});
  ops::QueueDequeue(root.WithOpName("dequeue"), q, {DataType::kFloat});
  ops::QueueClose(root.WithOpName("close"), q, true);
  GraphSpec def;
  (void)root.ToSpec(&def);
  SessionConfig config;
  config.inter_op_parallelism_threads = 1;
  config.intra_op_parallelism_threads = 1;
  auto created = Session::Create(config, def);
  if (!created.ok()) {
    state.SkipWithError(created.status().ToString().c_str());
    return;
  }
  std::unique_ptr<Session> session = std::move(*created);
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    std::vector<Tensor> out;
    Tensor t = Tensor::FromVector<float>({1, 2, 3, 4});
    while (!stop && session->Run({{"x", t}}, {}, {"enqueue"}, &out).ok()) {
    }
  });
  std::vector<Tensor> out;
  for (auto _ : state) {
    Status s = session->Run({}, {"dequeue"}, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  stop = true;
  (void)session->Run({}, {}, {"close"}, &out);
  producer.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FifoQueueThroughSessions)->UseRealTime();

void BM_FifoQueueDirect(benchmark::State& state) {
  auto q = std::make_shared<Queue>(Queue::Options{.kind = Queue::Kind::kFifo, .name = "q", .capacity = 1000,
                                                  .dtypes = {DataType::kFloat}, .shapes = {TensorShape({4})}});
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    Tensor t = Tensor::FromVector<float>({1, 2, 3, 4});
    while (!stop) {
      std::atomic<bool> done{false};
      Status status;
      q->Enqueue({t}, nullptr, [&](const Status& s) {
        status = s;
        done = true;
      });
      while (!done) std::this_thread::yield();
      if (!status.ok()) return;
    }
  });
  for (auto _ : state) {
    std::atomic<bool> done{false};
    q->Dequeue(1, Queue::kOne, nullptr, [&](const Status& s, Queue::Tuple) { done = true; });
    while (!done) std::this_thread::yield();
  }
  stop = true;
  q->Close(true);
  producer.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FifoQueueDirect)->UseRealTime();

}  // namespace
}  // namespace tessera::bench

BENCHMARK_MAIN();
