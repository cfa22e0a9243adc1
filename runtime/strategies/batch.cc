#include "runtime/strategies/batch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::runtime {

BatchStepPlanner::BatchStepPlanner(const StrategyOptions& options,
                                   const costmodel::LatencyModel* latency,
                                   planner::PlanBackend* backend)
    : cap_(std::min(options.bestfirst.n_max, options.max_tree_nodes)),
      batch_budget_(options.batch_budget),
      latency_(latency),
      backend_(backend) {
  SPECPLAN_CHECK(latency != nullptr && backend != nullptr);
  options_.mode = options.bestfirst.mode;
}

absl::Status BatchStepPlanner::Plan(absl::Span<const planner::Marginals* const> marginals,
                                    absl::Span<const int64_t> contexts,
                                    const costmodel::DrafterCost& drafter,
                                    planner::BatchPlan* plan) {
  SPECPLAN_CHECK(marginals.size() == contexts.size() && !marginals.empty());
  const int B = static_cast<int>(marginals.size());
  requests_.resize(marginals.size());
  for (size_t i = 0; i < marginals.size(); ++i) {
    requests_[i].marginals = marginals[i];
    requests_[i].c = contexts[i];
    requests_[i].n_max = cap_;
    requests_[i].weight = 1.0;
  }
  options_.n_max = options_.mode == planner::BudgetMode::kFixed && batch_budget_ > 0
                       ? std::min(batch_budget_, cap_ * B)
                       : cap_ * B;
  costmodel::DrafterCost dc = drafter;
  dc.batch_growth = 1.0;  // sequences are drafted one after another
  const planner::BatchPlanCost cost{latency_, dc, 0.0};
  return backend_->PlanBatch(requests_, options_, &cost, plan);
}

BatchStrategy::BatchStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : GatedChainStrategy(options, ctx),
      fixed_step_s_(options.batch_draft_step_s),
      planner_(std::make_unique<BatchStepPlanner>(options, latency_, ctx.backend)) {}

costmodel::DrafterCost BatchStrategy::drafter_cost() const {
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = drafted_ ? marginals_.gamma : gamma_;
  dc.t_net_s = fixed_step_s_ >= 0 ? fixed_step_s_ : drafter_.last_step_seconds();
  return dc;
}

absl::Status BatchStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  // A probe drafts at most gamma levels, so it is priced at min(gamma, the probe depth).
  const int depth = GateDepth(state, std::min(gamma_, gate_->options().probe_depth), tree);
  if (depth == 0) return absl::OkStatus();
  SPECPLAN_RETURN_IF_ERROR(DraftStep(state, depth));
  if (gate_enabled_) planner_->set_acceptance_scale(gate_->estimator().surrogate_scale());
  const planner::Marginals* m = &marginals_;
  SPECPLAN_RETURN_IF_ERROR(planner_->Plan(
      absl::MakeConstSpan(&m, 1), absl::MakeConstSpan(&state.c, 1), drafter_cost(), &plan_));
  *tree = plan_.trees[0];
  return absl::OkStatus();
}

absl::Status BatchStrategy::Observe(const planner::Tree& tree,
                                    const planner::AcceptResult& accept) {
  if (!drafted_) return absl::OkStatus();  // nothing fed: the next DraftChain catches up
  if (gate_enabled_) {
    gate_->Observe(planner::MakeStepAcceptance(tree, accept));
    if (tree.size() > 1) {
      gate_->estimator().ObserveSurrogate(tree.expected_accepted(), accept.accepted_length);
    }
  }
  CommitAccepted(tree, accept);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
