#include "runtime/strategies/gated_chain.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace specplan::runtime {

GatedChainStrategy::GatedChainStrategy(const StrategyOptions& options, const StrategyContext& ctx)
    : gamma_(options.bestfirst_gamma),
      drafter_(ctx.draft, ctx.max_len + 2 * options.max_tree_nodes, options.draft_top_k),
      gate_enabled_(options.gate.enabled),
      fixed_level_s_(options.gate_draft_level_s),
      own_gate_(options.gate),
      latency_(ctx.latency),
      draft_latency_(ctx.draft_latency) {}

absl::Status GatedChainStrategy::CheckContext(const char* name, const StrategyOptions& options,
                                              const StrategyContext& ctx) {
  if (ctx.draft == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("strategy ", name, ": needs a draft model"));
  }
  return planner::ValidateSpeculationGateOptions(options.gate);
}

absl::Status GatedChainStrategy::DraftMarginals(const DecodeState& state, int depth) {
  drafted_ = true;
  return drafter_.DraftChain(state.committed, depth > 0 ? std::min(depth, gamma_) : gamma_,
                             &marginals_);
}

int64_t GatedChainStrategy::CatchUpTokens(const DecodeState& state) const {
  return static_cast<int64_t>(state.committed.size()) - 1 - drafter_.cached_tokens();
}

double GatedChainStrategy::LevelSeconds() const {
  return fixed_level_s_ >= 0 ? fixed_level_s_ : gate_->draft_level_s();
}

int GatedChainStrategy::GateDepth(const DecodeState& state, int probe_depth, planner::Tree* tree) {
  if (!gate_enabled_) return gamma_;
  gate_->ObserveProbeSeconds(ProbeSeconds(*latency_, draft_latency_, state.c, CatchUpTokens(state),
                                          probe_depth, LevelSeconds(), gate_->estimator().width()));
  const int depth = gate_->Decide(*latency_, state.c, 1, gamma_, fixed_level_s_).depth;
  if (depth == 0) {  // a plain AR step: the draft model does not run
    drafted_ = false;
    tree->ResetRoot(state.committed.back());
  }
  return depth;
}

absl::Status GatedChainStrategy::DraftStep(const DecodeState& state, int depth) {
  SPECPLAN_RETURN_IF_ERROR(DraftMarginals(state, depth));
  if (gate_enabled_) gate_->ObserveDraftLevel(drafter_.last_level_seconds());
  return absl::OkStatus();
}

void GatedChainStrategy::CommitAccepted(const planner::Tree& tree,
                                        const planner::AcceptResult& accept) {
  if (!drafted_) return;  // nothing fed: the next draft catches up
  AcceptedTokens(tree, accept, &accepted_tokens_);
  drafter_.Commit(accepted_tokens_);
}

}  // namespace specplan::runtime
