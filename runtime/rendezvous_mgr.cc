#include "runtime/rendezvous_mgr.h"

#include <atomic>

#include "runtime/intra_process_rendezvous.h"

namespace tessera {

std::shared_ptr<Rendezvous> IntraProcessRendezvousMgr::Find(int64_t step_id) {
  std::vector<std::shared_ptr<Rendezvous>> expired;
  std::shared_ptr<Rendezvous> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    expired = TakeExpired(Clock::now());
    Step& step = steps_[step_id];
    if (step.rendezvous == nullptr) {
      step.rendezvous = std::make_shared<IntraProcessRendezvous>(step_id);
    } else if (!step.claimed) {
      --unclaimed_count_;
    }
    step.claimed = true;
    found = step.rendezvous;
  }
  Abort(expired);
  return found;
}

StatusOr<std::shared_ptr<Rendezvous>> IntraProcessRendezvousMgr::FindForPeer(int64_t step_id) {
  std::vector<std::shared_ptr<Rendezvous>> expired;
  StatusOr<std::shared_ptr<Rendezvous>> found = errors::ResourceExhausted(
      "this task already holds ", limits_.max_unclaimed_steps,
      " steps that peers asked for and that have not started here; step ", step_id, " is refused");
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    expired = TakeExpired(now);
    if (auto it = steps_.find(step_id); it != steps_.end()) {
      found = it->second.rendezvous;
    } else if (unclaimed_count_ < limits_.max_unclaimed_steps) {
      std::shared_ptr<Rendezvous> rendezvous = std::make_shared<IntraProcessRendezvous>(step_id);
      steps_.emplace(step_id, Step{rendezvous, false});
      unclaimed_.push_back({now, step_id, rendezvous});
      ++unclaimed_count_;
      found = std::move(rendezvous);
    }
  }
  Abort(expired);
  return found;
}

std::vector<std::shared_ptr<Rendezvous>> IntraProcessRendezvousMgr::TakeExpired(Clock::time_point now) {
  std::vector<std::shared_ptr<Rendezvous>> expired;
  while (!unclaimed_.empty() && now - unclaimed_.front().since >= limits_.unclaimed_timeout) {
    const Unclaimed oldest = unclaimed_.front();
    unclaimed_.pop_front();
    auto it = steps_.find(oldest.step_id);
    if (it == steps_.end() || it->second.claimed || it->second.rendezvous != oldest.rendezvous.lock()) continue;
    expired.push_back(std::move(it->second.rendezvous));
    steps_.erase(it);
    --unclaimed_count_;
  }
  return expired;
}

void IntraProcessRendezvousMgr::Abort(const std::vector<std::shared_ptr<Rendezvous>>& expired) {
  for (const auto& r : expired) {
    r->StartAbort(errors::Aborted("step ", static_cast<IntraProcessRendezvous&>(*r).step_id(),
                                  " did not start on this task within the time its peers' receives may wait"));
  }
}

void IntraProcessRendezvousMgr::Cleanup(int64_t step_id) {
  // Let go of outside the lock: the last owner's destructor calls back waiting receivers.
  std::shared_ptr<Rendezvous> r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = steps_.find(step_id);
    if (it == steps_.end()) return;
    if (!it->second.claimed) --unclaimed_count_;
    r = std::move(it->second.rendezvous);
    steps_.erase(it);
  }
}

size_t IntraProcessRendezvousMgr::LiveSteps() {
  std::vector<std::shared_ptr<Rendezvous>> expired;
  size_t live = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    expired = TakeExpired(Clock::now());
    live = steps_.size();
  }
  Abort(expired);
  return live;
}

int64_t NewStepId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tessera
