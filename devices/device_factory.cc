#include "devices/device_factory.h"

#include <algorithm>
#include <mutex>

namespace tessera {

Status DeviceFactoryRegistry::Register(std::string type, int priority, std::unique_ptr<DeviceFactory> factory) {
  std::unique_lock lock(mu_);
  if (by_type_.count(type) != 0) return errors::AlreadyExists("Device type ", type, " already has a factory");
  by_type_.emplace(std::move(type), Registered{priority, std::move(factory)});
  return Status::OK();
}

DeviceFactory* DeviceFactoryRegistry::Find(std::string_view type) const {
  std::shared_lock lock(mu_);
  auto it = by_type_.find(type);
  return it == by_type_.end() ? nullptr : it->second.factory.get();
}

int DeviceFactoryRegistry::Priority(std::string_view type) const {
  std::shared_lock lock(mu_);
  auto it = by_type_.find(type);
  return it == by_type_.end() ? 0 : it->second.priority;
}

std::vector<std::string> DeviceFactoryRegistry::Types() const {
  std::shared_lock lock(mu_);
  std::vector<std::pair<int, std::string>> types;
  for (const auto& [type, entry] : by_type_) types.emplace_back(-entry.priority, type);
  std::sort(types.begin(), types.end());
  std::vector<std::string> names;
  for (auto& [priority, type] : types) names.push_back(std::move(type));
  return names;
}

}  // namespace tessera
