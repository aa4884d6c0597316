// StepPlan: what one signature (feeds, fetches, targets) of a placed graph runs, made once
// per signature by every kind of session: the part of the graph the step needs, with feeds
// from _Arg and fetches to _Retval nodes (subgraph.h); rewritten (graph_rewrites.h); split
// into one graph per device joined by _Send/_Recv pairs (partition.h), each knowing its
// task. A direct session makes an executor of every partition; a master registers each
// task's partitions with that task's worker. The graphs go from stage to stage as Graphs:
// none is written out as a GraphSpec on the way.
//
//   ASSIGN_OR_RETURN(StepPlan plan, BuildStepPlan(graph, placement, feeds, fetches, targets,
//                                                 {.rewrites = RewriteOptionsOf(config),
//                                                  .incarnation = incarnation_of}));
//   for (auto& [device, partition] : plan.partitions) ... partition.graph ...
//
// Pure function of its inputs; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "placement/placement_record.h"
#include "runtime/graph_rewrites.h"
#include "runtime/partition.h"
#include "runtime/subgraph.h"

namespace tessera {

struct StepPlanOptions {
  RewriteOptions rewrites;
  // The incarnation of a device, by its full name (part of every rendezvous key it sends).
  std::function<uint64_t(const std::string& device)> incarnation;
  // The host a device's task runs on (PartitionOptions::host).
  std::function<std::string(const std::string& device)> host{};
  std::chrono::milliseconds collective_timeout{0};  // PartitionOptions::collective_timeout
};

struct StepPlan {
  std::vector<SubgraphTensor> feeds;    // in the order asked
  std::vector<SubgraphTensor> fetches;  // in the order asked
  // Where each node of the step went and why, before the rewrites: what RunMetadata reports.
  std::vector<PlacementRecord> placement;
  // By device; each names its task.
  std::map<std::string, DevicePartition> partitions;
};

// `placement` is the placer's record of every node of `placed`, by node id. The errors are
// BuildSubgraph's (a feed, fetch or target the graph does not have), the rewrites' and
// Partition's.
StatusOr<StepPlan> BuildStepPlan(const Graph& placed, const std::vector<PlacementRecord>& placement,
                                 const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                                 const std::vector<std::string>& targets, const StepPlanOptions& options);

}  // namespace tessera
