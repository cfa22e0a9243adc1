// A draft model driving a planner::TreePolicy, one draft forward per depth level
// (DraftModelDrafter::DraftTree): linear chain (LinearChainPolicy), fixed tree (FixedTreePolicy)
// and DynaTree (DynaTreePolicy, history-adaptive through the accepted lengths it observes).
//
// dynatree with the speculation gate on (StrategyOptions::gate, the default): before drafting,
// planner::SpeculationGate weighs a step of the depth the policy has been drafting (the EMA of
// its trees' depths, d_max before the first) and width against a plain AR step, with T_verify
// (StrategyContext::latency) and the measured draft-level seconds.
// When drafting does not pay, the step verifies the root alone without running the draft model
// or the policy (the policy observes only the steps it drafted; the draft cache catches up the
// next time it drafts). The depth itself stays the policy's. linear and fixed have no gate.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_DRAFT_TREE_H_
#define SPECPLAN_RUNTIME_STRATEGIES_DRAFT_TREE_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/strategies/draft_strategy.h"

namespace specplan::runtime {

class DraftTreeStrategy final : public DraftStrategy {
 public:
  // `which` is kLinear, kFixed or kDynaTree; its policy options (options.linear / .fixed /
  // .dynatree) are capped at options.max_tree_nodes. ctx.draft must be non-null.
  static absl::StatusOr<std::unique_ptr<DraftTreeStrategy>> Create(Strategy which,
                                                                   const StrategyOptions& options,
                                                                   const StrategyContext& ctx);

  const char* Name() const override { return StrategyName(which_); }
  void Reset() override { drafter_.Reset(); }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;
  // Commits the accepted draft tokens and observes min(accepted_length, policy tree depth).
  absl::Status Observe(const planner::Tree& tree, const planner::AcceptResult& accept) override;
  const planner::PolicyStats* policy_stats() const override { return &policy_->stats(); }
  std::string PolicyName() const override { return policy_->Name(); }
  const DrafterCounters* drafter_counters() const override { return &drafter_.counters(); }
  const planner::GateStats* gate_stats() const override {
    return gate_ != nullptr ? &gate_->stats() : nullptr;
  }

  // Observe's two halves, for a strategy that verifies this tree inside a larger one (merged):
  // `accepted_tokens` (bonus excluded) go into the draft cache; `policy_accepted` is how many of
  // them were this policy's tree's nodes (capped at the depth of the last tree built).
  absl::Status ObserveAccepted(const std::vector<planner::TokenId>& accepted_tokens,
                               int policy_accepted);

 private:
  DraftTreeStrategy(Strategy which, std::unique_ptr<planner::TreePolicy> policy,
                    const Transformer* draft, int64_t max_len, int top_k);

  Strategy which_;
  std::unique_ptr<planner::TreePolicy> policy_;
  DraftModelDrafter drafter_;
  int32_t depth_ = -1;  // max depth of the policy's last tree (-1: this step did not draft)
  std::vector<planner::TokenId> accepted_tokens_;
  // dynatree's speculation gate (null: linear, fixed, or StrategyOptions::gate.enabled false).
  std::unique_ptr<planner::SpeculationGate> gate_;
  int gate_max_depth_ = 1;                                  // options.dynatree.d_max
  double fixed_level_s_ = -1;                               // StrategyOptions::gate_draft_level_s
  const costmodel::LatencyModel* latency_ = nullptr;        // the gate's T_verify (ctx.latency)
  const costmodel::LatencyModel* draft_latency_ = nullptr;  // StrategyContext::draft_latency
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_DRAFT_TREE_H_
