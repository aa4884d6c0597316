// JSON as a hostile user writes it: nested past any graph's needs in every place a value
// goes, and values too long to quote.
#include <gmock/gmock.h>

#include "graph/platform/json_util.h"
#include "runtime/session_options.h"
#include "tests/hardening/hardening_util.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;

std::string Nested(int depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// Each error is a Status a line or two long, not a crash or a 40 KB echo of the input.
void ExpectTooDeep(const Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString().substr(0, 200);
  EXPECT_THAT(s.message(), HasSubstr(what + " nests deeper than 256 levels"));
  EXPECT_LT(s.message().size(), 200u);
}

TEST(JsonTest, NestingPastTheLimitIsRefusedWhereverItIs) {
  const int depth = 100000;
  ExpectTooDeep(GraphSpecFromJson(R"({"nodes": [{"name": "c", "op": "Const", "attrs": {"dtype": "float32",
      "value": {"dtype": "float32", "shape": [1], "data": )" + Nested(depth) + "}}}]}").status(), "JSON graph");
  ExpectTooDeep(GraphSpecFromJson(R"({"nodes": [{"name": "c", "op": "NoOp", "inputs": )" + Nested(depth) + "}]}")
                    .status(), "JSON graph");
  ExpectTooDeep(GraphSpecFromJson(R"({"nodes": [{"name": "c", "op": "NoOp", "attrs": {"_x": )" + Nested(depth) + "}}]}")
                    .status(), "JSON graph");
  ExpectTooDeep(TensorFromJsonText(R"({"dtype": "float32", "shape": [1], "data": )" + Nested(depth) + "}").status(),
                "JSON tensor");
  ExpectTooDeep(SessionConfig::FromJson(R"({"device_count": )" + Nested(depth) + "}").status(), "session config");
}

TEST(JsonTest, NestingWithinTheLimitIsReadAndJudgedByItsMeaning) {
  StatusOr<nlohmann::json> j = ParseJson(Nested(255), "test");
  ASSERT_TRUE(j.ok()) << j.status();
  // Deep but well-formed data is still the wrong form for a tensor, said briefly.
  Status s = TensorFromJsonText(R"({"dtype": "float32", "shape": [1], "data": [)" + Nested(200) + "]}").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("expected a number, got [[[["));
  EXPECT_LT(s.message().size(), 200u);
}

TEST(JsonTest, MalformedJsonSaysWhereAndWhat) {
  Status s = GraphSpecFromJson(R"({"nodes": [}")").status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Malformed JSON graph"));
  EXPECT_THAT(s.message(), HasSubstr("column"));
  EXPECT_EQ(SessionConfig::FromJson("{").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::testing
