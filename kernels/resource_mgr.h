// ResourceMgr: state that outlives a step — variables now, queues later — kept in named
// containers, as tf.container does. A session owns one; Reset(containers) drops them.
//
//   StatusOr<std::shared_ptr<Variable>> v = rm->LookupOrCreate<Variable>(
//       "", "w", [] { return std::make_shared<Variable>(DataType::kFloat, shape); });
//
// Every method is thread-safe. Resources are shared_ptr-owned: a kernel that looked one up
// keeps it alive even if its container is cleared meanwhile.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
};

class ResourceMgr {
 public:
  // `default_container` is used where a node names none ("" in its container attr).
  explicit ResourceMgr(std::string default_container = "localhost");

  const std::string& default_container() const { return default_container_; }

  template <typename T>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(const std::string& container, const std::string& name,
                                              const std::function<std::shared_ptr<T>()>& create) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = containers_[Resolve(container)][name];
    if (slot == nullptr) slot = create();
    auto typed = std::dynamic_pointer_cast<T>(slot);
    if (typed == nullptr) {
      return errors::InvalidArgument("Resource ", Resolve(container), "/", name,
                                     " exists with another type: ", slot->DebugString());
    }
    return typed;
  }

  template <typename T>
  StatusOr<std::shared_ptr<T>> Lookup(const std::string& container, const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto c = containers_.find(Resolve(container));
    if (c != containers_.end()) {
      auto it = c->second.find(name);
      if (it != c->second.end()) {
        if (auto typed = std::dynamic_pointer_cast<T>(it->second)) return typed;
      }
    }
    return errors::NotFound("Resource ", Resolve(container), "/", name, " does not exist");
  }

  // Drops every resource of the named containers ("" is the default container).
  void Cleanup(const std::vector<std::string>& containers);
  std::vector<std::string> ContainerNames() const;

 private:
  const std::string& Resolve(const std::string& container) const {
    return container.empty() ? default_container_ : container;
  }

  const std::string default_container_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, std::shared_ptr<ResourceBase>>> containers_;  // guarded by mu_
};

}  // namespace tessera
