#include "training/coordinator.h"

#include <thread>

#include "runtime/deadline.h"

namespace tessera {

void Coordinator::RequestStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  stopped_cv_.notify_all();
}

bool Coordinator::ShouldStop() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool Coordinator::WaitForStop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = DeadlineAfter(timeout);
  if (!deadline) {
    if (timeout.count() <= 0) return stop_;
    stopped_cv_.wait(lock, [this] { return stop_; });
    return true;
  }
  return stopped_cv_.wait_until(lock, *deadline, [this] { return stop_; });
}

void Coordinator::ReportStatus(const Status& status) {
  if (status.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) status_ = status;
  stop_ = true;
  stopped_cv_.notify_all();
}

Status Coordinator::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Coordinator::RegisterRunner(Runner* runner) {
  std::lock_guard<std::mutex> lock(mu_);
  runners_.push_back(runner);
}

Status Coordinator::Join(std::chrono::milliseconds grace) {
  WaitForStop();
  std::vector<Runner*> runners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    runners = runners_;
  }
  // Runners stop on their own once asked; only those still running after the grace
  // period are an error, and they are not waited for.
  const auto deadline = DeadlineAfter(grace);
  std::string stuck;
  for (Runner* r : runners) {
    while (r->IsRunning() && (!deadline || std::chrono::steady_clock::now() < *deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (r->IsRunning()) {
      stuck += StrCat(stuck.empty() ? "" : ", ", r->Name());
    } else {
      ReportStatus(r->Join());
    }
  }
  Status first = status();
  if (!first.ok()) return first;
  if (!stuck.empty()) {
    return errors::DeadlineExceeded("Coordinator stopped with threads still running after the grace period: ", stuck);
  }
  return Status::OK();
}

}  // namespace tessera
