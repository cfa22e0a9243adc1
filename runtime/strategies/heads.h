// Strategies over draft heads on the target's own hidden row (runtime/draft_heads.h): no draft
// model runs; the verify pass keeps the hidden row of the token before each root.
//  * heads  (kHeads): the parallel heads' gamma x K marginals (HeadsDrafter) and best-first with
//    the cost-model controller, priced as a parallel-block drafter (costmodel::DrafterClass
//    kParallelBlock, T_net = the measured heads time). BASTION's parallel-drafter setting.
//  * causal (kCausal): path-conditioned best-first (planner::PathConditionedPlanner) whose child
//    distributions come from the causal-correction head (CausalHeadProvider), priced as
//    kParallelCausal (T_net = the heads' base pass, T_light = seconds per corrected node).
// kHeads plans through the PlanBackend (in-process or --planner); kCausal plans in-process (its
// provider is a callback).
//
// With the speculation gate on (StrategyOptions::gate, the default), planner::SpeculationGate
// decides the depth d in {0, ..., gamma} before the heads run, priced at d x the measured seconds
// per head (each head costs one LM-head product, as much as the target's own: on a small model
// the heads are not free). d = 0 is a plain AR step; otherwise only heads 1..d run.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_HEADS_H_
#define SPECPLAN_RUNTIME_STRATEGIES_HEADS_H_

#include <memory>

#include "planner/policies/path_conditioned.h"
#include "runtime/heads_drafters.h"
#include "runtime/strategies/draft_strategy.h"

namespace specplan::runtime {

// What a strategy that reads draft heads (StrategyNeedsHeads(options)) needs of them: present,
// loaded on `target`, and with a causal head for kCausal. Errors name the strategy.
absl::Status CheckDraftHeads(const StrategyOptions& options, const Transformer& target);

class HeadsStrategy final : public DraftStrategy {
 public:
  // options.heads must be non-null (and have a causal head for kCausal). options.strategy is kHeads
  // or kCausal. ctx.latency (T_verify) must be non-null.
  static absl::StatusOr<std::unique_ptr<HeadsStrategy>> Create(const StrategyOptions& options,
                                                               const StrategyContext& ctx);

  const char* Name() const override { return StrategyName(strategy_); }
  bool NeedsTargetHidden() const override { return true; }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;
  // Feeds the gate (there is no draft cache: the next step reads the new hidden row).
  absl::Status Observe(const planner::Tree& tree, const planner::AcceptResult& accept) override;
  const planner::GateStats* gate_stats() const override {
    return gate_enabled_ ? &gate_.stats() : nullptr;
  }

 private:
  HeadsStrategy(const StrategyOptions& options, const StrategyContext& ctx);

  Strategy strategy_;
  int gamma_;
  int top_k_;
  planner::BestFirstOptions planner_options_;
  planner::PlanBackend* backend_;
  HeadsDrafter drafter_;
  std::unique_ptr<CausalHeadProvider> provider_;  // kCausal
  planner::PathConditionedPlanner path_planner_;  // kCausal
  const costmodel::LatencyModel* latency_;        // StrategyContext::latency
  planner::Marginals marginals_;
  planner::BestFirstPlan plan_;
  double light_s_ = 0;  // kCausal: measured seconds per corrected node (running mean)
  bool gate_enabled_;
  double fixed_level_s_;  // StrategyOptions::gate_draft_level_s
  planner::SpeculationGate gate_;
  bool drafted_ = false;  // this step ran the heads
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_HEADS_H_
