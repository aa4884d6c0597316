// Whole-step capture (gpu_options.capture_steps, off by default): a step whose work all goes
// into one GPU's compute stream is recorded once by the device (devices/step_recording.h)
// and replayed on later steps, so a step costs the host one launch instead of one per
// kernel. PyTorch does this by hand with its GPU graphs; TensorFlow 1.x has no such thing.
//
// A step qualifies when it runs on one GPU alone (one partition) and each of its nodes does
// the same work every step given the same shapes (CaptureBlocker). Values the GPU's host side
// computes for its kernels (shapes, counts) are copied in as they were when the step was
// recorded: in a step of fixed shapes on one device they come from constants and shapes
// alone. Feeds and fetches go through fixed buffers in pinned host memory: the recording
// copies each feed from its buffer and each fetch into its buffer, so a replay takes new
// feeds written into the buffers first (once the last replay has read them) and hands back
// copies of the fetches once it has run. A feed of another dtype or shape than recorded
// makes the step run normally, and the log says so once. Its first kWarmupSteps run
// normally, so that convolutions are autotuned and memory has grown; the next is recorded on
// the calling thread, the device handing out memory that the recording keeps for its
// replays, and run once by launching it. Before each replay the variables the step reads
// must still have the buffers they had when it was recorded; if one moved (an Assign in
// another step, a restore), the step runs normally, says so in the log, and is recorded again
// after the warm-up. A step that cannot be recorded (a kernel that waits for the GPU, an
// unsupported call) fails with that error and runs normally from then on; either way the log
// says so once.
//
//   auto capture = std::make_unique<StepCapture>(signature, device, resource_mgr, partition_graph);
//   Status s = capture->Run(session_steps, &call_frame,
//                           [&] { return RunStep(...); },          // the step as usual, with call_frame
//                           [&](CallFrame* frame) { return executor->Run(args_on_this_thread(frame)); });
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

#include "devices/step_recording.h"
#include "graph/graph.h"

namespace tessera {

class CallFrame;
class Device;
class ResourceMgr;
class VectorCallFrame;

// Why a partition's step cannot be recorded, naming a node and its op; "" when it can.
std::string CaptureBlocker(const Graph& partition);

class StepCapture {
 public:
  static constexpr int kWarmupSteps = 2;

  // `partition` is the step's one partition, on `device`; all three must outlive this.
  StepCapture(std::string signature, Device* device, ResourceMgr* resources, const Graph& partition);
  ~StepCapture();

  // Runs one step of `frame`'s feeds and fetches: by `run_normally`, which uses `frame`; by
  // recording `run_on_this_thread` (every kernel run on the calling thread) over the fixed
  // buffers' frame it is given; or by replaying the recording, the fetches then set in
  // `frame`. `session_steps` is held shared by every other step of the session, and here
  // exclusively while recording.
  Status Run(std::shared_mutex& session_steps, VectorCallFrame* frame, const std::function<Status()>& run_normally,
             const std::function<Status(CallFrame*)>& run_on_this_thread);

 private:
  // The buffers of the step's variables now; an error when one is missing or uninitialized.
  StatusOr<std::vector<const void*>> VariableBuffers() const;
  Status Record(VectorCallFrame* frame, const std::function<Status()>& run_normally,
                const std::function<Status(CallFrame*)>& run_on_this_thread);
  // Whether `frame`'s feeds have the recorded buffers' dtypes and shapes.
  bool FeedsFit(const VectorCallFrame& frame) const;
  // Writes `frame`'s feeds into the fixed buffers, once the last replay has read them.
  Status WriteFeeds(const VectorCallFrame& frame);
  // Sets `frame`'s fetches to copies of the fixed buffers, once the replay has written them.
  Status ReadFetches(VectorCallFrame* frame);
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
  std::vector<Tensor> fixed_feeds_;              // guarded by mu_: the recording's feed buffers
  std::vector<Tensor> fixed_fetches_;            // guarded by mu_: what the recording fetches into
  std::vector<std::string> logged_;              // guarded by mu_
};

}  // namespace tessera
