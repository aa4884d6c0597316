// Coordinator: stops a group of threads together, as tf.train.Coordinator does. Threads
// poll ShouldStop() (or block in WaitForStop); any of them may RequestStop, or
// ReportStatus an error, which also stops the rest; Join waits for the registered runners
// and returns the first error reported.
//
//   Coordinator coord;
//   QueueRunner runner(...);
//   runner.Start(session.get(), &coord);     // registers itself
//   while (!coord.ShouldStop()) { ... train ... }
//   coord.RequestStop();
//   Status s = coord.Join(std::chrono::seconds(10));
//
// All methods are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

// What a Coordinator waits for: something running threads of its own.
class Runner {
 public:
  virtual ~Runner() = default;
  // Waits for the runner's threads; returns the first error they met. Called once.
  virtual Status Join() = 0;
  // True while any of its threads still runs.
  virtual bool IsRunning() const = 0;
  // For messages: what this runner is.
  virtual std::string Name() const = 0;
};

class Coordinator {
 public:
  Coordinator() = default;
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  void RequestStop();
  bool ShouldStop() const;
  // Blocks until RequestStop; false when `timeout` passed first.
  bool WaitForStop(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Records the first error and requests a stop; OK statuses and errors after the first are
  // ignored.
  void ReportStatus(const Status& status);
  Status status() const;

  // `runner` must stay alive until Join returns.
  void RegisterRunner(Runner* runner);
  // Does not request a stop itself: waits until someone has, then gives the runners
  // `grace` to finish. Returns the first error reported (by ReportStatus or a runner's
  // Join), or DeadlineExceeded naming the runners still running after the grace period.
  Status Join(std::chrono::milliseconds grace = std::chrono::seconds(120));

 private:
  mutable std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stop_ = false;             // guarded by mu_
  Status status_;                 // guarded by mu_: the first error
  std::vector<Runner*> runners_;  // guarded by mu_
};

}  // namespace tessera
