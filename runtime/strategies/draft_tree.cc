#include "runtime/strategies/draft_tree.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<DraftTreeStrategy>> DraftTreeStrategy::Create(
    Strategy which, const StrategyOptions& options, const StrategyContext& ctx) {
  if (ctx.draft == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", StrategyName(which), ": needs a draft model"));
  }
  auto cap = [&](int32_t n) { return std::min<int32_t>(n, options.max_tree_nodes); };
  std::unique_ptr<planner::TreePolicy> policy;
  switch (which) {
    case Strategy::kLinear: {
      planner::LinearChainOptions o = options.linear;
      o.k = cap(o.k);
      SPECPLAN_ASSIGN_OR_RETURN(policy, planner::LinearChainPolicy::Create(o));
      break;
    }
    case Strategy::kFixed: {
      planner::FixedTreeOptions o = options.fixed;
      o.max_nodes = cap(o.max_nodes);
      SPECPLAN_ASSIGN_OR_RETURN(policy, planner::FixedTreePolicy::Create(o));
      break;
    }
    case Strategy::kDynaTree: {
      planner::DynaTreeOptions o = options.dynatree;
      o.n_max = cap(o.n_max);
      SPECPLAN_ASSIGN_OR_RETURN(policy, planner::DynaTreePolicy::Create(o));
      break;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("strategy ", StrategyName(which), ": not a draft-tree policy strategy"));
  }
  std::unique_ptr<DraftTreeStrategy> s(
      new DraftTreeStrategy(which, std::move(policy), ctx.draft,
                            ctx.max_len + 2 * options.max_tree_nodes, options.draft_top_k));
  if (which == Strategy::kDynaTree && options.gate.enabled) {
    SPECPLAN_RETURN_IF_ERROR(planner::ValidateSpeculationGateOptions(options.gate));
    s->latency_ = ctx.latency;
    s->draft_latency_ = ctx.draft_latency;
    s->gate_ = std::make_unique<planner::SpeculationGate>(options.gate);
    SPECPLAN_RETURN_IF_ERROR(SeedDraftLevel(options, ctx, s->gate_.get()));
    s->gate_max_depth_ = std::max(1, cap(options.dynatree.d_max));
    s->fixed_level_s_ = options.gate_draft_level_s;
  }
  return s;
}

DraftTreeStrategy::DraftTreeStrategy(Strategy which, std::unique_ptr<planner::TreePolicy> policy,
                                     const Transformer* draft, int64_t max_len, int top_k)
    : which_(which), policy_(std::move(policy)), drafter_(draft, max_len, top_k) {}

absl::Status DraftTreeStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  if (gate_ != nullptr) {
    // The policy's depth: the EMA of the depths it drafted (d_max before the first tree).
    const planner::AcceptanceEstimator& e = gate_->estimator();
    const int d =
        e.observed_steps() == 0
            ? gate_max_depth_
            : std::clamp(static_cast<int>(std::lround(e.mean_depth())), 1, gate_max_depth_);
    // A probe drafts the policy's tree (depth d): its cost now, catch-up included, so that the
    // gate spaces even its first probe by the probe budget.
    const double level_s = fixed_level_s_ >= 0 ? fixed_level_s_ : gate_->draft_level_s();
    const int64_t catch_up =
        static_cast<int64_t>(state.committed.size()) - 1 - drafter_.cached_tokens();
    gate_->ObserveProbeSeconds(
        ProbeSeconds(*latency_, draft_latency_, state.c, catch_up, d, level_s, e.width()));
    const planner::GateDecision g = gate_->Decide(*latency_, state.c, d, d, fixed_level_s_);
    if (g.depth == 0) {
      depth_ = -1;  // a plain AR step: neither the draft model nor the policy runs
      tree->ResetRoot(state.committed.back());
      return absl::OkStatus();
    }
  }
  SPECPLAN_ASSIGN_OR_RETURN(const planner::Tree* t, drafter_.DraftTree(*policy_, state.committed));
  if (gate_ != nullptr) gate_->ObserveDraftLevel(drafter_.last_level_seconds());
  depth_ = 0;
  for (int32_t d : t->depths) depth_ = std::max(depth_, d);
  *tree = *t;
  return absl::OkStatus();
}

absl::Status DraftTreeStrategy::Observe(const planner::Tree& tree,
                                        const planner::AcceptResult& accept) {
  if (gate_ != nullptr) {
    if (depth_ < 0) return absl::OkStatus();  // undrafted: nothing fed, nothing to observe
    gate_->Observe(planner::MakeStepAcceptance(tree, accept));
  }
  AcceptedTokens(tree, accept, &accepted_tokens_);
  return ObserveAccepted(accepted_tokens_, accept.accepted_length);
}

absl::Status DraftTreeStrategy::ObserveAccepted(
    const std::vector<planner::TokenId>& accepted_tokens, int policy_accepted) {
  drafter_.Commit(accepted_tokens);
  if (depth_ < 0) return absl::OkStatus();
  return policy_->ObserveAcceptance(std::min<int>(policy_accepted, depth_));
}

}  // namespace specplan::runtime
