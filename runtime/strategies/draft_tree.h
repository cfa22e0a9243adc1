// A draft model driving a planner::TreePolicy, one draft forward per depth level
// (DraftModelDrafter::DraftTree): linear chain (LinearChainPolicy), fixed tree (FixedTreePolicy)
// and DynaTree (DynaTreePolicy, history-adaptive through the accepted lengths it observes).
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
  int32_t depth_ = -1;  // max depth of the policy's last tree (-1: none built yet)
  std::vector<planner::TokenId> accepted_tokens_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_DRAFT_TREE_H_
