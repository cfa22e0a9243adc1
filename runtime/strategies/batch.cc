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

absl::StatusOr<std::unique_ptr<BatchStrategy>> BatchStrategy::Create(const StrategyOptions& options,
                                                                     const StrategyContext& ctx) {
  if (ctx.draft == nullptr)
    return absl::InvalidArgumentError("strategy batch: needs a draft model");
  SPECPLAN_RETURN_IF_ERROR(planner::ValidateSpeculationGateOptions(options.gate));
  std::unique_ptr<BatchStrategy> s(new BatchStrategy(options, ctx));
  s->planner_ = std::make_unique<BatchStepPlanner>(options, s->latency_, ctx.backend);
  SPECPLAN_RETURN_IF_ERROR(SeedDraftLevel(options, ctx, &s->own_gate_));
  return s;
}

BatchStrategy::BatchStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : gamma_(options.bestfirst_gamma),
      fixed_step_s_(options.batch_draft_step_s),
      drafter_(ctx.draft, ctx.max_len + 2 * options.max_tree_nodes, options.draft_top_k),
      gate_enabled_(options.gate.enabled),
      fixed_level_s_(options.gate_draft_level_s),
      own_gate_(options.gate),
      latency_(ctx.latency),
      draft_latency_(ctx.draft_latency) {}

absl::Status BatchStrategy::DraftMarginals(const DecodeState& state, int depth) {
  drafted_ = true;
  return drafter_.DraftChain(state.committed, depth > 0 ? std::min(depth, gamma_) : gamma_,
                             &marginals_);
}

int64_t BatchStrategy::CatchUpTokens(const DecodeState& state) const {
  return static_cast<int64_t>(state.committed.size()) - 1 - drafter_.cached_tokens();
}

double BatchStrategy::LevelSeconds() const {
  return fixed_level_s_ >= 0 ? fixed_level_s_ : gate_->draft_level_s();
}

costmodel::DrafterCost BatchStrategy::drafter_cost() const {
  costmodel::DrafterCost dc;
  dc.cls = costmodel::DrafterClass::kAutoregressive;
  dc.gamma = drafted_ ? marginals_.gamma : gamma_;
  dc.t_net_s = fixed_step_s_ >= 0 ? fixed_step_s_ : drafter_.last_step_seconds();
  return dc;
}

absl::Status BatchStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  int depth = gamma_;
  if (gate_enabled_) {
    // What a probe would cost now, catch-up included (ProbeSeconds): the gate spaces even its
    // first probe by the probe budget.
    gate_->ObserveProbeSeconds(ProbeSeconds(*latency_, draft_latency_, state.c,
                                            CatchUpTokens(state),
                                            std::min(gamma_, gate_->options().probe_depth),
                                            LevelSeconds(), gate_->estimator().width()));
    const planner::GateDecision g = gate_->Decide(*latency_, state.c, 1, gamma_, fixed_level_s_);
    depth = g.depth;
    if (depth == 0) {  // a plain AR step: the draft model does not run
      SkipDraft();
      tree->ResetRoot(state.committed.back());
      return absl::OkStatus();
    }
  }
  SPECPLAN_RETURN_IF_ERROR(DraftMarginals(state, depth));
  if (gate_enabled_) {
    gate_->ObserveDraftLevel(drafter_.last_level_seconds());
    planner_->set_acceptance_scale(gate_->estimator().surrogate_scale());
  }
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
  AcceptedTokens(tree, accept, &accepted_tokens_);
  drafter_.Commit(accepted_tokens_);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
