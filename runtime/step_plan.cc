#include "runtime/step_plan.h"

namespace tessera {

StatusOr<StepPlan> BuildStepPlan(const Graph& placed, const std::vector<PlacementRecord>& placement,
                                 const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                                 const std::vector<std::string>& targets, const StepPlanOptions& options) {
  ASSIGN_OR_RETURN(Subgraph sub, BuildSubgraph(placed, feeds, fetches, targets));
  StepPlan plan;
  plan.feeds = std::move(sub.feeds);
  plan.fetches = std::move(sub.fetches);
  for (const Node* n : sub.graph->nodes()) {
    const Node* orig = placed.FindNode(n->name());
    plan.placement.push_back(orig != nullptr ? placement[orig->id()]
                                             : PlacementRecord{n->name(), n->op(), n->assigned_device(),
                                                               PlacementReason::kColocated, "feed or fetch of the step"});
  }
  ASSIGN_OR_RETURN(sub.graph, RewriteStepGraph(std::move(sub.graph), options.rewrites));
  PartitionOptions partition_options;
  partition_options.incarnation = options.incarnation;
  partition_options.host = options.host;
  partition_options.collective_timeout = options.collective_timeout;
  ASSIGN_OR_RETURN(plan.partitions, Partition(*sub.graph, partition_options));
  return plan;
}

}  // namespace tessera
