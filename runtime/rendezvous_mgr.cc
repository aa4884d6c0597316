#include "runtime/rendezvous_mgr.h"

#include <atomic>

#include "runtime/intra_process_rendezvous.h"

namespace tessera {

std::shared_ptr<Rendezvous> IntraProcessRendezvousMgr::Find(int64_t step_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Rendezvous>& r = steps_[step_id];
  if (r == nullptr) r = std::make_shared<IntraProcessRendezvous>(step_id);
  return r;
}

void IntraProcessRendezvousMgr::Cleanup(int64_t step_id) {
  // Let go of outside the lock: the last owner's destructor calls back waiting receivers.
  std::shared_ptr<Rendezvous> r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = steps_.find(step_id);
    if (it == steps_.end()) return;
    r = std::move(it->second);
    steps_.erase(it);
  }
}

size_t IntraProcessRendezvousMgr::LiveSteps() {
  std::lock_guard<std::mutex> lock(mu_);
  return steps_.size();
}

int64_t NewStepId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tessera
