#include "planner/batch/plan_backend.h"

#include <optional>

#include "util/check.h"

namespace specplan::planner {

absl::Status InProcessPlanBackend::PlanBestFirst(const Marginals& marginals,
                                                 const BestFirstOptions& options,
                                                 const PlanCost* cost, BestFirstPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  std::optional<costmodel::CycleCost> cycle;
  if (cost != nullptr) {
    SPECPLAN_CHECK(cost->latency != nullptr, "PlanCost::latency is required");
    cycle.emplace(cost->latency, cost->drafter, cost->t_aux_s, cost->context);
  }
  return best_first_.Plan(marginals, options, cycle ? &*cycle : nullptr, plan);
}

absl::Status InProcessPlanBackend::Merge(const Tree& a, const Tree& b, const MergeOptions& options,
                                         MergedTree* out) {
  SPECPLAN_CHECK(out != nullptr);
  return MergeTrees(a, b, options, &merge_ws_, out);
}

absl::Status InProcessPlanBackend::PlanBatch(const std::vector<BatchRequest>& requests,
                                             const BatchPlanOptions& options,
                                             const BatchPlanCost* cost, BatchPlan* plan) {
  SPECPLAN_CHECK(plan != nullptr);
  std::optional<costmodel::BatchCycleCost> cycle;
  if (cost != nullptr) {
    SPECPLAN_CHECK(cost->latency != nullptr, "BatchPlanCost::latency is required");
    cycle.emplace(cost->latency, cost->drafter, cost->t_aux_s);
  }
  return batch_.Plan(requests, options, cycle ? &*cycle : nullptr, plan);
}

}  // namespace specplan::planner
