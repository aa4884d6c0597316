// DeviceSet: the devices a graph may be placed on, described as data (name and type), so
// the placer is pure logic and its tests can describe GPUs on a machine without one.
#pragma once

#include <string>
#include <vector>

#include "graph/device_name.h"

namespace tessera {

struct DeviceDescription {
  std::string name;  // full, e.g. "/job:localhost/replica:0/task:0/device:CPU:0"
  DeviceName parsed;
  std::string type;  // "CPU", "GPU"
  int priority = 0;  // of the type: higher is placed on first by default
  // The hardware behind it, for the placement log: "device: 0, name: NVIDIA H100 ...,
  // pci bus id: ..., compute capability: 9.0" for a GPU; empty for a CPU.
  std::string physical_device_desc;
  // In the process that places the graph. A cluster's master prefers its own task's devices
  // for nodes that ask for none, as TensorFlow's does.
  bool local = true;
};

class DeviceSet {
 public:
  DeviceSet() = default;
  // `priority` is the device type's (DeviceFactory: GPU 210, CPU 100). InvalidArgument when
  // a name is not a full device name.
  Status Add(const std::string& full_name, int priority, std::string physical_device_desc = "", bool local = true);

  // In placement priority order (GPU before CPU), local before remote, then by job,
  // replica, task and id.
  const std::vector<DeviceDescription>& devices() const { return devices_; }
  std::vector<std::string> Types() const;
  // "a, b, c": for error messages.
  std::string NamesString() const;

 private:
  std::vector<DeviceDescription> devices_;
};

// "CPU, GPU": device types joined for messages.
std::string JoinDeviceTypes(const std::vector<std::string>& types);

}  // namespace tessera
