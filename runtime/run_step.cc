#include "runtime/run_step.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "runtime/deadline.h"
#include "runtime/local_function_runtime.h"

namespace tessera {

StatusOr<std::unique_ptr<Executor>> CreatePartitionExecutor(std::unique_ptr<Graph> graph, Device* device,
                                                            ResourceMgr* resources) {
  for (Node* n : graph->nodes()) n->set_assigned_device(device->name());
  Executor::Params params;
  params.resource_mgr = resources;
  params.function_runtime = LocalFunctionRuntime();
  params.lookup_device = [device](const Node&) -> StatusOr<DeviceBase*> { return static_cast<DeviceBase*>(device); };
  return Executor::Create(std::move(graph), std::move(params));
}

namespace {

struct PartitionRunOptions {
  ThreadPool* pool = nullptr;
  std::chrono::milliseconds timeout{0};
  std::function<bool()> abandoned;
  std::vector<std::vector<NodeExecStats>>* stats = nullptr;  // one entry per executor
};

// Runs the executors together and waits for all of them; args.cancellation must be set.
Status RunPartitions(const std::vector<const Executor*>& executors, const Executor::Args& args,
                     const PartitionRunOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = DeadlineAfter(options.timeout);
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    Status status;  // the first error, preferring a cause over the cancellations it caused
  };
  // On the stack: the callbacks use it, and this function waits for every one of them.
  Waiter w;
  w.pending = executors.size();
  auto part_done = [&w](const Status& s) {
    std::lock_guard<std::mutex> lock(w.mu);
    if (!s.ok() && (w.status.ok() || (w.status.code() == Code::kCancelled && s.code() != Code::kCancelled))) {
      w.status = s;
    }
    if (--w.pending == 0) w.cv.notify_all();
  };
  const bool keep_time = deadline.has_value() || options.abandoned != nullptr;
  // Every partition but the first starts on the pool, the first on this thread, unless this
  // thread keeps the time: then only a thread of the pool may be held by a long kernel.
  for (size_t i = executors.size(); i-- > 0;) {
    Executor::Args part_args = args;
    if (options.stats != nullptr) part_args.stats = &(*options.stats)[i];
    const Executor* executor = executors[i];
    if (i == 0 && !keep_time) {
      executor->RunAsync(part_args, part_done);
    } else {
      options.pool->Schedule([executor, part_args, part_done] { executor->RunAsync(part_args, part_done); });
    }
  }
  bool timed_out = false;
  {
    std::unique_lock<std::mutex> lock(w.mu);
    bool cancelled = false;
    while (keep_time && !cancelled && w.pending > 0) {
      Clock::time_point until = deadline.value_or(Clock::time_point::max());
      if (options.abandoned != nullptr) until = std::min(until, Clock::now() + std::chrono::milliseconds(50));
      if (w.cv.wait_until(lock, until, [&] { return w.pending == 0; })) break;
      timed_out = deadline.has_value() && Clock::now() >= *deadline;
      if (timed_out || (options.abandoned != nullptr && options.abandoned())) {
        cancelled = true;
        lock.unlock();
        args.cancellation->StartCancel();
        lock.lock();
      }
    }
    w.cv.wait(lock, [&] { return w.pending == 0; });
  }
  Status status = w.status;
  if (timed_out && (status.ok() || status.code() == Code::kCancelled)) {
    status = errors::DeadlineExceeded("Timed out after ", options.timeout.count(), " ms",
                                      status.ok() ? "" : ": " + status.message());
  }
  return status;
}

}  // namespace

Status RunStep(const std::vector<const Executor*>& executors, const StepRun& run) {
  if (run.rendezvous != nullptr) {
    // An error or deadline anywhere wakes every receive still waiting, on every device.
    run.cancellation->RegisterCallback(run.cancellation->NewToken(), [r = run.rendezvous] {
      r->StartAbort(errors::Cancelled("Step was cancelled"));
    });
  }
  ResourceMgr step_resources;  // what lives for this step only (stacks)
  Executor::Args args;
  args.step_id = run.step_id;
  args.step_resources = &step_resources;
  args.call_frame = run.call_frame;
  args.runner = run.pool;
  args.cancellation = run.cancellation;
  args.rendezvous = run.rendezvous;
  std::vector<std::vector<NodeExecStats>> stats(run.stats != nullptr ? executors.size() : 0);
  PartitionRunOptions options;
  options.pool = run.pool;
  options.timeout = run.timeout;
  options.abandoned = run.abandoned;
  options.stats = run.stats != nullptr ? &stats : nullptr;
  Status status = RunPartitions(executors, args, options);
  if (run.stats != nullptr) {
    for (auto& part : stats) {
      for (NodeExecStats& s : part) {
        if (!s.node.empty()) run.stats->push_back(std::move(s));
      }
    }
  }
  return status;
}

}  // namespace tessera
