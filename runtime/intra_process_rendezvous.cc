#include "runtime/intra_process_rendezvous.h"

#include <vector>

namespace tessera {

IntraProcessRendezvous::~IntraProcessRendezvous() {
  // A receiver still waiting when the step is torn down would otherwise never hear back.
  StartAbort(errors::Cancelled("The step ended before this tensor was sent"));
}

Status IntraProcessRendezvous::Send(std::string_view key, const Tensor& value) {
  DoneCallback waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    auto it = table_.find(key);
    if (it == table_.end() || it->second.waiters.empty()) {
      if (it == table_.end()) it = table_.emplace(std::string(key), Slot()).first;
      it->second.values.push_back(value);
      return Status::OK();
    }
    waiter = std::move(it->second.waiters.front());
    it->second.waiters.erase(it->second.waiters.begin());
    if (it->second.waiters.empty()) table_.erase(it);
  }
  waiter(Status::OK(), value);
  return Status::OK();
}

void IntraProcessRendezvous::RecvAsync(std::string_view key, DoneCallback done) {
  Tensor value;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!aborted_.ok()) {
      Status s = aborted_;
      lock.unlock();
      done(s, Tensor());
      return;
    }
    auto it = table_.find(key);
    if (it == table_.end() || it->second.values.empty()) {
      if (it == table_.end()) it = table_.emplace(std::string(key), Slot()).first;
      it->second.waiters.push_back(std::move(done));
      return;
    }
    value = std::move(it->second.values.front());
    it->second.values.erase(it->second.values.begin());
    if (it->second.values.empty()) table_.erase(it);
  }
  done(Status::OK(), value);
}

void IntraProcessRendezvous::StartAbort(const Status& status) {
  std::vector<DoneCallback> waiters;
  Status reason;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return;
    aborted_ = status.ok() ? errors::Internal("Rendezvous aborted with an OK status") : status;
    reason = aborted_;
    for (auto& [key, slot] : table_) {
      for (auto& w : slot.waiters) waiters.push_back(std::move(w));
    }
    table_.clear();
  }
  for (auto& w : waiters) w(reason, Tensor());
}

}  // namespace tessera
