// SessionConfig, RunOptions and RunMetadata: what a session is told and what a step reports.
// Field names are TensorFlow 1.x's ConfigProto/RunOptions names, so a CONFIG.json for
// `tessera run` reads like the Python config it mirrors:
//
//   {"inter_op_parallelism_threads": 2, "device_count": {"CPU": 4},
//    "allow_soft_placement": true, "log_device_placement": true}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/platform/status.h"
#include "graph/node_def.h"
#include "placement/placement_record.h"
#include "runtime/step_stats.h"

namespace tessera {

struct SessionConfig {
  int inter_op_parallelism_threads = 0;  // 0: one per core
  int intra_op_parallelism_threads = 0;  // 0: one per core
  // Pools of this session's own instead of the process-wide pools shared by sessions.
  bool use_per_session_threads = false;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  std::map<std::string, int> device_count;  // {"CPU": 4} makes CPU:0..3
  int64_t operation_timeout_in_ms = 0;      // 0: no deadline
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
};

struct RunMetadata {
  // One entry per node that ran, when trace_level is kFullTrace.
  std::vector<NodeExecStats> step_stats;
  // Where every node of this step's graph runs and why.
  std::vector<PlacementRecord> placement;
  // With output_partition_graphs: one graph per device, in device-name order, with the
  // _Send/_Recv pairs partitioning added; each NodeDef's `device` is its device.
  std::vector<GraphDef> partition_graphs;
};

}  // namespace tessera
