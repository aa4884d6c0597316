// Partition: splits a placed graph into one graph per device. Every data edge between
// devices becomes a _Send on the producer's device and a _Recv on the consumer's, keyed
// "src_device;src_incarnation;dst_device;tensor_name;0:0" (tensor_name is "node:output");
// all consumers of one tensor on one device share one pair. A control edge between
// devices becomes a _Send of an empty tensor (from a Const run after the source) and a
// _Recv the destination waits on. AllReduce groups get their ring places
// (collective_rings.h).
//
// An argument a kernel keeps in host memory (KernelDefBuilder::HostMemory) is honoured: the
// end of a cross-device pair whose tensor is in host memory is a _HostSend or _HostRecv,
// and an edge within one device between host and device memory gets such a pair too, so
// the rendezvous copies the tensor where the consumer wants it.
//
//   auto parts = Partition(placed, {.incarnation = [&](const std::string& d) { ... }});
//   for (auto& [device, part] : *parts) ... Executor::Create(std::move(part.graph), ...) ...
//
// Control flow (Switch, Merge, loops) may span devices, as in TensorFlow: a dead value
// crosses as a dead value, an edge inside a loop gets one key per frame and iteration, and
// each device with such an edge follows the loop with a control loop of its own. The loops'
// plumbing (Switch, Exit, Enter, NextIteration) runs beside the nodes it serves, whatever
// device the placer gave it.
//
// A reference edge (a variable's ref output read through a ref input) never crosses
// devices: the placer colocates them. A value read of a variable on another device is
// taken when the _Send runs. Pure function; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "graph/device_name.h"
#include "graph/graph.h"
#include "kernels/kernel_registry.h"

namespace tessera {

struct PartitionOptions {
  // The incarnation of a device, by its full name.
  std::function<uint64_t(const std::string& device)> incarnation;
  // The host name or address a device's task runs on; null: every device is in this process.
  std::function<std::string(const std::string& device)> host{};
  // How long a collective between tasks waits for a member: the session's operation
  // timeout; 0 leaves the collective's own.
  std::chrono::milliseconds collective_timeout{0};
  // Which arguments each node's kernel keeps in host memory.
  const KernelRegistry* kernels = KernelRegistry::Global();
};

struct DevicePartition {
  // The task the device belongs to, "/job:worker/replica:0/task:1": where a cluster's
  // master registers the graph, and what tells a pair within a process from one between.
  std::string task;
  // The device's graph, assembled from the placed graph's nodes without a GraphSpec between
  // (Graph::Assemble); every node is requested and assigned on the device.
  std::unique_ptr<Graph> graph;
};

// Device name -> that device's partition. InvalidArgument for a node without an assigned
// device or a reference edge between devices.
StatusOr<std::map<std::string, DevicePartition>> Partition(const Graph& placed, const PartitionOptions& options);

// "/job:<job>/replica:<r>/task:<t>" of a full device name.
std::string TaskOf(const DeviceName& device);

}  // namespace tessera
