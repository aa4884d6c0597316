// Cluster resolvers: a task learns its cluster and its own place in it from what launched
// it, as TensorFlow's cluster resolvers have it, instead of a cluster spec typed per task.
//
//   tf_config  TF_CONFIG, TensorFlow's and Kubeflow TFJob's: {"cluster": {...}, "task":
//              {"type": "worker", "index": 0}, "environment": "cloud", "rpc_layer": "grpc"};
//              an "evaluator" task runs beside the cluster, outside it.
//   slurm      srun's SLURM_PROCID, SLURM_STEP_NODELIST ("n[1-3,7],m5") and
//              SLURM_STEP_TASKS_PER_NODE ("2(x3),1"): each task at its node's name and a port
//              base plus its index among the node's tasks, the jobs (in name order) filled by
//              rank, as TensorFlow's SlurmClusterResolver does. The nodes keep srun's order,
//              where TensorFlow's sorts their names: srun places ranks in its order, and
//              sorting gives a rank another node's address where names sort otherwise
//              ("n10" before "n9").
//   mpi        mpirun's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK, or a PMI launcher's PMI_RANK and
//              PMI_SIZE (MPI_LOCALRANKID): each rank serves at a port base plus its index among
//              its node's ranks and reports that address to rank 0 at the coordinator the
//              command line names, which answers with the whole table (rank_table.h); the jobs
//              are filled by rank as for slurm. Resolve waits for the other ranks, up to the
//              timeout.
//
//   ClusterResolverOptions options;
//   options.jobs = {{"worker", 2}, {"ps", 1}};  // rank 0 the ps, ranks 1 and 2 the workers
//   ASSIGN_OR_RETURN(auto resolver, MakeClusterResolver("auto", ProcessEnvironment(), options));
//   ASSIGN_OR_RETURN(ClusterTask me, resolver->Resolve());
//
// A resolver is immutable once made: Resolve may be called concurrently. ProcessEnvironment
// reads the environment as Resolve runs, which must not race with setenv.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distributed/cluster_spec.h"
#include "graph/platform/status.h"

namespace tessera {

// An environment's variables by name: the process's, or a test's.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment ProcessEnvironment();

// A task's cluster and its place in it.
struct ClusterTask {
  ClusterSpec cluster;
  std::string job;
  int task = 0;
  // False for TF_CONFIG's evaluator, which reads the cluster's checkpoints and serves nothing.
  bool in_cluster = true;
};

struct ClusterResolverOptions {
  // For resolvers that number tasks by rank (slurm, mpi): the jobs the ranks fill, in the
  // order of their names. Empty: every task a worker.
  std::vector<std::pair<std::string, int>> jobs;
  // slurm, mpi: a task's port is this plus its index among its node's tasks (TensorFlow's 8888).
  int port_base = 8888;
  // mpi: rank 0's "host:port" for the address table (not a port any task serves on), and how
  // long a rank waits for the others.
  std::string coordinator;
  std::chrono::milliseconds timeout{60000};
};

class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;
  // "tf_config", "slurm", "mpi".
  virtual std::string_view name() const = 0;
  // InvalidArgument naming the variable and what is wrong with it.
  virtual StatusOr<ClusterTask> Resolve() const = 0;
};

// The resolver `name` names, or with "auto" the first whose variables `env` has, in the
// order above. InvalidArgument for another name, or for "auto" where none has its variables.
StatusOr<std::unique_ptr<ClusterResolver>> MakeClusterResolver(std::string_view name, Environment env,
                                                               ClusterResolverOptions options = {});

// TF_CONFIG's text, as the tf_config resolver reads it. InvalidArgument for malformed JSON, a
// bad cluster, a task type the cluster does not have (but "evaluator"), an index out of
// range, or an rpc_layer other than grpc.
StatusOr<ClusterTask> ParseTfConfig(std::string_view text);

// Slurm's compressed host lists: "n[1-3,07-08],m5" is n1, n2, n3, n07, n08, m5 (a range's
// numbers as wide as its first); a name may hold several bracketed parts. InvalidArgument for
// a malformed list, or one of more than 65536 hosts.
StatusOr<std::vector<std::string>> ExpandSlurmHostlist(std::string_view hostlist);
// Slurm's task counts per node: "2(x3),1" is 2, 2, 2, 1. The same limits.
StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(std::string_view counts);
// "ps:1,worker:2", as a command line gives ClusterResolverOptions::jobs.
StatusOr<std::vector<std::pair<std::string, int>>> ParseJobCounts(std::string_view text);

}  // namespace tessera
