#include "runtime/strategies/lookup.h"

#include "planner/tree/tree_ops.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::Status LookupStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  if (!NgramMarginals(state.committed, vocab_, ngram_, &marginals_)) {
    tree->ResetRoot(state.committed.back());
    return absl::OkStatus();
  }
  planner::BestFirstOptions options;
  options.mode = planner::BudgetMode::kFixed;
  options.n_max = budget_;
  SPECPLAN_RETURN_IF_ERROR(backend_->PlanBestFirst(marginals_, options, nullptr, &plan_));
  *tree = plan_.tree;
  planner::DropZeroProbabilityNodes(tree);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
