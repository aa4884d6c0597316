// IntraProcessRendezvous: the Rendezvous of one step whose devices are all in this
// process. A Send stores the tensor (a reference to its buffer, never a copy) until its
// Recv asks, or hands it straight to a Recv already waiting, on the sender's thread.
//
//   auto rendezvous = std::make_shared<IntraProcessRendezvous>();   // one per step
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
  IntraProcessRendezvous() = default;
  ~IntraProcessRendezvous() override;

  Status Send(std::string_view key, const Tensor& value) override;
  void RecvAsync(std::string_view key, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  // A key holds sent values nobody asked for yet, or receivers waiting, never both;
  // nearly always just one (vectors, unlike deques, allocate nothing until used).
  struct Slot {
    std::vector<Tensor> values;
    std::vector<DoneCallback> waiters;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>()(key); }
  };
  std::mutex mu_;
  Status aborted_;                                // guarded by mu_
  std::unordered_map<std::string, Slot, KeyHash, std::equal_to<>> table_;  // guarded by mu_
};

}  // namespace tessera
