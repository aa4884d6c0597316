// IntraProcessRendezvous: the Rendezvous of one step whose devices are all in this
// process. A Send stores the tensor (a reference to its buffer, never a copy) until its
// Recv asks, or hands it straight to a Recv already waiting, on the sender's thread. Between
// different memories (a device's and the host's) the tensor is copied on the way
// (copy_tensor.h), and the Recv hears back when the copy is done.
//
//   auto rendezvous = std::make_shared<IntraProcessRendezvous>(step_id);   // one per step
//   executor_args.rendezvous = rendezvous.get();
//
// StartAbort fails every waiting Recv at once (they never hold a thread while they wait),
// and every later Send and Recv. All methods are thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/rendezvous.h"

namespace tessera {

class IntraProcessRendezvous final : public Rendezvous {
 public:
  explicit IntraProcessRendezvous(int64_t step_id = 0) : step_id_(step_id) {}
  ~IntraProcessRendezvous() override;

  int64_t step_id() const { return step_id_; }

  using Rendezvous::RecvAsync;
  using Rendezvous::Send;
  Status Send(std::string_view key, const Args& args, const Tensor& value) override;
  void RecvAsync(std::string_view key, const Args& args, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  // A key holds sent values nobody asked for yet, or receivers waiting, never both;
  // nearly always just one (vectors, unlike deques, allocate nothing until used).
  struct Sent {
    Tensor value;
    Args args;
  };
  struct Waiter {
    DoneCallback done;
    Args args;
  };
  struct Slot {
    std::vector<Sent> values;
    std::vector<Waiter> waiters;
  };
  static void Deliver(const Sent& sent, Waiter waiter);
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>()(key); }
  };
  const int64_t step_id_;
  std::mutex mu_;
  Status aborted_;                                // guarded by mu_
  std::unordered_map<std::string, Slot, KeyHash, std::equal_to<>> table_;  // guarded by mu_
};

}  // namespace tessera
