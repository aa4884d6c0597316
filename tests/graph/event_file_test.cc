// Summaries and event files as TensorBoard reads them: histograms bucketed as TensorFlow
// 2.21 buckets them (its values recorded here), PNGs that decode, TFRecord framing with
// masked CRC-32C, buffering, and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cfloat>
#include <filesystem>
#include <fstream>
#include <thread>

#include "graph/platform/crc32c.h"
#include "graph/protos/summary.pb.h"
#include "graph/serialize/event_file.h"
#include "graph/serialize/png.h"
#include "graph/serialize/summary.h"
#include "tests/png_reader.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace pb = tfgraph;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t ReadLittleEndian(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}

// Every record of an event file, its framing and checksums checked.
std::vector<pb::Event> ReadEvents(const std::string& path) {
  const std::string file = Slurp(path);
  std::vector<pb::Event> events;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size());
    const uint64_t length = ReadLittleEndian(file, at, 8);
    EXPECT_EQ(ReadLittleEndian(file, at + 8, 4), crc32c::Mask(crc32c::Value(file.data() + at, 8)));
    EXPECT_LE(at + 16 + length, file.size());
    const std::string data = file.substr(at + 12, length);
    EXPECT_EQ(ReadLittleEndian(file, at + 12 + length, 4), crc32c::Mask(crc32c::Value(data.data(), data.size())));
    events.emplace_back();
    EXPECT_TRUE(events.back().ParseFromString(data));
    at += 16 + length;
  }
  return events;
}

pb::Summary Parse(const std::string& bytes) {
  pb::Summary s;
  EXPECT_TRUE(s.ParseFromString(bytes));
  return s;
}

TEST(SummaryTest, HistogramsAreBucketedAsTensorFlowBucketsThem) {
  SummaryHistogram one;
  one.Add(3.5);
  SummaryBuilder b;
  b.AddHistogram("h", one);
  // tf.compat.v1.summary.histogram of 3.5 in TensorFlow 2.21.
  const pb::HistogramProto h = Parse(b.Serialize()).value(0).histo();
  EXPECT_EQ(h.min(), 3.5);
  EXPECT_EQ(h.num(), 1);
  EXPECT_EQ(h.sum_squares(), 12.25);
  EXPECT_THAT(h.bucket_limit(), ElementsAre(3.48324163592684, 3.8315657995195243, DBL_MAX));
  EXPECT_THAT(h.bucket(), ElementsAre(0, 1, 0));

  SummaryHistogram many;
  for (double v : {1.0, 2.0, 2.0, 3.0, -1.0, 0.0, double(1e-13f), 5.5}) many.Add(v);
  SummaryBuilder b2;
  b2.AddHistogram("h", many);
  const pb::HistogramProto h2 = Parse(b2.Serialize()).value(0).histo();
  EXPECT_EQ(h2.min(), -1);
  EXPECT_EQ(h2.max(), 5.5);
  EXPECT_EQ(h2.num(), 8);
  EXPECT_EQ(h2.sum_squares(), 49.25);
  EXPECT_THAT(h2.bucket_limit(),
              ElementsAre(-1.0089710279437536, -0.917246389039776, 0, 1e-12, 0.917246389039776, 1.0089710279437536,
                          1.9661990955585713, 2.1628190051144287, 2.8787120958073054, 3.1665833053880363,
                          5.0998140791604882, 5.6097954870765374, DBL_MAX));
  EXPECT_THAT(h2.bucket(), ElementsAre(0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 1, 0));
}

TEST(SummaryTest, MergeConcatenatesValuesAndRefusesDuplicateTags) {
  SummaryBuilder a, b;
  a.AddScalar("loss", 0.5f);
  b.AddScalar("accuracy", 0.75f);
  StatusOr<std::string> merged = MergeSummaries({a.Serialize(), b.Serialize()});
  ASSERT_TRUE(merged.ok()) << merged.status();
  const pb::Summary m = Parse(*merged);
  ASSERT_EQ(m.value_size(), 2);
  EXPECT_EQ(m.value(1).tag(), "accuracy");
  EXPECT_EQ(m.value(1).simple_value(), 0.75f);

  Status dup = MergeSummaries({a.Serialize(), a.Serialize()}).status();
  EXPECT_EQ(dup.code(), Code::kInvalidArgument);
  EXPECT_THAT(dup.message(), HasSubstr("Duplicate tag loss"));
  Status garbage = MergeSummaries({a.Serialize(), std::string("\xff\xff\xff", 3)}).status();
  EXPECT_EQ(garbage.code(), Code::kInvalidArgument);
  EXPECT_THAT(garbage.message(), HasSubstr("input 1"));
}

TEST(PngTest, EncodesEveryChannelCountLosslessly) {
  for (int channels = 1; channels <= 4; ++channels) {
    std::vector<uint8_t> pixels(3 * 5 * channels);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
    StatusOr<std::string> png = EncodePng(pixels.data(), 3, 5, channels);
    ASSERT_TRUE(png.ok()) << png.status();
    const testing::DecodedPng d = testing::DecodePng(*png, channels);
    EXPECT_EQ(d.height, 3u);
    EXPECT_EQ(d.width, 5u);
    constexpr int kColorType[] = {0, 4, 2, 6};
    EXPECT_EQ(d.color_type, kColorType[channels - 1]);
    EXPECT_EQ(d.pixels, pixels);
  }
  uint8_t pixel = 0;
  EXPECT_EQ(EncodePng(&pixel, 1, 1, 5).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EncodePng(&pixel, 0, 1, 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EncodePng(&pixel, int64_t{1} << 31, 1, 1).status().code(), Code::kInvalidArgument);
}

class EventFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera_events_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<EventFileWriter> Open(EventFileOptions options = {}) {
    StatusOr<std::unique_ptr<EventFileWriter>> w = EventFileWriter::Open((dir_ / "logs").string(), options);
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? std::move(*w) : nullptr;
  }

  fs::path dir_;
};

TEST_F(EventFileTest, WritesTheVersionThenSummariesGraphsAndSessionLogs) {
  auto w = Open({.filename_suffix = ".v2"});
  ASSERT_NE(w, nullptr);
  EXPECT_THAT(fs::path(w->path()).filename().string(), ::testing::StartsWith("events.out.tfevents."));
  EXPECT_THAT(w->path(), ::testing::EndsWith(".v2"));
  SummaryBuilder b;
  b.AddScalar("loss", 0.25f);
  ASSERT_TRUE(w->AddSummary(b.Serialize(), 7, 1000.5).ok());
  ASSERT_TRUE(w->AddGraph("graph bytes", 1001).ok());
  ASSERT_TRUE(w->AddSessionLog(3, "/tmp/ckpt-7", "saved", 7, 1002).ok());
  ASSERT_TRUE(w->Close().ok());

  const std::vector<pb::Event> events = ReadEvents(w->path());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.7e9);
  EXPECT_EQ(events[1].step(), 7);
  EXPECT_EQ(events[1].wall_time(), 1000.5);
  EXPECT_EQ(events[1].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[2].graph_def(), "graph bytes");
  EXPECT_EQ(events[3].session_log().status(), pb::SessionLog::CHECKPOINT);
  EXPECT_EQ(events[3].session_log().checkpoint_path(), "/tmp/ckpt-7");

  EXPECT_EQ(w->AddGraph("late", 0).code(), Code::kFailedPrecondition);
  EXPECT_EQ(w->Flush().code(), Code::kFailedPrecondition);
}

TEST_F(EventFileTest, BuffersUntilFlushOrAFullQueue) {
  auto w = Open({.filename_suffix = "", .flush_secs = 3600, .max_queue = 3});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(ReadEvents(w->path()).size(), 1u);  // the version, written by Open
  ASSERT_TRUE(w->AddGraph("a", 1).ok());
  ASSERT_TRUE(w->AddGraph("b", 2).ok());
  EXPECT_EQ(ReadEvents(w->path()).size(), 1u);
  ASSERT_TRUE(w->AddGraph("c", 3).ok());  // the third waiting event
  EXPECT_EQ(ReadEvents(w->path()).size(), 4u);
  ASSERT_TRUE(w->AddGraph("d", 4).ok());
  EXPECT_EQ(ReadEvents(w->path()).size(), 4u);
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(ReadEvents(w->path()).size(), 5u);

  // A second writer in the same second takes a name of its own.
  auto timed = Open({.filename_suffix = "", .flush_secs = 0, .max_queue = 100});
  ASSERT_NE(timed, nullptr);
  EXPECT_NE(timed->path(), w->path());
  ASSERT_TRUE(timed->AddGraph("now", 1).ok());
  EXPECT_EQ(ReadEvents(timed->path()).size(), 2u);
}

TEST_F(EventFileTest, BadInputIsAStatusNamingTheFile) {
  auto w = Open();
  ASSERT_NE(w, nullptr);
  Status not_summary = w->AddSummary(std::string("\xff\xff\xff", 3), 0, 0);
  EXPECT_EQ(not_summary.code(), Code::kInvalidArgument);
  EXPECT_EQ(w->AddSessionLog(9, "", "", 0, 0).code(), Code::kInvalidArgument);

  // A log folder that is a file.
  std::ofstream(dir_ / "plain") << "x";
  StatusOr<std::unique_ptr<EventFileWriter>> on_file = EventFileWriter::Open((dir_ / "plain").string(), {});
  ASSERT_FALSE(on_file.ok());
  EXPECT_THAT(on_file.status().message(), HasSubstr((dir_ / "plain").string()));
  EXPECT_FALSE(EventFileWriter::Open((dir_ / "plain" / "below").string(), {}).ok());
  EXPECT_EQ(EventFileWriter::Open("", {}).status().code(), Code::kInvalidArgument);

  // An existing file is never overwritten: its name is refused.
  Status exists = AppendOnlyFile::Create(w->path(), "event file").status();
  EXPECT_EQ(exists.code(), Code::kAlreadyExists);
  EXPECT_THAT(exists.message(), HasSubstr(w->path()));
}

TEST_F(EventFileTest, ThreadsMayAddAtOnce) {
  auto w = Open({.filename_suffix = "", .flush_secs = 120, .max_queue = 7});
  ASSERT_NE(w, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        SummaryBuilder b;
        b.AddScalar(std::to_string(t), static_cast<float>(i));
        EXPECT_TRUE(w->AddSummary(b.Serialize(), i, 0).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(w->Close().ok());
  std::map<std::string, int> per_tag;
  for (const pb::Event& e : ReadEvents(w->path())) {
    if (e.has_summary()) ++per_tag[e.summary().value(0).tag()];
  }
  const std::map<std::string, int> expected = {{"0", 50}, {"1", 50}, {"2", 50}, {"3", 50}};
  EXPECT_EQ(per_tag, expected);
}

}  // namespace
}  // namespace tessera
