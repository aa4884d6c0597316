// DirectSession: the Session of targets "" and "local://<n>", running a graph in this
// process. It places the graph once, then for each distinct (feeds, fetches, targets) makes
// its step plan (step_plan.h: the part of the graph needed, rewritten, one graph per device
// joined by _Send/_Recv pairs), caches an executor per device, and runs them together
// (run_step.h); each step gets its rendezvous from the RendezvousMgr by step id.
//
// What a session may share with others comes in an Environment: a Server's devices,
// resource containers and rendezvous manager for "local://" targets; fresh ones otherwise.
// Variables live in the resource containers and keep their values across Run calls. Thread
// safety is Session's.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "kernels/resource_mgr.h"
#include "runtime/rendezvous_mgr.h"
#include "runtime/session.h"

namespace tessera {

class CancellationManager;

class DirectSession final : public Session {
 public:
  struct Environment {
    std::shared_ptr<DeviceMgr> devices;         // null: from config.device_count
    std::shared_ptr<ResourceMgr> resources;     // null: containers of its own
    std::shared_ptr<RendezvousMgr> rendezvous;  // null: an IntraProcessRendezvousMgr
  };

  static StatusOr<std::unique_ptr<DirectSession>> Create(const SessionConfig& config, const GraphSpec& graph,
                                                         Environment environment = {});
  // The factory Session::Create uses for "" and "local://" targets.
  static std::shared_ptr<SessionFactory> Factory();
  ~DirectSession() override;

  using Session::Run;
  Status Run(const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
             const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
             std::vector<Tensor>* outputs, RunMetadata* metadata) override;
  Status Extend(const GraphSpec& more) override;
  void Reset(const std::vector<std::string>& containers) override;
  void Close() override;

  const std::vector<PlacementRecord>& placement() const override { return placement_; }
  const DeviceMgr& devices() const override { return *devices_; }
  const Graph& graph() const override { return *graph_; }
  int inter_op_threads() const override;
  int intra_op_threads() const override;

 private:
  struct ExecutorAndKeys;
  DirectSession() = default;
  StatusOr<std::shared_ptr<const ExecutorAndKeys>> GetOrCreateExecutor(
      const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);
  void FillMetadata(const ExecutorAndKeys& ek, const RunOptions& options, std::vector<NodeExecStats> stats,
                    RunMetadata* metadata) const;

  SessionConfig config_;
  std::unique_ptr<ThreadPool> own_inter_op_pool_;
  std::unique_ptr<ThreadPool> own_intra_op_pool_;
  ThreadPool* inter_op_pool_ = nullptr;
  ThreadPool* intra_op_pool_ = nullptr;
  std::shared_ptr<DeviceMgr> devices_;
  // Held shared while a step plan reads graph_ and placement_, exclusively while Extend
  // replaces them.
  std::shared_mutex graph_mu_;
  std::unique_ptr<Graph> graph_;
  std::vector<PlacementRecord> placement_;
  std::shared_ptr<ResourceMgr> resource_mgr_;
  std::shared_ptr<RendezvousMgr> rendezvous_mgr_;

  std::mutex steps_mu_;
  bool closed_ = false;                          // guarded by steps_mu_
  std::set<CancellationManager*> steps_;         // guarded by steps_mu_: the steps in flight

  // gpu_options.capture_steps: every step holds it shared, a recording exclusively
  // (step_capture.h), so that no other step's work is recorded with it.
  std::shared_mutex recording_mu_;

  std::mutex executors_mu_;
  std::map<std::string, std::shared_ptr<const ExecutorAndKeys>, std::less<>> executors_;  // guarded by executors_mu_
};

}  // namespace tessera
