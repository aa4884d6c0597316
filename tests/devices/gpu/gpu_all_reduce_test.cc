// AllReduce between GPUs against the CPU ring as reference: the same graph run once with its
// members on CPU devices and once on logical GPUs of one physical GPU gives the same bits,
// for every reduction, float16 on the wire, buckets and sizes from one element to 64 MiB.
// Every test in this binary asks for the same four logical GPUs: GPU options take effect
// when a process makes its first GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "devices/gpu/gpu_device.h"
#include "graph/builder/ops.h"
#include "tests/devices/gpu/gpu_test_util.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr int kLogicalGpus = 4;

SessionConfig Config() {
  SessionConfig config;
  // A second physical GPU, where there is one, is GPU:4.
  config.device_count = {{"CPU", kLogicalGpus}, {"GPU", kLogicalGpus + 1}};
  config.gpu_options.virtual_device_memory_limit_mb = {std::vector<double>(kLogicalGpus, 1024)};
  config.operation_timeout_in_ms = 60000;
  return config;
}

// Member m's input k: values of every magnitude, so float16 rounding and summation order show.
Tensor MemberInput(int m, int k, int64_t n, DataType dtype) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * m + k + n));
  std::normal_distribution<double> value(0, 100);
  Tensor t(dtype, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DataType::kFloat) {
      t.data<float>()[i] = static_cast<float>(value(rng));
    } else {
      t.data<double>()[i] = value(rng);
    }
  }
  return t;
}

struct Case {
  int members = 2;
  std::string reduction = "sum";
  bool wire_float16 = false;
  std::vector<int64_t> sizes;  // one input per size: several make a bucket
  DataType dtype = DataType::kFloat;
};

// Each member's outputs, the group run on devices `type`:0..members-1, or on `gpus`.
std::vector<std::vector<Tensor>> Run(const Case& c, const char* type, std::vector<int> gpus = {}) {
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (int m = 0; m < c.members; ++m) {
    const Scope s = root.WithDevice(StrCat("/device:", type, ":", gpus.empty() ? m : gpus[m]));
    std::vector<Input> inputs;
    for (size_t k = 0; k < c.sizes.size(); ++k) {
      const std::string name = StrCat("x", m, "_", k);
      inputs.push_back(ops::Placeholder(s.WithOpName(name), c.dtype));
      feeds.emplace_back(name, MemberInput(m, static_cast<int>(k), c.sizes[k], c.dtype));
    }
    auto out = ops::AllReduce(s.WithOpName(StrCat("r", m)), inputs,
                              {.reduction = c.reduction, .group_key = 1, .group_size = c.members,
                               .wire_float16 = c.wire_float16});
    for (const Output& o : out) fetches.push_back(o.name());
  }
  auto session = testing::MakeSession(root, Config());
  std::vector<Tensor> out;
  Status s = session->Run(feeds, fetches, {}, &out);
  EXPECT_TRUE(s.ok()) << type << ": " << s;
  std::vector<std::vector<Tensor>> by_member(c.members);
  if (!s.ok()) return by_member;
  for (int m = 0; m < c.members; ++m) {
    for (size_t k = 0; k < c.sizes.size(); ++k) by_member[m].push_back(out[m * c.sizes.size() + k]);
  }
  return by_member;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

void ExpectLikeTheCpu(const Case& c, std::vector<int> gpus = {}) {
  SCOPED_TRACE(StrCat(c.members, " members, ", c.reduction, c.wire_float16 ? ", float16 wire" : "", ", ",
                      DataTypeName(c.dtype), ", first size ", c.sizes[0]));
  auto cpu = Run(c, "CPU");
  auto gpu = Run(c, "GPU", gpus);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (int m = 0; m < c.members; ++m) {
    ASSERT_EQ(gpu[m].size(), c.sizes.size());
    for (size_t k = 0; k < c.sizes.size(); ++k) {
      EXPECT_TRUE(SameBits(gpu[m][k], cpu[m][k])) << "member " << m << " input " << k;
      EXPECT_TRUE(SameBits(gpu[m][k], gpu[0][k])) << "member " << m << " differs from member 0";
    }
  }
}

TEST(GpuAllReduceTest, EveryReductionBetweenLogicalGpusGivesTheCpuRingsBits) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (int members : {2, 3, 4}) {
    for (const char* reduction : {"sum", "mean", "max", "min"}) {
      for (bool wire : {false, true}) {
        ExpectLikeTheCpu({members, reduction, wire, {1001}});
      }
    }
  }
  ExpectLikeTheCpu({3, "mean", false, {777}, DataType::kDouble});
  ExpectLikeTheCpu({3, "sum", true, {777}, DataType::kDouble});
}

TEST(GpuAllReduceTest, SizesFromOneElementTo64MiB) {
  TESSERA_SKIP_WITHOUT_GPU();
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{4099}, int64_t{1} << 20}) {
    ExpectLikeTheCpu({4, "sum", false, {n}});
  }
  ExpectLikeTheCpu({2, "mean", false, {int64_t{16} << 20}});  // 64 MiB of float32
  ExpectLikeTheCpu({2, "mean", true, {int64_t{16} << 20}});
}

TEST(GpuAllReduceTest, BucketsOfUnevenInputsUnpackLikeTheCpu) {
  TESSERA_SKIP_WITHOUT_GPU();
  ExpectLikeTheCpu({3, "mean", false, {7, 1, 100, 33}});
  ExpectLikeTheCpu({4, "sum", true, {5, 3}});
}

TEST(GpuAllReduceTest, RepeatedStepsReuseMemorySafely) {
  TESSERA_SKIP_WITHOUT_GPU();
  // Each step frees what the last one read; a reduction that ran past its fence would read
  // another step's values.
  Scope root = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int m = 0; m < 2; ++m) {
    const Scope s = root.WithDevice(StrCat("/device:GPU:", m));
    auto x = ops::Placeholder(s.WithOpName(StrCat("x", m)), DataType::kFloat);
    auto y = ops::Mul(s, ops::AllReduce(s.WithOpName(StrCat("r", m)), {ops::Square(s, x)},
                                        {.group_key = 1, .group_size = 2})[0],
                      ops::Const(s, Tensor::Scalar(2.0f)));
    fetches.push_back(y.name());
  }
  auto session = testing::MakeSession(root, Config());
  for (int step = 0; step < 50; ++step) {
    const int64_t n = 1 << 18;
    Tensor a(DataType::kFloat, TensorShape({n})), b(DataType::kFloat, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) {
      a.data<float>()[i] = static_cast<float>((i + step) % 13);
      b.data<float>()[i] = static_cast<float>((i * 3 + step) % 7);
    }
    std::vector<Tensor> out;
    Status s = session->Run({{"x0", a}, {"x1", b}}, fetches, {}, &out);
    ASSERT_TRUE(s.ok()) << s;
    for (int64_t i = 0; i < n; i += 997) {
      const float want = 2 * (a.data<float>()[i] * a.data<float>()[i] + b.data<float>()[i] * b.data<float>()[i]);
      ASSERT_EQ(out[0].data<float>()[i], want) << "step " << step << " element " << i;
      ASSERT_EQ(out[1].data<float>()[i], want) << "step " << step << " element " << i;
    }
  }
}

TEST(GpuAllReduceTest, MembersOfDifferentShapesFailTheStepNotTheSession) {
  TESSERA_SKIP_WITHOUT_GPU();
  Scope root = Scope::NewRootScope();
  for (int m = 0; m < 2; ++m) {
    const Scope s = root.WithDevice(StrCat("/device:GPU:", m));
    ops::AllReduce(s.WithOpName(StrCat("r", m)), {ops::Placeholder(s.WithOpName(StrCat("x", m)), DataType::kFloat)},
                   {.group_key = 1, .group_size = 2});
  }
  auto session = testing::MakeSession(root, Config());
  std::vector<Tensor> out;
  Status s = session->Run({{"x0", Tensor::FromVector<float>({1, 2, 3})}, {"x1", Tensor::FromVector<float>({1, 2})}},
                          {"r0", "r1"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("same dtype and shape"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("GPU:1"));
  ASSERT_TRUE(session->Run({{"x0", Tensor::FromVector<float>({1, 2})}, {"x1", Tensor::FromVector<float>({3, 4})}},
                           {"r0", "r1"}, {}, &out)
                  .ok());
  EXPECT_EQ(testing::Values<float>(out[1]), (std::vector<float>{4, 6}));
}

// NCCL refuses two ranks on one GPU: its path needs two physical GPUs. Two members' sums
// and means do not depend on the order of addition, so NCCL gives the CPU ring's bits.
TEST(GpuAllReduceTest, DistinctPhysicalGpusReduceWithNccl) {
  TESSERA_SKIP_WITHOUT_GPU();
  StatusOr<std::vector<PhysicalGpu>> gpus = ListPhysicalGpus();
  if (!gpus.ok() || gpus->size() < 2) GTEST_SKIP() << "needs two physical GPUs";
  for (const char* reduction : {"sum", "mean", "max"}) {
    ExpectLikeTheCpu({2, reduction, false, {1, 4099, 1 << 20}}, {0, kLogicalGpus});
  }
}

}  // namespace
}  // namespace tessera
