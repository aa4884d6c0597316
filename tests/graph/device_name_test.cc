#include "graph/device_name.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

DeviceName P(std::string_view s) {
  StatusOr<DeviceName> d = DeviceName::Parse(s);
  EXPECT_TRUE(d.ok()) << s << ": " << d.status();
  return d.ok() ? *d : DeviceName();
}

TEST(DeviceNameTest, ParsesTensorFlowForms) {
  EXPECT_EQ(P("/cpu:0").ToString(), "/device:CPU:0");
  EXPECT_EQ(P("/gpu:1").ToString(), "/device:GPU:1");
  EXPECT_EQ(P("/device:GPU:1").ToString(), "/device:GPU:1");
  EXPECT_EQ(P("/device:cpu:3").ToString(), "/device:CPU:3");
  EXPECT_EQ(P("CPU:0").ToString(), "/device:CPU:0");
  EXPECT_EQ(P("/job:ps/task:1").ToString(), "/job:ps/task:1");
  EXPECT_EQ(P("/gpu:*").ToString(), "/device:GPU:*");
  DeviceName full = P("/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_TRUE(full.IsFullySpecified());
  EXPECT_EQ(full.ToString(), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_TRUE(P("").empty());
}

TEST(DeviceNameTest, RejectsMalformed) {
  for (const char* bad : {"/gpu:abc", "/foo:bar:baz:qux", "/job:", "/replica:x", "/device:1:2", "/cpu:-1",
                          "/job:a/replica", "/:"}) {
    StatusOr<DeviceName> d = DeviceName::Parse(bad);
    EXPECT_EQ(d.status().code(), Code::kInvalidArgument) << bad;
    if (!d.ok()) {
      EXPECT_NE(d.status().message().find(bad), std::string::npos);
    }
  }
}

TEST(DeviceNameTest, MatchesPartialSpecs) {
  DeviceName full = P("/job:localhost/replica:0/task:0/device:CPU:2");
  EXPECT_TRUE(P("/cpu:2").Matches(full));
  EXPECT_TRUE(P("/cpu:*").Matches(full));
  EXPECT_TRUE(P("/job:localhost").Matches(full));
  EXPECT_FALSE(P("/cpu:1").Matches(full));
  EXPECT_FALSE(P("/gpu:2").Matches(full));
  EXPECT_FALSE(P("/job:ps").Matches(full));
}

TEST(DeviceNameTest, InnerScopeFieldsWin) {
  DeviceName inner = P("/cpu:1");
  inner.FillFrom(P("/job:ps/task:3/device:GPU:0"));
  EXPECT_EQ(inner.ToString(), "/job:ps/task:3/device:CPU:1");
}

TEST(DeviceNameTest, StrictMergeReportsConflict) {
  EXPECT_EQ(DeviceName::MergeStrict(P("/cpu:0"), P("/job:ps"))->ToString(), "/job:ps/device:CPU:0");
  StatusOr<DeviceName> m = DeviceName::MergeStrict(P("/cpu:0"), P("/cpu:1"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("incompatible ids"), std::string::npos);
}

}  // namespace
}  // namespace tessera
