// In-graph replication over logical GPUs of one physical GPU: mirrored towers all-reduce on
// the GPUs and stay bit-identical, and both modes match one GPU with the same global batch,
// with the parameters on a GPU or on the CPU (the layout of TF's multi-GPU examples). Every
// test in this binary asks for the same logical GPUs: GPU options take effect when a process
// makes its first GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"
#include "training/replicate.h"

namespace tessera {
namespace {

constexpr int kGlobalBatch = 24;
constexpr int kLogicalGpus = 3;

// A two-layer perceptron with a mean squared error; gradients written with ops.
ModelFn Mlp(int towers) {
  return [towers](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    const int64_t batch = kGlobalBatch / towers;
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, TensorShape({batch, 4}));
    auto t = ops::Placeholder(s.WithOpName("t"), DataType::kFloat, TensorShape({batch, 1}));
    std::vector<float> w1(4 * 8);
    for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
    auto w = tower.Variable("w1", Tensor::FromVector<float>(w1, TensorShape({4, 8})));
    auto v = tower.Variable("w2", Tensor::FromVector<float>(std::vector<float>(8, 0.1f), TensorShape({8, 1})));
    auto h = ops::Relu(s, ops::MatMul(s, x, w));
    auto d = ops::Sub(s, ops::MatMul(s, h, v), t);
    out->outputs.push_back(ops::Mean(s.WithOpName("loss"), ops::Square(s, d), {0, 1}));
    const float scale = 2.0f / static_cast<float>(batch);
    auto dy = ops::Mul(s, d, scale);
    auto grad_v = ops::MatMul(s, h, dy, {.transpose_a = true});
    auto dh = ops::ReluGrad(s, ops::MatMul(s, dy, v, {.transpose_b = true}), h);
    auto grad_w = ops::MatMul(s, x, dh, {.transpose_a = true});
    out->grads = {{grad_w, w}, {grad_v, v}};
  };
}

std::vector<std::pair<std::string, Tensor>> Feeds(int step, int towers) {
  std::mt19937 rng(99 + step);
  std::normal_distribution<float> value(0, 1);
  Tensor x(DataType::kFloat, TensorShape({kGlobalBatch, 4})), t(DataType::kFloat, TensorShape({kGlobalBatch, 1}));
  for (int i = 0; i < kGlobalBatch; ++i) {
    float* row = x.data<float>() + i * 4;
    for (int j = 0; j < 4; ++j) row[j] = value(rng);
    t.data<float>()[i] = row[0] - 2 * row[1] + row[2] * row[3];
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  const int64_t batch = kGlobalBatch / towers;
  for (int i = 0; i < towers; ++i) {
    feeds.emplace_back(StrCat("tower_", i, "/x"), x.Slice(i * batch, (i + 1) * batch));
    feeds.emplace_back(StrCat("tower_", i, "/t"), t.Slice(i * batch, (i + 1) * batch));
  }
  return feeds;
}

struct Trained {
  std::map<std::string, std::vector<Tensor>> copies;
  std::vector<std::string> placements;  // of the variables
};

Trained Train(ReplicationMode mode, int towers, int steps, const std::string& parameter_device = "",
              bool wire_float16 = false) {
  Scope root = Scope::NewRootScope();
  ReplicateOptions options;
  options.mode = mode;
  for (int i = 0; i < towers; ++i) options.devices.push_back(StrCat("/gpu:", i));
  options.parameter_device = parameter_device;
  options.wire_float16 = wire_float16;
  options.bucket_bytes = 64;  // w2's gradient alone, w1's in a bucket of its own
  auto rep = Replicate(root, options, Mlp(towers), GradientDescent(0.05));
  EXPECT_TRUE(rep.ok()) << rep.status();
  if (!rep.ok()) return {};
  SessionConfig config;
  config.device_count = {{"CPU", 1}, {"GPU", kLogicalGpus}};
  config.gpu_options.virtual_device_memory_limit_mb = {std::vector<double>(kLogicalGpus, 512)};
  auto session = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  Status init = session->Run({}, {}, {rep->init.name()}, &out);
  EXPECT_TRUE(init.ok()) << init;
  for (int step = 0; step < steps; ++step) {
    Status s = session->Run(Feeds(step, towers), {}, {rep->train.name()}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return {};
  }
  Trained result;
  for (const auto& [name, copies] : rep->variables) {
    for (const Output& c : copies) result.copies[name].push_back(testing::Fetch(*session, c.name()));
  }
  return result;
}

void ExpectNear(const Tensor& a, const Tensor& b, float tol) {
  auto va = testing::Values<float>(a), vb = testing::Values<float>(b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], tol) << i;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.TotalBytes() == b.TotalBytes() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(GpuReplicateTest, MirroredOnTwoLogicalGpusEqualsOneGpuAfterFiveSteps) {
  TESSERA_SKIP_WITHOUT_GPU();
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 5);
  Trained two = Train(ReplicationMode::kMirrored, 2, 5);
  for (const char* name : {"w1", "w2"}) {
    ASSERT_EQ(two.copies[name].size(), 2u) << name;
    ExpectNear(two.copies[name][0], one.copies[name][0], 1e-4f);
    EXPECT_TRUE(SameBits(two.copies[name][1], two.copies[name][0])) << name;
  }
}

TEST(GpuReplicateTest, MirroredCopiesStayBitIdenticalAfterHundredSteps) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (bool wire : {false, true}) {
    Trained three = Train(ReplicationMode::kMirrored, 3, 100, "", wire);
    for (const char* name : {"w1", "w2"}) {
      ASSERT_EQ(three.copies[name].size(), 3u) << name;
      for (int i = 1; i < 3; ++i) EXPECT_TRUE(SameBits(three.copies[name][i], three.copies[name][0])) << name << " " << i;
    }
  }
}

TEST(GpuReplicateTest, ParameterDeviceOnTheCpuOrAGpuMatchesOneGpu) {
  TESSERA_SKIP_WITHOUT_GPU();
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 5);
  for (const char* parameters : {"/cpu:0", "/gpu:0", ""}) {
    SCOPED_TRACE(parameters);
    Trained two = Train(ReplicationMode::kParameterDevice, 2, 5, parameters);
    for (const char* name : {"w1", "w2"}) {
      ASSERT_EQ(two.copies[name].size(), 1u) << name;
      ExpectNear(two.copies[name][0], one.copies[name][0], 1e-4f);
    }
  }
}

}  // namespace
}  // namespace tessera
