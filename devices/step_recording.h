// StepRecording: a device's recording of one step's work, replayed as a whole on later steps
// (Device::NewStepRecording; runtime/step_capture.h decides when). The GPU provider records
// what a step enqueues on its compute stream; the CPU cannot record. A recording is used by
// one thread at a time.
#pragma once

#include <functional>
#include <vector>

#include "graph/platform/status.h"
#include "graph/tensor.h"

namespace tessera {

// A device's recording of one step (Device::NewStepRecording).
class StepRecording {
 public:
  virtual ~StepRecording() = default;
  // Calls `step`, which enqueues the step's work on the calling thread, with the device
  // recording that work instead of running it. `fixed_inputs` are host buffers the step
  // copies to the device (its feeds): each replay reads them afresh, where other host
  // values are recorded as they were. An error leaves nothing recorded.
  virtual Status Record(const std::function<Status()>& step, const std::vector<Tensor>& fixed_inputs) = 0;
  // Runs the recorded work once more, after whatever the device has queued.
  virtual Status Replay() = 0;
  // Returns once the replays launched so far have run: the host buffers they write are
  // then filled, and those they read may be rewritten.
  virtual Status Wait() = 0;
};

}  // namespace tessera
