#include "runtime/strategies/strategy_options.h"

namespace specplan::runtime {

absl::StatusOr<Strategy> ParseStrategy(const std::string& name) {
  if (auto s = planner::FindStrategyIn(kRuntimeStrategies, name)) return *s;
  return planner::StrategyNotIn(kRuntimeStrategies, "strategy", name);
}

bool StrategyNeedsDraft(Strategy s) {
  return s != Strategy::kAr && s != Strategy::kLookup && !StrategyNeedsHeads(s);
}

bool StrategyNeedsHeads(Strategy s) { return s == Strategy::kHeads || s == Strategy::kCausal; }

bool StrategyNeedsHeads(const StrategyOptions& o) {
  return StrategyNeedsHeads(o.strategy) ||
         (o.strategy == Strategy::kMerged && o.merged_b == MergedB::kHeads);
}

StrategyOptions StrategyOptions::Defaults(Strategy strategy) {
  StrategyOptions o;
  o.strategy = strategy;
  o.linear.k = 6;
  o.fixed.depth = 4;
  o.fixed.branch = 2;
  o.fixed.tau = 0.0;
  o.fixed.max_nodes = 30;
  o.dynatree.n_max = 32;
  o.dynatree.d_max = 6;
  o.dynatree.d0 = 4;
  o.bestfirst.mode = planner::BudgetMode::kController;
  o.bestfirst.n_max = 32;
  o.merge.dedup = true;
  o.merge.n_max = 48;
  o.max_tree_nodes = 64;
  return o;
}

}  // namespace specplan::runtime
