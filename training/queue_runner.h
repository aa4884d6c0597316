// QueueRunner: threads that keep running enqueue ops until their queue closes or the
// Coordinator stops, as tf.train.QueueRunner does.
//
//   QueueRunner runner({.enqueue_ops = {"enqueue", "enqueue"},   // two threads
//                       .close_op = "close", .cancel_op = "close_cancel"});
//   Coordinator coord;
//   runner.Start(session.get(), &coord);
//   ... consumers dequeue until OutOfRange ...
//   coord.RequestStop();
//   Status s = coord.Join();
//
// Each thread runs its enqueue op in a loop. An OutOfRange or Cancelled from it means the
// queue was closed: the thread ends quietly. Any other error is reported to the
// coordinator, which stops every thread. When the last thread ends, the close op runs, so
// consumers drain what is left and then see OutOfRange. When the coordinator stops, the
// cancel op (a close that cancels pending enqueues) runs, so no thread stays blocked on a
// full queue.
//
// Start, Join and IsRunning may be called from any thread; the session must outlive the
// runner.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/session.h"
#include "training/coordinator.h"

namespace tessera {

struct QueueRunnerOptions {
  std::vector<std::string> enqueue_ops{};  // one thread per entry
  std::string close_op{};                  // run when the last thread ends; may be ""
  std::string cancel_op{};                 // run when the coordinator stops; may be ""
};

class QueueRunner : public Runner {
 public:
  explicit QueueRunner(QueueRunnerOptions options);
  // Stops the threads (running the cancel op) and joins them.
  ~QueueRunner() override;

  // FailedPrecondition if already started or there are no enqueue ops. `coordinator` may
  // be null; when given, the runner registers with it.
  Status Start(Session* session, Coordinator* coordinator = nullptr);
  Status Join() override;
  bool IsRunning() const override { return running_.load() > 0; }
  std::string Name() const override;

 private:
  void Loop(const std::string& enqueue_op);
  void RunOp(const std::string& op);

  const QueueRunnerOptions options_;
  Session* session_ = nullptr;
  Coordinator* coordinator_ = nullptr;
  std::vector<std::thread> threads_;
  std::thread watcher_;
  std::atomic<int> running_{0};
  std::atomic<bool> exiting_{false};
  std::mutex mu_;
  Status status_;  // guarded by mu_: the first error of any thread
};

}  // namespace tessera
