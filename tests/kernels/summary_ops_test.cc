// The summary ops in a session, against what TensorFlow 2.21's tf.compat.v1.summary ops
// output for the same inputs (recorded here): scalars, histograms, images scaled into
// 0-255 as TF scales them, merges, and the errors of bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder/op_builder.h"
#include "graph/protos/summary.pb.h"
#include "tests/png_reader.h"
#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace pb = tfgraph;

Output Str(const Scope& s, const std::string& v) { return ops::Const(s, Tensor::Scalar<std::string>(v)); }

pb::Summary EvalSummary(const Scope& root, const Output& out) {
  pb::Summary s;
  EXPECT_TRUE(s.ParseFromString(testing::Eval(root, out).data<std::string>()[0]));
  return s;
}

Status RunFor(const Scope& root, const Output& out) {
  auto s = testing::MakeSession(root);
  std::vector<Tensor> fetched;
  return s->Run({}, {out.name()}, {}, &fetched);
}

TEST(SummaryOpsTest, ScalarsTakeOneTagEach) {
  Scope root = Scope::NewRootScope();
  Output s = ops::Build(root, "ScalarSummary",
                        {ops::Const(root, Tensor::FromVector<std::string>({"a", "b"})),
                         ops::Const(root, Tensor::FromVector<double>({0.5, -2}))});
  const pb::Summary summary = EvalSummary(root, s);
  ASSERT_EQ(summary.value_size(), 2);
  EXPECT_EQ(summary.value(1).tag(), "b");
  EXPECT_EQ(summary.value(1).simple_value(), -2.0f);

  Output mismatched = ops::Build(root, "ScalarSummary",
                                 {Str(root, "a"), ops::Const(root, Tensor::FromVector<float>({1, 2}))});
  Status st = RunFor(root, mismatched);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("tags and values are not the same shape"));
}

TEST(SummaryOpsTest, HistogramsRefuseNaNNamingTheNode) {
  Scope root = Scope::NewRootScope();
  Output h = ops::Build(root.WithOpName("outer/h"), "HistogramSummary",
                        {Str(root, "outer/h"), ops::Const(root, Tensor::FromVector<int32_t>({1, 2, 2}))});
  const pb::HistogramProto histo = EvalSummary(root, h).value(0).histo();
  EXPECT_EQ(histo.num(), 3);
  EXPECT_EQ(histo.sum(), 5);

  Output nan = ops::Build(root.WithOpName("bad"), "HistogramSummary",
                          {Str(root, "t"), ops::Const(root, Tensor::FromVector<float>({1, NAN}))});
  Status st = RunFor(root, nan);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Nan in summary histogram for: bad"));
}

TEST(SummaryOpsTest, FloatImagesAreScaledAsTensorFlowScalesThem) {
  Scope root = Scope::NewRootScope();
  // Three 2x3 grayscale images; max_images 2 keeps the first two.
  const Tensor images = Tensor::FromVector<float>({-1, 0, 1, 2, 3, 0.5, 0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0},
                                                  TensorShape({3, 2, 3, 1}));
  Output s = ops::Build(root, "ImageSummary", {Str(root, "im"), ops::Const(root, images)},
                        {{"max_images", int64_t{2}}});
  const pb::Summary summary = EvalSummary(root, s);
  ASSERT_EQ(summary.value_size(), 2);
  EXPECT_EQ(summary.value(0).tag(), "im/image/0");
  EXPECT_EQ(summary.value(1).tag(), "im/image/1");
  const pb::Summary::Image& first = summary.value(0).image();
  EXPECT_EQ(first.height(), 2);
  EXPECT_EQ(first.width(), 3);
  EXPECT_EQ(first.colorspace(), 1);
  // TensorFlow 2.21's pixels: negative values scale around 128, others up to 255.
  EXPECT_THAT(testing::DecodePng(first.encoded_image_string(), 1).pixels, ElementsAre(85, 128, 170, 212, 255, 149));
  EXPECT_THAT(testing::DecodePng(summary.value(1).image().encoded_image_string(), 1).pixels,
              ElementsAre(0, 51, 102, 153, 204, 255));
}

TEST(SummaryOpsTest, Uint8ImagesPassThroughAndNonFinitePixelsAreRed) {
  Scope root = Scope::NewRootScope();
  std::vector<uint8_t> bytes(12);
  for (int i = 0; i < 12; ++i) bytes[i] = static_cast<uint8_t>(i);
  Output u = ops::Build(root, "ImageSummary",
                        {Str(root, "imu"), ops::Const(root, Tensor::FromVector<uint8_t>(bytes, TensorShape({1, 2, 2, 3})))},
                        {{"max_images", int64_t{1}}});
  const pb::Summary summary = EvalSummary(root, u);
  ASSERT_EQ(summary.value_size(), 1);
  EXPECT_EQ(summary.value(0).tag(), "imu/image");
  EXPECT_EQ(summary.value(0).image().colorspace(), 3);
  EXPECT_EQ(testing::DecodePng(summary.value(0).image().encoded_image_string(), 3).pixels, bytes);

  Output f = ops::Build(root, "ImageSummary",
                        {Str(root, "f"), ops::Const(root, Tensor::FromVector<float>({0.5f, 1, 0.25f, INFINITY, 0, 0},
                                                                                     TensorShape({1, 1, 2, 3})))});
  const pb::Summary red = EvalSummary(root, f);
  // The finite pixel scales by 255/1, the other is the bad colour.
  EXPECT_THAT(testing::DecodePng(red.value(0).image().encoded_image_string(), 3).pixels,
              ElementsAre(127, 255, 63, 255, 0, 0));

  Output flat = ops::Build(root, "ImageSummary", {Str(root, "x"), ops::Const(root, Tensor::FromVector<float>({1, 2}))});
  Status st = RunFor(root, flat);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("4-D with last dim 1, 3, or 4"));
}

TEST(SummaryOpsTest, MergeJoinsEveryInputAndRefusesDuplicateTags) {
  Scope root = Scope::NewRootScope();
  Output a = ops::Build(root, "ScalarSummary", {Str(root, "a"), ops::Const(root, Tensor::Scalar<float>(1))});
  Output b = ops::Build(root, "ScalarSummary", {Str(root, "b"), ops::Const(root, Tensor::Scalar<float>(2))});
  Output merged = ops::Build(root, "MergeSummary", {ops::Build(root, "Pack", {a, b})});
  const pb::Summary summary = EvalSummary(root, merged);
  ASSERT_EQ(summary.value_size(), 2);
  EXPECT_EQ(summary.value(0).tag(), "a");

  Output twice = ops::Build(root, "MergeSummary", {a, a});
  Status st = RunFor(root, twice);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("Duplicate tag a"));
}

}  // namespace
}  // namespace tessera
