#include "runtime/intra_process_rendezvous.h"

#include <vector>

#include "kernels/copy_tensor.h"

namespace tessera {

IntraProcessRendezvous::~IntraProcessRendezvous() {
  // A receiver still waiting when the step is torn down would otherwise never hear back.
  StartAbort(errors::Cancelled("The step ended before this tensor was sent"));
}

void IntraProcessRendezvous::Deliver(const Sent& sent, Waiter waiter) {
  const bool dead = !sent.value.IsInitialized();
  if (dead || (IsHostMemory(sent.args.device, sent.args.alloc_attrs) &&
               IsHostMemory(waiter.args.device, waiter.args.alloc_attrs))) {
    waiter.done(Status::OK(), sent.value);
    return;
  }
  CopyTensor(sent.value, sent.args.device, sent.args.alloc_attrs, waiter.args.device, waiter.args.alloc_attrs,
             [done = std::move(waiter.done)](const Status& s, Tensor copied) { done(s, copied); });
}

Status IntraProcessRendezvous::Send(std::string_view key, const Args& args, const Tensor& value) {
  Waiter waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    auto it = table_.find(key);
    if (it == table_.end() || it->second.waiters.empty()) {
      if (it == table_.end()) it = table_.emplace(std::string(key), Slot()).first;
      it->second.values.push_back({value, args});
      return Status::OK();
    }
    waiter = std::move(it->second.waiters.front());
    it->second.waiters.erase(it->second.waiters.begin());
    if (it->second.waiters.empty()) table_.erase(it);
  }
  Deliver({value, args}, std::move(waiter));
  return Status::OK();
}

void IntraProcessRendezvous::RecvAsync(std::string_view key, const Args& args, DoneCallback done) {
  Sent sent;
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
      it->second.waiters.push_back({std::move(done), args});
      return;
    }
    sent = std::move(it->second.values.front());
    it->second.values.erase(it->second.values.begin());
    if (it->second.values.empty()) table_.erase(it);
  }
  Deliver(sent, {std::move(done), args});
}

void IntraProcessRendezvous::StartAbort(const Status& status) {
  std::vector<Waiter> waiters;
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
  for (auto& w : waiters) w.done(reason, Tensor());
}

}  // namespace tessera
