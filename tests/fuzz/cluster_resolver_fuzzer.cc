// Feeds arbitrary text to what reads a launcher's variables: TF_CONFIG, Slurm's host lists
// and task counts, --jobs, and a whole srun step's variables (the input's lines: rank, node
// list, tasks per node, jobs). Nothing may crash, hang or trip a sanitizer, and what a
// resolver accepts must name its own task in its cluster.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "distributed/cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ParseTfConfig(text);
  (void)ExpandSlurmHostlist(text);
  (void)ExpandSlurmTasksPerNode(text);
  (void)ParseJobCounts(text);

  std::istringstream lines(text);
  std::string rank, nodes, per_node, jobs;
  std::getline(lines, rank);
  std::getline(lines, nodes);
  std::getline(lines, per_node);
  std::getline(lines, jobs);
  const std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", rank}, {"SLURM_STEP_NODELIST", nodes}, {"SLURM_STEP_TASKS_PER_NODE", per_node}};
  ClusterResolverOptions options;
  if (auto parsed = ParseJobCounts(jobs); parsed.ok()) options.jobs = *parsed;
  auto resolver = MakeClusterResolver("slurm",
                                      [&vars](const std::string& name) -> std::optional<std::string> {
                                        auto it = vars.find(name);
                                        if (it == vars.end()) return std::nullopt;
                                        return it->second;
                                      },
                                      options);
  if (!resolver.ok()) std::abort();
  StatusOr<ClusterTask> task = (*resolver)->Resolve();
  if (task.ok() && !task->cluster.TaskAddress(task->job, task->task).ok()) std::abort();
  return 0;
}
