// Session: runs a graph in this process. It places the graph once, then for each distinct
// (feeds, fetches, targets) takes the part of the graph needed, splits it into one graph
// per device joined by _Send/_Recv pairs (partition.h), caches an executor per device, and
// runs them together, each step with its own rendezvous.
//
//   SessionConfig config;
//   config.device_count = {{"CPU", 4}};
//   auto session = Session::Create(config, graph_def);
//   std::vector<Tensor> out;
//   Status s = (*session)->Run({{"x", x}}, {"y"}, {}, &out);
//
// Variables live in the session's resource containers and keep their values across Run
// calls; two local sessions never share them. Sessions created with the target of an
// in-process Server (server.h) use its devices and share its containers. Run may be called concurrently from any number of
// threads; Reset may be called concurrently with Run (a running step keeps the variables it
// already looked up). The Session must outlive every Run in flight.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "kernels/resource_mgr.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/session_options.h"

namespace tessera {

class Session {
 public:
  // Builds devices and thread pools, validates the graph and places it (placement errors
  // and the placement log come from here).
  static StatusOr<std::unique_ptr<Session>> Create(const SessionConfig& config, const GraphDef& graph);
  // `target` "" is a local session as above; "local://<n>" a session on that Server, whose
  // devices it uses (config.device_count is then ignored) and whose resources it shares.
  // NotFound for a target no live server has.
  static StatusOr<std::unique_ptr<Session>> Create(const std::string& target, const SessionConfig& config,
                                                   const GraphDef& graph);
  ~Session();

  // feeds: {"x", tensor} or {"x:1", tensor}; fetches: "y", "y:1"; targets: node names run
  // for their effects. On success, `outputs` holds one tensor per fetch, in order; it may be
  // null when nothing is fetched.
  Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs);
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata);

  // Drops the resources (variables) of the named containers; "" names the default one.
  void Reset(const std::vector<std::string>& containers);
  // The same on the server behind `target`, for every session sharing it (tf.Session.reset).
  static Status Reset(const std::string& target, const std::vector<std::string>& containers);

  // Where each node of the graph was placed and why, in node order.
  const std::vector<PlacementRecord>& placement() const { return placement_; }
  const DeviceMgr& devices() const { return *devices_; }
  const Graph& graph() const { return *graph_; }
  // The threads this session's steps run on.
  int inter_op_threads() const;
  int intra_op_threads() const;

 private:
  struct ExecutorAndKeys;
  Session() = default;
  StatusOr<std::shared_ptr<const ExecutorAndKeys>> GetOrCreateExecutor(
      const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);

  SessionConfig config_;
  std::unique_ptr<ThreadPool> own_inter_op_pool_;
  std::unique_ptr<ThreadPool> own_intra_op_pool_;
  ThreadPool* inter_op_pool_ = nullptr;
  ThreadPool* intra_op_pool_ = nullptr;
  std::shared_ptr<DeviceMgr> devices_;
  std::unique_ptr<Graph> graph_;
  std::vector<PlacementRecord> placement_;
  std::shared_ptr<ResourceMgr> resource_mgr_;
  std::atomic<int64_t> next_step_id_{0};

  std::mutex executors_mu_;
  std::map<std::string, std::shared_ptr<const ExecutorAndKeys>, std::less<>> executors_;  // guarded by executors_mu_
};

}  // namespace tessera
