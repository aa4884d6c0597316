// examples/kubernetes: what each pod of the StatefulSet (TF_CONFIG from its ordinal, by
// tf_config.sh) and of the TFJob (TF_CONFIG as Kubeflow's operator writes it) would get,
// rendered here without a cluster, resolves to one valid cluster with each pod a different
// task; the manifests agree with themselves (names, replicas, ports) and start tessera with
// the tf_config resolver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "distributed/cluster_resolver.h"
#include "tests/tools/run_command.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::RunCommand;

const std::string kDir = TESSERA_SOURCE_DIR "/examples/kubernetes/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first capture of `pattern` in `text` after `after` (a line that starts the part of
// the manifest to look in); empty when there is none.
std::string Find(const std::string& text, const std::string& pattern, const std::string& after = "") {
  const size_t start = after.empty() ? 0 : text.find(after);
  if (start == std::string::npos) return "";
  std::smatch m;
  const std::string rest = text.substr(start);
  return std::regex_search(rest, m, std::regex(pattern)) ? m[1].str() : "";
}

// Every pod's task is its own, and all see one cluster.
void ExpectOneCluster(const std::vector<ClusterTask>& pods, int replicas) {
  ASSERT_EQ(static_cast<int>(pods.size()), replicas);
  std::set<int> tasks;
  for (const ClusterTask& pod : pods) {
    EXPECT_EQ(pod.job, "worker");
    EXPECT_EQ(pod.cluster.ToJson(), pods[0].cluster.ToJson());
    EXPECT_EQ(pod.cluster.num_tasks("worker"), replicas);
    tasks.insert(pod.task);
  }
  EXPECT_EQ(static_cast<int>(tasks.size()), replicas);
}

TEST(KubernetesExamplesTest, StatefulSetPodsDeriveOneClusterFromTheirOrdinals) {
  const std::string yaml = ReadFile(kDir + "statefulset.yaml");
  const std::string service = Find(yaml, R"(name: (\S+))", "kind: Service");
  const std::string statefulset = Find(yaml, R"(name: (\S+))", "kind: StatefulSet");
  const int replicas = std::stoi(Find(yaml, R"(replicas: (\d+))"));
  const std::string port = Find(yaml, R"(port: (\d+))", "kind: Service");
  EXPECT_EQ(Find(yaml, R"(serviceName: (\S+))"), service);
  EXPECT_EQ(Find(yaml, R"(containerPort: (\d+))"), port);
  // tf_config.sh's variables, as the manifest sets them.
  EXPECT_EQ(Find(yaml, R"(name: STATEFULSET\s+value: (\S+))"), statefulset);
  EXPECT_EQ(Find(yaml, R"(name: SERVICE\s+value: (\S+))"), service);
  EXPECT_EQ(Find(yaml, R"(name: REPLICAS\s+value: \"(\d+)\")"), std::to_string(replicas));
  EXPECT_EQ(Find(yaml, R"(name: PORT\s+value: \"(\d+)\")"), port);
  EXPECT_THAT(yaml, HasSubstr(R"("--resolver", "tf_config")"));

  const std::string env = StrCat("env -i STATEFULSET=", statefulset, " SERVICE=", service,
                                 " NAMESPACE=research REPLICAS=", replicas, " PORT=", port, " ");
  std::vector<ClusterTask> pods;
  for (int ordinal = 0; ordinal < replicas; ++ordinal) {
    const auto [tf_config, status] = RunCommand(StrCat(env, "HOSTNAME=", statefulset, "-", ordinal, " sh ", kDir,
                                                       "tf_config.sh printenv TF_CONFIG"));
    ASSERT_EQ(status, 0) << tf_config;
    StatusOr<ClusterTask> pod = ParseTfConfig(tf_config);
    ASSERT_TRUE(pod.ok()) << pod.status() << "\n" << tf_config;
    EXPECT_EQ(pod->task, ordinal);
    EXPECT_EQ(*pod->cluster.TaskAddress("worker", ordinal),
              StrCat(statefulset, "-", ordinal, ".", service, ".research.svc.cluster.local:", port));
    pods.push_back(*pod);
  }
  ExpectOneCluster(pods, replicas);

  // Pods the script cannot place say so rather than join as a wrong task.
  for (const std::string& name : {StrCat(statefulset, "-", replicas), StrCat("other-0"), StrCat(statefulset, "-x")}) {
    const auto [out, status] = RunCommand(StrCat(env, "HOSTNAME=", name, " sh ", kDir, "tf_config.sh true"));
    EXPECT_NE(status, 0) << name;
    EXPECT_THAT(out, HasSubstr("tf_config.sh: pod")) << name;
  }
}

TEST(KubernetesExamplesTest, TfJobReplicasGetTheOperatorsTfConfig) {
  const std::string yaml = ReadFile(kDir + "tfjob.yaml");
  const std::string name = Find(yaml, R"(name: (\S+))", "kind: TFJob");
  const int replicas = std::stoi(Find(yaml, R"(replicas: (\d+))", "Worker:"));
  const std::string port = Find(yaml, R"(containerPort: (\d+))");
  EXPECT_EQ(Find(yaml, R"(- name: (\S+))", "containers:"), "tensorflow");  // the container the operator configures
  EXPECT_EQ(port, "2222");                                                   // the operator's default port
  EXPECT_THAT(yaml, HasSubstr(R"("--resolver", "tf_config")"));
  // What Kubeflow's training operator writes in each replica: a Service per pod, named
  // NAME-worker-I, in the job's namespace.
  std::vector<ClusterTask> pods;
  for (int index = 0; index < replicas; ++index) {
    std::string workers;
    for (int i = 0; i < replicas; ++i) {
      workers += StrCat(i ? ", " : "", "\"", name, "-worker-", i, ".research.svc:", port, "\"");
    }
    StatusOr<ClusterTask> pod = ParseTfConfig(StrCat(R"({"cluster": {"worker": [)", workers,
                                                     R"(]}, "task": {"type": "worker", "index": )", index,
                                                     R"(}, "environment": "cloud"})"));
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->task, index);
    pods.push_back(*pod);
  }
  ExpectOneCluster(pods, replicas);
}

}  // namespace
}  // namespace tessera
