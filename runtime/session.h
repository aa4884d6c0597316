// Session: runs a graph. Session::Create picks the implementation by the target's prefix
// through the SessionFactory registry: "" and "local://<n>" are this process's
// (direct_session.h), and a transport module registers its own ("grpc://") without
// runtime/ depending on it.
//
//   SessionConfig config;
//   config.device_count = {{"CPU", 4}};
//   auto session = Session::Create(config, graph_def);
//   std::vector<Tensor> out;
//   Status s = (*session)->Run({{"x", x}}, {"y"}, {}, &out);
//
// Run may be called concurrently from any number of threads; Reset and Close may be called
// concurrently with Run (a running step keeps the variables it already looked up). The
// Session must outlive every Run in flight.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "runtime/device_mgr.h"
#include "runtime/session_options.h"

namespace tessera {

class Session {
 public:
  // A session in this process with its own devices and variables.
  static StatusOr<std::unique_ptr<Session>> Create(const SessionConfig& config, const GraphSpec& graph);
  // `target` "" is a local session as above; "local://<n>" a session on that Server
  // (server.h), whose devices it uses (config.device_count is then ignored) and whose
  // resources it shares; other prefixes go to the factory registered for them. NotFound
  // for a target no factory or live server has. Placement errors and the placement log
  // come from here.
  static StatusOr<std::unique_ptr<Session>> Create(const std::string& target, const SessionConfig& config,
                                                   const GraphSpec& graph);
  // Drops the named containers' resources on the server behind `target`, for every
  // session sharing it (tf.Session.reset).
  static Status Reset(const std::string& target, const std::vector<std::string>& containers);

  virtual ~Session() = default;

  // feeds: {"x", tensor} or {"x:1", tensor}; fetches: "y", "y:1"; targets: node names run
  // for their effects. On success, `outputs` holds one tensor per fetch, in order; it may be
  // null when nothing is fetched.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
             const std::vector<std::string>& targets, std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }
  virtual Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
                     const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                     std::vector<Tensor>* outputs, RunMetadata* metadata) = 0;

  // Adds nodes to the graph, as tf.Session's graph grows after the session was made: each
  // node of `more` is new (InvalidArgument naming it otherwise) and may take inputs only from
  // nodes already there or in `more`. Nodes already placed keep their devices; steps begun
  // before see the graph as it was. May run concurrently with Run; it invalidates the
  // references graph() and placement() returned. Unimplemented for a session that cannot.
  virtual Status Extend(const GraphSpec& more);
  // Drops the resources (variables) of the named containers; "" names the default one.
  virtual void Reset(const std::vector<std::string>& containers) = 0;

  // tf.Session.close: cancels the steps in flight (a dequeue waiting on an empty queue ends
  // with Cancelled) and fails every later Run with Cancelled. Idempotent. A cluster session's
  // Run returns at once; its tasks stop the step when they next look, within ~100 ms.
  virtual void Close() = 0;

  // Where each node of the graph was placed and why, in node order.
  virtual const std::vector<PlacementRecord>& placement() const = 0;
  virtual const DeviceMgr& devices() const = 0;
  virtual const Graph& graph() const = 0;
  // The threads this session's steps run on.
  virtual int inter_op_threads() const = 0;
  virtual int intra_op_threads() const = 0;
};

// Makes the sessions of the targets that start with a prefix. Register and the lookup
// behind Session::Create may be called concurrently; a factory's methods must be thread-safe.
class SessionFactory {
 public:
  virtual ~SessionFactory() = default;
  virtual StatusOr<std::unique_ptr<Session>> NewSession(const std::string& target, const SessionConfig& config,
                                                        const GraphSpec& graph) = 0;
  virtual Status Reset(const std::string& target, const std::vector<std::string>& containers) = 0;

  // `prefix` "" claims only the empty target; any other claims the targets starting with
  // it, the longest prefix winning. AlreadyExists when the prefix has a factory.
  static Status Register(std::string prefix, std::shared_ptr<SessionFactory> factory);
  // NotFound, naming the prefixes there are, for a target no factory claims.
  static StatusOr<std::shared_ptr<SessionFactory>> ForTarget(std::string_view target);
};

}  // namespace tessera
