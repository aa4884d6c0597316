// The demo's training loop on small subsets of Fashion-MNIST: the CNN learns, mirrored
// training over two devices matches one device with the same global batch, and bad
// options or missing data are clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "devices/device_factory.h"
#include "devices/linked/linked_providers.h"
#include "graph/serialize/tensor_bundle.h"
#include "tests/test_util.h"
#include "tools/cli.h"
#include "training/trainer.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(TrainTest, TheCnnLearnsFromTwoThousandImages) {
  TrainOptions o;
  o.epochs = 2;
  o.devices = 1;
  o.threads = 2;
  o.train_limit = 2000;
  o.test_limit = 1000;
  o.progress = false;
  const std::string dir = std::filesystem::temp_directory_path() / ("tessera_train_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  o.checkpoint_path = dir + "/cnn.ckpt";
  o.trace_path = dir + "/step.json";
  std::ostringstream log;
  StatusOr<TrainResult> r = Train(o, log);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->epochs.size(), 2u);
  // The checkpoint holds the trained variables, bit for bit.
  StatusOr<std::unique_ptr<BundleReader>> saved = BundleReader::Open(o.checkpoint_path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  StatusOr<Tensor> saved_kernel = (*saved)->Read("conv2d/kernel", CpuAllocator());
  ASSERT_TRUE(saved_kernel.ok()) << saved_kernel.status();
  const Tensor& kernel = r->variables.at("conv2d/kernel");
  EXPECT_EQ(std::memcmp(saved_kernel->raw_data(), kernel.raw_data(), kernel.TotalBytes()), 0);
  EXPECT_EQ((*saved)->Find("dense_1/bias")->shape, TensorShape({10}));
  // The trace shows the step's kernels.
  std::ifstream trace(o.trace_path);
  const std::string trace_text((std::istreambuf_iterator<char>(trace)), {});
  EXPECT_THAT(trace_text, HasSubstr("\"Conv2DBackpropFilter\""));
  std::filesystem::remove_all(dir);
  EXPECT_LT(r->epochs[1].mean_loss, 0.8 * r->epochs[0].mean_loss);
  // Chance is 0.1.
  EXPECT_GT(r->epochs[1].test_accuracy, 0.6);
  EXPECT_THAT(log.str(), HasSubstr("Placement:"));
  // Each epoch is one pass: 2000 images in 16 batches, the last of 80 (the training
  // iterator is made once and repeats its batches, so an epoch ends by counting them).
  for (const char* epoch : {"epoch 1/2", "epoch 2/2"}) {
    EXPECT_THAT(log.str(), ::testing::ContainsRegex(std::string(epoch) + " \\[=+\\] +16/16 ")) << epoch;
  }
  EXPECT_THAT(log.str(), HasSubstr("test accuracy"));
  EXPECT_EQ(r->variables.size(), 8u);
  EXPECT_EQ(r->variables.at("conv2d_1/kernel").shape(), TensorShape({3, 3, 32, 64}));
}

TEST(TrainTest, MirroredOverTwoDevicesMatchesOneDevice) {
  TrainOptions o;
  o.epochs = 1;
  o.threads = 2;
  o.train_limit = 640;
  o.test_limit = 1000;
  o.progress = false;
  std::ostringstream log;
  o.devices = 1;
  StatusOr<TrainResult> one = Train(o, log);
  ASSERT_TRUE(one.ok()) << one.status();
  o.devices = 2;
  StatusOr<TrainResult> two = Train(o, log);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(log.str(), HasSubstr("device:CPU:1: "));
  // Five RMSProp steps from the same start on the same batches; only the order of the
  // gradient sums differs.
  for (const auto& [name, a] : one->variables) EXPECT_LT(testing::MaxAbsDifference(a, two->variables.at(name)), 1e-4) << name;
  EXPECT_NEAR(one->epochs[0].mean_loss, two->epochs[0].mean_loss, 1e-4);
  EXPECT_EQ(one->epochs[0].test_accuracy, two->epochs[0].test_accuracy);
  // The same towers with the variables kept once, on the second device, as
  // `--mode parameter-device --parameter-device /cpu:1` does.
  o.mode = "parameter_device";
  o.parameter_device = "/cpu:1";
  log.str("");
  StatusOr<TrainResult> parameters = Train(o, log);
  ASSERT_TRUE(parameters.ok()) << parameters.status();
  EXPECT_THAT(log.str(), ::testing::ContainsRegex("device:CPU:1: [0-9]+ nodes, 8 ApplyRMSProp"));
  for (const auto& [name, a] : one->variables) {
    EXPECT_LT(testing::MaxAbsDifference(a, parameters->variables.at(name)), 1e-4) << name;
  }
}

TEST(TrainTest, BadOptionsAndMissingDataAreClearErrors) {
  std::ostringstream log;
  TrainOptions o;
  o.devices = 3;
  o.batch = 128;
  StatusOr<TrainResult> r = Train(o, log);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("--batch 128 must be a positive multiple of --devices 3"));
  o = TrainOptions();
  o.mode = "ring";
  EXPECT_THAT(Train(o, log).status().message(), HasSubstr("--mode must be mirrored or parameter_device"));
  o.cluster = R"({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})";
  EXPECT_THAT(Train(o, log).status().message(), HasSubstr("on a cluster --mode must be async, sync or multi-worker, got 'ring'"));
  o = TrainOptions();
  o.virtual_gpus = 2;
  EXPECT_THAT(Train(o, log).status().message(), HasSubstr("--virtual-gpus takes a positive count and goes with --device gpu"));
  o = TrainOptions();
  o.parameter_device = "/cpu:0";
  EXPECT_THAT(Train(o, log).status().message(), HasSubstr("--parameter-device goes with --mode parameter_device"));
  o = TrainOptions();
  o.device = "tpu";
  EXPECT_THAT(Train(o, log).status().message(), HasSubstr("--device must be cpu or gpu, got 'tpu'"));
  o = TrainOptions();
  o.data_dir = "/nonexistent";
  r = Train(o, log);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("dataset-fashion-mnist"));

  std::ostringstream out, err;
  EXPECT_EQ(RunCli({"train", "--epochs", "two"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--epochs takes an integer, got 'two'"));
  unsetenv("TF_CONFIG");
  err.str("");
  EXPECT_EQ(RunCli({"train", "--mode", "sync"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--mode sync needs --cluster and --task, or a resolver's: no launcher found"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--mode", "sync", "--resolver", "slurm"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("SLURM_PROCID is not set"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--resolver", "slurm"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--resolver, --jobs and --port-base go with --mode async, sync or multi-worker"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--mode", "async", "--cluster", R"({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})",
                    "--task", "0", "--tls-cert", "task.pem"},
                   out, err),
            2);
  EXPECT_THAT(err.str(), HasSubstr("TLS needs all of --tls-cert, --tls-key and --tls-ca"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--mode", "async", "--job", "ps", "--task", "0"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("tessera train runs the worker tasks, not 'ps'"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--tls-cert", "a.pem", "--tls-key", "a.key", "--tls-ca", "ca.pem"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("go with --mode async, sync or multi-worker"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--all-reduce", "nccl"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("--all-reduce takes auto, ring or gloo, got 'nccl'"));
  err.str("");
  EXPECT_EQ(RunCli({"train", "--epochs", "1", "--data", "/nonexistent"}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("NotFound"));
}

// Soft placement would move the towers to the CPU; asking for GPUs that are not there is an
// error that says why instead.
TEST(TrainTest, AskingForMoreGpusThanThereAreSaysWhy) {
  TrainOptions o;
  o.device = "gpu";
  o.devices = 64;
  o.batch = 128;
  o.train_limit = 256;
  o.test_limit = 128;
  o.progress = false;
  std::ostringstream log;
  StatusOr<TrainResult> r = Train(o, log);
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("--device gpu --devices 64 needs 64 GPUs; this process has"));
  if (!NoGpuReason().empty()) {
    EXPECT_THAT(r.status().message(), HasSubstr(NoGpuReason()));
  }
  EXPECT_THAT(log.str(), ::testing::Not(HasSubstr("epoch 1/")));
}

}  // namespace
}  // namespace tessera
