// Server: an in-process server that owns devices and resource containers. Sessions created
// with its target share its variables and queues (by container and shared_name), the
// in-process half of TensorFlow 1.x's cluster semantics (tf.train.Server.create_local_server);
// plain local sessions keep their own.
//
//   auto server = Server::CreateLocal(config);                  // config.device_count etc.
//   auto a = Session::Create((*server)->target(), {}, graph);    // "local://1"
//   auto b = Session::Create((*server)->target(), {}, graph);    // sees a's variables
//   Session::Reset((*server)->target(), {"my_container"});       // clears it for both
//
// A session keeps the server's devices and resources alive while it exists; the target
// stops resolving once the last owner of the Server drops it. All methods are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "kernels/resource_mgr.h"
#include "runtime/device_mgr.h"
#include "runtime/rendezvous_mgr.h"
#include "runtime/session_options.h"

namespace tessera {

class Server {
 public:
  // Devices from config.device_count; their intra-op pool from intra_op_parallelism_threads.
  static StatusOr<std::shared_ptr<Server>> CreateLocal(const SessionConfig& config = {});
  // The same with the devices of a cluster's task, /job:<job>/replica:0/task:<task>/...; the
  // in-process half of a cluster server (distributed/cluster_server.h).
  static StatusOr<std::shared_ptr<Server>> CreateForTask(const SessionConfig& config, std::string_view job, int task);
  // The live server with this target, or NotFound.
  static StatusOr<std::shared_ptr<Server>> Find(std::string_view target);
  ~Server();

  // "local://<n>", unique in this process.
  const std::string& target() const { return target_; }
  const std::shared_ptr<DeviceMgr>& devices() const { return devices_; }
  const std::shared_ptr<ResourceMgr>& resources() const { return resources_; }
  // Where the steps of every session on this server find their rendezvous.
  const std::shared_ptr<RendezvousMgr>& rendezvous() const { return rendezvous_; }

 private:
  Server() = default;
  std::string target_;
  std::shared_ptr<DeviceMgr> devices_;  // also owns the devices' intra-op pool
  std::shared_ptr<ResourceMgr> resources_;
  std::shared_ptr<RendezvousMgr> rendezvous_;
};

}  // namespace tessera
