#include "runtime/strategies/strategy_options.h"

#include "absl/strings/str_cat.h"
#include "planner/strategy_names.h"

namespace specplan::runtime {
namespace {

namespace sn = ::specplan::planner::strategy_names;

constexpr struct {
  Strategy s;
  const char* name;
} kStrategyNames[] = {
    {Strategy::kAr, sn::kAr},
    {Strategy::kLinear, sn::kLinear},
    {Strategy::kFixed, sn::kFixed},
    {Strategy::kDynaTree, sn::kDynaTree},
    {Strategy::kBestFirst, sn::kBestFirst},
    {Strategy::kLookup, sn::kLookup},
    {Strategy::kMerged, sn::kMerged},
    {Strategy::kBatch, sn::kBatch},
    {Strategy::kHeads, sn::kHeads},
    {Strategy::kCausal, sn::kCausal},
};

}  // namespace

absl::StatusOr<Strategy> ParseStrategy(const std::string& name) {
  for (const auto& e : kStrategyNames) {
    if (name == e.name) return e.s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "strategy = \"", name,
      "\": expected ar, linear, fixed, dynatree, bestfirst, lookup, merged, batch, heads, "
      "causal"));
}

const char* StrategyName(Strategy s) {
  for (const auto& e : kStrategyNames) {
    if (s == e.s) return e.name;
  }
  return "?";
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
