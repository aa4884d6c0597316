// Messages quote at most a short excerpt of what the user gave, whatever its size.
#include <gmock/gmock.h>

#include "graph/builder/ops.h"
#include "tests/hardening/hardening_util.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;

TEST(MessagesTest, LongValuesAreQuotedInPart) {
  const std::string long_string(10 << 20, 'x');
  Status s = TensorFromJsonText(R"({"dtype": "int32", "shape": [1], "data": [")" + long_string + R"("]})").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected an integer, got \"xxxx"));
  EXPECT_THAT(s.message(), HasSubstr("..."));
  EXPECT_LT(s.message().size(), 200u);
}

TEST(MessagesTest, DecodeCsvQuotesABadFieldInPart) {
  Scope root = Scope::NewRootScope();
  Output records = ops::Placeholder(root.WithOpName("records"), DataType::kString);
  std::vector<Output> columns = ops::DecodeCSV(root.WithOpName("csv"), records, {ops::Const(root, Tensor::FromVector<float>({0}))});
  auto session = MakeSession(root);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({{"records", Tensor::FromVector<std::string>({std::string(10 << 20, 'x')})}},
                          {columns[0].name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Field 0 in record 0 is not a valid float: xxxx"));
  EXPECT_THAT(s.message(), HasSubstr("... (10485760 bytes)"));
  EXPECT_LT(s.message().size(), 400u);
}

}  // namespace
}  // namespace tessera::testing
