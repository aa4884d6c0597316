// The C API, linked only against libtessera_c: every call with good and bad arguments (NULL
// handles, wrong dtypes and sizes, unknown fetches, a closed session). Run under ASan and
// UBSan with the rest of the suite.
#include "tessera/c_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using ::testing::HasSubstr;

// y = x * w + b over a float32 [2, 2] placeholder, a string constant and a counter variable.
constexpr const char* kGraph = R"({"nodes": [
  {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [null, 2]}},
  {"name": "w", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [2, 1], "data": [1, 2]}}},
  {"name": "y", "op": "MatMul", "inputs": ["x", "w"]},
  {"name": "s", "op": "Const", "attrs": {"dtype": "string", "value": {"dtype": "string", "shape": [2], "data": ["a", "b\u0000c"]}}}
]})";

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override { s_ = tessera_status_new(); }
  void TearDown() override { tessera_status_delete(s_); }
  tessera_code code() const { return tessera_status_code(s_); }
  std::string message() const { return tessera_status_message(s_); }

  tessera_graph* Graph() {
    tessera_graph* g = tessera_graph_import_json(kGraph, std::strlen(kGraph), s_);
    EXPECT_EQ(code(), TESSERA_OK) << message();
    return g;
  }

  tessera_status* s_ = nullptr;
};

TEST_F(CApiTest, RunsAGraphWithFeedsAndFetches) {
  tessera_graph* g = Graph();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(tessera_graph_num_nodes(g), 4);
  tessera_session* session = tessera_session_new(g, R"({"device_count": {"CPU": 1}})", s_);
  ASSERT_NE(session, nullptr) << message();
  tessera_graph_delete(g);  // the session keeps what it needs

  const int64_t dims[2] = {2, 2};
  tessera_tensor* x = tessera_tensor_new(TESSERA_FLOAT, dims, 2, s_);
  ASSERT_NE(x, nullptr);
  float* xd = static_cast<float*>(tessera_tensor_data(x));
  xd[0] = 1, xd[1] = 1, xd[2] = 2, xd[3] = 3;
  const char* feed_names[] = {"x"};
  const char* fetch_names[] = {"y", "s"};
  tessera_tensor* out[2];
  tessera_session_run(session, feed_names, &x, 1, fetch_names, out, 2, nullptr, 0, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  EXPECT_EQ(tessera_tensor_dtype(out[0]), TESSERA_FLOAT);
  ASSERT_EQ(tessera_tensor_num_dims(out[0]), 2);
  EXPECT_EQ(tessera_tensor_dim(out[0], 0), 2);
  EXPECT_EQ(tessera_tensor_dim(out[0], 1), 1);
  EXPECT_EQ(tessera_tensor_dim(out[0], 2), -1);
  EXPECT_EQ(tessera_tensor_byte_size(out[0]), 8u);
  const float* y = static_cast<const float*>(tessera_tensor_data(out[0]));
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], 8.0f);
  size_t length = 0;
  const char* str = tessera_tensor_string(out[1], 1, &length, s_);
  ASSERT_NE(str, nullptr) << message();
  EXPECT_EQ(std::string(str, length), std::string("b\0c", 3));
  EXPECT_EQ(tessera_tensor_data(out[1]), nullptr);

  EXPECT_GT(tessera_session_num_placements(session), 0);
  EXPECT_STREQ(tessera_session_placement_device(session, 0), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_NE(tessera_session_placement_reason(session, 0), nullptr);
  EXPECT_EQ(tessera_session_placement_node(session, 10000), nullptr);
  EXPECT_EQ(tessera_session_placement_op(session, -1), nullptr);

  for (tessera_tensor* t : out) tessera_tensor_delete(t);
  tessera_tensor_delete(x);
  tessera_session_close(session, s_);
  EXPECT_EQ(code(), TESSERA_OK);
  tessera_session_run(session, nullptr, nullptr, 0, fetch_names, out, 1, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_FAILED_PRECONDITION);
  EXPECT_THAT(message(), HasSubstr("closed"));
  EXPECT_EQ(out[0], nullptr);
  tessera_session_delete(session);
}

struct Freed {
  int calls = 0;
  void* data = nullptr;
};

TEST_F(CApiTest, BorrowedBuffersAreFedAndFreedOnce) {
  tessera_graph* g = Graph();
  tessera_session* session = tessera_session_new(g, nullptr, s_);
  tessera_graph_delete(g);
  ASSERT_NE(session, nullptr) << message();
  float* buffer = static_cast<float*>(std::malloc(sizeof(float) * 2));
  buffer[0] = 4, buffer[1] = 5;
  Freed freed;
  const int64_t dims[2] = {1, 2};
  tessera_tensor* x = tessera_tensor_from_buffer(
      TESSERA_FLOAT, dims, 2, buffer, sizeof(float) * 2,
      [](void* data, size_t, void* arg) {
        auto* f = static_cast<Freed*>(arg);
        ++f->calls;
        f->data = data;
        std::free(data);
      },
      &freed, s_);
  ASSERT_NE(x, nullptr) << message();
  EXPECT_EQ(tessera_tensor_data(x), buffer);
  const char* feed_names[] = {"x"};
  const char* fetch_names[] = {"y"};
  tessera_tensor* out[1];
  tessera_session_run(session, feed_names, &x, 1, fetch_names, out, 1, nullptr, 0, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  EXPECT_EQ(static_cast<const float*>(tessera_tensor_data(out[0]))[0], 14.0f);
  tessera_tensor_delete(out[0]);
  EXPECT_EQ(freed.calls, 0);
  tessera_tensor_delete(x);
  EXPECT_EQ(freed.calls, 1);
  EXPECT_EQ(freed.data, buffer);
  tessera_session_delete(session);
}

// A result that is a feed's own tensor (an Identity) comes back as a copy: rewriting the
// feed afterwards leaves the result alone, and the result cannot be written.
TEST_F(CApiTest, FetchedTensorsNeverAliasTheirFeeds) {
  const char* graph = R"({"nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}},
    {"name": "s", "op": "Placeholder", "attrs": {"dtype": "string", "shape": [1]}},
    {"name": "xi", "op": "Identity", "inputs": ["x"]},
    {"name": "si", "op": "Identity", "inputs": ["s"]}]})";
  tessera_graph* g = tessera_graph_import_json(graph, std::strlen(graph), s_);
  ASSERT_NE(g, nullptr) << message();
  tessera_session* session = tessera_session_new(g, nullptr, s_);
  tessera_graph_delete(g);
  ASSERT_NE(session, nullptr) << message();
  const int64_t two[1] = {2}, one[1] = {1};
  tessera_tensor* feeds[2] = {tessera_tensor_new(TESSERA_FLOAT, two, 1, s_), tessera_tensor_new(TESSERA_STRING, one, 1, s_)};
  ASSERT_NE(feeds[0], nullptr);
  ASSERT_NE(feeds[1], nullptr);
  float* x = static_cast<float*>(tessera_tensor_data(feeds[0]));
  x[0] = 1, x[1] = 2;
  tessera_tensor_set_string(feeds[1], 0, "fed", 3, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  const char* feed_names[] = {"x", "s"};
  const char* fetch_names[] = {"xi", "si", "xi"};
  tessera_tensor* out[3];
  tessera_session_run(session, feed_names, feeds, 2, fetch_names, out, 3, nullptr, 0, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  EXPECT_NE(tessera_tensor_data(out[0]), x);
  EXPECT_NE(tessera_tensor_data(out[0]), tessera_tensor_data(out[2]));
  x[0] = 99;
  tessera_tensor_set_string(feeds[1], 0, "changed", 7, s_);
  EXPECT_EQ(static_cast<const float*>(tessera_tensor_data(out[0]))[0], 1.0f);
  size_t length = 0;
  const char* fetched = tessera_tensor_string(out[1], 0, &length, s_);
  EXPECT_EQ(std::string(fetched, length), "fed");
  tessera_tensor_set_string(out[1], 0, "written", 7, s_);
  EXPECT_EQ(code(), TESSERA_FAILED_PRECONDITION);
  EXPECT_THAT(message(), HasSubstr("read-only"));
  fetched = tessera_tensor_string(feeds[1], 0, &length, s_);
  EXPECT_EQ(std::string(fetched, length), "changed");
  for (tessera_tensor* t : out) tessera_tensor_delete(t);
  for (tessera_tensor* t : feeds) tessera_tensor_delete(t);
  tessera_session_delete(session);
}

// 2^61 doubles are 2^64 bytes, which a size_t cannot count: refused, not a buffer of 0.
TEST_F(CApiTest, ASizeThatDoesNotFitIsRefused) {
  double one = 0;
  const int64_t dims[1] = {int64_t{1} << 61};
  tessera_tensor* t = tessera_tensor_from_buffer(TESSERA_DOUBLE, dims, 1, &one, 0, nullptr, nullptr, s_);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_THAT(message(), HasSubstr("more bytes than a size_t holds"));
  const int64_t halves[2] = {int64_t{1} << 31, int64_t{1} << 31};
  t = tessera_tensor_new(TESSERA_DOUBLE, halves, 2, s_);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(code(), TESSERA_OK);
}

TEST_F(CApiTest, NullHandlesAreInvalidArgumentsNotCrashes) {
  EXPECT_EQ(tessera_status_code(nullptr), TESSERA_INVALID_ARGUMENT);
  EXPECT_STREQ(tessera_status_message(nullptr), "status is NULL");
  EXPECT_EQ(tessera_graph_import_json(nullptr, 3, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_graph_import_graphdef(nullptr, 3, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_graph_import_file(nullptr, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_session_new(nullptr, nullptr, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("graph is NULL"));
  tessera_session_run(nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_session_close(nullptr, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_tensor_new(TESSERA_FLOAT, nullptr, 2, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_tensor_data(nullptr), nullptr);
  EXPECT_EQ(tessera_tensor_num_dims(nullptr), 0);
  EXPECT_EQ(tessera_tensor_dim(nullptr, 0), -1);
  EXPECT_EQ(tessera_tensor_byte_size(nullptr), 0u);
  EXPECT_EQ(tessera_tensor_num_elements(nullptr), 0);
  EXPECT_EQ(tessera_tensor_dtype(nullptr), 0);
  size_t length;
  EXPECT_EQ(tessera_tensor_string(nullptr, 0, &length, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_tensor_set_string(nullptr, 0, "a", 1, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(tessera_graph_num_nodes(nullptr), 0);
  EXPECT_EQ(tessera_session_num_placements(nullptr), 0);
  // A NULL status is allowed: the call still fails without touching it.
  EXPECT_EQ(tessera_graph_import_json("{", 1, nullptr), nullptr);
  tessera_tensor_delete(nullptr);
  tessera_graph_delete(nullptr);
  tessera_session_delete(nullptr);
  tessera_status_delete(nullptr);

  tessera_graph* g = Graph();
  tessera_session* session = tessera_session_new(g, nullptr, s_);
  tessera_graph_delete(g);
  const char* names[] = {"y"};
  tessera_session_run(session, nullptr, nullptr, 1, nullptr, nullptr, 0, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_tensor* null_feed = nullptr;
  tessera_session_run(session, names, &null_feed, 1, nullptr, nullptr, 0, nullptr, 0, s_);
  EXPECT_THAT(message(), HasSubstr("feed 0 is NULL"));
  tessera_session_run(session, nullptr, nullptr, 0, names, nullptr, 1, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_session_run(session, nullptr, nullptr, -1, nullptr, nullptr, 0, nullptr, 0, s_);
  EXPECT_THAT(message(), HasSubstr("negative"));
  tessera_session_delete(session);
}

TEST_F(CApiTest, WrongDtypesShapesAndNamesAreErrors) {
  tessera_graph* g = Graph();
  tessera_session* session = tessera_session_new(g, nullptr, s_);
  tessera_graph_delete(g);
  ASSERT_NE(session, nullptr);
  const int64_t dims[2] = {2, 2};
  tessera_tensor* ints = tessera_tensor_new(TESSERA_INT32, dims, 2, s_);
  const char* feed_names[] = {"x"};
  const char* fetch_names[] = {"y"};
  tessera_tensor* out[1];
  tessera_session_run(session, feed_names, &ints, 1, fetch_names, out, 1, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_THAT(message(), HasSubstr("x"));
  EXPECT_EQ(out[0], nullptr);
  tessera_tensor_delete(ints);

  const char* missing[] = {"no_such_node"};
  tessera_session_run(session, nullptr, nullptr, 0, missing, out, 1, nullptr, 0, s_);
  EXPECT_NE(code(), TESSERA_OK);
  EXPECT_THAT(message(), HasSubstr("no_such_node"));
  tessera_session_run(session, nullptr, nullptr, 0, nullptr, nullptr, 0, missing, 1, s_);
  EXPECT_NE(code(), TESSERA_OK);
  // The session keeps working after errors.
  tessera_tensor* x = tessera_tensor_new(TESSERA_FLOAT, dims, 2, s_);
  tessera_session_run(session, feed_names, &x, 1, fetch_names, out, 1, nullptr, 0, s_);
  EXPECT_EQ(code(), TESSERA_OK) << message();
  tessera_tensor_delete(out[0]);
  tessera_tensor_delete(x);
  tessera_session_delete(session);

  EXPECT_EQ(tessera_tensor_new(static_cast<tessera_dtype>(99), dims, 2, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("unknown tessera_dtype 99"));
  const int64_t negative[1] = {-3};
  EXPECT_EQ(tessera_tensor_new(TESSERA_FLOAT, negative, 1, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("negative"));
  const int64_t huge[3] = {int64_t{1} << 40, int64_t{1} << 40, 16};
  EXPECT_EQ(tessera_tensor_new(TESSERA_FLOAT, huge, 3, s_), nullptr);
  EXPECT_NE(code(), TESSERA_OK);
  float small[3];
  EXPECT_EQ(tessera_tensor_from_buffer(TESSERA_FLOAT, dims, 2, small, sizeof small, nullptr, nullptr, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("needs 16 bytes, the buffer has 12"));
  EXPECT_EQ(tessera_tensor_from_buffer(TESSERA_STRING, dims, 2, small, sizeof small, nullptr, nullptr, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("string tensor cannot borrow"));

  tessera_tensor* strings = tessera_tensor_new(TESSERA_STRING, dims, 1, s_);
  tessera_tensor_set_string(strings, 1, "hello", 5, s_);
  EXPECT_EQ(code(), TESSERA_OK);
  size_t length = 0;
  const char* hello = tessera_tensor_string(strings, 1, &length, s_);
  EXPECT_EQ(std::string(hello, length), "hello");
  tessera_tensor_set_string(strings, 2, "x", 1, s_);
  EXPECT_EQ(code(), TESSERA_OUT_OF_RANGE);
  tessera_tensor* floats = tessera_tensor_new(TESSERA_FLOAT, dims, 1, s_);
  tessera_tensor_set_string(floats, 0, "x", 1, s_);
  EXPECT_THAT(message(), HasSubstr("holds float32, not strings"));
  tessera_tensor_delete(floats);
  tessera_tensor_delete(strings);
}

TEST_F(CApiTest, BadGraphsAndConfigsNameWhatIsWrong) {
  EXPECT_EQ(tessera_graph_import_json("{\"nodes\": [", 11, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  const char* unknown = R"({"nodes": [{"name": "q", "op": "NoSuchOp"}]})";
  EXPECT_EQ(tessera_graph_import_json(unknown, std::strlen(unknown), s_), nullptr);
  EXPECT_EQ(code(), TESSERA_NOT_FOUND);
  EXPECT_THAT(message(), HasSubstr("NoSuchOp"));
  const char truncated[] = "\x0a\x40\x0a\x01x";
  EXPECT_EQ(tessera_graph_import_graphdef(truncated, sizeof truncated - 1, s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("byte offset 0"));
  const char* text = "node { name: \"a\" op: \"NoOp\" }";
  tessera_graph* g = tessera_graph_import_graphdef(text, std::strlen(text), s_);
  ASSERT_NE(g, nullptr) << message();
  EXPECT_EQ(tessera_session_new(g, "{\"device_count\": ", s_), nullptr);
  EXPECT_THAT(message(), HasSubstr("session config"));
  EXPECT_EQ(tessera_session_new(g, "{\"no_such_field\": 1}", s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_graph_delete(g);
  EXPECT_EQ(tessera_graph_import_file("/nonexistent/model.pb", s_), nullptr);
  EXPECT_EQ(code(), TESSERA_NOT_FOUND);
}

struct Lines {
  std::vector<std::string> text;
};

TEST_F(CApiTest, LogLinesGoToTheSink) {
  Lines lines;
  tessera_set_log_sink(
      [](int, const char* message, size_t length, void* arg) {
        static_cast<Lines*>(arg)->text.emplace_back(message, length);
      },
      &lines);
  const char* text = "node { name: \"a\" op: \"NoOp\" attr { key: \"_note\" value { i: 1 } } }";
  tessera_graph* g = tessera_graph_import_graphdef(text, std::strlen(text), s_);
  tessera_set_log_sink(nullptr, nullptr);
  ASSERT_NE(g, nullptr) << message();
  tessera_graph_delete(g);
  EXPECT_THAT(lines.text, testing::Contains(HasSubstr("ignoring attr '_note'")));
}

TEST_F(CApiTest, ConcurrentRunsOnOneSession) {
  tessera_graph* g = Graph();
  tessera_session* session = tessera_session_new(g, nullptr, s_);
  tessera_graph_delete(g);
  ASSERT_NE(session, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      tessera_status* s = tessera_status_new();
      const int64_t dims[2] = {1, 2};
      tessera_tensor* x = tessera_tensor_new(TESSERA_FLOAT, dims, 2, s);
      static_cast<float*>(tessera_tensor_data(x))[0] = static_cast<float>(t);
      const char* feed_names[] = {"x"};
      const char* fetch_names[] = {"y"};
      for (int i = 0; i < 50; ++i) {
        tessera_tensor* out[1];
        tessera_session_run(session, feed_names, &x, 1, fetch_names, out, 1, nullptr, 0, s);
        if (tessera_status_code(s) == TESSERA_OK && static_cast<const float*>(tessera_tensor_data(out[0]))[0] == t) {
          ++ok[t];
        }
        tessera_tensor_delete(out[0]);
      }
      tessera_tensor_delete(x);
      tessera_status_delete(s);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int n : ok) EXPECT_EQ(n, 50);
  tessera_session_delete(session);
}

const std::string kSavedModels = std::string(TESSERA_TEST_DATA_DIR) + "/saved_models/";

TEST_F(CApiTest, ASavedModelsSignatureRunsByKeysFromManyThreads) {
  tessera_saved_model* model = tessera_saved_model_load((kSavedModels + "tf2_module").c_str(), nullptr, 0, nullptr, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  auto run = [&](tessera_status* s, float first, float* total) {
    const int64_t dims[2] = {1, 3};
    tessera_tensor* x = tessera_tensor_new(TESSERA_FLOAT, dims, 2, s);
    const float values[3] = {first, 2, 3};
    std::memcpy(tessera_tensor_data(x), values, sizeof values);
    const char* in = "x";
    const char* out = "total";
    tessera_tensor* result = nullptr;
    tessera_saved_model_run(model, "serving_default", &in, &x, 1, &out, &result, 1, s);
    tessera_tensor_delete(x);
    if (result != nullptr) *total = static_cast<const float*>(tessera_tensor_data(result))[0];
    tessera_tensor_delete(result);
  };
  float total = 0;
  run(s_, 1, &total);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  EXPECT_FLOAT_EQ(total, 18.0f);  // TensorFlow's, tests/testdata/saved_models/tf2_module.json
  std::vector<std::thread> threads;
  std::vector<float> totals(8);
  std::vector<int> codes(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      tessera_status* s = tessera_status_new();
      for (int i = 0; i < 20; ++i) run(s, 1, &totals[t]);
      codes[t] = tessera_status_code(s);
      tessera_status_delete(s);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(codes[t], TESSERA_OK);
    EXPECT_FLOAT_EQ(totals[t], 18.0f);
  }
  tessera_saved_model_delete(model);
}

TEST_F(CApiTest, SavedModelErrorsNameWhatIsMissing) {
  const char* tags[] = {"train"};
  EXPECT_EQ(tessera_saved_model_load((kSavedModels + "tf2_module").c_str(), tags, 1, nullptr, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_NOT_FOUND);
  EXPECT_THAT(message(), ::testing::HasSubstr("it has {serve}"));
  EXPECT_EQ(tessera_saved_model_load(nullptr, nullptr, 0, nullptr, s_), nullptr);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_saved_model* model = tessera_saved_model_load((kSavedModels + "tf2_module").c_str(), nullptr, 0, nullptr, s_);
  ASSERT_EQ(code(), TESSERA_OK) << message();
  const char* out = "nope";
  tessera_tensor* result = nullptr;
  tessera_saved_model_run(model, "serving_default", nullptr, nullptr, 0, &out, &result, 1, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  EXPECT_EQ(result, nullptr);
  tessera_saved_model_run(nullptr, "serving_default", nullptr, nullptr, 0, &out, &result, 1, s_);
  EXPECT_EQ(code(), TESSERA_INVALID_ARGUMENT);
  tessera_saved_model_delete(model);
  tessera_saved_model_delete(nullptr);
}

}  // namespace
