#include "runtime/server.h"

#include <map>
#include <mutex>
#include <thread>

namespace tessera {
namespace {

std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

// Live servers by target. Never destroyed: servers may outlive static destruction.
std::map<std::string, std::weak_ptr<Server>, std::less<>>& Registry() {
  static auto* servers = new std::map<std::string, std::weak_ptr<Server>, std::less<>>;
  return *servers;
}

}  // namespace

StatusOr<std::shared_ptr<Server>> Server::CreateLocal(const SessionConfig& config) {
  return CreateForTask(config, "localhost", 0);
}

StatusOr<std::shared_ptr<Server>> Server::CreateForTask(const SessionConfig& config, std::string_view job, int task) {
  // The devices borrow their intra-op pool, so one allocation owns both, pool last to go.
  struct DevicesAndPool {
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<DeviceMgr> devices;
  };
  auto owned = std::make_shared<DevicesAndPool>();
  int threads = config.intra_op_parallelism_threads > 0 ? config.intra_op_parallelism_threads
                                                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ASSIGN_OR_RETURN(owned->pool, ThreadPool::Create("server_intra_op", threads));
  ASSIGN_OR_RETURN(owned->devices, DeviceMgr::CreateForTask(job, task, config.device_count, owned->pool.get(),
                                                            config.HostMemoryLimitBytes(), config.gpu_options));
  std::shared_ptr<Server> server(new Server());
  server->devices_ = std::shared_ptr<DeviceMgr>(owned, owned->devices.get());
  server->resources_ = std::make_shared<ResourceMgr>();
  server->rendezvous_ = std::make_shared<IntraProcessRendezvousMgr>();
  static int next_id = 0;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  server->target_ = StrCat("local://", ++next_id);
  Registry()[server->target_] = server;
  return server;
}

StatusOr<std::shared_ptr<Server>> Server::Find(std::string_view target) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(target);
  std::shared_ptr<Server> server = it == Registry().end() ? nullptr : it->second.lock();
  if (server == nullptr) {
    return errors::NotFound("No server with target '", target,
                            "' in this process; create one with Server::CreateLocal");
  }
  return server;
}

Server::~Server() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().erase(target_);
}

}  // namespace tessera
