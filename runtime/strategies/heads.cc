#include "runtime/strategies/heads.h"

#include <torch/torch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "costmodel/cycle_cost.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::Status CheckDraftHeads(const StrategyOptions& options, const Transformer& target) {
  if (options.heads == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", StrategyName(options.strategy), ": needs draft heads"));
  }
  if (&options.heads->target() != &target) {
    return absl::InvalidArgumentError(
        "draft heads: loaded on another target model (DraftHeads::Load with this target)");
  }
  if (options.strategy == Strategy::kCausal && !options.heads->has_causal()) {
    return absl::InvalidArgumentError("strategy causal: the draft heads have no causal head");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HeadsStrategy>> HeadsStrategy::Create(const StrategyOptions& options,
                                                                     const StrategyContext& ctx) {
  SPECPLAN_RETURN_IF_ERROR(CheckDraftHeads(options, *ctx.target));
  SPECPLAN_RETURN_IF_ERROR(planner::ValidateSpeculationGateOptions(options.gate));
  std::unique_ptr<HeadsStrategy> s(new HeadsStrategy(options, ctx));
  if (s->gate_enabled_ && s->fixed_level_s_ < 0) {
    // The gate's first per-head estimate: every head on a zero hidden row, timed on the second
    // call (the first warms up).
    const torch::Tensor zero =
        torch::zeros({ctx.target->config().hidden_size}, torch::TensorOptions()
                                                             .dtype(ctx.target->options().dtype)
                                                             .device(ctx.target->options().device));
    planner::Marginals m;
    SPECPLAN_RETURN_IF_ERROR(s->drafter_.DraftMarginals(zero, 0, s->gamma_, &m));
    SPECPLAN_RETURN_IF_ERROR(s->drafter_.DraftMarginals(zero, 0, s->gamma_, &m));
    s->gate_.ObserveDraftLevel(s->drafter_.last_seconds() / s->gamma_);
  }
  return s;
}

HeadsStrategy::HeadsStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : strategy_(options.strategy),
      gamma_(static_cast<int>(options.heads->num_heads())),
      top_k_(options.draft_top_k),
      planner_options_(options.bestfirst),
      backend_(ctx.backend),
      drafter_(options.heads, options.draft_top_k),
      latency_(ctx.latency),
      gate_enabled_(options.gate.enabled),
      fixed_level_s_(options.gate_draft_level_s),
      gate_(options.gate) {
  if (options.heads_gamma > 0) gamma_ = std::min(gamma_, options.heads_gamma);
  if (planner_options_.n_max > options.max_tree_nodes) {
    planner_options_.n_max = options.max_tree_nodes;
  }
  if (strategy_ == Strategy::kCausal) {
    provider_ = std::make_unique<CausalHeadProvider>(options.heads);
  }
}

absl::Status HeadsStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  const planner::TokenId root = state.committed.back();
  int depth = gamma_;
  if (gate_enabled_) {
    // What a probe would cost (no draft cache to catch up: the heads read the hidden row), so
    // that the gate spaces even its first probe by the probe budget.
    const double level_s = fixed_level_s_ >= 0 ? fixed_level_s_ : gate_.draft_level_s();
    gate_.ObserveProbeSeconds(ProbeSeconds(*latency_, nullptr, state.c, 0,
                                           std::min(gamma_, gate_.options().probe_depth), level_s,
                                           gate_.estimator().width()));
    const planner::GateDecision g = gate_.Decide(*latency_, state.c, 1, gamma_, fixed_level_s_);
    depth = g.depth;
    if (depth == 0) {  // a plain AR step: the heads do not run
      drafted_ = false;
      tree->ResetRoot(root);
      return absl::OkStatus();
    }
  }
  drafted_ = true;
  costmodel::DrafterCost dc;
  dc.gamma = depth;
  // The surrogate calibrated online (speculation_gate.h): a node is worth surrogate_scale·ρ.
  if (gate_enabled_) planner_options_.acceptance_scale = gate_.estimator().surrogate_scale();
  if (strategy_ == Strategy::kHeads) {
    SPECPLAN_RETURN_IF_ERROR(
        drafter_.DraftMarginals(state.target_hidden, root, depth, &marginals_));
    if (gate_enabled_) gate_.ObserveDraftLevel(drafter_.last_seconds() / depth);
    dc.cls = costmodel::DrafterClass::kParallelBlock;
    dc.t_net_s = drafter_.last_seconds();
    const planner::PlanCost cost{latency_, dc, 0.0, state.c};
    SPECPLAN_RETURN_IF_ERROR(backend_->PlanBestFirst(marginals_, planner_options_, &cost, &plan_));
    *tree = plan_.tree;
    return absl::OkStatus();
  }
  if (!state.target_hidden.defined()) return absl::InternalError("causal: no target hidden row");
  const double begin_s = provider_->seconds();
  provider_->Begin(state.target_hidden, depth);
  dc.cls = costmodel::DrafterClass::kParallelCausal;
  dc.t_net_s = provider_->seconds() - begin_s;
  dc.t_light_s = light_s_;
  const costmodel::CycleCost cost(latency_, dc, 0.0, state.c);
  planner::PathConditionedOptions pco;
  pco.budget = planner_options_;
  pco.gamma = depth;
  pco.k = top_k_;
  const int64_t expanded0 = provider_->expanded_nodes();
  const double expand0 = provider_->seconds();
  SPECPLAN_RETURN_IF_ERROR(path_planner_.Run(root, pco, &cost, *provider_, &plan_));
  const int64_t expanded = provider_->expanded_nodes() - expanded0;
  if (expanded > 0) {
    const double per_node = (provider_->seconds() - expand0) / static_cast<double>(expanded);
    light_s_ = light_s_ == 0 ? per_node : 0.9 * light_s_ + 0.1 * per_node;
  }
  if (gate_enabled_) gate_.ObserveDraftLevel((provider_->seconds() - begin_s) / depth);
  *tree = plan_.tree;
  return absl::OkStatus();
}

absl::Status HeadsStrategy::Observe(const planner::Tree& tree,
                                    const planner::AcceptResult& accept) {
  if (!gate_enabled_) return absl::OkStatus();
  gate_.Observe(planner::MakeStepAcceptance(tree, accept));
  if (drafted_ && plan_.n > 0) {
    gate_.estimator().ObserveSurrogate(plan_.expected_accepted, accept.accepted_length);
  }
  return absl::OkStatus();
}

}  // namespace specplan::runtime
