// Placer: assigns every node of a graph to a device, with TensorFlow 1.x's rules.
//
//   1. A node that already has an assigned device keeps it.
//   2. Otherwise its requested device (scope string or device function), merged over its
//      colocation group, must match a device whose type has a kernel for every member.
//   3. Otherwise the default: the first device, in priority order (GPU before CPU), of a
//      type that has kernels for the whole group.
//   TensorFlow's two heuristics apply: a generator (no inputs, one non-reference output)
//   with no request goes with its consumers when they share one device, and a metadata op
//   (Shape) or a pass-through Identity goes with its input.
//
// A request no device can satisfy is InvalidArgument ("Cannot assign a device for operation
// ..."), unless allow_soft_placement, which falls back to a supported device and says why.
//
//   Placer placer(graph, devices, {.allow_soft_placement = true});
//   StatusOr<std::vector<PlacementRecord>> records = placer.Run();
//
// Run sets each node's assigned device; the records say where and why, so an embedder can
// show the placement without reading the log. Not thread-safe: one Run at a time per graph.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "kernels/kernel_registry.h"
#include "placement/device_set.h"
#include "placement/placement_record.h"

namespace tessera {

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Writes "Device mapping:" and one "<name>: (<Op>): <device>" line per node to the log.
  bool log_device_placement = false;
};

class Placer {
 public:
  // All arguments are borrowed and must outlive the Placer.
  Placer(Graph* graph, const DeviceSet& devices, PlacerOptions options = {},
         const KernelRegistry* kernels = KernelRegistry::Global());

  StatusOr<std::vector<PlacementRecord>> Run();

 private:
  Graph* graph_;
  const DeviceSet& devices_;
  const PlacerOptions options_;
  const KernelRegistry* kernels_;
};

// The placement log: "Device mapping:", a line per device, then a line per node.
std::string PlacementLog(const DeviceSet& devices, const std::vector<PlacementRecord>& records);

}  // namespace tessera
