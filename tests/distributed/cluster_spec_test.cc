// ClusterSpec: what a cluster may say, and every way it can be wrong.
#include "distributed/cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(ClusterSpecTest, JobsAndTheirTasksInOrder) {
  StatusOr<ClusterSpec> c = ClusterSpec::FromJson(
      R"({"worker": ["127.0.0.1:2223", "localhost:2224"], "ps": ["[::1]:2222"]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->jobs().size(), 2u);
  EXPECT_EQ(c->num_tasks("worker"), 2);
  EXPECT_EQ(c->num_tasks("chief"), 0);
  EXPECT_EQ(*c->TaskAddress("worker", 1), "localhost:2224");
  EXPECT_EQ(*c->TaskAddress("ps", 0), "[::1]:2222");
  StatusOr<ClusterSpec> again = ClusterSpec::FromJson(c->ToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->jobs(), c->jobs());
  EXPECT_EQ(TaskName("ps", 3), "/job:ps/replica:0/task:3");
}

TEST(ClusterSpecTest, BadClustersSayWhatIsWrong) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"worker": ["127.0.0.1:2223")", "cluster spec"},
      {R"(["127.0.0.1:2223"])", "must be an object of jobs"},
      {R"({})", "must be an object of jobs"},
      {R"({"Worker": ["127.0.0.1:2223"]})", "job name 'Worker' must match [a-z][a-z0-9_]*"},
      {R"({"worker": []})", "job 'worker' must be a non-empty list"},
      {R"({"worker": "127.0.0.1:2223"})", "job 'worker' must be a non-empty list"},
      {R"({"worker": [2223]})", "job 'worker' task 0 must be a \"host:port\" string"},
      {R"({"worker": ["127.0.0.1"]})", "'127.0.0.1' is not an address of the form host:port"},
      {R"({"worker": [":2223"]})", "':2223' is not an address"},
      {R"({"worker": ["h:0"]})", "'h:0' is not an address"},
      {R"({"worker": ["h:65536"]})", "'h:65536' is not an address"},
      {R"({"worker": ["h:22x"]})", "'h:22x' is not an address"},
      {R"({"ps": ["h:1"], "worker": ["h:1"]})", "address 'h:1' is used by two tasks"}};
  for (const auto& [text, why] : cases) {
    StatusOr<ClusterSpec> c = ClusterSpec::FromJson(text);
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << text;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(why)) << text;
  }
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(std::string(ClusterSpec::FromJson(deep).status().message()), HasSubstr("nests deeper than"));
}

TEST(ClusterSpecTest, TaskAddressOutOfRangeNamesTheJobsAndCounts) {
  StatusOr<ClusterSpec> c = ClusterSpec::FromJson(R"({"ps": ["h:1"], "worker": ["h:2", "h:3"]})");
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(std::string(c->TaskAddress("worker", 2).status().message()),
              HasSubstr("task index 2 is out of range: job 'worker' has 2 tasks"));
  EXPECT_THAT(std::string(c->TaskAddress("worker", -1).status().message()), HasSubstr("out of range"));
  EXPECT_THAT(std::string(c->TaskAddress("chief", 0).status().message()),
              HasSubstr("the cluster has no job 'chief'; its jobs are ps, worker"));
}

}  // namespace
}  // namespace tessera
