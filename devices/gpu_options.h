// GpuOptions: TensorFlow's GPUOptions, the part of a session's config (runtime/session_options.h)
// that the GPU provider reads when it makes devices. Plain data.
#pragma once

#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

// TensorFlow's GPUOptions, read by the GPU device: how much of each GPU a process takes and
// which GPUs it sees. A build or a machine without GPUs accepts and ignores them.
struct GpuOptions {
  // Take memory as tensors need it rather than the whole share at the first allocation.
  bool allow_growth = false;
  // The share of each GPU's memory this process may take, in (0, 1]; 0 leaves the default.
  double per_process_gpu_memory_fraction = 0;
  // "1,0": these physical GPUs, in this order, as GPU:0 and GPU:1; "" sees all.
  std::string visible_device_list;
  // visible_device_list as indices; empty for all. InvalidArgument when it is not a list
  // of distinct indices (FromJson has already refused such a list).
  StatusOr<std::vector<int>> VisibleDevices() const;
  // experimental.virtual_devices: for each visible GPU in order, the memory (MB) of each
  // logical GPU made on it; empty makes one logical GPU per physical GPU.
  std::vector<std::vector<double>> virtual_device_memory_limit_mb;
  // K > 0: K logical GPUs on each visible GPU without a virtual_devices entry, sharing what
  // that GPU would give one device equally (`tessera train --virtual-gpus K`; C++ only).
  int virtual_devices_per_gpu = 0;
  // MatMul and convolutions may use TF32 tensor cores (off: full float32, as TensorFlow 1.x).
  bool allow_tf32 = false;
  // Whole-step capture (runtime/step_capture.h): a step that runs on one GPU alone is
  // recorded once by the GPU and replayed after, its feeds and fetches through fixed
  // buffers. Not in TF.
  bool capture_steps = false;
};

// The indices of a visible_device_list ("1,0"); InvalidArgument, quoting it, when it is not
// a list of distinct indices in [0, 1024].
StatusOr<std::vector<int>> ParseVisibleDevices(const std::string& list);

}  // namespace tessera
