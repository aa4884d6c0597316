#include "training/replicate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/test_util.h"
#include "training/gradient_buckets.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Values;

constexpr int kGlobalBatch = 12;

// Linear regression y = x w + b with a mean squared error, its gradient written with ops.
ModelFn LinearModel(int towers) {
  return [towers](Tower& tower, TowerOutputs* out) {
    const Scope& s = tower.scope();
    const int64_t batch = kGlobalBatch / towers;
    auto x = ops::Placeholder(s.WithOpName("x"), DataType::kFloat, TensorShape({batch, 3}));
    auto t = ops::Placeholder(s.WithOpName("t"), DataType::kFloat, TensorShape({batch, 1}));
    auto w = tower.Variable("w", Tensor::FromVector<float>({0.1f, -0.2f, 0.3f}, TensorShape({3, 1})));
    auto b = tower.Variable("b", Tensor::FromVector<float>({0.5f}));
    auto d = ops::Sub(s, ops::BiasAdd(s, ops::MatMul(s, x, w), b), t);
    out->outputs.push_back(ops::Mean(s.WithOpName("loss"), ops::Square(s, d), {0, 1}));
    const float scale = 2.0f / static_cast<float>(batch);
    auto grad_w = ops::Mul(s, ops::MatMul(s, x, d, {.transpose_a = true}), scale);
    auto grad_b = ops::Mul(s, ops::Sum(s, d, {0}), scale);
    out->grads = {{grad_w, w}, {grad_b, b}};
  };
}

struct Data {
  Tensor x, t;
};

Data MakeData(int step) {
  std::mt19937 rng(1234 + step);
  std::normal_distribution<float> noise(0, 0.1f);
  Data d{Tensor(DataType::kFloat, TensorShape({kGlobalBatch, 3})), Tensor(DataType::kFloat, TensorShape({kGlobalBatch, 1}))};
  for (int i = 0; i < kGlobalBatch; ++i) {
    float* row = d.x.data<float>() + i * 3;
    for (int j = 0; j < 3; ++j) row[j] = noise(rng) * 10;
    d.t.data<float>()[i] = 2 * row[0] - row[1] + 0.5f * row[2] + 1 + noise(rng);
  }
  return d;
}

std::vector<std::pair<std::string, Tensor>> Feeds(const Data& d, int towers) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  const int64_t batch = kGlobalBatch / towers;
  for (int i = 0; i < towers; ++i) {
    feeds.emplace_back(StrCat("tower_", i, "/x"), d.x.Slice(i * batch, (i + 1) * batch));
    feeds.emplace_back(StrCat("tower_", i, "/t"), d.t.Slice(i * batch, (i + 1) * batch));
  }
  return feeds;
}

struct Trained {
  std::vector<Tensor> w_copies, b_copies;
  float first_loss = 0, last_loss = 0;
};

Trained Train(ReplicationMode mode, int towers, int steps, int64_t bucket_bytes = 4 << 20, bool wire_float16 = false) {
  Scope root = Scope::NewRootScope();
  ReplicateOptions options;
  options.mode = mode;
  for (int i = 0; i < towers; ++i) options.devices.push_back(StrCat("/cpu:", i));
  options.bucket_bytes = bucket_bytes;
  options.wire_float16 = wire_float16;
  auto rep = Replicate(root, options, LinearModel(towers), GradientDescent(0.05));
  EXPECT_TRUE(rep.ok()) << rep.status();
  if (!rep.ok()) return {};
  SessionConfig config;
  config.device_count = {{"CPU", towers}};
  auto session = testing::MakeSession(root, config);
  std::vector<Tensor> out;
  Status init = session->Run({}, {}, {rep->init.name()}, &out);
  EXPECT_TRUE(init.ok()) << init;
  Trained result;
  for (int step = 0; step < steps; ++step) {
    Status s = session->Run(Feeds(MakeData(step), towers), {rep->towers[0].outputs[0].name()},
                            {rep->train.name()}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return {};
    (step == 0 ? result.first_loss : result.last_loss) = out[0].flat<float>()[0];
  }
  for (const Output& w : rep->variables["w"]) result.w_copies.push_back(testing::Fetch(*session, w.name()));
  for (const Output& b : rep->variables["b"]) result.b_copies.push_back(testing::Fetch(*session, b.name()));
  return result;
}

void ExpectNear(const Tensor& a, const Tensor& b, float tol) {
  auto va = Values<float>(a), vb = Values<float>(b);
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], tol) << i;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.TotalBytes() == b.TotalBytes() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

TEST(ReplicateTest, OneTowerLearnsTheLinearModel) {
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 100);
  ASSERT_EQ(one.w_copies.size(), 1u);
  EXPECT_LT(one.last_loss, one.first_loss / 20) << one.first_loss << " -> " << one.last_loss;
  ExpectNear(one.w_copies[0], Tensor::FromVector<float>({2, -1, 0.5f}, TensorShape({3, 1})), 0.1f);
}

TEST(ReplicateTest, ParameterDeviceTowersMatchOneDevice) {
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 100);
  for (int towers : {2, 3, 4}) {
    SCOPED_TRACE(towers);
    Trained many = Train(ReplicationMode::kParameterDevice, towers, 100);
    ASSERT_EQ(many.w_copies.size(), 1u);  // one variable, on the parameter device
    ExpectNear(many.w_copies[0], one.w_copies[0], 1e-4f);
    ExpectNear(many.b_copies[0], one.b_copies[0], 1e-4f);
  }
}

TEST(ReplicateTest, MirroredCopiesStayBitIdenticalAfterHundredUpdatesAndMatchOneDevice) {
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 100);
  for (int towers : {2, 3, 4}) {
    for (int64_t bucket : {int64_t{0}, int64_t{4} << 20}) {
      SCOPED_TRACE(StrCat(towers, " towers, bucket ", bucket));
      Trained m = Train(ReplicationMode::kMirrored, towers, 100, bucket);
      ASSERT_EQ(static_cast<int>(m.w_copies.size()), towers);
      for (int i = 1; i < towers; ++i) {
        EXPECT_TRUE(SameBits(m.w_copies[i], m.w_copies[0])) << "copy " << i;
        EXPECT_TRUE(SameBits(m.b_copies[i], m.b_copies[0])) << "copy " << i;
      }
      ExpectNear(m.w_copies[0], one.w_copies[0], 1e-4f);
      ExpectNear(m.b_copies[0], one.b_copies[0], 1e-4f);
    }
  }
}

TEST(ReplicateTest, MirroredWithFloat16OnTheWireKeepsCopiesIdentical) {
  Trained one = Train(ReplicationMode::kParameterDevice, 1, 100);
  Trained m = Train(ReplicationMode::kMirrored, 3, 100, 4 << 20, /*wire_float16=*/true);
  ASSERT_EQ(m.w_copies.size(), 3u);
  for (int i = 1; i < 3; ++i) EXPECT_TRUE(SameBits(m.w_copies[i], m.w_copies[0]));
  ExpectNear(m.w_copies[0], one.w_copies[0], 2e-2f);
}

int CountOps(const Scope& root, std::string_view op) {
  int n = 0;
  for (const Node* node : root.graph()->nodes()) n += node->op() == op;
  return n;
}

TEST(ReplicateTest, GradientsAreFusedIntoBuckets) {
  for (int64_t bucket : {int64_t{0}, int64_t{4} << 20}) {
    Scope root = Scope::NewRootScope();
    ReplicateOptions options{.mode = ReplicationMode::kMirrored, .devices = {"/cpu:0", "/cpu:1"}, .bucket_bytes = bucket};
    ASSERT_TRUE(Replicate(root, options, LinearModel(2), GradientDescent(0.1)).ok());
    // Two gradients: two all-reduces per tower without buckets, one fused with them.
    EXPECT_EQ(CountOps(root, "AllReduce"), bucket == 0 ? 4 : 2);
  }
}

TEST(ReplicateTest, TowersAreNamedAndPlacedAndVariablesMirrored) {
  Scope root = Scope::NewRootScope();
  ReplicateOptions options{.mode = ReplicationMode::kMirrored, .devices = {"/cpu:0", "/cpu:1"}};
  auto rep = Replicate(root, options, LinearModel(2), GradientDescent(0.1));
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->variables["w"].size(), 2u);
  EXPECT_EQ(rep->variables["w"][0].node->name(), "w");
  EXPECT_EQ(rep->variables["w"][1].node->name(), "w/replica_1");
  EXPECT_EQ(rep->variables["w"][1].node->requested_device(), "/device:CPU:1");
  const Node* x1 = root.graph()->FindNode("tower_1/x");
  ASSERT_NE(x1, nullptr);
  EXPECT_EQ(x1->requested_device(), "/device:CPU:1");
}

TEST(ReplicateTest, BadUseIsAClearError) {
  ModelFn model = LinearModel(2);
  {
    Scope root = Scope::NewRootScope();
    auto rep = Replicate(root, {}, model, GradientDescent(0.1));
    EXPECT_EQ(rep.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(rep.status().message(), HasSubstr("at least one device"));
  }
  {
    Scope root = Scope::NewRootScope();
    ReplicateOptions options{.devices = {"/cpu:0", "/cpu:1"}, .gradient_reduction = "median"};
    EXPECT_THAT(Replicate(root, options, model, GradientDescent(0.1)).status().message(), HasSubstr("median"));
  }
  {
    Scope root = Scope::NewRootScope();
    ReplicateOptions options{.devices = {"/cpu:0", "/cpu:1"}};
    auto uneven = [](Tower& tower, TowerOutputs* out) {
      tower.Variable(tower.index() == 0 ? "a" : "b", Tensor::Scalar(1.0f));
    };
    auto rep = Replicate(root, options, uneven, GradientDescent(0.1));
    EXPECT_EQ(rep.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(rep.status().message(), HasSubstr("tower_1 asked for variable 'b'"));
  }
  {
    Scope root = Scope::NewRootScope();
    ReplicateOptions options{.devices = {"/cpu:0", "/cpu:1"}};
    auto stranger = [](Tower& tower, TowerOutputs* out) {
      auto v = tower.Variable("v", Tensor::Scalar(1.0f));
      auto other = ops::Const(tower.scope(), Tensor::Scalar(2.0f));
      out->grads.push_back({ops::Identity(tower.scope(), v), tower.index() == 0 ? v : other});
    };
    auto rep = Replicate(root, options, stranger, GradientDescent(0.1));
    EXPECT_EQ(rep.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(rep.status().message(), HasSubstr("not one of its Tower::Variable results"));
  }
  {
    Scope root = Scope::NewRootScope();
    ReplicateOptions options{.devices = {"/cpu:0", "/cpu:1"}};
    auto partial = [](Tower& tower, TowerOutputs* out) {
      auto v = tower.Variable("v", Tensor::Scalar(1.0f));
      if (tower.index() == 0) out->grads.push_back({ops::Identity(tower.scope(), v), v});
    };
    auto rep = Replicate(root, options, partial, GradientDescent(0.1));
    EXPECT_THAT(rep.status().message(), HasSubstr("Only 1 of 2 towers"));
  }
}

TEST(GradientBucketsTest, FillsBucketsPerDtypeInOrder) {
  using G = GradientSize;
  auto b = AssignGradientBuckets({G{DataType::kFloat, 400}, G{DataType::kFloat, 500}, G{DataType::kDouble, 8},
                                  G{DataType::kFloat, 200}, G{DataType::kFloat, 5000}, G{DataType::kFloat, 10}},
                                 1000);
  EXPECT_EQ(b, (std::vector<std::vector<int>>{{0, 1}, {2}, {3}, {4}, {5}}));
  EXPECT_EQ(AssignGradientBuckets({G{DataType::kFloat, 1}, G{DataType::kFloat, 1}}, 0),
            (std::vector<std::vector<int>>{{0}, {1}}));
  EXPECT_TRUE(AssignGradientBuckets({}, 100).empty());
}

}  // namespace
}  // namespace tessera
