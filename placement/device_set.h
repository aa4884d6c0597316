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
};

class DeviceSet {
 public:
  DeviceSet() = default;
  // InvalidArgument when a name is not a full device name.
  Status Add(const std::string& full_name);

  // In placement priority order: GPU before CPU, then by job, replica, task and id.
  const std::vector<DeviceDescription>& devices() const { return devices_; }
  std::vector<std::string> Types() const;
  // "a, b, c": for error messages.
  std::string NamesString() const;

  // Higher runs first by default: GPU 210, CPU 100, anything else 0 (TensorFlow's order).
  static int TypePriority(const std::string& type);

 private:
  std::vector<DeviceDescription> devices_;
};

// "CPU, GPU": device types joined for messages.
std::string JoinDeviceTypes(const std::vector<std::string>& types);

}  // namespace tessera
