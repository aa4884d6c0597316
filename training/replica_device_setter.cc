#include "training/replica_device_setter.h"

#include <algorithm>
#include <memory>

#include "graph/device_name.h"
#include "graph/graph.h"

namespace tessera {
namespace {

// The bytes a variable node will hold: its shape attr times its dtype's size; unknown
// dimensions count as one element.
int64_t VariableBytes(const Node& node) {
  TensorShape shape;
  DataType dtype = DataType::kInvalid;
  if (!node.GetAttr("shape", &shape).ok() || !node.GetAttr("dtype", &dtype).ok() || shape.unknown_rank()) return 0;
  int64_t elements = 1;
  for (int i = 0; i < shape.rank(); ++i) elements *= std::max<int64_t>(shape.dim(i), 1);
  return elements * static_cast<int64_t>(DataTypeSize(dtype));
}

}  // namespace

StatusOr<DeviceFunction> ReplicaDeviceSetter(ReplicaDeviceSetterOptions options) {
  if (options.ps_tasks < 0) return errors::InvalidArgument("ps_tasks must be 0 or more, got ", options.ps_tasks);
  ASSIGN_OR_RETURN(DeviceName ps, DeviceName::Parse(options.ps_device));
  ASSIGN_OR_RETURN(DeviceName worker, DeviceName::Parse(options.worker_device));
  struct State {
    int next = 0;                // round robin
    std::vector<int64_t> bytes;  // by size: what each ps task holds so far
  };
  auto state = std::make_shared<State>();
  state->bytes.assign(options.ps_tasks, 0);
  return DeviceFunction([options = std::move(options), ps, worker, state](const Node& node) {
    StatusOr<DeviceName> parsed = DeviceName::Parse(node.requested_device());
    DeviceName device = parsed.ok() ? *parsed : DeviceName();
    const bool on_ps = options.ps_tasks > 0 &&
                       std::find(options.ps_ops.begin(), options.ps_ops.end(), node.op()) != options.ps_ops.end();
    if (!on_ps) {
      device.FillFrom(worker);
      return device.ToString();
    }
    DeviceName chosen = ps;
    // A variable that names another job keeps it, and its task with it.
    if (ps.has_job && (!device.has_job || device.job == ps.job)) {
      int task = 0;
      if (options.strategy == PsStrategy::kRoundRobin) {
        task = state->next;
        state->next = (state->next + 1) % options.ps_tasks;
      } else {
        task = static_cast<int>(std::min_element(state->bytes.begin(), state->bytes.end()) - state->bytes.begin());
        state->bytes[task] += VariableBytes(node);
      }
      chosen.has_task = true;
      chosen.task = task;
    }
    device.FillFrom(chosen);
    return device.ToString();
  });
}

}  // namespace tessera
