#include "kernels/resource_mgr.h"

namespace tessera {

ResourceMgr::ResourceMgr(std::string default_container)
    : default_container_(std::move(default_container)) {}

void ResourceMgr::Cleanup(const std::vector<std::string>& containers) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& c : containers) containers_.erase(Resolve(c));
}

std::vector<std::string> ResourceMgr::ContainerNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, resources] : containers_) names.push_back(name);
  return names;
}

}  // namespace tessera
