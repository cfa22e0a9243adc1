#include "runtime/strategies/best_first.h"

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "runtime/measured_latency.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<BestFirstStrategy>> BestFirstStrategy::Create(
    const StrategyOptions& options, const StrategyContext& ctx) {
  if (ctx.draft == nullptr) {
    return absl::InvalidArgumentError("strategy bestfirst: needs a draft model");
  }
  std::unique_ptr<BestFirstStrategy> s(new BestFirstStrategy(options, ctx));
  SPECPLAN_ASSIGN_OR_RETURN(
      s->latency_, GivenOrMeasuredLatency(options.latency, *ctx.target, options.max_tree_nodes + 1,
                                          &s->owned_latency_));
  return s;
}

BestFirstStrategy::BestFirstStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : gamma_(options.bestfirst_gamma),
      planner_options_(options.bestfirst),
      backend_(ctx.backend),
      drafter_(ctx.draft, ctx.max_len + 2 * options.max_tree_nodes, options.draft_top_k) {
  if (planner_options_.n_max > options.max_tree_nodes) {
    planner_options_.n_max = options.max_tree_nodes;
  }
}

absl::Status BestFirstStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  SPECPLAN_RETURN_IF_ERROR(drafter_.DraftChain(state.committed, gamma_, &marginals_));
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = gamma_;
  dc.t_net_s = drafter_.last_step_seconds();
  const planner::PlanCost cost{latency_, dc, 0.0, state.c};
  SPECPLAN_RETURN_IF_ERROR(backend_->PlanBestFirst(marginals_, planner_options_, &cost, &plan_));
  *tree = plan_.tree;
  return absl::OkStatus();
}

absl::Status BestFirstStrategy::Observe(const planner::Tree& tree,
                                        const planner::AcceptResult& accept) {
  AcceptedTokens(tree, accept, &accepted_tokens_);
  drafter_.Commit(accepted_tokens_);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
