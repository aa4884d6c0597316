// RendezvousMgr: hands each step its Rendezvous by step id, so that all the executors of a
// step meet in one: the partitions a session runs in this process, and, behind the same
// interface, a worker's partitions of a step its master started elsewhere. A session asks
// for the step's rendezvous before it starts the step and cleans it up when the step ends;
// sessions that share a Server share its manager, so step ids are unique in the process
// (NewStepId).
//
//   std::shared_ptr<Rendezvous> r = mgr->Find(step_id);
//   ... run the step's executors with r ...
//   mgr->Cleanup(step_id);
//
// A peer task's receive may come before this task's part of the step starts, so it makes
// the step's rendezvous too (FindForPeer); but a peer may name a step that never runs here
// (its master died, or it lies). Such a step is unclaimed until a local run Finds it; one
// unclaimed past a timeout is aborted, failing its receives, and forgotten, and the
// unclaimed steps are capped.
//
// Implementations are thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "graph/platform/status.h"
#include "kernels/rendezvous.h"

namespace tessera {

class RendezvousMgr {
 public:
  virtual ~RendezvousMgr() = default;
  // The rendezvous of `step_id`, made on first use, for the step's run here.
  virtual std::shared_ptr<Rendezvous> Find(int64_t step_id) = 0;
  // The rendezvous of `step_id` for a peer's receive; ResourceExhausted when it would be
  // one unclaimed step too many.
  virtual StatusOr<std::shared_ptr<Rendezvous>> FindForPeer(int64_t step_id) = 0;
  // Forgets the step's rendezvous; receivers still waiting in it are aborted once nothing
  // else holds it.
  virtual void Cleanup(int64_t step_id) = 0;
  // How many steps have a rendezvous here: those not cleaned up yet.
  virtual size_t LiveSteps() = 0;
};

// Rendezvous for steps whose devices are all in this process (intra_process_rendezvous.h).
class IntraProcessRendezvousMgr final : public RendezvousMgr {
 public:
  struct PeerLimits {
    size_t max_unclaimed_steps = 1024;
    // Far longer than a step's parts take to start on their tasks.
    std::chrono::milliseconds unclaimed_timeout{60000};
  };
  IntraProcessRendezvousMgr() : IntraProcessRendezvousMgr(PeerLimits{}) {}
  explicit IntraProcessRendezvousMgr(PeerLimits limits) : limits_(limits) {}

  std::shared_ptr<Rendezvous> Find(int64_t step_id) override;
  StatusOr<std::shared_ptr<Rendezvous>> FindForPeer(int64_t step_id) override;
  void Cleanup(int64_t step_id) override;
  size_t LiveSteps() override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Step {
    std::shared_ptr<Rendezvous> rendezvous;
    bool claimed = false;  // a local run has Found it
  };
  struct Unclaimed {
    Clock::time_point since;
    int64_t step_id;
    std::weak_ptr<Rendezvous> rendezvous;  // tells it from a later step of the same id
  };
  // Takes the steps unclaimed past the timeout out of steps_, for the caller to abort
  // outside the lock.
  std::vector<std::shared_ptr<Rendezvous>> TakeExpired(Clock::time_point now);  // requires mu_
  static void Abort(const std::vector<std::shared_ptr<Rendezvous>>& expired);

  const PeerLimits limits_;
  std::mutex mu_;
  std::unordered_map<int64_t, Step> steps_;  // guarded by mu_
  std::deque<Unclaimed> unclaimed_;          // guarded by mu_: oldest first; may name claimed steps
  size_t unclaimed_count_ = 0;               // guarded by mu_: the steps_ not claimed
};

// A step id no other step of this process has had.
int64_t NewStepId();

}  // namespace tessera
