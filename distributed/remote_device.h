// RemoteDevice: a device of some task of a cluster as that task describes it (GetStatus),
// what a master places over and a client lists. A plain value; DescribeDevice is pure.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/device_mgr.h"

namespace tessera {

struct RemoteDevice {
  std::string name;  // "/job:ps/replica:0/task:0/device:CPU:0"
  std::string device_type;
  int64_t memory_limit = 0;  // bytes; 0 when the device shares its host's memory
  std::string physical_device_desc;
  uint64_t incarnation = 0;  // changes when the task restarts
};

// How a task describes one of its own devices.
inline RemoteDevice DescribeDevice(const Device& d) {
  return {d.name(), d.device_type(), d.attributes().memory_limit, d.attributes().physical_device_desc,
          d.incarnation()};
}

}  // namespace tessera
