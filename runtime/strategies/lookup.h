// Prompt lookup (no draft model): n-gram matches in the context give position-wise marginals
// (NgramMarginals); a fixed-budget best-first plan over them (BudgetMode::kFixed through a
// planner::PlanBackend) is the tree, with zero-probability padding nodes dropped. No match: the
// tree is the root alone.
#ifndef SPECPLAN_RUNTIME_STRATEGIES_LOOKUP_H_
#define SPECPLAN_RUNTIME_STRATEGIES_LOOKUP_H_

#include <cstdint>

#include "runtime/strategies/draft_strategy.h"

namespace specplan::runtime {

class LookupStrategy final : public DraftStrategy {
 public:
  // `budget` draft nodes per plan; `backend` is not owned and must outlive the strategy.
  LookupStrategy(const NgramOptions& ngram, int64_t vocab, int budget,
                 planner::PlanBackend* backend)
      : ngram_(ngram), vocab_(vocab), budget_(budget), backend_(backend) {}

  const char* Name() const override { return StrategyName(Strategy::kLookup); }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override;

 private:
  NgramOptions ngram_;
  int64_t vocab_;
  int budget_;
  planner::PlanBackend* backend_;
  planner::Marginals marginals_;
  planner::BestFirstPlan plan_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_LOOKUP_H_
