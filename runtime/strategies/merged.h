// Dual drafting, as in Merged-tree dual drafting (docs/references.md): the draft model's DynaTree
// tree (A) and a second tree (B) are merged under one shared root (planner::MergeTrees through a
// planner::PlanBackend) and verified in one pass. B is the prompt-lookup tree
// (StrategyOptions::merged_b = kLookup, the default) or, with draft heads (kHeads), a fixed-budget
// best-first tree over the parallel heads' marginals. The DynaTree policy observes only the
// accepted nodes that came from its own tree.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_MERGED_H_
#define SPECPLAN_RUNTIME_STRATEGIES_MERGED_H_

#include <memory>
#include <string>
#include <vector>

#include "runtime/strategies/draft_tree.h"
#include "runtime/strategies/lookup.h"

namespace specplan::runtime {

class MergedStrategy final : public DraftStrategy {
 public:
  // ctx.draft must be non-null (and options.heads for merged_b = kHeads). The B tree has
  // options.lookup_budget draft nodes; the merged tree at most options.merge.n_max, capped at
  // (and, when negative, set to) options.max_tree_nodes.
  static absl::StatusOr<std::unique_ptr<MergedStrategy>> Create(const StrategyOptions& options,
                                                                const StrategyContext& ctx);

  const char* Name() const override { return StrategyName(Strategy::kMerged); }
  bool NeedsTargetHidden() const override { return b_->NeedsTargetHidden(); }
  void Reset() override { a_->Reset(); }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;
  absl::Status Observe(const planner::Tree& tree, const planner::AcceptResult& accept) override;
  const planner::PolicyStats* policy_stats() const override { return a_->policy_stats(); }
  std::string PolicyName() const override { return a_->PolicyName(); }
  const DrafterCounters* drafter_counters() const override { return a_->drafter_counters(); }

 private:
  MergedStrategy(std::unique_ptr<DraftTreeStrategy> a, std::unique_ptr<DraftStrategy> b,
                 const StrategyOptions& options, const StrategyContext& ctx);

  std::unique_ptr<DraftTreeStrategy> a_;  // the DynaTree draft-model tree
  std::unique_ptr<DraftStrategy> b_;      // the n-gram tree or the heads' tree
  planner::MergeOptions merge_options_;
  planner::PlanBackend* backend_;
  planner::Tree a_tree_;
  planner::Tree b_tree_;
  planner::MergedTree merged_;
  std::vector<planner::TokenId> accepted_tokens_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_MERGED_H_
