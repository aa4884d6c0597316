// Whole-step capture (gpu_options.capture_steps, off by default): a step whose work all goes
// into one GPU's compute stream is recorded once, as a CUDA graph, and replayed on later
// steps, so a step costs the host one launch instead of one per kernel. PyTorch does this by
// hand with torch.cuda.graphs; TensorFlow 1.x has no such thing.
//
// A step qualifies when it runs on one GPU alone (one partition), has no feeds or fetches
// (those would need fixed buffers; such steps are the ones a training loop repeats, with
// every tenth or hundredth fetching a loss), and each of its nodes does the same work every
// step given the same shapes (CaptureBlocker). Values the GPU's host side computes for its
// kernels (shapes, counts) are copied in as they were when the step was recorded: in a step
// of fixed shapes on one device they come from constants and shapes alone. Its first kWarmupSteps run normally, so that
// convolutions are autotuned and memory has grown; the next is recorded on the calling
// thread, the device handing out memory that the recording keeps for its replays, and run
// once by launching it. Before each replay the variables the step reads must still have the
// buffers they had when it was recorded; if one moved (an Assign in another step, a restore),
// the step runs normally, says so in the log, and is recorded again after the warm-up. A
// step that cannot be recorded (a kernel that waits for the GPU, an unsupported call) fails
// with that error and runs normally from then on; either way the log says so once.
//
//   auto capture = std::make_unique<StepCapture>(signature, device, resource_mgr, partition_graph);
//   Status s = capture->Run(session_steps,
//                           [&] { return RunPartitions(...); },        // the step as usual
//                           [&] { return executor->Run(args_without_runner); });  // all on this thread
//
// A recording takes the GPU's compute stream for itself: whatever else is queued there
// meanwhile would be recorded instead of run. The session's other steps wait for it
// (`session_steps`, which they hold shared); another session's steps on the same GPU are
// not held back, so a session that records should have its GPU to itself.
// StepCapture::Run may be called concurrently: steps of one signature run one at a time.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera {

class Device;
class ResourceMgr;

// Why a partition's step cannot be recorded, naming a node and its op; "" when it can.
std::string CaptureBlocker(const Graph& partition);

// A device's recording of one step (Device::NewStepRecording).
class StepRecording {
 public:
  virtual ~StepRecording() = default;
  // Calls `step`, which enqueues the step's work on the calling thread, with the device
  // recording that work instead of running it. An error leaves nothing recorded.
  virtual Status Record(const std::function<Status()>& step) = 0;
  // Runs the recorded work once more, after whatever the device has queued.
  virtual Status Replay() = 0;
};

class StepCapture {
 public:
  static constexpr int kWarmupSteps = 2;

  // `partition` is the step's one partition, on `device`; all three must outlive this.
  StepCapture(std::string signature, Device* device, ResourceMgr* resources, const Graph& partition);
  ~StepCapture();

  // Runs one step: by `run_normally`, by recording `run_on_this_thread` (every kernel run on
  // the calling thread), or by replaying the recording.
  // `session_steps` is held shared by every other step of the session, and here exclusively
  // while recording.
  Status Run(std::shared_mutex& session_steps, const std::function<Status()>& run_normally,
             const std::function<Status()>& run_on_this_thread);

 private:
  // The buffers of the step's variables now; an error when one is missing or uninitialized.
  StatusOr<std::vector<const void*>> VariableBuffers() const;
  Status Record(const std::function<Status()>& run_normally, const std::function<Status()>& run_on_this_thread);
  void LogOnce(const std::string& what);

  const std::string signature_;
  Device* const device_;
  ResourceMgr* const resources_;
  std::vector<std::pair<std::string, std::string>> variables_;  // (container, shared_name) of its VariableV2s
  std::mutex mu_;
  int normal_runs_ = 0;                          // guarded by mu_: since the last recording was dropped
  bool given_up_ = false;                        // guarded by mu_
  std::unique_ptr<StepRecording> recording_;     // guarded by mu_
  std::vector<const void*> recorded_buffers_;    // guarded by mu_: of variables_, when recorded
  std::vector<std::string> logged_;              // guarded by mu_
};

}  // namespace tessera
