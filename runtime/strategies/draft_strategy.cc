#include "runtime/strategies/draft_strategy.h"

#include <algorithm>

#include "runtime/strategies/ar.h"
#include "runtime/strategies/batch.h"
#include "runtime/strategies/best_first.h"
#include "runtime/strategies/draft_tree.h"
#include "runtime/strategies/lookup.h"
#include "runtime/strategies/merged.h"
#include "util/check.h"

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
  }
  return absl::InvalidArgumentError("strategy: unknown value");
}

}  // namespace specplan::runtime
