// The checkpoint ops TensorFlow's savers build (SaveV2, RestoreV2, MergeV2Checkpoints) and the
// string ops that name their files (ShardedFilename, ShardedFilespec, StringJoin,
// StaticRegexFullMatch), run in a session.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "graph/builder/op_builder.h"
#include "graph/serialize/tensor_bundle.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

Tensor Strings(std::vector<std::string> v) { return Tensor::FromVector<std::string>(v); }

Status RunTarget(const Scope& root, const Output& target) {
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  return s->Run({}, {}, {target.node->name()}, &out);
}

TEST(StringOpsTest, ShardedNamesAreTensorFlows) {
  Scope root = Scope::NewRootScope();
  Output base = ops::Const(root, Tensor::Scalar<std::string>("/m/ckpt_temp/part"));
  const Output three = ops::Const(root, Tensor::Scalar<int32_t>(3)), eight = ops::Const(root, Tensor::Scalar<int32_t>(8));
  Output name = ops::Build(root, "ShardedFilename", {base, three, eight});
  Output spec = ops::Build(root, "ShardedFilespec", {base, eight});
  EXPECT_EQ(testing::Eval(root, name).data<std::string>()[0], "/m/ckpt_temp/part-00003-of-00008");
  EXPECT_EQ(testing::Eval(root, spec).data<std::string>()[0], "/m/ckpt_temp/part-\?\?\?\?\?-of-00008");
  Output bad = ops::Build(root, "ShardedFilename", {base, eight, eight});
  auto s = testing::MakeSession(root);
  std::vector<Tensor> out;
  EXPECT_EQ(s->Run({}, {bad.name()}, {}, &out).code(), Code::kInvalidArgument);
}

TEST(StringOpsTest, StringJoinBroadcastsScalarsAndUsesTheSeparator) {
  Scope root = Scope::NewRootScope();
  Output joined = ops::Build(root, "StringJoin",
                             {ops::Const(root, Strings({"a", "b"})), ops::Const(root, Tensor::Scalar<std::string>("x")),
                              ops::Const(root, Strings({"1", "2"}))},
                             {{"separator", std::string("/")}});
  EXPECT_THAT(testing::Values<std::string>(testing::Eval(root, joined)), ElementsAre("a/x/1", "b/x/2"));
  Output mismatched = ops::Build(root, "StringJoin",
                                 {ops::Const(root, Strings({"a", "b"})), ops::Const(root, Strings({"1", "2", "3"}))});
  EXPECT_FALSE(root.status().ok() && RunTarget(root, mismatched).ok());
}

TEST(StringOpsTest, StaticRegexFullMatchMatchesWholeStrings) {
  Scope root = Scope::NewRootScope();
  Output m = ops::Build(root, "StaticRegexFullMatch", {ops::Const(root, Strings({"s3://b/x", "/tmp/s3://", "s3:/"}))},
                        {{"pattern", std::string("^s3://.*")}});
  EXPECT_THAT(testing::Values<bool>(testing::Eval(root, m)), ElementsAre(true, false, false));
  Scope bad_root = Scope::NewRootScope();
  Output bad = ops::Build(bad_root, "StaticRegexFullMatch", {ops::Const(bad_root, Strings({"a"}))},
                          {{"pattern", std::string("(unclosed")}});
  GraphSpec def;
  ASSERT_TRUE(bad_root.ToSpec(&def).ok());
  auto session = Session::Create(SessionConfig(), def);
  std::vector<Tensor> out;
  Status st = session.ok() ? (*session)->Run({}, {bad.name()}, {}, &out) : session.status();
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("Invalid pattern"));
}

class BundleOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_bundle_ops_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    prefix_ = (dir_ / "ckpt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Output Restore(const Scope& root, const std::string& prefix, std::vector<std::string> names,
                 std::vector<DataType> dtypes, std::vector<std::string> slices = {}) {
    if (slices.empty()) slices.assign(names.size(), "");
    return ops::Build(root, "RestoreV2",
                      {ops::Const(root, Tensor::Scalar(prefix)), ops::Const(root, Strings(names)),
                       ops::Const(root, Strings(slices))},
                      {{"dtypes", dtypes}});
  }

  fs::path dir_;
  std::string prefix_;
};

TEST_F(BundleOpsTest, SaveV2ThenRestoreV2RoundTrips) {
  Scope root = Scope::NewRootScope();
  Output save = ops::Build(root, "SaveV2",
                           {ops::Const(root, Tensor::Scalar(prefix_)), ops::Const(root, Strings({"w", "names"})),
                            ops::Const(root, Strings({"", ""})),
                            ops::Const(root, Tensor::FromVector<float>({1, 2, 3}, TensorShape({3, 1}))),
                            ops::Const(root, Strings({"x", "yz"}))},
                           {{"dtypes", std::vector<DataType>{DataType::kFloat, DataType::kString}}});
  ASSERT_TRUE(RunTarget(root, save).ok());
  Scope r = Scope::NewRootScope();
  std::vector<Output> restored =
      ops::AllOutputs(Restore(r, prefix_, {"names", "w"}, {DataType::kString, DataType::kFloat}));
  auto s = testing::MakeSession(r);
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {restored[0].name(), restored[1].name()}, {}, &out).ok());
  EXPECT_THAT(testing::Values<std::string>(out[0]), ElementsAre("x", "yz"));
  EXPECT_TRUE(out[1].Equals(Tensor::FromVector<float>({1, 2, 3}, TensorShape({3, 1}))));
}

TEST_F(BundleOpsTest, RestoreV2ReadsWhatTensorFlowWroteAndRefusesAWrongDtypeOrASlice) {
  const std::string tf = std::string(TESSERA_TEST_DATA_DIR) + "/tf_checkpoints/v1/model.ckpt";
  Scope root = Scope::NewRootScope();
  Output i64 = Restore(root, tf, {"i64"}, {DataType::kInt64});
  EXPECT_THAT(testing::Values<int64_t>(testing::Eval(root, i64)), ElementsAre(int64_t{1} << 40, -3));
  for (auto [dtype, slice, code] : {std::tuple{DataType::kInt32, "", Code::kInvalidArgument},
                                    std::tuple{DataType::kInt64, "2 0,1", Code::kUnimplemented}}) {
    Scope r = Scope::NewRootScope();
    Output bad = Restore(r, tf, {"i64"}, {dtype}, {slice});
    auto s = testing::MakeSession(r);
    std::vector<Tensor> out;
    Status st = s->Run({}, {bad.name()}, {}, &out);
    EXPECT_EQ(st.code(), code) << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr("'i64'"));
  }
}

TEST_F(BundleOpsTest, MergeV2CheckpointsMovesAPartIntoPlace) {
  Scope root = Scope::NewRootScope();
  const std::string part = prefix_ + "_temp/part-00000-of-00001";
  Output save = ops::Build(root, "SaveV2",
                           {ops::Const(root, Tensor::Scalar(part)), ops::Const(root, Strings({"v"})),
                            ops::Const(root, Strings({""})), ops::Const(root, Tensor::Scalar<int32_t>(7))},
                           {{"dtypes", std::vector<DataType>{DataType::kInt32}}});
  Output merge = ops::Build(root.WithControlDependencies({save.op()}), "MergeV2Checkpoints",
                            {ops::Const(root, Strings({part})), ops::Const(root, Tensor::Scalar(prefix_))});
  ASSERT_TRUE(RunTarget(root, merge).ok());
  EXPECT_FALSE(fs::exists(prefix_ + "_temp"));
  StatusOr<std::unique_ptr<BundleReader>> r = BundleReader::Open(prefix_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)->Read("v", CpuAllocator())->Equals(Tensor::Scalar<int32_t>(7)));
}

}  // namespace
}  // namespace tessera
