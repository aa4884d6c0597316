#include "placement/device_set.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace tessera {

Status DeviceSet::Add(const std::string& full_name, int priority, std::string physical_device_desc, bool local) {
  ASSIGN_OR_RETURN(DeviceName parsed, DeviceName::Parse(full_name));
  if (!parsed.IsFullySpecified()) {
    return errors::InvalidArgument("Device name '", full_name, "' is not a full device name");
  }
  devices_.push_back({parsed.ToString(), parsed, parsed.type, priority, std::move(physical_device_desc), local});
  std::stable_sort(devices_.begin(), devices_.end(), [](const auto& a, const auto& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.local != b.local) return a.local;
    return std::tie(a.parsed.job, a.parsed.replica, a.parsed.task, a.type, a.parsed.id) <
           std::tie(b.parsed.job, b.parsed.replica, b.parsed.task, b.type, b.parsed.id);
  });
  return Status::OK();
}

std::vector<std::string> DeviceSet::Types() const {
  std::vector<std::string> types;
  std::set<std::string> seen;
  for (const auto& d : devices_) {
    if (seen.insert(d.type).second) types.push_back(d.type);
  }
  return types;
}

std::string DeviceSet::NamesString() const {
  std::string s;
  for (const auto& d : devices_) s += (s.empty() ? "" : ", ") + d.name;
  return s;
}

std::string JoinDeviceTypes(const std::vector<std::string>& types) {
  std::string s;
  for (const std::string& t : types) s += (s.empty() ? "" : ", ") + t;
  return s;
}

}  // namespace tessera
