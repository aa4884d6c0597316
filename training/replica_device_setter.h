// ReplicaDeviceSetter: TensorFlow's tf.train.replica_device_setter, the device function of
// between-graph replication. Every worker builds the same graph under it: the variables go
// to the ps tasks, spread round-robin or by size, and every other op to the worker's own
// device, so that each worker's session updates the one copy of the variables on the ps.
//
//   Scope model = root.WithDeviceFunction(*ReplicaDeviceSetter(
//       {.ps_tasks = 2, .worker_device = "/job:worker/task:1"}));
//   auto w = ops::Variable(model.WithOpName("w"), ...);   // /job:ps/task:0
//   auto b = ops::Variable(model.WithOpName("b"), ...);   // /job:ps/task:1
//   auto y = ops::MatMul(model, x, w);                    // /job:worker/task:1
//
// A device the op asks for itself wins field by field over the one chosen here (TF's
// merge_devices). Ops colocated with a variable (its initializer's Assign, an optimizer's
// apply ops and slots) follow the variable by colocation. The returned function keeps the
// strategy's state and is not thread-safe: one graph is built on one thread.
#pragma once

#include <string>
#include <vector>

#include "graph/builder/scope.h"

namespace tessera {

enum class PsStrategy {
  kRoundRobin,  // the i-th variable on task i % ps_tasks
  kBySize,      // each variable on the task holding the fewest bytes so far (TF's greedy strategy)
};

struct ReplicaDeviceSetterOptions {
  int ps_tasks = 0;  // 0 places everything on the worker
  std::string ps_device = "/job:ps";
  std::string worker_device = "/job:worker";
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // The ops that live on the ps: the variables.
  std::vector<std::string> ps_ops = {"VariableV2"};
};

// InvalidArgument for a ps_device or worker_device that is not a device name, or a
// negative ps_tasks.
StatusOr<DeviceFunction> ReplicaDeviceSetter(ReplicaDeviceSetterOptions options);

}  // namespace tessera
