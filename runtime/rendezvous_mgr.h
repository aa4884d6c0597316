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
// Implementations are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kernels/rendezvous.h"

namespace tessera {

class RendezvousMgr {
 public:
  virtual ~RendezvousMgr() = default;
  // The rendezvous of `step_id`, made on first use.
  virtual std::shared_ptr<Rendezvous> Find(int64_t step_id) = 0;
  // Forgets the step's rendezvous; receivers still waiting in it are aborted once nothing
  // else holds it.
  virtual void Cleanup(int64_t step_id) = 0;
  // How many steps have a rendezvous here: those not cleaned up yet.
  virtual size_t LiveSteps() = 0;
};

// Rendezvous for steps whose devices are all in this process (intra_process_rendezvous.h).
class IntraProcessRendezvousMgr final : public RendezvousMgr {
 public:
  std::shared_ptr<Rendezvous> Find(int64_t step_id) override;
  void Cleanup(int64_t step_id) override;
  size_t LiveSteps() override;

 private:
  std::mutex mu_;
  std::unordered_map<int64_t, std::shared_ptr<Rendezvous>> steps_;  // guarded by mu_
};

// A step id no other step of this process has had.
int64_t NewStepId();

}  // namespace tessera
