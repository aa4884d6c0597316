#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Values;

struct Csv {
  Scope root = Scope::NewRootScope();
  std::vector<Output> columns;
  std::unique_ptr<Session> session;
  Csv(std::vector<Input> defaults, ops::DecodeCSVAttrs attrs = {}) {
    auto records = ops::Placeholder(root.WithOpName("records"), DataType::kString);
    columns = ops::DecodeCSV(root.WithOpName("csv"), records, defaults, attrs);
    session = testing::MakeSession(root);
  }
  Status Decode(std::vector<std::string> lines, std::vector<Tensor>* out) {
    std::vector<std::string> fetches;
    for (const Output& c : columns) fetches.push_back(c.name());
    return session->Run({{"records", Tensor::FromVector<std::string>(lines)}}, fetches, {}, out);
  }
};

TEST(DecodeCsvTest, TheSeedsExampleUsesDefaultsForEmptyFields) {
  Csv csv({Tensor::FromVector<float>({5.0f}), Tensor::FromVector<int32_t>({6}), Tensor::FromVector<int32_t>({7})});
  std::vector<Tensor> out;
  ASSERT_TRUE(csv.Decode({"1.,,44", "2.5,3,"}, &out).ok());
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(Values<int32_t>(out[1]), (std::vector<int32_t>{6, 3}));
  EXPECT_EQ(Values<int32_t>(out[2]), (std::vector<int32_t>{44, 7}));
  EXPECT_EQ(out[0].shape(), TensorShape({2}));
}

TEST(DecodeCsvTest, QuotesDelimitersNaValuesAndEveryType) {
  Csv csv({Tensor::FromVector<std::string>({"?"}), Tensor::FromVector<int64_t>({-1}), Tensor::FromVector<double>({0.5})},
          {.field_delim = ";", .na_value = "NA"});
  std::vector<Tensor> out;
  ASSERT_TRUE(csv.Decode({"\"a;\"\"b\"\"\";9000000000;NA", ";+7; 2.25 "}, &out).ok());
  EXPECT_EQ(Values<std::string>(out[0]), (std::vector<std::string>{"a;\"b\"", "?"}));
  EXPECT_EQ(Values<int64_t>(out[1]), (std::vector<int64_t>{9000000000LL, 7}));
  EXPECT_EQ(Values<double>(out[2]), (std::vector<double>{0.5, 2.25}));
}

TEST(DecodeCsvTest, MalformedRowsNameTheRecordAndTheSessionStaysUsable) {
  Csv csv({Tensor::FromVector<float>({5.0f}), Tensor(DataType::kInt32, TensorShape({0})), Tensor::FromVector<int32_t>({7})});
  std::vector<Tensor> out;
  Status s = csv.Decode({"1,2,3", "1,2"}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Expect 3 fields but have 2 in record 1 (record: \"1,2\")"));
  EXPECT_THAT(s.message(), HasSubstr("[[node csv (DecodeCSV)"));
  s = csv.Decode({"x,1,1"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Field 0 in record 0 is not a valid float: x"));
  s = csv.Decode({"1,,1"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Field 1 is required but missing in record 0!"));
  s = csv.Decode({"1,3000000000,1"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Field 1 in record 0 is not a valid int32: 3000000000"));
  s = csv.Decode({"\"1\"x,2,3"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("Quote inside a string has to be escaped by another quote in record 0"));
  s = csv.Decode({"\"1,2,3"}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  ASSERT_TRUE(csv.Decode({"1,2,3"}, &out).ok());
  EXPECT_EQ(Values<int32_t>(out[1]), (std::vector<int32_t>{2}));
}

TEST(DecodeCsvTest, BadDefaultsAreErrors) {
  Csv csv({Tensor::FromVector<float>({1, 2})});
  std::vector<Tensor> out;
  Status s = csv.Decode({"1"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("record_defaults[0] must have at most one element, has 2"));
  Csv bools({Tensor::FromVector<bool>({true})});
  s = bools.Decode({"1"}, &out);
  EXPECT_THAT(s.message(), HasSubstr("has dtype bool"));
}

}  // namespace
}  // namespace tessera
