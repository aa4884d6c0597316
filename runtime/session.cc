#include "runtime/session.h"

#include <map>
#include <shared_mutex>

#include "runtime/direct_session.h"

namespace tessera {
namespace {

struct FactoryRegistry {
  std::shared_mutex mu;
  std::map<std::string, std::shared_ptr<SessionFactory>, std::less<>> by_prefix;  // guarded by mu
};

FactoryRegistry& Factories() {
  static FactoryRegistry* registry = [] {
    auto* r = new FactoryRegistry;
    std::shared_ptr<SessionFactory> direct = DirectSession::Factory();
    r->by_prefix.emplace("", direct);
    r->by_prefix.emplace("local://", direct);
    return r;
  }();
  return *registry;
}

}  // namespace

Status SessionFactory::Register(std::string prefix, std::shared_ptr<SessionFactory> factory) {
  FactoryRegistry& r = Factories();
  std::unique_lock lock(r.mu);
  if (r.by_prefix.count(prefix) != 0) {
    return errors::AlreadyExists("Session targets '", prefix, "...' already have a factory");
  }
  r.by_prefix.emplace(std::move(prefix), std::move(factory));
  return Status::OK();
}

StatusOr<std::shared_ptr<SessionFactory>> SessionFactory::ForTarget(std::string_view target) {
  FactoryRegistry& r = Factories();
  std::shared_lock lock(r.mu);
  std::shared_ptr<SessionFactory> found;
  size_t found_length = 0;
  for (const auto& [prefix, factory] : r.by_prefix) {
    const bool claims = prefix.empty() ? target.empty() : target.starts_with(prefix);
    if (claims && (found == nullptr || prefix.size() > found_length)) {
      found = factory;
      found_length = prefix.size();
    }
  }
  if (found != nullptr) return found;
  std::string known;
  for (const auto& [prefix, factory] : r.by_prefix) {
    if (!prefix.empty()) known += (known.empty() ? "" : ", ") + prefix;
  }
  return errors::NotFound("No session factory for target '", Excerpt(target), "'; targets may be \"\" or start with ",
                          known);
}

StatusOr<std::unique_ptr<Session>> Session::Create(const SessionConfig& config, const GraphSpec& graph) {
  return Create("", config, graph);
}

StatusOr<std::unique_ptr<Session>> Session::Create(const std::string& target, const SessionConfig& config,
                                                   const GraphSpec& graph) {
  ASSIGN_OR_RETURN(std::shared_ptr<SessionFactory> factory, SessionFactory::ForTarget(target));
  return factory->NewSession(target, config, graph);
}

Status Session::Extend(const GraphSpec& more) {
  return errors::Unimplemented("This session cannot add nodes to its graph (Session::Extend); make a new one");
}

Status Session::Reset(const std::string& target, const std::vector<std::string>& containers) {
  ASSIGN_OR_RETURN(std::shared_ptr<SessionFactory> factory, SessionFactory::ForTarget(target));
  return factory->Reset(target, containers);
}

}  // namespace tessera
