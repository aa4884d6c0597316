// CollectiveMeeting: where the members of one collective, run by kernels on devices of this
// process, find each other. Each member joins under the collective's key (its name, step
// and loop iteration) with its rank; the last to arrive is handed every member, in rank
// order, and runs the collective for all of them, so no member holds a thread while it
// waits. If the step is cancelled (another kernel failed, a deadline passed) while members
// wait, each is aborted with Cancelled instead, so no step waits forever.
//
//   static CollectiveMeeting<GpuMember> meeting(RunAll, Abort);
//   Status s = meeting.Join(StrCat(name, ";", step_id), size, rank, std::move(member), ctx->cancellation_manager());
//
// Join's error (a rank out of range, a rank that joined twice, members that disagree on the
// size) is this member's alone; the step's failure then aborts the others. All calls may run
// concurrently; run and abort are called without the meeting's lock held.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_kernel.h"

namespace tessera {

template <typename Member>
class CollectiveMeeting {
 public:
  using RunFn = std::function<void(std::vector<Member>& members)>;
  using AbortFn = std::function<void(Member& member, const Status& status)>;

  CollectiveMeeting(RunFn run, AbortFn abort) : run_(std::move(run)), abort_(std::move(abort)) {}

  // `cancellation` may be null: the members then wait until all have joined.
  Status Join(const std::string& key, int size, int rank, Member member, CancellationManager* cancellation) {
    if (size < 1 || rank < 0 || rank >= size) {
      return errors::InvalidArgument("Collective '", key, "': rank ", rank, " is not in a group of ", size);
    }
    const CancellationManager::Token token = cancellation != nullptr ? cancellation->NewToken() : 0;
    std::optional<Group> done;  // the group, once it is complete or aborted
    bool complete = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Group& group = groups_[key];
      if (group.members.empty()) group.members.resize(size);
      if (static_cast<int>(group.members.size()) != size) {
        return errors::InvalidArgument("Collective '", key, "': member ", rank, " says the group has ", size,
                                       " members, another said ", group.members.size());
      }
      if (group.members[rank].has_value()) {
        return errors::InvalidArgument("Collective '", key, "': rank ", rank, " joined twice");
      }
      group.members[rank] = std::move(member);
      complete = ++group.joined == size;
      // Registered under the lock, so a cancellation finds this member in the group; Register
      // refuses once the step is cancelled, and then nobody else will come to abort us.
      const bool wait = !complete && (cancellation == nullptr ||
                                      cancellation->RegisterCallback(token, [this, key] { Abort(key); }));
      if (wait) {
        if (cancellation != nullptr) group.tokens.emplace_back(cancellation, token);
        return Status::OK();
      }
      done = std::move(group);
      groups_.erase(key);
    }
    Finish(key, *done, complete);
    return Status::OK();
  }

  // Groups with members still waiting (for tests).
  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return groups_.size();
  }

 private:
  struct Group {
    std::vector<std::optional<Member>> members;
    int joined = 0;
    std::vector<std::pair<CancellationManager*, CancellationManager::Token>> tokens;  // of those waiting
  };

  void Abort(const std::string& key) {
    std::optional<Group> group;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = groups_.find(key);
      if (it == groups_.end()) return;
      group = std::move(it->second);
      groups_.erase(it);
    }
    Finish(key, *group, /*complete=*/false);
  }

  // Runs a complete group, or aborts the members of one that never will be.
  void Finish(const std::string& key, Group& group, bool complete) {
    for (auto [manager, token] : group.tokens) manager->DeregisterCallback(token);
    std::vector<Member> members;
    for (auto& m : group.members) {
      if (m.has_value()) members.push_back(std::move(*m));
    }
    if (complete) {
      run_(members);
      return;
    }
    const Status cancelled =
        errors::Cancelled("Collective '", key, "': the step was cancelled before every member joined");
    for (Member& m : members) abort_(m, cancelled);
  }

  const RunFn run_;
  const AbortFn abort_;
  mutable std::mutex mu_;
  std::map<std::string, Group> groups_;  // guarded by mu_
};

}  // namespace tessera
