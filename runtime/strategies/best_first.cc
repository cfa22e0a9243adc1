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
  // The levels are drafted (DraftStep above) before the tree is chosen, so their time is sunk:
  // the gate priced the decision to draft them (gate_draft_level_s), and the planner chooses among
  // the drafted nodes by verification alone. Pricing the drafting again here would compare n >= 1,
  // which pays it, with n = 0, the plain step that does not (the planner prices a tree's drafting
  // by its depth since issue 52), and plan no node even for a draft that is always accepted.
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = depth;
  dc.t_net_s = 0;
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
