#include "training/queue_runner.h"

namespace tessera {

QueueRunner::QueueRunner(QueueRunnerOptions options) : options_(std::move(options)) {}

QueueRunner::~QueueRunner() {
  exiting_ = true;
  if (session_ != nullptr && IsRunning()) RunOp(options_.cancel_op);
  (void)Join();
}

std::string QueueRunner::Name() const {
  std::string ops;
  for (const std::string& op : options_.enqueue_ops) ops += StrCat(ops.empty() ? "" : ", ", op);
  return StrCat("QueueRunner(", ops, ")");
}

Status QueueRunner::Start(Session* session, Coordinator* coordinator) {
  if (session_ != nullptr) return errors::FailedPrecondition(Name(), " was already started");
  if (options_.enqueue_ops.empty()) return errors::FailedPrecondition("A QueueRunner needs at least one enqueue op");
  session_ = session;
  coordinator_ = coordinator;
  if (coordinator_ != nullptr) coordinator_->RegisterRunner(this);
  running_ = static_cast<int>(options_.enqueue_ops.size());
  for (const std::string& op : options_.enqueue_ops) threads_.emplace_back([this, op] { Loop(op); });
  if (coordinator_ != nullptr) {
    watcher_ = std::thread([this] {
      while (!coordinator_->WaitForStop(std::chrono::milliseconds(50))) {
        if (exiting_ || !IsRunning()) return;
      }
      if (IsRunning()) RunOp(options_.cancel_op);
    });
  }
  return Status::OK();
}

void QueueRunner::Loop(const std::string& enqueue_op) {
  std::vector<Tensor> unused;
  while (!exiting_ && (coordinator_ == nullptr || !coordinator_->ShouldStop())) {
    Status s = session_->Run({}, {}, {enqueue_op}, &unused);
    if (s.ok()) continue;
    // The queue was closed under us: the normal way for these threads to end.
    if (s.code() != Code::kOutOfRange && s.code() != Code::kCancelled) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (status_.ok()) status_ = s;
      }
      if (coordinator_ != nullptr) coordinator_->ReportStatus(s);
    }
    break;
  }
  if (running_.fetch_sub(1) == 1) RunOp(options_.close_op);
}

void QueueRunner::RunOp(const std::string& op) {
  if (op.empty()) return;
  std::vector<Tensor> unused;
  Status s = session_->Run({}, {}, {op}, &unused);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = s;
  }
}

Status QueueRunner::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

}  // namespace tessera
