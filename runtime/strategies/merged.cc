#include "runtime/strategies/merged.h"

#include <algorithm>

#include "runtime/strategies/heads.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<MergedStrategy>> MergedStrategy::Create(
    const StrategyOptions& options, const StrategyContext& ctx) {
  // The DynaTree half always drafts: the speculation gate prices one drafter's tree against a
  // plain AR step, not a merged tree (StrategyOptions::gate covers bestfirst and dynatree only).
  StrategyOptions a_options = options;
  a_options.gate.enabled = false;
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<DraftTreeStrategy> a,
                            DraftTreeStrategy::Create(Strategy::kDynaTree, a_options, ctx));
  std::unique_ptr<DraftStrategy> b;
  if (options.merged_b == MergedB::kHeads) {
    // The heads' tree: best-first over their marginals, lookup_budget nodes, always drafted.
    StrategyOptions b_options = a_options;
    b_options.strategy = Strategy::kHeads;
    b_options.bestfirst.mode = planner::BudgetMode::kFixed;
    b_options.bestfirst.n_max = std::min(options.lookup_budget, options.max_tree_nodes);
    SPECPLAN_ASSIGN_OR_RETURN(b, HeadsStrategy::Create(b_options, ctx));
  } else {
    b = std::make_unique<LookupStrategy>(options.ngram, ctx.target->config().vocab_size,
                                         options.lookup_budget, ctx.backend);
  }
  return std::unique_ptr<MergedStrategy>(
      new MergedStrategy(std::move(a), std::move(b), options, ctx));
}

MergedStrategy::MergedStrategy(std::unique_ptr<DraftTreeStrategy> a,
                               std::unique_ptr<DraftStrategy> b, const StrategyOptions& options,
                               const StrategyContext& ctx)
    : a_(std::move(a)), b_(std::move(b)), merge_options_(options.merge), backend_(ctx.backend) {
  if (merge_options_.n_max > options.max_tree_nodes || merge_options_.n_max < 0) {
    merge_options_.n_max = options.max_tree_nodes;
  }
}

absl::Status MergedStrategy::BuildTree(const DecodeState& state, planner::Tree* tree) {
  SPECPLAN_RETURN_IF_ERROR(a_->BuildTree(state, &a_tree_));
  SPECPLAN_RETURN_IF_ERROR(b_->BuildTree(state, &b_tree_));
  SPECPLAN_RETURN_IF_ERROR(backend_->Merge(a_tree_, b_tree_, merge_options_, &merged_));
  *tree = merged_.tree;
  return absl::OkStatus();
}

absl::Status MergedStrategy::Observe(const planner::Tree& tree,
                                     const planner::AcceptResult& accept) {
  AcceptedTokens(tree, accept, &accepted_tokens_);
  int from_a = 0;
  for (int k = 1; k <= accept.accepted_length; ++k) {
    if (static_cast<uint8_t>(merged_.source[accept.accepted_nodes[k]]) &
        static_cast<uint8_t>(planner::MergeSource::kA)) {
      ++from_a;
    }
  }
  return a_->ObserveAccepted(accepted_tokens_, from_a);
}

}  // namespace specplan::runtime
