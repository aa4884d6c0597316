#include "runtime/step_capture.h"

#include <algorithm>
#include <set>

#include "graph/platform/logging.h"
#include "kernels/resource_mgr.h"
#include "kernels/variable.h"
#include "runtime/device.h"

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

bool IsControlFlow(std::string_view op) {
  static const std::set<std::string_view> ops = {"Switch", "RefSwitch", "Merge",         "RefMerge",        "Enter",
                                                 "RefEnter", "Exit",    "RefExit",       "NextIteration",   "RefNextIteration",
                                                 "LoopCond", "ControlTrigger"};
  return ops.contains(op);
}

// A device handing a tensor from its host memory to its device memory (a shape computed on
// the host for a kernel on the GPU): recorded, the copy repeats what it copied then.
bool WithinOneDevice(const Node& n) {
  std::string from, to;
  return n.GetAttr("send_device", &from).ok() && n.GetAttr("recv_device", &to).ok() && from == to;
}

}  // namespace

std::string CaptureBlocker(const Graph& partition) {
  for (const Node* n : partition.nodes()) {
    const std::string& op = n->op();
    std::string why;
    if (op == "_Arg" || op == "_Retval") {
      why = "the step has feeds or fetches";
    } else if (IsSendOp(op) || IsRecvOp(op)) {
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
    if (n->op() != "VariableV2") continue;
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

Status StepCapture::Run(std::shared_mutex& session_steps, const std::function<Status()>& run_normally,
                        const std::function<Status()>& run_on_this_thread) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!given_up_ && recording_ == nullptr && normal_runs_ >= kWarmupSteps) {
    std::unique_lock<std::shared_mutex> alone(session_steps);
    return Record(run_normally, run_on_this_thread);
  }
  std::shared_lock<std::shared_mutex> steps(session_steps);
  if (given_up_) return run_normally();
  if (recording_ != nullptr) {
    StatusOr<std::vector<const void*>> now = VariableBuffers();
    if (now.ok() && *now == recorded_buffers_) return recording_->Replay();
    recording_.reset();
    normal_runs_ = 0;
    LogOnce("a variable it reads has another buffer than when the step was recorded; the step runs normally and "
            "is recorded again");
  }
  Status s = run_normally();
  if (s.ok()) ++normal_runs_;
  return s;
}

Status StepCapture::Record(const std::function<Status()>& run_normally,
                           const std::function<Status()>& run_on_this_thread) {
  StatusOr<std::vector<const void*>> before = VariableBuffers();
  if (!before.ok()) return run_normally();  // an uninitialized variable: the normal run says which
  StatusOr<std::unique_ptr<StepRecording>> recording = device_->NewStepRecording();
  if (!recording.ok()) {
    given_up_ = true;
    LogOnce(StrCat("the device cannot record steps (", recording.status().message(), "); they run normally"));
    return run_normally();
  }
  Status recorded = (*recording)->Record(run_on_this_thread);
  if (!recorded.ok()) {
    given_up_ = true;
    LogOnce(StrCat("the step could not be recorded (", recorded.ToString(), "); it runs normally from now on"));
    return recorded;
  }
  RETURN_IF_ERROR((*recording)->Replay());  // the recorded step's own run
  StatusOr<std::vector<const void*>> after = VariableBuffers();
  if (!after.ok() || *after != *before) {
    normal_runs_ = 0;
    LogOnce("a variable's update moved its buffer while the step was recorded (a reader shared it); the step "
            "runs normally and is recorded again");
    return Status::OK();
  }
  recording_ = std::move(*recording);
  recorded_buffers_ = std::move(*after);
  LogOnce("recorded; later steps replay it");
  return Status::OK();
}

}  // namespace tessera
