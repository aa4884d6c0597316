#include "distributed/cluster_resolver.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "distributed/rank_table.h"
#include "graph/platform/json_util.h"

namespace tessera {
namespace {

using json = nlohmann::json;

// More hosts or tasks than any cluster Tessera runs; a bound for what a variable may ask.
constexpr int64_t kMaxTasks = 65536;
// Bracketed parts in one host name ("rack[1-4]-n[1-32]" has 2); each is a level of recursion.
constexpr int kMaxBracketsPerName = 8;
// DNS's limit on a name: with kMaxTasks, what bounds the memory a host list may ask for.
constexpr size_t kMaxHostName = 253;

// A whole decimal number in [0, limit]; nullopt otherwise.
std::optional<int64_t> ParseCount(std::string_view text, int64_t limit) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 || value > limit) {
    return std::nullopt;
  }
  return value;
}

// Splits on commas outside brackets.
std::vector<std::string_view> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

Status BadHostlist(std::string_view hostlist, std::string_view why) {
  return errors::InvalidArgument("Slurm host list '", hostlist, "': ", why);
}

// Appends the hosts of one name ("n[1-3]x[5,7]") to `hosts`, each `prefix` + its expansion.
Status ExpandHost(std::string_view hostlist, const std::string& prefix, std::string_view name,
                  std::vector<std::string>* hosts, int depth = 0) {
  const size_t open = name.find('[');
  if (open != std::string_view::npos && depth == kMaxBracketsPerName) {
    return BadHostlist(hostlist, StrCat("a name with more than ", kMaxBracketsPerName, " bracketed parts"));
  }
  if (prefix.size() + std::min(name.size(), open) > kMaxHostName) {
    return BadHostlist(hostlist, StrCat("a host name longer than ", kMaxHostName, " characters"));
  }
  if (open == std::string_view::npos) {
    if (name.find(']') != std::string_view::npos) return BadHostlist(hostlist, "a ']' without its '['");
    if (hosts->size() >= static_cast<size_t>(kMaxTasks)) return BadHostlist(hostlist, "more than 65536 hosts");
    hosts->push_back(prefix + std::string(name));
    return Status::OK();
  }
  const size_t close = name.find(']', open);
  if (close == std::string_view::npos) return BadHostlist(hostlist, "a '[' without its ']'");
  const std::string head = prefix + std::string(name.substr(0, open));
  const std::string_view ranges = name.substr(open + 1, close - open - 1);
  const std::string_view rest = name.substr(close + 1);
  if (ranges.find('[') != std::string_view::npos) return BadHostlist(hostlist, "nested brackets");
  size_t start = 0;
  while (start <= ranges.size()) {
    const size_t comma = std::min(ranges.find(',', start), ranges.size());
    const std::string_view range = ranges.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string_view low_text = range.substr(0, dash);
    const std::string_view high_text = dash == std::string_view::npos ? low_text : range.substr(dash + 1);
    // 18 digits: no sum below overflows.
    const std::optional<int64_t> low = low_text.size() > 18 ? std::nullopt : ParseCount(low_text, INT64_MAX);
    const std::optional<int64_t> high = high_text.size() > 18 ? std::nullopt : ParseCount(high_text, INT64_MAX);
    if (!low || !high || *high < *low) {
      return BadHostlist(hostlist, StrCat("'", range, "' is not a number or a range low-high"));
    }
    if (*high - *low >= kMaxTasks) return BadHostlist(hostlist, "more than 65536 hosts");
    for (int64_t n = *low; n <= *high; ++n) {
      std::string number = std::to_string(n);
      if (number.size() < low_text.size()) number.insert(0, low_text.size() - number.size(), '0');
      RETURN_IF_ERROR(ExpandHost(hostlist, head + number, rest, hosts, depth + 1));
    }
    start = comma + 1;
  }
  return Status::OK();
}

// The rank-ordered (job, index) of each of `tasks` tasks filling `jobs` in order.
StatusOr<std::vector<std::pair<std::string, int>>> TasksByRank(const std::vector<std::pair<std::string, int>>& jobs,
                                                               int64_t tasks, std::string_view launcher) {
  std::vector<std::pair<std::string, int>> by_rank;
  if (jobs.empty()) {
    for (int i = 0; i < tasks; ++i) by_rank.emplace_back("worker", i);
    return by_rank;
  }
  int64_t wanted = 0;
  std::string listed;
  for (const auto& [job, count] : jobs) {
    wanted += count;
    listed += StrCat(listed.empty() ? "" : ",", job, ":", count);
  }
  if (wanted != tasks) {
    return errors::InvalidArgument("the jobs ", listed, " want ", wanted, " tasks, but ", launcher, " started ", tasks);
  }
  // Ranks fill the jobs in the order of their names, as TensorFlow's resolver has it (ps
  // before worker whatever order --jobs gives them in).
  std::vector<std::pair<std::string, int>> sorted = jobs;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [job, count] : sorted) {
    for (int i = 0; i < count; ++i) by_rank.emplace_back(job, i);
  }
  return by_rank;
}

StatusOr<std::string> Required(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<std::string> value = env(name); value && !value->empty()) return *value;
  }
  return errors::InvalidArgument(*names.begin(), " is not set");
}

class TfConfigResolver final : public ClusterResolver {
 public:
  explicit TfConfigResolver(Environment env) : env_(std::move(env)) {}
  std::string_view name() const override { return "tf_config"; }
  StatusOr<ClusterTask> Resolve() const override {
    ASSIGN_OR_RETURN(std::string text, Required(env_, {"TF_CONFIG"}));
    return ParseTfConfig(text);
  }

 private:
  const Environment env_;
};

class SlurmResolver final : public ClusterResolver {
 public:
  SlurmResolver(Environment env, ClusterResolverOptions options) : env_(std::move(env)), options_(std::move(options)) {}
  std::string_view name() const override { return "slurm"; }

  StatusOr<ClusterTask> Resolve() const override {
    ASSIGN_OR_RETURN(std::string rank_text, Required(env_, {"SLURM_PROCID"}));
    ASSIGN_OR_RETURN(std::string nodelist, Required(env_, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}));
    ASSIGN_OR_RETURN(std::string per_node_text,
                     Required(env_, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}));
    ASSIGN_OR_RETURN(std::vector<std::string> nodes, ExpandSlurmHostlist(nodelist));
    ASSIGN_OR_RETURN(std::vector<int> per_node, ExpandSlurmTasksPerNode(per_node_text));
    if (nodes.size() != per_node.size()) {
      return errors::InvalidArgument("SLURM_STEP_NODELIST names ", nodes.size(), " nodes but SLURM_STEP_TASKS_PER_NODE '",
                                     per_node_text, "' counts tasks on ", per_node.size());
    }
    // Ranks go to the nodes in order, each node's tasks at consecutive ports (srun's block
    // distribution, which TensorFlow's resolver assumes too).
    std::vector<std::string> addresses;
    for (size_t n = 0; n < nodes.size(); ++n) {
      for (int i = 0; i < per_node[n]; ++i) {
        if (options_.port_base + i > 65535) {
          return errors::InvalidArgument("node ", nodes[n], " runs ", per_node[n], " tasks: ports from ",
                                         options_.port_base, " pass 65535");
        }
        if (addresses.size() == static_cast<size_t>(kMaxTasks)) {
          return errors::InvalidArgument("SLURM_STEP_TASKS_PER_NODE '", per_node_text, "' counts more than 65536 tasks");
        }
        addresses.push_back(StrCat(nodes[n], ":", options_.port_base + i));
      }
    }
    if (std::optional<std::string> total = env_("SLURM_STEP_NUM_TASKS"); total && !total->empty()) {
      if (ParseCount(*total, kMaxTasks) != static_cast<int64_t>(addresses.size())) {
        return errors::InvalidArgument("SLURM_STEP_NUM_TASKS is '", *total, "' but SLURM_STEP_TASKS_PER_NODE '",
                                       per_node_text, "' counts ", addresses.size(), " tasks");
      }
    }
    const std::optional<int64_t> rank = ParseCount(rank_text, kMaxTasks);
    if (!rank || *rank >= static_cast<int64_t>(addresses.size())) {
      return errors::InvalidArgument("SLURM_PROCID '", rank_text, "' is not a rank below the step's ",
                                     addresses.size(), " tasks");
    }
    ASSIGN_OR_RETURN(auto by_rank, TasksByRank(options_.jobs, static_cast<int64_t>(addresses.size()), "srun"));
    json cluster = json::object();
    for (size_t r = 0; r < addresses.size(); ++r) cluster[by_rank[r].first].push_back(addresses[r]);
    ClusterTask out;
    ASSIGN_OR_RETURN(out.cluster, ClusterSpec::FromJsonValue(cluster, "the Slurm step's cluster"));
    out.job = by_rank[*rank].first;
    out.task = by_rank[*rank].second;
    return out;
  }

 private:
  const Environment env_;
  const ClusterResolverOptions options_;
};

class MpiResolver final : public ClusterResolver {
 public:
  MpiResolver(Environment env, ClusterResolverOptions options) : env_(std::move(env)), options_(std::move(options)) {}
  std::string_view name() const override { return "mpi"; }

  StatusOr<ClusterTask> Resolve() const override {
    ASSIGN_OR_RETURN(std::string rank_text, Required(env_, {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}));
    ASSIGN_OR_RETURN(std::string size_text, Required(env_, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}));
    std::string local_text = "0";
    if (StatusOr<std::string> local = Required(env_, {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}); local.ok()) {
      local_text = *local;
    }
    const std::optional<int64_t> size = ParseCount(size_text, kMaxTasks);
    if (!size || *size == 0) return errors::InvalidArgument("the launch's size '", size_text, "' is not 1 to 65536");
    const std::optional<int64_t> rank = ParseCount(rank_text, *size - 1);
    if (!rank) return errors::InvalidArgument("the rank '", rank_text, "' is not below the launch's ", *size, " ranks");
    const std::optional<int64_t> local = ParseCount(local_text, *size - 1);
    if (!local) return errors::InvalidArgument("the local rank '", local_text, "' is not below ", *size);
    if (options_.port_base + *local > 65535) {
      return errors::InvalidArgument("local rank ", *local, " serves at ", options_.port_base, " + ", *local,
                                     ", past port 65535");
    }
    if (options_.coordinator.empty()) {
      return errors::InvalidArgument("the mpi resolver needs rank 0's address for the address table (--coordinator "
                                     "host:port)");
    }
    ASSIGN_OR_RETURN(auto by_rank, TasksByRank(options_.jobs, *size, "the MPI launcher"));
    ASSIGN_OR_RETURN(std::vector<std::string> addresses,
                     ExchangeRankAddresses(static_cast<int>(*rank), static_cast<int>(*size), options_.coordinator,
                                           options_.port_base + static_cast<int>(*local), options_.timeout));
    json cluster = json::object();
    for (size_t r = 0; r < addresses.size(); ++r) cluster[by_rank[r].first].push_back(addresses[r]);
    ClusterTask out;
    ASSIGN_OR_RETURN(out.cluster, ClusterSpec::FromJsonValue(cluster, "the MPI launch's cluster"));
    out.job = by_rank[static_cast<size_t>(*rank)].first;
    out.task = by_rank[static_cast<size_t>(*rank)].second;
    return out;
  }

 private:
  const Environment env_;
  const ClusterResolverOptions options_;
};

}  // namespace

Environment ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

StatusOr<std::unique_ptr<ClusterResolver>> MakeClusterResolver(std::string_view name, Environment env,
                                                               ClusterResolverOptions options) {
  if (name == "auto") {
    const auto set = [&env](const char* variable) {
      std::optional<std::string> value = env(variable);
      return value && !value->empty();
    };
    if (set("TF_CONFIG")) {
      name = "tf_config";
    } else if (set("SLURM_PROCID")) {
      name = "slurm";
    } else if (set("OMPI_COMM_WORLD_RANK") || set("PMI_RANK")) {
      name = "mpi";
    } else {
      return errors::InvalidArgument(
          "no launcher found: TF_CONFIG (tf_config), SLURM_PROCID (slurm, as srun sets it) and "
          "OMPI_COMM_WORLD_RANK or PMI_RANK (mpi, as mpirun sets them) are not set");
    }
  }
  if (name == "tf_config") return std::unique_ptr<ClusterResolver>(new TfConfigResolver(std::move(env)));
  if (name == "slurm") return std::unique_ptr<ClusterResolver>(new SlurmResolver(std::move(env), std::move(options)));
  if (name == "mpi") return std::unique_ptr<ClusterResolver>(new MpiResolver(std::move(env), std::move(options)));
  return errors::InvalidArgument("unknown cluster resolver '", name, "': auto, tf_config, slurm or mpi");
}

StatusOr<ClusterTask> ParseTfConfig(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseJson(text, "TF_CONFIG"));
  if (!j.is_object() || !j.contains("cluster") || !j.contains("task")) {
    return errors::InvalidArgument(
        "TF_CONFIG must be {\"cluster\": {...}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  }
  ClusterTask out;
  ASSIGN_OR_RETURN(out.cluster, ClusterSpec::FromJsonValue(j["cluster"], "TF_CONFIG cluster"));
  const json& task = j["task"];
  if (!task.is_object() || !task.contains("type") || !task["type"].is_string() ||
      (task.contains("index") && !task["index"].is_number_integer())) {
    return errors::InvalidArgument("TF_CONFIG task must be {\"type\": \"worker\", \"index\": 0}");
  }
  // Kubeflow's TFJob adds "environment": "cloud"; neither it nor the rpc layer change what a
  // task is, but a layer Tessera does not speak is refused rather than ignored.
  if (j.contains("environment") && !j["environment"].is_string()) {
    return errors::InvalidArgument("TF_CONFIG environment must be a string such as \"cloud\"");
  }
  if (j.contains("rpc_layer") && j["rpc_layer"] != "grpc") {
    return errors::InvalidArgument("TF_CONFIG rpc_layer ", j["rpc_layer"].dump(), ": Tessera's tasks speak grpc");
  }
  out.job = task["type"].get<std::string>();
  const int64_t index = task.value("index", int64_t{0});
  if (index < 0 || index > std::numeric_limits<int>::max()) {
    return errors::InvalidArgument("TF_CONFIG task index ", index, " is out of range");
  }
  out.task = static_cast<int>(index);
  // The evaluator of multi-worker training is not one of the cluster's tasks.
  if (out.job == "evaluator" && out.cluster.num_tasks("evaluator") == 0) {
    if (out.task != 0) return errors::InvalidArgument("TF_CONFIG names evaluator ", out.task, "; there is one, 0");
    out.in_cluster = false;
    return out;
  }
  RETURN_IF_ERROR(out.cluster.TaskAddress(out.job, out.task).status());
  return out;
}

StatusOr<std::vector<std::string>> ExpandSlurmHostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  for (std::string_view name : SplitTopLevel(hostlist)) {
    if (name.empty()) return BadHostlist(hostlist, "an empty name");
    RETURN_IF_ERROR(ExpandHost(hostlist, "", name, &hosts));
  }
  return hosts;
}

StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(std::string_view counts) {
  std::vector<int> out;
  for (std::string_view item : SplitTopLevel(counts)) {
    const size_t paren = item.find("(x");
    const std::optional<int64_t> count = ParseCount(item.substr(0, paren), kMaxTasks);
    std::optional<int64_t> repeat = 1;
    if (paren != std::string_view::npos) {
      repeat = item.back() == ')' ? ParseCount(item.substr(paren + 2, item.size() - paren - 3), kMaxTasks)
                                  : std::nullopt;
    }
    if (!count || *count == 0 || !repeat || *repeat == 0) {
      return errors::InvalidArgument("Slurm tasks per node '", counts, "': '", item,
                                     "' is not a count N or N(xM) with N and M from 1 to 65536");
    }
    if (static_cast<int64_t>(out.size()) + *repeat > kMaxTasks) {
      return errors::InvalidArgument("Slurm tasks per node '", counts, "' counts more than 65536 nodes");
    }
    out.insert(out.end(), static_cast<size_t>(*repeat), static_cast<int>(*count));
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, int>>> ParseJobCounts(std::string_view text) {
  std::vector<std::pair<std::string, int>> jobs;
  for (std::string_view item : SplitTopLevel(text)) {
    const size_t colon = item.find(':');
    const std::string_view job = item.substr(0, colon);
    const int64_t count =
        colon == std::string_view::npos ? 0 : ParseCount(item.substr(colon + 1), kMaxTasks).value_or(0);
    if (!IsValidJobName(job) || count == 0) {
      return errors::InvalidArgument("jobs '", text, "': '", item,
                                     "' is not job:count, a job name [a-z][a-z0-9_]* and a count from 1 to 65536");
    }
    for (const auto& [seen, n] : jobs) {
      if (seen == job) return errors::InvalidArgument("jobs '", text, "' name job '", job, "' twice");
    }
    jobs.emplace_back(std::string(job), static_cast<int>(count));
  }
  return jobs;
}

}  // namespace tessera
