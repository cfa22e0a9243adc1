#include "runtime/strategies/best_first.h"

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<BestFirstStrategy>> BestFirstStrategy::Create(
    const StrategyOptions& options, const StrategyContext& ctx) {
  if (ctx.draft == nullptr) {
    return absl::InvalidArgumentError("strategy bestfirst: needs a draft model");
  }
  SPECPLAN_RETURN_IF_ERROR(planner::ValidateSpeculationGateOptions(options.gate));
  std::unique_ptr<BestFirstStrategy> s(new BestFirstStrategy(options, ctx));
  SPECPLAN_RETURN_IF_ERROR(SeedDraftLevel(options, ctx, &s->gate_));
  return s;
}

BestFirstStrategy::BestFirstStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : gamma_(options.bestfirst_gamma),
      planner_options_(options.bestfirst),
      backend_(ctx.backend),
      drafter_(ctx.draft, ctx.max_len + 2 * options.max_tree_nodes, options.draft_top_k),
      latency_(ctx.latency),
      draft_latency_(ctx.draft_latency),
      gate_enabled_(options.gate.enabled),
      fixed_level_s_(options.gate_draft_level_s),
      gate_(options.gate) {
  if (planner_options_.n_max > options.max_tree_nodes) {
    planner_options_.n_max = options.max_tree_nodes;
  }
}

absl::Status BestFirstStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  int depth = gamma_;
  if (gate_enabled_) {
    // What a probe would cost now (the draft cache's catch-up grows with every undrafted step),
    // so that the gate spaces even its first probe by the probe budget.
    const double level_s = fixed_level_s_ >= 0 ? fixed_level_s_ : gate_.draft_level_s();
    const int64_t catch_up =
        static_cast<int64_t>(state.committed.size()) - 1 - drafter_.cached_tokens();
    gate_.ObserveProbeSeconds(ProbeSeconds(*latency_, draft_latency_, state.c, catch_up,
                                           gate_.options().probe_depth, level_s,
                                           gate_.estimator().width()));
    const planner::GateDecision g = gate_.Decide(*latency_, state.c, 1, gamma_, fixed_level_s_);
    depth = g.depth;
    if (depth == 0) {  // a plain AR step: the draft model does not run
      drafted_ = false;
      tree->ResetRoot(state.committed.back());
      return absl::OkStatus();
    }
  }
  SPECPLAN_RETURN_IF_ERROR(drafter_.DraftChain(state.committed, depth, &marginals_));
  drafted_ = true;
  if (gate_enabled_) gate_.ObserveDraftLevel(drafter_.last_level_seconds());
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = depth;
  dc.t_net_s = drafter_.last_step_seconds();
  const planner::PlanCost cost{latency_, dc, 0.0, state.c};
  // The surrogate calibrated online (speculation_gate.h): a node is worth surrogate_scale·ρ.
  if (gate_enabled_) planner_options_.acceptance_scale = gate_.estimator().surrogate_scale();
  SPECPLAN_RETURN_IF_ERROR(backend_->PlanBestFirst(marginals_, planner_options_, &cost, &plan_));
  *tree = plan_.tree;
  return absl::OkStatus();
}

absl::Status BestFirstStrategy::Observe(const planner::Tree& tree,
                                        const planner::AcceptResult& accept) {
  if (gate_enabled_) {
    gate_.Observe(planner::MakeStepAcceptance(tree, accept));
    if (drafted_ && plan_.n > 0)
      gate_.estimator().ObserveSurrogate(plan_.expected_accepted, accept.accepted_length);
  }
  if (!drafted_) return absl::OkStatus();  // nothing fed: the next Sync catches up
  AcceptedTokens(tree, accept, &accepted_tokens_);
  drafter_.Commit(accepted_tokens_);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
