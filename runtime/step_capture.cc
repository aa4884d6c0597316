#include "runtime/step_capture.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "graph/op_kinds.h"
#include "graph/platform/logging.h"
#include "kernels/resource_mgr.h"
#include "kernels/resources/variable.h"
#include "kernels/vector_call_frame.h"
#include "runtime/device_mgr.h"

namespace tessera {
namespace {

// Stateful ops whose state stays where it is from step to step: a variable, and the updates
// that change its buffer in place.
bool KeepsItsStateInPlace(std::string_view op) {
  static const std::set<std::string_view> ops = {"VariableV2",   "ApplyGradientDescent", "ApplyMomentum",
                                                 "ApplyRMSProp", "ApplyAdam",            "AssignAdd",
                                                 "AssignSub"};
  return ops.contains(op);
}

// A device handing a tensor from its host memory to its device memory (a shape computed on
// the host for a kernel on the GPU): recorded, the copy repeats what it copied then.
bool WithinOneDevice(const Node& n) {
  std::string from, to;
  return n.GetAttr("send_device", &from).ok() && n.GetAttr("recv_device", &to).ok() && from == to;
}

// The dtypes a GPU keeps in host memory (devices/gpu/gpu_kernels.cc): a feed of one is read by
// the host side of the kernels, once, when the step is recorded.
bool StaysInHostMemory(DataType dtype) {
  return dtype == DataType::kInt32 || DataTypeSize(dtype) == 0;
}

}  // namespace

std::string CaptureBlocker(const Graph& partition) {
  for (const Node* n : partition.nodes()) {
    const std::string& op = n->op();
    std::string why;
    DataType dtype = DataType::kInvalid;
    if (IsArg(op) && n->GetAttr("T", &dtype).ok() && StaysInHostMemory(dtype)) {
      why = StrCat("a ", DataTypeName(dtype), " feed stays in host memory, where the kernels' host side reads it once");
    } else if (IsSend(op) || IsRecv(op)) {
      if (!WithinOneDevice(*n)) why = "it exchanges a tensor with another device";
    } else if (op == "Assign") {
      why = "it gives a variable a new buffer";
    } else if (IsControlFlow(op)) {
      why = "control flow chooses on the host which nodes run";
    } else if (n->is_stateful() && !KeepsItsStateInPlace(op)) {
      why = "its state changes on the host from step to step";
    }
    if (!why.empty()) return StrCat("node ", n->DebugName(), ": ", why);
  }
  return "";
}

StepCapture::StepCapture(std::string signature, Device* device, ResourceMgr* resources, const Graph& partition)
    : signature_(std::move(signature)), device_(device), resources_(resources) {
  for (const Node* n : partition.nodes()) {
    if (!IsVariable(n->op())) continue;
    std::string container, shared_name;
    (void)n->GetAttr("container", &container);
    (void)n->GetAttr("shared_name", &shared_name);
    variables_.emplace_back(container, shared_name.empty() ? n->name() : shared_name);
  }
}

StepCapture::~StepCapture() = default;

StatusOr<std::vector<const void*>> StepCapture::VariableBuffers() const {
  std::vector<const void*> buffers;
  for (const auto& [container, name] : variables_) {
    ASSIGN_OR_RETURN(std::shared_ptr<Variable> var, resources_->Lookup<Variable>(container, name));
    ASSIGN_OR_RETURN(Tensor value, var->Read(name));
    buffers.push_back(value.raw_data());  // the pointer only: a held Tensor would make the next update copy
  }
  return buffers;
}

void StepCapture::LogOnce(const std::string& what) {
  if (std::find(logged_.begin(), logged_.end(), what) != logged_.end()) return;
  logged_.push_back(what);
  Log(LogSeverity::kInfo, StrCat("Step capture on ", device_->name(), " (", signature_, "): ", what));
}

Status StepCapture::Run(std::shared_mutex& session_steps, VectorCallFrame* frame,
                        const std::function<Status()>& run_normally,
                        const std::function<Status(CallFrame*)>& run_on_this_thread) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!given_up_ && recording_ == nullptr && normal_runs_ >= kWarmupSteps) {
    std::unique_lock<std::shared_mutex> alone(session_steps);
    return Record(frame, run_normally, run_on_this_thread);
  }
  std::shared_lock<std::shared_mutex> steps(session_steps);
  if (given_up_) return run_normally();
  if (recording_ != nullptr) {
    StatusOr<std::vector<const void*>> now = VariableBuffers();
    if (!now.ok() || *now != recorded_buffers_) {
      recording_.reset();
      normal_runs_ = 0;
      LogOnce("a variable it reads has another buffer than when the step was recorded; the step runs normally and "
              "is recorded again");
    } else if (!FeedsFit(*frame)) {
      LogOnce("a feed has another dtype or shape than when the step was recorded; such steps run normally");
      return run_normally();
    } else {
      RETURN_IF_ERROR(WriteFeeds(*frame));
      RETURN_IF_ERROR(recording_->Replay());
      return ReadFetches(frame);
    }
  }
  Status s = run_normally();
  if (s.ok()) ++normal_runs_;
  return s;
}

bool StepCapture::FeedsFit(const VectorCallFrame& frame) const {
  const std::vector<Tensor>& feeds = frame.args();
  if (feeds.size() != fixed_feeds_.size()) return false;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (feeds[i].dtype() != fixed_feeds_[i].dtype() || feeds[i].shape() != fixed_feeds_[i].shape()) return false;
  }
  return true;
}

Status StepCapture::WriteFeeds(const VectorCallFrame& frame) {
  if (fixed_feeds_.empty()) return Status::OK();
  RETURN_IF_ERROR(recording_->Wait());
  for (size_t i = 0; i < fixed_feeds_.size(); ++i) {
    std::memcpy(fixed_feeds_[i].raw_data(), frame.args()[i].raw_data(), fixed_feeds_[i].TotalBytes());
  }
  return Status::OK();
}

Status StepCapture::ReadFetches(VectorCallFrame* frame) {
  if (fixed_fetches_.empty()) return Status::OK();
  RETURN_IF_ERROR(recording_->Wait());
  for (size_t i = 0; i < fixed_fetches_.size(); ++i) {
    // The next replay rewrites the buffer; a fetch is the caller's to keep.
    ASSIGN_OR_RETURN(Tensor copy, fixed_fetches_[i].DeepCopy(CpuAllocator()));
    RETURN_IF_ERROR(frame->SetRetval(static_cast<int>(i), copy));
  }
  return Status::OK();
}

Status StepCapture::Record(VectorCallFrame* frame, const std::function<Status()>& run_normally,
                           const std::function<Status(CallFrame*)>& run_on_this_thread) {
  StatusOr<std::vector<const void*>> before = VariableBuffers();
  if (!before.ok()) return run_normally();  // an uninitialized variable: the normal run says which
  StatusOr<std::unique_ptr<StepRecording>> recording = device_->NewStepRecording();
  if (!recording.ok()) {
    given_up_ = true;
    LogOnce(StrCat("the device cannot record steps (", recording.status().message(), "); they run normally"));
    return run_normally();
  }
  // Pinned, as the device's own host memory is: a recorded copy reads or writes it in place.
  std::vector<Tensor> feeds;
  for (const Tensor& feed : frame->args()) {
    ASSIGN_OR_RETURN(Tensor fixed, feed.DeepCopy(device_->host_allocator()));
    feeds.push_back(std::move(fixed));
  }
  VectorCallFrame fixed(std::move(feeds), frame->retvals().size());  // as the recording sees them
  Status recorded = (*recording)->Record([&] { return run_on_this_thread(&fixed); }, fixed.args());
  if (!recorded.ok()) {
    given_up_ = true;
    LogOnce(StrCat("the step could not be recorded (", recorded.ToString(), "); it runs normally from now on"));
    return recorded;
  }
  recording_ = std::move(*recording);
  fixed_feeds_ = std::move(fixed.args());
  fixed_fetches_ = std::move(fixed.retvals());
  Status ran = recording_->Replay();  // the recorded step's own run
  if (ran.ok()) ran = ReadFetches(frame);
  StatusOr<std::vector<const void*>> after = VariableBuffers();
  if (!ran.ok() || !after.ok() || *after != *before) {
    recording_.reset();
    normal_runs_ = 0;
    if (ran.ok()) {
      LogOnce("a variable's update moved its buffer while the step was recorded (a reader shared it); the step "
              "runs normally and is recorded again");
    }
    return ran;
  }
  recorded_buffers_ = std::move(*after);
  LogOnce("recorded; later steps replay it");
  return Status::OK();
}

}  // namespace tessera
