// Whole-step capture on any machine: which partitions qualify, and StepCapture's choice
// between running, recording and replaying, on a device whose "recording" is a counter.
// The GPU's recording itself is tests/gpu/gpu_capture_test.
#include "runtime/step_capture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shared_mutex>

#include "graph/builder/ops.h"
#include "kernels/resource_mgr.h"
#include "kernels/resources/variable.h"
#include "kernels/vector_call_frame.h"
#include "runtime/device_mgr.h"
#include "runtime/session.h"
#include "tests/captured_log.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Graph> GraphOf(const Scope& root) {
  GraphSpec def;
  EXPECT_TRUE(root.ToSpec(&def).ok());
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
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
  // A feed goes through a fixed buffer, except where the GPU's host side reads it.
  for (DataType dtype : {DataType::kFloat, DataType::kInt32}) {
    GraphSpec def;
    NodeSpec arg;
    arg.name = "feed";
    arg.op = "_Arg";
    arg.attrs = {{"T", dtype}, {"index", int64_t{0}}};
    def.nodes.push_back(arg);
    StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
    ASSERT_TRUE(g.ok()) << g.status();
    if (dtype == DataType::kFloat) {
      EXPECT_EQ(CaptureBlocker(**g), "");
    } else {
      EXPECT_THAT(CaptureBlocker(**g), HasSubstr("node 'feed' (_Arg): a int32 feed stays in host memory"));
    }
  }
  // A shape the GPU's host side computed, handed to its device memory, is recorded; a tensor
  // for another device is not.
  for (const char* to : {"/job:localhost/replica:0/task:0/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:1"}) {
    GraphSpec def;
    NodeSpec send;
    send.name = "send";
    send.op = "_HostSend";
    send.inputs = {"c"};
    send.attrs = {{"T", DataType::kFloat},
                  {"tensor_name", std::string("c:0")},
                  {"send_device", std::string("/job:localhost/replica:0/task:0/device:GPU:0")},
                  {"send_device_incarnation", int64_t{1}},
                  {"recv_device", std::string(to)}};
    NodeSpec c;
    c.name = "c";
    c.op = "Const";
    c.attrs = {{"dtype", DataType::kFloat}, {"value", Tensor::Scalar(1.0f)}};
    def.nodes = {c, send};
    StatusOr<std::unique_ptr<Graph>> g = Graph::FromSpec(def);
    ASSERT_TRUE(g.ok()) << g.status();
    const std::string blocker = CaptureBlocker(**g);
    if (std::string(to).ends_with("GPU:0")) {
      EXPECT_EQ(blocker, "");
    } else {
      EXPECT_THAT(blocker, HasSubstr("node 'send' (_HostSend): it exchanges a tensor with another device"));
    }
  }
}

// A CPU device whose recordings count what they are asked to do. A replay does what a GPU's
// does to the step's host buffers: `replay_effect` reads the fixed inputs in place and
// rewrites what the recorded step fetched into.
struct Counts {
  int recorded = 0;
  int replayed = 0;
  int waits = 0;
  Status record_error;
  std::function<void(const std::vector<Tensor>& fixed_inputs)> replay_effect;
};

class CountingRecording final : public StepRecording {
 public:
  explicit CountingRecording(Counts* counts) : counts_(counts) {}
  Status Record(const std::function<Status()>& step, const std::vector<Tensor>& fixed_inputs) override {
    RETURN_IF_ERROR(step());
    fixed_inputs_ = fixed_inputs;
    ++counts_->recorded;
    return counts_->record_error;
  }
  Status Replay() override {
    ++counts_->replayed;
    if (counts_->replay_effect) counts_->replay_effect(fixed_inputs_);
    return Status::OK();
  }
  Status Wait() override {
    ++counts_->waits;
    return Status::OK();
  }

 private:
  Counts* counts_;
  std::vector<Tensor> fixed_inputs_;
};

class RecordingDevice final : public Device {
 public:
  RecordingDevice(Counts* counts, bool can_record)
      : Device(*DeviceName::Parse("/job:localhost/replica:0/task:0/device:CPU:0"), CpuAllocator(), CpuAllocator(), nullptr),
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
    VectorCallFrame none({}, 0);
    return capture.Run(
        session_steps, &none,
        [this] {
          ++normal_runs;
          return Status::OK();
        },
        [this](CallFrame*) {
          ++runs_on_this_thread;
          return Status::OK();
        });
  }

  // One step fetching y = 2 x for the feed x: run normally, or recorded, the buffer the
  // recording fetched into remembered for the replays to rewrite.
  StatusOr<Tensor> Doubled(StepCapture& capture, const Tensor& x) {
    VectorCallFrame frame({x}, 1);
    auto doubled_into = [](const Tensor& in, CallFrame* out_frame) -> Tensor {
      Tensor out(in.dtype(), in.shape());
      for (int64_t i = 0; i < in.NumElements(); ++i) out.data<float>()[i] = 2 * in.data<float>()[i];
      (void)out_frame->SetRetval(0, out);
      return out;
    };
    RETURN_IF_ERROR(capture.Run(
        session_steps, &frame,
        [&] {
          ++normal_runs;
          doubled_into(x, &frame);
          return Status::OK();
        },
        [&](CallFrame* fixed) -> Status {
          ++runs_on_this_thread;
          ASSIGN_OR_RETURN(Tensor in, fixed->GetArg(0));
          recorded_fetch = doubled_into(in, fixed);
          return Status::OK();
        }));
    return frame.retvals()[0];
  }
  Tensor recorded_fetch;
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

TEST(StepCaptureTest, FeedsAndFetchesGoThroughFixedBuffers) {
  testing::CapturedLog log;
  Fixture f;
  f.counts.replay_effect = [&f](const std::vector<Tensor>& fixed_inputs) {
    ASSERT_EQ(fixed_inputs.size(), 1u);
    for (int64_t i = 0; i < 3; ++i) f.recorded_fetch.data<float>()[i] = 2 * fixed_inputs[0].data<float>()[i];
  };
  RecordingDevice device(&f.counts, true);
  StepCapture capture("double", &device, &f.resources, *f.graph);
  std::vector<Tensor> results;
  for (int step = 0; step < 6; ++step) {
    const float v = static_cast<float>(step);
    StatusOr<Tensor> y = f.Doubled(capture, Tensor::FromVector<float>({v, v + 1, -v}, TensorShape({3})));
    ASSERT_TRUE(y.ok()) << y.status();
    results.push_back(*y);
  }
  EXPECT_EQ(f.counts.recorded, 1);
  EXPECT_EQ(f.counts.replayed, 6 - StepCapture::kWarmupSteps);
  // Every step's own values, though replays rewrote one buffer (fails if the fetch is the
  // buffer itself, or the feed is not written before the replay).
  for (int step = 0; step < 6; ++step) {
    const float v = static_cast<float>(step);
    EXPECT_THAT(std::vector<float>(results[step].data<float>(), results[step].data<float>() + 3),
                ::testing::ElementsAre(2 * v, 2 * v + 2, -2 * v))
        << "step " << step;
  }
  // Each replay after the recorded one waits before writing its feed and before reading its fetch.
  EXPECT_EQ(f.counts.waits, 1 + 2 * (6 - StepCapture::kWarmupSteps - 1));
  EXPECT_THAT(log.text(), HasSubstr("(double): recorded; later steps replay it"));
}

TEST(StepCaptureTest, AFeedOfAnotherShapeRunsNormallyAndSaysSoOnce) {
  testing::CapturedLog log;
  Fixture f;
  RecordingDevice device(&f.counts, true);
  StepCapture capture("double", &device, &f.resources, *f.graph);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(f.Doubled(capture, Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}))).ok());
  }
  ASSERT_EQ(f.counts.recorded, 1);
  const int replays = f.counts.replayed;
  for (int step = 0; step < 2; ++step) {
    StatusOr<Tensor> y = f.Doubled(capture, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4})));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->NumElements(), 4);
    EXPECT_EQ(y->data<float>()[3], 8);
  }
  EXPECT_EQ(f.counts.replayed, replays);
  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("a feed has another dtype or shape than when the step was recorded"));
  EXPECT_EQ(text.find("another dtype or shape"), text.rfind("another dtype or shape"));  // once
  // The recorded shape replays again.
  ASSERT_TRUE(f.Doubled(capture, Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}))).ok());
  EXPECT_EQ(f.counts.replayed, replays + 1);
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
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
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
