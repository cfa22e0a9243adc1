#include "runtime/strategies/draft_strategy.h"

#include <algorithm>

#include "runtime/measured_latency.h"
#include "runtime/strategies/ar.h"
#include "runtime/strategies/batch.h"
#include "runtime/strategies/best_first.h"
#include "runtime/strategies/draft_tree.h"
#include "runtime/strategies/heads.h"
#include "runtime/strategies/lookup.h"
#include "runtime/strategies/merged.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::runtime {

absl::StatusOr<std::unique_ptr<DraftStrategy>> CreateDraftStrategy(const StrategyOptions& options,
                                                                   const StrategyContext& ctx) {
  SPECPLAN_CHECK(ctx.target != nullptr && ctx.backend != nullptr);
  switch (options.strategy) {
    case Strategy::kAr:
      return std::make_unique<ArStrategy>();
    case Strategy::kLinear:
    case Strategy::kFixed:
    case Strategy::kDynaTree:
      return DraftTreeStrategy::Create(options.strategy, options, ctx);
    case Strategy::kBestFirst:
      return BestFirstStrategy::Create(options, ctx);
    case Strategy::kLookup:
      return std::make_unique<LookupStrategy>(
          options.ngram, ctx.target->config().vocab_size,
          std::min(options.lookup_budget, options.max_tree_nodes), ctx.backend);
    case Strategy::kMerged:
      return MergedStrategy::Create(options, ctx);
    case Strategy::kBatch:
      return BatchStrategy::Create(options, ctx);
    case Strategy::kHeads:
    case Strategy::kCausal:
      return HeadsStrategy::Create(options, ctx);
  }
  return absl::InvalidArgumentError("strategy: unknown value");
}

absl::Status SeedDraftLevel(const StrategyOptions& options, const StrategyContext& ctx,
                            planner::SpeculationGate* gate) {
  if (!options.gate.enabled || options.gate_draft_level_s >= 0) return absl::OkStatus();
  double seconds = ctx.draft_level_s;
  if (seconds < 0) {
    SPECPLAN_ASSIGN_OR_RETURN(seconds, MeasureSingleTokenSeconds(*ctx.draft));
  }
  gate->ObserveDraftLevel(seconds);
  return absl::OkStatus();
}

}  // namespace specplan::runtime
