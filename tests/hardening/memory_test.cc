// Memory from small inputs: runaway allocations and buffers meet the session's memory
// limit, and a small graph cannot ask for a huge one.
#include <gmock/gmock.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "graph/builder/dataset_ops.h"
#include "graph/builder/ops.h"
#include "tests/hardening/hardening_util.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;

TEST(MemoryTest, RunawayAllocationsMeetTheSessionsMemoryLimit) {
  SessionConfig config;
  config.host_memory_limit_mb = 64;
  // A kernel asking for 4 GB at once.
  Scope root = Scope::NewRootScope();
  Output big = ops::Fill(root.WithOpName("big"), Tensor::FromVector<int64_t>({int64_t{1} << 30}), 1.0f);
  Output small = ops::Fill(root.WithOpName("small"), Tensor::FromVector<int64_t>({1024}), 1.0f);
  auto session = MakeSession(root, config);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s = session->Run({}, {big.name()}, {}, &out);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("OOM when allocating tensor with shape [1073741824] and type float32 on "
                                     "/job:localhost/replica:0/task:0/device:CPU:0 by allocator "));
  EXPECT_THAT(s.message(), HasSubstr("the session's host memory limit is 64 MiB"));
  EXPECT_THAT(s.message(), HasSubstr("[[node big (Fill)"));
  // The session goes on, and what the failed step held is given back.
  ASSERT_TRUE(session->Run({}, {small.name()}, {}, &out).ok());
  out.clear();
  EXPECT_EQ(session->devices().devices()[0]->allocator()->stats().bytes_in_use, 0);
}

TEST(MemoryTest, PipelinesThatBufferWithoutEndMeetTheMemoryLimit) {
  SessionConfig config;
  config.host_memory_limit_mb = 64;
  auto endless = [](const Scope& root) { return ops::RangeDataset(root, int64_t{0}, int64_t{1} << 62); };
  auto shuffled = [&](const Scope& root) { return ops::Shuffle(root, endless(root), int64_t{1} << 40); };
  auto batched = [&](const Scope& root) { return ops::Batch(root, endless(root), int64_t{1'000'000'000}); };
  // Slices of a tensor repeated for ever, as views they escaped any accounting.
  auto sliced = [](const Scope& root) {
    ops::Dataset slices = ops::TensorSliceDataset(root, {ops::Const(root, Tensor::FromVector<int64_t>({1, 2, 3}))});
    return ops::Shuffle(root, ops::Repeat(root, slices), int64_t{1} << 40);
  };
  for (const auto& make : std::vector<std::function<ops::Dataset(const Scope&)>>{shuffled, batched, sliced}) {
    Scope root = Scope::NewRootScope();
    ops::Iterator it = ops::InitializableIterator(root.WithOpName("it"), make(root));
    std::vector<Output> next = ops::GetNext(root.WithOpName("next"), it);
    auto session = MakeSession(root, config);
    ASSERT_NE(session, nullptr);
    std::vector<Tensor> out;
    ASSERT_TRUE(session->Run({}, {}, {it.initializer.node()->name()}, &out).ok());
    Status s = session->Run({}, {next[0].name()}, {}, &out);
    EXPECT_EQ(s.code(), Code::kResourceExhausted) << s;
    EXPECT_THAT(s.message(), HasSubstr("host memory limit"));
    EXPECT_THAT(s.message(), HasSubstr("[[node next (IteratorGetNext)"));
  }
}

TEST(MemoryTest, ASmallGraphCannotAskForTenMillionOutputs) {
  const std::string graph = R"({"nodes": [
    {"name": "x", "op": "Const", "attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [0], "data": []}}},
    {"name": "axis", "op": "Const", "attrs": {"dtype": "int32", "value": {"dtype": "int32", "shape": [], "data": [0]}}},
    {"name": "s", "op": "Split", "inputs": ["axis", "x"], "attrs": {"num_split": 10000000}}]})";
  StatusOr<std::vector<Tensor>> out = RunJson(graph, {"s"});
  ASSERT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("Node 's' (Split): attr 'num_split' asks for 10000000 tensors"));
}

// A chain of a million nodes, 56 MB of JSON, took 4.9 GB and two and a half minutes to
// run (now 3.4 GB and 22 s). A quarter of that: within the limit it runs, and past the
// limit it is refused before anything is built.
TEST(MemoryTest, AGraphOfAQuarterMillionNodesRunsOrIsRefusedUpFront) {
  std::string graph = R"({"nodes": [{"name": "n0", "op": "Const", "attrs": {"dtype": "float32",
      "value": {"dtype": "float32", "shape": [], "data": [1]}}})";
  const int n = 250'000;
  for (int i = 1; i < n; ++i) graph += StrCat(R"(, {"name": "n)", i, R"(", "op": "Identity", "inputs": ["n)", i - 1, "\"]}");
  graph += "]}";
  StatusOr<GraphSpec> def = GraphSpecFromJson(graph);
  ASSERT_TRUE(def.ok()) << def.status();
  SessionConfig small;
  small.host_memory_limit_mb = 512;
  Status s = Session::Create(small, *def).status();
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("A graph of 250000 nodes needs about 976 MiB"));
  EXPECT_THAT(s.message(), HasSubstr("the session's limit of 512 MiB"));
  auto session = Session::Create(SessionConfig(), *def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {"n249999"}, {}, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);
}

TEST(MemoryTest, TheMemoryLimitIsReadFromTheConfig) {
  EXPECT_EQ(SessionConfig::FromJson(R"({"host_memory_limit_mb": 100})")->host_memory_limit_mb, 100);
  EXPECT_EQ(SessionConfig::FromJson(R"({"host_memory_limit_mb": -1})").status().code(), Code::kInvalidArgument);
  SessionConfig automatic;
  EXPECT_EQ(automatic.HostMemoryLimitBytes(), HostMemoryBytes());
  EXPECT_GT(HostMemoryBytes(), int64_t{1} << 28);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TESSERA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TESSERA_SANITIZED 1
#endif
#endif

// Threads need stacks: under an address-space limit, thousands of them cannot start.
TEST(MemoryTest, ThousandsOfThreadsUnderAMemoryLimitAreAnErrorNotAnAbort) {
#ifdef TESSERA_SANITIZED
  GTEST_SKIP() << "sanitizer runtimes reserve more address space than the limit leaves";
#else
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // 512 MiB beyond what the process maps now; 2048 threads' stacks take 16 GiB.
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGE_SIZE) + (rlim_t{512} << 20);
    const rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(3);
    Scope root = Scope::NewRootScope();
    ops::Add(root.WithOpName("y"), 1.0f, 2.0f);
    GraphSpec def;
    if (!root.ToSpec(&def).ok()) ::_exit(3);
    SessionConfig config;
    config.inter_op_parallelism_threads = 1024;
    config.intra_op_parallelism_threads = 1024;
    config.use_per_session_threads = true;
    StatusOr<std::unique_ptr<Session>> session = Session::Create(config, def);
    const bool refused = session.status().code() == Code::kResourceExhausted &&
                         session.status().message().find("threads of the") != std::string::npos;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

}  // namespace
}  // namespace tessera::testing
