// Cluster resolvers: TF_CONFIG (TensorFlow's and Kubeflow TFJob's forms), Slurm's variables
// as srun sets them, and mpirun's, whose ranks exchange their addresses through rank 0 (here
// threads on loopback); every way they can be wrong, and peers that lie.
#include "distributed/cluster_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <map>
#include <thread>

#include "distributed/rank_table.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Environment Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

StatusOr<ClusterTask> Resolve(std::string_view name, std::map<std::string, std::string> vars,
                              ClusterResolverOptions options = {}) {
  ASSIGN_OR_RETURN(auto resolver, MakeClusterResolver(name, Env(std::move(vars)), std::move(options)));
  return resolver->Resolve();
}

TEST(TfConfigTest, ReadsTheClusterAndThisTask) {
  StatusOr<ClusterTask> t = ParseTfConfig(
      R"({"cluster": {"ps": ["h:1"], "worker": ["h:2", "h:3"]}, "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "worker");
  EXPECT_EQ(t->task, 1);
  EXPECT_TRUE(t->in_cluster);
  EXPECT_EQ(*t->cluster.TaskAddress(t->job, t->task), "h:3");
  // TensorFlow's default index is 0.
  t = ParseTfConfig(R"({"cluster": {"chief": ["h:1"]}, "task": {"type": "chief"}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->task, 0);
}

TEST(TfConfigTest, KubeflowsTfJobAndItsEvaluator) {
  // What a TFJob's operator gives each pod: the service names of every replica, and
  // "environment": "cloud".
  const std::string cluster =
      R"("cluster": {"chief": ["mnist-chief-0.default.svc:2222"], "worker": ["mnist-worker-0.default.svc:2222",
          "mnist-worker-1.default.svc:2222"], "ps": ["mnist-ps-0.default.svc:2222"]})";
  StatusOr<ClusterTask> t =
      ParseTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": 1}, "environment": "cloud"})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->cluster.TaskAddress(t->job, t->task), "mnist-worker-1.default.svc:2222");
  // The evaluator watches the cluster's checkpoints from outside it.
  t = ParseTfConfig("{" + cluster + R"(, "task": {"type": "evaluator", "index": 0}, "rpc_layer": "grpc"})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->job, "evaluator");
  EXPECT_FALSE(t->in_cluster);
  EXPECT_EQ(t->cluster.num_tasks("worker"), 2);
}

TEST(TfConfigTest, BadTfConfigsSayWhatIsWrong) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"cluster": {"worker": ["h:1"]}, "task": )", "TF_CONFIG"},
      {R"({"cluster": {"worker": ["h:1"]}})", "TF_CONFIG must be {\"cluster\""},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "chief", "index": 0}})",
       "the cluster has no job 'chief'; its jobs are worker"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "evaluator", "index": 1}})",
       "TF_CONFIG names evaluator 1; there is one, 0"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}})",
       "task index 1 is out of range: job 'worker' has 1 task"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}})", "index -1 is out of range"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": "0"}})",
       "TF_CONFIG task must be"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"index": 0}})", "TF_CONFIG task must be"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}, "rpc_layer": "grpc+verbs"})",
       "TF_CONFIG rpc_layer \"grpc+verbs\": Tessera's tasks speak grpc"},
      {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}, "environment": 1})",
       "TF_CONFIG environment must be a string"},
      {R"({"cluster": {"worker": ["bad"]}, "task": {"type": "worker"}})", "TF_CONFIG cluster: job 'worker' task 0"}};
  for (const auto& [text, why] : cases) {
    StatusOr<ClusterTask> t = ParseTfConfig(text);
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << text;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(why)) << text;
  }
}

TEST(SlurmHostlistTest, ExpandsRangesListsAndPadding) {
  EXPECT_THAT(*ExpandSlurmHostlist("n[1-3,7],m5"), ElementsAre("n1", "n2", "n3", "n7", "m5"));
  EXPECT_THAT(*ExpandSlurmHostlist("node[008-011]"), ElementsAre("node008", "node009", "node010", "node011"));
  EXPECT_THAT(*ExpandSlurmHostlist("rack[1-2]-n[1,3]"), ElementsAre("rack1-n1", "rack1-n3", "rack2-n1", "rack2-n3"));
  EXPECT_THAT(*ExpandSlurmHostlist("localhost"), ElementsAre("localhost"));
  EXPECT_THAT(*ExpandSlurmHostlist("a[9-10].cluster.org"), ElementsAre("a9.cluster.org", "a10.cluster.org"));
  EXPECT_EQ(ExpandSlurmHostlist("n[1-65536]")->size(), 65536u);
}

TEST(SlurmHostlistTest, MalformedListsAndHugeOnesAreRefused) {
  const std::vector<std::string> bad_lists = {
      "", "n[1-3", "n1-3]", "n[3-1]", "n[a-b]", "n[1-]", "n[]", "n[[1]]", "a,,b", "n[1,]", "n[1-65537]",
      "n[0-99999999999999999999]", "a[0-300]b[0-300]", "x[1][1][1][1][1][1][1][1][1]",
      std::string(300, 'a') + "[0-65535]"};  // a name longer than DNS allows, before 65536 copies of it
  for (const std::string& bad : bad_lists) {
    StatusOr<std::vector<std::string>> hosts = ExpandSlurmHostlist(bad);
    EXPECT_EQ(hosts.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(hosts.status().message()), HasSubstr("Slurm host list")) << bad;
  }
}

TEST(SlurmTasksPerNodeTest, ExpandsRepeats) {
  EXPECT_THAT(*ExpandSlurmTasksPerNode("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(*ExpandSlurmTasksPerNode("3"), ElementsAre(3));
  for (const char* bad : {"", "0", "2(x0)", "2(x", "2(3)", "-1", "x", "1,,1", "1(x65537)", "70000"}) {
    EXPECT_EQ(ExpandSlurmTasksPerNode(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(JobCountsTest, ParsesAndRefuses) {
  EXPECT_THAT(*ParseJobCounts("ps:1,worker:2"),
              ElementsAre(std::pair<std::string, int>("ps", 1), std::pair<std::string, int>("worker", 2)));
  for (const char* bad : {"", "ps", "ps:0", "ps:x", "Ps:1", "ps:1,ps:2", "ps:1,", "ps:-1"}) {
    EXPECT_EQ(ParseJobCounts(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

// srun -n 4 over two nodes, two tasks each.
std::map<std::string, std::string> SrunStep(int rank) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NODELIST", "gpu[07-08]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
          {"SLURM_STEP_NUM_TASKS", "4"}};
}

TEST(SlurmResolverTest, RanksFillTheJobsInOrderAtConsecutivePortsPerNode) {
  ClusterResolverOptions options;
  options.jobs = {{"worker", 3}, {"ps", 1}};  // filled in name order, as TensorFlow's: the ps first
  options.port_base = 2222;
  std::vector<std::pair<std::string, int>> places;
  for (int rank = 0; rank < 4; ++rank) {
    StatusOr<ClusterTask> t = Resolve("slurm", SrunStep(rank), options);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->cluster.ToJson(),
              R"({"ps":["gpu07:2222"],"worker":["gpu07:2223","gpu08:2222","gpu08:2223"]})");
    places.emplace_back(t->job, t->task);
  }
  EXPECT_THAT(places, ElementsAre(std::pair<std::string, int>("ps", 0), std::pair<std::string, int>("worker", 0),
                                  std::pair<std::string, int>("worker", 1), std::pair<std::string, int>("worker", 2)));
  // No jobs given: every task a worker; the job's variables where the step's are missing.
  StatusOr<ClusterTask> t = Resolve("slurm", {{"SLURM_PROCID", "2"}, {"SLURM_JOB_NODELIST", "localhost"},
                                              {"SLURM_TASKS_PER_NODE", "3"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cluster.ToJson(), R"({"worker":["localhost:8888","localhost:8889","localhost:8890"]})");
  EXPECT_EQ(t->task, 2);
}

TEST(SlurmResolverTest, InconsistentStepsSayWhatIsWrong) {
  ClusterResolverOptions two_jobs;
  two_jobs.jobs = {{"ps", 1}, {"worker", 2}};
  ClusterResolverOptions high_ports;
  high_ports.port_base = 65535;
  auto with = [](std::map<std::string, std::string> vars, const std::string& name, const std::string& value) {
    vars[name] = value;
    return vars;
  };
  std::map<std::string, std::string> no_rank = SrunStep(0);
  no_rank.erase("SLURM_PROCID");
  const std::vector<std::tuple<std::map<std::string, std::string>, ClusterResolverOptions, const char*>> cases = {
      {no_rank, {}, "SLURM_PROCID is not set"},
      {with(SrunStep(0), "SLURM_PROCID", "4"), {}, "SLURM_PROCID '4' is not a rank below the step's 4 tasks"},
      {with(SrunStep(0), "SLURM_PROCID", "-1"), {}, "SLURM_PROCID '-1'"},
      {with(SrunStep(0), "SLURM_STEP_TASKS_PER_NODE", "2"), {}, "names 2 nodes but SLURM_STEP_TASKS_PER_NODE '2'"},
      {with(SrunStep(0), "SLURM_STEP_NUM_TASKS", "5"), {}, "SLURM_STEP_NUM_TASKS is '5'"},
      {with(SrunStep(0), "SLURM_STEP_NODELIST", "gpu[07-08"), {}, "Slurm host list 'gpu[07-08'"},
      {SrunStep(0), two_jobs, "the jobs ps:1,worker:2 want 3 tasks, but srun started 4"},
      {SrunStep(0), high_ports, "ports from 65535 pass 65535"},
      {with(SrunStep(0), "SLURM_STEP_NODELIST", "gpu7,gpu7"), {}, "is used by two tasks"}};
  for (const auto& [vars, options, why] : cases) {
    StatusOr<ClusterTask> t = Resolve("slurm", vars, options);
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << why;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(why));
  }
}

TEST(ClusterResolverTest, AutoFindsTheLauncher) {
  auto named = [](std::map<std::string, std::string> vars) -> std::string {
    auto r = MakeClusterResolver("auto", Env(std::move(vars)));
    return r.ok() ? std::string((*r)->name()) : std::string(r.status().message());
  };
  const std::string tf_config = R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})";
  EXPECT_EQ(named({{"TF_CONFIG", tf_config}, {"SLURM_PROCID", "0"}}), "tf_config");
  EXPECT_EQ(named(SrunStep(0)), "slurm");
  EXPECT_EQ(named({{"TF_CONFIG", ""}, {"SLURM_PROCID", "0"}}), "slurm");
  EXPECT_EQ(named({{"OMPI_COMM_WORLD_RANK", "1"}}), "mpi");
  EXPECT_EQ(named({{"PMI_RANK", "0"}}), "mpi");
  EXPECT_THAT(named({}), HasSubstr("no launcher found: TF_CONFIG (tf_config), SLURM_PROCID"));
  auto r = MakeClusterResolver("kubernetes", Env({}));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("unknown cluster resolver 'kubernetes'"));
  EXPECT_THAT(std::string(Resolve("tf_config", {}).status().message()), HasSubstr("TF_CONFIG is not set"));
}

TEST(ClusterResolverTest, ResolvesFromManyThreadsAtOnce) {
  auto resolver = MakeClusterResolver("slurm", Env(SrunStep(3)));
  ASSERT_TRUE(resolver.ok());
  std::vector<std::thread> threads;
  std::atomic<int> right{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 50; ++j) {
        StatusOr<ClusterTask> t = (*resolver)->Resolve();
        if (t.ok() && t->task == 3) ++right;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(right.load(), 200);
}

std::map<std::string, std::string> MpiRank(int rank, int size, int local) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local)}};
}

// With three ranks, rank 0 the ps; with another count, every rank a worker.
ClusterResolverOptions MpiOptions(int coordinator_port, int port_base, std::chrono::milliseconds timeout,
                                  int ranks = 3) {
  ClusterResolverOptions options;
  if (ranks == 3) options.jobs = {{"worker", 2}, {"ps", 1}};
  options.coordinator = StrCat("127.0.0.1:", coordinator_port);
  options.port_base = port_base;
  options.timeout = timeout;
  return options;
}

// Three ranks on one host, each on a thread: all get one cluster, rank 0 the ps, each at the
// port base plus its local rank.
TEST(MpiResolverTest, RanksLearnEachOthersAddressesThroughRankZero) {
  const int coordinator = testing::FreePort();
  std::vector<std::future<StatusOr<ClusterTask>>> ranks;
  for (int r : {2, 1, 0}) {  // rank 0 last: the others wait for it
    ranks.push_back(std::async(std::launch::async, [&, r] {
      return Resolve("mpi", MpiRank(r, 3, r), MpiOptions(coordinator, 9100, std::chrono::seconds(20)));
    }));
  }
  std::vector<ClusterTask> tasks;
  for (auto& f : ranks) {
    StatusOr<ClusterTask> t = f.get();
    ASSERT_TRUE(t.ok()) << t.status();
    tasks.push_back(*t);
  }
  std::reverse(tasks.begin(), tasks.end());  // by rank
  EXPECT_EQ(tasks[0].job, "ps");
  EXPECT_EQ(tasks[1].job, "worker");
  EXPECT_EQ(tasks[2].task, 1);
  for (const ClusterTask& t : tasks) {
    EXPECT_EQ(t.cluster.ToJson(), R"({"ps":["127.0.0.1:9100"],"worker":["127.0.0.1:9101","127.0.0.1:9102"]})");
  }
  // MPICH's names, one rank: no one to wait for.
  StatusOr<ClusterTask> alone = Resolve("mpi", {{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}},
                                        MpiOptions(coordinator, 9100, std::chrono::seconds(1), 1));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->cluster.ToJson(), R"({"worker":["127.0.0.1:9100"]})");
}

TEST(MpiResolverTest, BadLaunchesSayWhatIsWrong) {
  const auto options = MpiOptions(testing::FreePort(), 9100, std::chrono::milliseconds(300));
  auto message = [&](std::map<std::string, std::string> vars, ClusterResolverOptions o) {
    return std::string(Resolve("mpi", std::move(vars), std::move(o)).status().message());
  };
  EXPECT_THAT(message(MpiRank(3, 3, 0), options), HasSubstr("the rank '3' is not below the launch's 3 ranks"));
  EXPECT_THAT(message(MpiRank(0, 0, 0), options), HasSubstr("size '0'"));
  EXPECT_THAT(message(MpiRank(1, 3, 7), options), HasSubstr("the local rank '7'"));
  EXPECT_THAT(message({{"OMPI_COMM_WORLD_RANK", "0"}}, options), HasSubstr("OMPI_COMM_WORLD_SIZE is not set"));
  ClusterResolverOptions no_coordinator = options;
  no_coordinator.coordinator = "";
  EXPECT_THAT(message(MpiRank(0, 3, 0), no_coordinator), HasSubstr("--coordinator"));
  no_coordinator.coordinator = "nohostport";
  EXPECT_THAT(message(MpiRank(0, 3, 0), no_coordinator), HasSubstr("is not host:port"));
  ClusterResolverOptions same_port = options;
  same_port.port_base = std::stoi(options.coordinator.substr(10));
  EXPECT_THAT(message(MpiRank(0, 3, 0), same_port), HasSubstr("give the coordinator another"));
  ClusterResolverOptions four_jobs = options;
  four_jobs.jobs = {{"worker", 4}};
  EXPECT_THAT(message(MpiRank(0, 3, 0), four_jobs), HasSubstr("want 4 tasks, but the MPI launcher started 3"));
  // Rank 0 without the others, and a rank without rank 0: each gives up at the timeout.
  StatusOr<ClusterTask> lonely = Resolve("mpi", MpiRank(0, 3, 0), options);
  EXPECT_EQ(lonely.status().code(), Code::kDeadlineExceeded);
  EXPECT_THAT(std::string(lonely.status().message()), HasSubstr("rank(s) 1, 2 did not report"));
  StatusOr<ClusterTask> orphan = Resolve("mpi", MpiRank(1, 3, 1), options);
  EXPECT_EQ(orphan.status().code(), Code::kDeadlineExceeded);
  EXPECT_THAT(std::string(orphan.status().message()), HasSubstr("could not be reached"));
}

// A raw connection to rank 0: what it sends, and what it gets back before rank 0 closes it.
std::string Exchange(int port, const std::string& send) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string got;
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!send.empty()) (void)!write(fd, send.data(), send.size());
  shutdown(fd, SHUT_WR);
  char buffer[256];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) got.append(buffer, static_cast<size_t>(n));
  close(fd);
  return got;
}

// Rank 0 answers reports it cannot take with the reason and goes on waiting for the real
// ranks; a rank 0 that lies gets its rank an error, not a wrong table.
TEST(MpiResolverTest, PeersThatLieAreRefused) {
  const int coordinator = testing::FreePort();
  auto rank0 = std::async(std::launch::async, [&] {
    return Resolve("mpi", MpiRank(0, 2, 0), MpiOptions(coordinator, 9100, std::chrono::seconds(20), 2));
  });
  EXPECT_THAT(Exchange(coordinator, "HELLO\n"), HasSubstr("ERROR not a report"));
  EXPECT_THAT(Exchange(coordinator, "RANK 1 5 10.0.0.1 80\n"), HasSubstr("ERROR it counts 5 ranks"));
  EXPECT_THAT(Exchange(coordinator, "RANK 0 2 10.0.0.1 80\n"), HasSubstr("ERROR rank 0 is not one of 1 to 1"));
  EXPECT_THAT(Exchange(coordinator, "RANK 1 2 10.0.0.1 99999\n"), HasSubstr("port 99999"));
  EXPECT_THAT(Exchange(coordinator, std::string(4096, 'x')), HasSubstr("a line too long"));
  EXPECT_THAT(Exchange(coordinator, "RANK 1"), HasSubstr("closed before a report"));
  StatusOr<ClusterTask> rank1 =
      Resolve("mpi", MpiRank(1, 2, 1), MpiOptions(coordinator, 9100, std::chrono::seconds(20), 2));
  ASSERT_TRUE(rank1.ok()) << rank1.status();
  ASSERT_TRUE(rank0.get().ok());
  EXPECT_EQ(*rank1->cluster.TaskAddress("worker", 1), "127.0.0.1:9101");

  // A fake rank 0 answering rank 1 with an endless or short table.
  for (const std::string& lie : {std::string("TABLE\n") + std::string(1 << 20, 'a'), std::string("TABLE\nh:1\nEND\n"),
                                 std::string("ERROR go away\n")}) {
    const int fake_port = testing::FreePort();
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    const int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(fake_port));
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener, 1), 0);
    std::thread fake([&] {
      const int fd = accept(listener, nullptr, nullptr);
      char buffer[256];
      (void)!read(fd, buffer, sizeof buffer);
      (void)!send(fd, lie.data(), lie.size(), MSG_NOSIGNAL);
      close(fd);
    });
    StatusOr<std::vector<std::string>> table =
        ExchangeRankAddresses(1, 3, StrCat("127.0.0.1:", fake_port), 9101, std::chrono::seconds(20));
    fake.join();
    close(listener);
    EXPECT_EQ(table.status().code(), Code::kInvalidArgument) << lie.substr(0, 20);
    EXPECT_THAT(std::string(table.status().message()), HasSubstr(lie[0] == 'E' ? "refused rank 1's report: go away"
                                                                               : "with no table of 3 addresses"));
  }
}

}  // namespace
}  // namespace tessera
