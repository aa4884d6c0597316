// The worker half of a cluster task, as a gRPC service: GetStatus (its name, devices and the
// TCP port of its direct transport),
// RegisterGraph / DeregisterGraph / RunGraph / CleanupStep (the partitions masters hand it,
// GraphMgr), RecvTensor (tensors its devices sent, streamed to the task that asks) and
// ResetContainers. Every call is checked by the task's Authenticator first. The service is
// thread-safe; the ClusterServer (cluster_server.h) serves it beside the master's.
#pragma once

#include <memory>
#include <string>

#include "distributed/authenticator.h"
#include "distributed/graph_mgr.h"
#include "runtime/server.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace tessera {

// `auth` is borrowed and must outlive the service. RecvTensor calls still waiting for their
// tensors past `max_pending_receives` are refused with ResourceExhausted. GetStatus names
// `direct_port` (0: none).
std::unique_ptr<grpc::Service> NewWorkerService(std::string task_name, std::shared_ptr<Server> local,
                                                std::shared_ptr<GraphMgr> graphs, const Authenticator& auth,
                                                size_t max_pending_receives, uint16_t direct_port);

}  // namespace tessera
