// RemoteDevice: a device of some task of a cluster as that task describes it (GetStatus),
// what a master places over and a client lists. A plain value.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct RemoteDevice {
  std::string name;  // "/job:ps/replica:0/task:0/device:CPU:0"
  std::string device_type;
  int64_t memory_limit = 0;  // bytes; 0 when the device shares its host's memory
  std::string physical_device_desc;
  uint64_t incarnation = 0;  // changes when the task restarts
};

}  // namespace tessera
