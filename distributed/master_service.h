// The master half of a cluster task, as a gRPC service: the sessions of clients that name
// this task as their target (CreateSession, RunStep, CloseSession: MasterSession), and Reset,
// which drops resource containers on every task. Every call is checked by the task's
// Authenticator first. The service is thread-safe; the ClusterServer (cluster_server.h)
// serves it beside the worker's.
#pragma once

#include <chrono>
#include <memory>

#include "distributed/authenticator.h"
#include "distributed/master_session.h"
#include "runtime/session_options.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace tessera {

// `config` gives every session of this master its defaults; `auth` is borrowed and must
// outlive the service. Sessions idle for `idle_session_timeout` with no step running are
// closed when the next session is made.
std::unique_ptr<grpc::Service> NewMasterService(MasterSession::Environment env, SessionConfig config,
                                                const Authenticator& auth,
                                                std::chrono::seconds idle_session_timeout);

}  // namespace tessera
