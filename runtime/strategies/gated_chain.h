// What bestfirst (best_first.h) and batch (batch.h) share: the draft model's greedy chain drafted
// into a top-k lattice (marginals()), behind the speculation gate (StrategyOptions::gate), which
// decides before every step how deep the chain goes; depth 0 is a plain decoding step in which the
// draft model does not run (its cache catches up on the committed tokens the next time it
// drafts). The subclasses plan a tree over the lattice and feed the gate what was accepted.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_GATED_CHAIN_H_
#define SPECPLAN_RUNTIME_STRATEGIES_GATED_CHAIN_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "planner/acceptance/speculation_gate.h"
#include "planner/marginals/marginals.h"
#include "runtime/strategies/draft_strategy.h"

namespace specplan::runtime {

class GatedChainStrategy : public DraftStrategy {
 public:
  // Strategy S (`which`: bestfirst or batch) for options and ctx: InvalidArgument "strategy
  // <name>: needs a draft model" without ctx.draft and the gate options' errors, then S(options,
  // ctx) with its own gate given its first draft-level seconds (SeedDraftLevel). ctx.latency
  // (T_verify) must be non-null. S makes GatedChainStrategy its friend.
  template <typename S>
  static absl::StatusOr<std::unique_ptr<S>> Create(Strategy which, const StrategyOptions& options,
                                                   const StrategyContext& ctx) {
    if (absl::Status st = CheckContext(StrategyName(which), options, ctx); !st.ok()) return st;
    std::unique_ptr<S> s(new S(options, ctx));
    if (absl::Status st = s->SeedGate(options, ctx); !st.ok()) return st;
    return s;
  }

  void Reset() override { drafter_.Reset(); }
  const DrafterCounters* drafter_counters() const override { return &drafter_.counters(); }
  const planner::GateStats* gate_stats() const override {
    return gate_enabled_ ? &gate_->stats() : nullptr;
  }

  // This step's lattice (depth greedy draft steps from the pending root, at most gamma; <= 0:
  // gamma) into marginals().
  absl::Status DraftMarginals(const DecodeState& state, int depth = 0);
  const planner::Marginals& marginals() const { return marginals_; }
  int gamma() const { return gamma_; }
  double last_level_seconds() const { return drafter_.last_level_seconds(); }
  // Committed tokens the draft cache has not seen, the root excluded: what it catches up on (one
  // chunk) before its next draft level.
  int64_t CatchUpTokens(const DecodeState& state) const;
  // The gate's seconds per draft level: StrategyOptions::gate_draft_level_s when >= 0, else the
  // gate's measured EMA.
  double LevelSeconds() const;

 protected:
  GatedChainStrategy(const StrategyOptions& options, const StrategyContext& ctx);

  // Create's checks.
  static absl::Status CheckContext(const char* name, const StrategyOptions& options,
                                   const StrategyContext& ctx);
  // Gives the strategy's own gate its first draft-level seconds (Create).
  absl::Status SeedGate(const StrategyOptions& options, const StrategyContext& ctx) {
    return SeedDraftLevel(options, ctx, &own_gate_);
  }
  // This step's chain depth: gamma with the gate off, else the gate's decision, made after
  // telling it what a probe of `probe_depth` levels would cost now (catch-up included), so that
  // it spaces even its first probe by the probe budget. At 0 *tree is root-only and the step
  // does not draft.
  int GateDepth(const DecodeState& state, int probe_depth, planner::Tree* tree);
  // DraftMarginals(state, depth), then the gate (when on) sees the level time.
  absl::Status DraftStep(const DecodeState& state, int depth);
  // When this step drafted: the accepted tokens go into the draft cache.
  void CommitAccepted(const planner::Tree& tree, const planner::AcceptResult& accept);

  int gamma_;
  DraftModelDrafter drafter_;
  bool gate_enabled_;
  double fixed_level_s_;  // StrategyOptions::gate_draft_level_s
  planner::SpeculationGate own_gate_;
  planner::SpeculationGate* gate_ = &own_gate_;   // own_gate_, or a batch's shared one
  bool drafted_ = false;                          // this step ran the draft model
  const costmodel::LatencyModel* latency_;        // StrategyContext::latency
  const costmodel::LatencyModel* draft_latency_;  // StrategyContext::draft_latency (nullable)
  planner::Marginals marginals_;
  std::vector<planner::TokenId> accepted_tokens_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_GATED_CHAIN_H_
