// ClusterSpec: the tasks of a cluster by job, as tf.train.ClusterSpec. (A task learns its
// cluster from TF_CONFIG or its launcher through distributed/cluster_resolver.h.)
//
//   auto cluster = ClusterSpec::FromJson(R"({"ps": ["127.0.0.1:2222"],
//                                            "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]})");
//   cluster->TaskAddress("worker", 1);            // "127.0.0.1:2224"
//
// Values are immutable after parsing; every method may be called concurrently.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/platform/status.h"

namespace tessera {

class ClusterSpec {
 public:
  // {"job": ["host:port", ...], ...}. InvalidArgument, saying what is wrong, for malformed
  // JSON, a job name TensorFlow would refuse ([a-z][a-z0-9_]*), a job without tasks, an
  // address that is not host:port with a port in 1..65535, or an address used twice.
  static StatusOr<ClusterSpec> FromJson(std::string_view text);
  // The same from parsed JSON; `what` names it in errors ("TF_CONFIG cluster").
  static StatusOr<ClusterSpec> FromJsonValue(const nlohmann::json& j, std::string_view what);

  // Jobs in name order, each with its tasks' addresses in task order.
  const std::map<std::string, std::vector<std::string>>& jobs() const { return jobs_; }
  // The address of `job`'s task `task`; InvalidArgument naming the cluster's jobs or the
  // job's task count otherwise.
  StatusOr<std::string> TaskAddress(std::string_view job, int task) const;
  int num_tasks(std::string_view job) const;
  // The host part of that address ("127.0.0.1", "[::1]"); "" for a task the cluster lacks.
  std::string TaskHost(std::string_view job, int task) const;
  // Back to JSON, in the form FromJson reads.
  std::string ToJson() const;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

// A task's full name, "/job:worker/replica:0/task:1": the prefix of its devices' names.
std::string TaskName(std::string_view job, int task);

// A job name TensorFlow accepts: [a-z][a-z0-9_]*.
bool IsValidJobName(std::string_view name);

}  // namespace tessera
