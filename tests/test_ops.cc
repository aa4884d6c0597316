#include "tests/test_ops.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <stdexcept>

#include "graph/op_registry.h"
#include "kernels/kernel_registry.h"

namespace tessera::testing {
namespace {

std::mutex g_mu;
std::vector<RecordedSpan> g_spans;
std::condition_variable g_meet_cv;
int g_meet_now = 0;
int g_meet_max = 0;
std::set<std::thread::id> g_intra_threads;

class RecordOp : public OpKernel {
 public:
  explicit RecordOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("tag", &tag_);
    if (s.ok()) s = c->GetAttr("sleep_ms", &sleep_ms_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext*) override {
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    const auto end = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(g_mu);
    g_spans.push_back({tag_, start, end});
  }

 private:
  std::string tag_;
  int sleep_ms_ = 0;
};

class MeetOp : public OpKernel {
 public:
  explicit MeetOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("expected", &expected_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext*) override {
    std::unique_lock<std::mutex> lock(g_mu);
    ++g_meet_now;
    g_meet_max = std::max(g_meet_max, g_meet_now);
    g_meet_cv.notify_all();
    g_meet_cv.wait_for(lock, std::chrono::seconds(2), [&] { return g_meet_max >= expected_; });
    --g_meet_now;
  }

 private:
  int expected_ = 1;
};

class BlockOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CancellationManager* cm = ctx->cancellation_manager();
    auto token = cm->NewToken();
    bool registered = cm->RegisterCallback(token, [ctx, done] {
      ctx->SetStatus(errors::Cancelled("TestBlock cancelled"));
      done();
    });
    if (!registered) {
      ctx->SetStatus(errors::Cancelled("TestBlock cancelled"));
      done();
    }
  }
};

// Completes before ComputeAsync returns, as a _Recv whose tensor is already there does.
class InlineAsyncOp : public AsyncOpKernel {
 public:
  explicit InlineAsyncOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    Status s = c->GetAttr("value", &value_);
    if (!s.ok()) c->SetStatus(s);
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ctx->set_output(0, Tensor::Scalar(static_cast<float>(value_)));
    done();
  }

 private:
  double value_ = 0;
};

class FailOp : public OpKernel {
 public:
  explicit FailOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("message", &message_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override { ctx->SetStatus(errors::InvalidArgument(message_)); }

 private:
  std::string message_;
};

// Throws what a library may throw from inside a kernel.
class ThrowOp : public OpKernel {
 public:
  explicit ThrowOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("what", &what_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext*) override {
    if (what_ == "bad_alloc") throw std::bad_alloc();
    throw std::runtime_error(what_);
  }

 private:
  std::string what_;
};

class IntraThreadsOp : public OpKernel {
 public:
  explicit IntraThreadsOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("n", &n_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    ctx->intra_op_pool()->ParallelFor(n_, 1000000, [](int64_t b, int64_t e) {
      {
        std::lock_guard<std::mutex> lock(g_mu);
        g_intra_threads.insert(std::this_thread::get_id());
      }
      // Long enough that every pool thread gets a block.
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (e - b)));
    });
  }

 private:
  int64_t n_ = 1;
};

}  // namespace

void RegisterTestOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    OpRegistry* ops = OpRegistry::Global();
    KernelRegistry* k = KernelRegistry::Global();
    (void)ops->Register(OpDefBuilder("TestRecord").Attr("tag: string").Attr("sleep_ms: int = 0").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestMeet").Attr("expected: int").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestBlock").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestFail").Attr("message: string").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestIntraThreads").Attr("n: int").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestThrow").Attr("what: string").SetIsStateful());
    (void)ops->Register(OpDefBuilder("TestInlineAsync").Output("y: float").Attr("value: float"));
    k->Register<RecordOp>(KernelDefBuilder("TestRecord").Device(kDeviceCpu));
    k->Register<MeetOp>(KernelDefBuilder("TestMeet").Device(kDeviceCpu));
    k->Register<BlockOp>(KernelDefBuilder("TestBlock").Device(kDeviceCpu));
    k->Register<FailOp>(KernelDefBuilder("TestFail").Device(kDeviceCpu));
    k->Register<IntraThreadsOp>(KernelDefBuilder("TestIntraThreads").Device(kDeviceCpu));
    k->Register<ThrowOp>(KernelDefBuilder("TestThrow").Device(kDeviceCpu));
    k->Register<InlineAsyncOp>(KernelDefBuilder("TestInlineAsync").Device(kDeviceCpu));
  });
}

std::vector<std::string> RecordedTags() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> tags;
  for (const RecordedSpan& s : g_spans) tags.push_back(s.tag);
  return tags;
}
std::vector<RecordedSpan> RecordedSpans() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_spans;
}
void ClearRecordedTags() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_spans.clear();
}
int MaxMeetConcurrency() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_meet_max;
}
void ResetMeet() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_meet_now = 0;
  g_meet_max = 0;
}
std::set<std::thread::id> IntraThreadsSeen() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_intra_threads;
}
void ClearIntraThreadsSeen() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_intra_threads.clear();
}

}  // namespace tessera::testing
