#include "kernels/resource_mgr.h"

namespace tessera {

ResourceMgr::ResourceMgr(std::string default_container)
    : default_container_(std::move(default_container)) {}

void ResourceMgr::Cleanup(const std::vector<std::string>& containers) {
  // Resources are destroyed after the lock is released: an iterator's destructor waits for
  // its background threads, which may be looking resources up.
  std::vector<decltype(containers_)::node_type> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& c : containers) {
    auto it = containers_.find(Resolve(c));
    if (it != containers_.end()) dropped.push_back(containers_.extract(it));
  }
}

std::vector<std::string> ResourceMgr::ContainerNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, resources] : containers_) names.push_back(name);
  return names;
}

}  // namespace tessera
