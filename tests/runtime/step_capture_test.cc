// Whole-step capture on any machine: which partitions qualify, and StepCapture's choice
// between running, recording and replaying, on a device whose "recording" is a counter.
// The GPU's recording itself is tests/gpu/gpu_capture_test.
#include "runtime/step_capture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shared_mutex>

#include "graph/builder/ops.h"
#include "kernels/resource_mgr.h"
#include "kernels/variable.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "tests/captured_log.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Graph> GraphOf(const Scope& root) {
  GraphDef def;
  EXPECT_TRUE(root.ToGraphDef(&def).ok());
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromGraphDef(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

// w -= 0.1 * (x w): the step a training loop repeats, without feeds or fetches.
Scope TrainingStep(Output* w_out = nullptr) {
  Scope root = Scope::NewRootScope();
  auto w = ops::Variable(root.WithOpName("w"), TensorShape({2, 2}), DataType::kFloat);
  auto x = ops::Const(root.WithOpName("x"), Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2})));
  ops::ApplyGradientDescent(root.WithOpName("update"), w, ops::Const(root, Tensor::Scalar(0.1f)),
                            ops::MatMul(root, x, w));
  if (w_out != nullptr) *w_out = w;
  return root;
}

TEST(StepCaptureTest, ATrainingStepQualifiesAndWhatChangesOnTheHostDoesNot) {
  EXPECT_EQ(CaptureBlocker(*GraphOf(TrainingStep())), "");
  {
    Scope root = TrainingStep();
    ops::RandomUniform(root.WithOpName("noise"), ops::Const(root, Tensor::FromVector<int32_t>({2})), DataType::kFloat);
    EXPECT_THAT(CaptureBlocker(*GraphOf(root)), HasSubstr("node 'noise' (RandomUniform): its state changes on the host"));
  }
  {
    Scope root = TrainingStep();
    auto v = ops::Variable(root.WithOpName("v"), TensorShape({}), DataType::kFloat);
    ops::Assign(root.WithOpName("reset"), v, ops::Const(root, Tensor::Scalar(0.0f)));
    EXPECT_THAT(CaptureBlocker(*GraphOf(root)), HasSubstr("node 'reset' (Assign): it gives a variable a new buffer"));
  }
  {
    GraphDef def;
    NodeDef arg;
    arg.name = "feed";
    arg.op = "_Arg";
    arg.attrs = {{"T", DataType::kFloat}, {"index", int64_t{0}}};
    def.nodes.push_back(arg);
    StatusOr<std::unique_ptr<Graph>> g = Graph::FromGraphDef(def);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_THAT(CaptureBlocker(**g), HasSubstr("node 'feed' (_Arg): the step has feeds or fetches"));
  }
  // A shape the GPU's host side computed, handed to its device memory, is recorded; a tensor
  // for another device is not.
  for (const char* to : {"/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"}) {
    GraphDef def;
    NodeDef send;
    send.name = "send";
    send.op = "_HostSend";
    send.inputs = {"c"};
    send.attrs = {{"T", DataType::kFloat},
                  {"tensor_name", std::string("c:0")},
                  {"send_device", std::string("/job:localhost/replica:0/task:0/device:GPU:0")},
                  {"send_device_incarnation", int64_t{1}},
                  {"recv_device", std::string(to)}};
    NodeDef c;
    c.name = "c";
    c.op = "Const";
    c.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(1.0f)}};
    def.nodes = {c, send};
    StatusOr<std::unique_ptr<Graph>> g = Graph::FromGraphDef(def);
    ASSERT_TRUE(g.ok()) << g.status();
    const std::string blocker = CaptureBlocker(**g);
    if (std::string(to).ends_with("GPU:0")) {
      EXPECT_EQ(blocker, "");
    } else {
      EXPECT_THAT(blocker, HasSubstr("node 'send' (_HostSend): it exchanges a tensor with another device"));
    }
  }
}

// A CPU device whose recordings count what they are asked to do.
struct Counts {
  int recorded = 0;
  int replayed = 0;
  Status record_error;
};

class CountingRecording final : public StepRecording {
 public:
  explicit CountingRecording(Counts* counts) : counts_(counts) {}
  Status Record(const std::function<Status()>& step) override {
    RETURN_IF_ERROR(step());
    ++counts_->recorded;
    return counts_->record_error;
  }
  Status Replay() override {
    ++counts_->replayed;
    return Status::OK();
  }

 private:
  Counts* counts_;
};

class RecordingDevice final : public Device {
 public:
  RecordingDevice(Counts* counts, bool can_record)
      : Device(*DeviceName::Parse("/job:localhost/replica:0/task:0/device:CPU:0"), nullptr, nullptr, nullptr),
        counts_(counts),
        can_record_(can_record) {}
  StatusOr<std::unique_ptr<StepRecording>> NewStepRecording() override {
    if (!can_record_) return Device::NewStepRecording();
    return std::unique_ptr<StepRecording>(std::make_unique<CountingRecording>(counts_));
  }

 private:
  Counts* counts_;
  bool can_record_;
};

struct Fixture {
  Counts counts;
  ResourceMgr resources;
  std::unique_ptr<Graph> graph = GraphOf(TrainingStep());
  std::shared_ptr<Variable> w;
  int normal_runs = 0;
  int runs_on_this_thread = 0;
  std::shared_mutex session_steps;

  Fixture() {
    w = *resources.LookupOrCreate<Variable>("", "w", [] {
      return std::make_shared<Variable>(DataType::kFloat, TensorShape({2, 2}));
    });
    w->Write(Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2})));
  }
  Status Step(StepCapture& capture) {
    return capture.Run(
        session_steps,
        [this] {
          ++normal_runs;
          return Status::OK();
        },
        [this] {
          ++runs_on_this_thread;
          return Status::OK();
        });
  }
};

TEST(StepCaptureTest, WarmUpThenRecordOnceThenReplay) {
  testing::CapturedLog log;
  Fixture f;
  RecordingDevice device(&f.counts, true);
  StepCapture capture("train", &device, &f.resources, *f.graph);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.normal_runs, StepCapture::kWarmupSteps);
  EXPECT_EQ(f.runs_on_this_thread, 1);  // the recording
  EXPECT_EQ(f.counts.recorded, 1);
  // The recorded step's own run, then one for each later step.
  EXPECT_EQ(f.counts.replayed, 6 - StepCapture::kWarmupSteps);
  EXPECT_THAT(log.text(), HasSubstr("(train): recorded; later steps replay it"));
}

TEST(StepCaptureTest, AVariableWithANewBufferRunsNormallyAndIsRecordedAgain) {
  testing::CapturedLog log;
  Fixture f;
  RecordingDevice device(&f.counts, true);
  StepCapture capture("train", &device, &f.resources, *f.graph);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.Step(capture).ok());
  ASSERT_EQ(f.counts.recorded, 1);
  f.w->Write(Tensor::FromVector<float>({2, 0, 0, 2}, TensorShape({2, 2})));  // a restore, an Assign elsewhere
  const int replays = f.counts.replayed;
  ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.counts.replayed, replays);  // not replayed with the old buffer
  EXPECT_EQ(f.normal_runs, StepCapture::kWarmupSteps + 1);
  EXPECT_THAT(log.text(), HasSubstr("a variable it reads has another buffer"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.counts.recorded, 2);
}

TEST(StepCaptureTest, ARecordingErrorIsTheStepsStatusAndLaterStepsRunNormally) {
  testing::CapturedLog log;
  Fixture f;
  f.counts.record_error = errors::Internal("operation not permitted when stream is capturing");
  RecordingDevice device(&f.counts, true);
  StepCapture capture("train", &device, &f.resources, *f.graph);
  for (int i = 0; i < StepCapture::kWarmupSteps; ++i) ASSERT_TRUE(f.Step(capture).ok());
  Status s = f.Step(capture);
  EXPECT_EQ(s.code(), Code::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("stream is capturing"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.normal_runs, StepCapture::kWarmupSteps + 3);
  EXPECT_EQ(f.counts.replayed, 0);
  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("could not be recorded"));
  EXPECT_EQ(text.find("could not be recorded"), text.rfind("could not be recorded"));  // once
}

TEST(StepCaptureTest, ADeviceThatCannotRecordRunsEveryStepNormally) {
  testing::CapturedLog log;
  Fixture f;
  RecordingDevice device(&f.counts, false);
  StepCapture capture("train", &device, &f.resources, *f.graph);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.normal_runs, 5);
  EXPECT_THAT(log.text(), HasSubstr("cannot record steps"));
}

TEST(StepCaptureTest, AnUninitializedVariableIsLeftToTheNormalRunToReport) {
  Fixture f;
  ResourceMgr empty;
  RecordingDevice device(&f.counts, true);
  StepCapture capture("train", &device, &empty, *f.graph);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.Step(capture).ok());
  EXPECT_EQ(f.normal_runs, 4);
  EXPECT_EQ(f.counts.recorded, 0);
}

// A session on CPUs takes the option and records nothing: its steps run as before.
TEST(StepCaptureTest, CpuSessionsIgnoreTheOption) {
  testing::CapturedLog log;
  Output w;
  Scope root = TrainingStep(&w);
  ops::Assign(root.WithOpName("init"), w, ops::Const(root, Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2}))));
  GraphDef def;
  ASSERT_TRUE(root.ToGraphDef(&def).ok());
  SessionConfig config;
  config.gpu_options.capture_steps = true;
  auto session = Session::Create(config, def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*session)->Run({}, {}, {"update"}, &out).ok());
  ASSERT_TRUE((*session)->Run({}, {"w"}, {}, &out).ok());
  // w <- w - 0.1 x w = (I - 0.1 x) w, four times from the identity.
  EXPECT_NEAR(out[0].data<float>()[0], 0.8919f, 1e-4);
  EXPECT_THAT(log.text(), ::testing::Not(HasSubstr("Step capture")));
}

}  // namespace
}  // namespace tessera
