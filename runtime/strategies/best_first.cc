#include "runtime/strategies/best_first.h"

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "util/status_macros.h"

namespace specplan::runtime {

BestFirstStrategy::BestFirstStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : GatedChainStrategy(options, ctx), planner_options_(options.bestfirst), backend_(ctx.backend) {
  if (planner_options_.n_max > options.max_tree_nodes) {
    planner_options_.n_max = options.max_tree_nodes;
  }
}

absl::Status BestFirstStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  // The catch-up grows with every undrafted step; the probe is priced at the gate's probe depth.
  const int depth = GateDepth(state, gate_->options().probe_depth, tree);
  if (depth == 0) return absl::OkStatus();
  SPECPLAN_RETURN_IF_ERROR(DraftStep(state, depth));
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = depth;
  dc.t_net_s = drafter_.last_step_seconds();
  const planner::PlanCost cost{latency_, dc, 0.0, state.c};
  // The surrogate calibrated online (speculation_gate.h): a node is worth surrogate_scale·ρ.
  if (gate_enabled_) planner_options_.acceptance_scale = gate_->estimator().surrogate_scale();
  SPECPLAN_RETURN_IF_ERROR(backend_->PlanBestFirst(marginals_, planner_options_, &cost, &plan_));
  *tree = plan_.tree;
  return absl::OkStatus();
}

absl::Status BestFirstStrategy::Observe(const planner::Tree& tree,
                                        const planner::AcceptResult& accept) {
  if (gate_enabled_) {
    gate_->Observe(planner::MakeStepAcceptance(tree, accept));
    if (drafted_ && plan_.n > 0)
      gate_->estimator().ObserveSurrogate(plan_.expected_accepted, accept.accepted_length);
  }
  CommitAccepted(tree, accept);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
