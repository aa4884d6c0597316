// SessionConfig, RunOptions and RunMetadata: what a session is told and what a step reports.
// Field names are TensorFlow 1.x's ConfigProto/RunOptions names, so a CONFIG.json for
// `tessera run` reads like the Python config it mirrors:
//
//   {"inter_op_parallelism_threads": 2, "device_count": {"CPU": 4},
//    "allow_soft_placement": true, "log_device_placement": true,
//    "gpu_options": {"allow_growth": true, "visible_device_list": "1,0",
//                    "experimental": {"virtual_devices": [{"memory_limit_mb": [2048, 2048]}]}}}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "devices/gpu_options.h"
#include "graph/graph_spec.h"
#include "graph/platform/status.h"
#include "placement/placement_record.h"
#include "runtime/step_stats.h"

namespace tessera {

class CancellationManager;

struct SessionConfig {
  int inter_op_parallelism_threads = 0;  // 0: one per core
  int intra_op_parallelism_threads = 0;  // 0: one per core
  // Pools of this session's own instead of the process-wide pools shared by sessions.
  bool use_per_session_threads = false;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  std::map<std::string, int> device_count;  // {"CPU": 4} makes CPU:0..3
  GpuOptions gpu_options;
  // The step graph's rewrites (runtime/graph_rewrites.h), each on unless turned off:
  // graph_options.rewrite_options.constant_folding, .remapping and .arithmetic_optimization
  // ("OFF" turns one off; "ON" and "DEFAULT" leave it on), graph_options.optimizer_options.
  // do_constant_folding and .do_common_subexpression_elimination (false turns one off).
  bool constant_folding = true;
  bool remapping = true;
  bool arithmetic_optimization = true;
  bool common_subexpression_elimination = true;
  int64_t operation_timeout_in_ms = 0;      // 0: no deadline
  // On a cluster: the only tasks a session uses, as partial device names ("/job:ps",
  // "/job:worker/task:1"); empty uses every task. What keeps a worker's session of
  // between-graph replication from waiting on the other workers.
  std::vector<std::string> device_filters;
  // What the session's tensors in host memory may hold together; an allocation past it is
  // ResourceExhausted naming the node. 0: the memory the process may use (the machine's,
  // or its cgroup's limit when lower). TensorFlow's ConfigProto has no such field.
  int64_t host_memory_limit_mb = 0;
  // host_memory_limit_mb in bytes, with 0 resolved.
  int64_t HostMemoryLimitBytes() const;

  // Unknown fields and values of the wrong type are InvalidArgument.
  static StatusOr<SessionConfig> FromJson(std::string_view text);
};

struct RunOptions {
  enum class TraceLevel { kNoTrace, kFullTrace };
  TraceLevel trace_level = TraceLevel::kNoTrace;
  int64_t timeout_in_ms = 0;  // overrides operation_timeout_in_ms when > 0
  // Report the per-device graphs the step ran (RunMetadata::partition_graphs).
  bool output_partition_graphs = false;
  // The caller's: StartCancel on it, from any thread, cancels this step as Session::Close
  // would (Run returns Cancelled) but leaves the session open; one already cancelled fails
  // the step before it starts. Borrowed for the length of Run; not TensorFlow's.
  CancellationManager* cancellation = nullptr;
};

// What one device's memory allocator holds, read when the step ends (TensorFlow reports
// the same per allocator in its step stats).
struct DeviceAllocationStats {
  std::string device;     // full name
  std::string allocator;  // "GPU_0_bfc", ...
  int64_t bytes_in_use = 0;       // when the step ended
  int64_t peak_bytes_in_use = 0;  // since the allocator was made
  int64_t num_allocs = 0;         // since the allocator was made
  int64_t bytes_limit = 0;        // 0 for a device sharing the host's memory limit
};

struct RunMetadata {
  // One entry per node that ran, when trace_level is kFullTrace.
  std::vector<NodeExecStats> step_stats;
  // One entry per device of the session, in device order; a device with memory of its own
  // also reports its pinned host allocator.
  std::vector<DeviceAllocationStats> allocation_stats;
  // Where every node of this step's graph runs and why.
  std::vector<PlacementRecord> placement;
  // With output_partition_graphs: one graph per device, in device-name order, with the
  // _Send/_Recv pairs partitioning added; each NodeSpec's `device` is its device.
  std::vector<GraphSpec> partition_graphs;
};

}  // namespace tessera
