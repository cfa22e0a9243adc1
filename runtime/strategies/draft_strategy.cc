#include "runtime/strategies/draft_strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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
                                                                   const StrategyContext& context) {
  SPECPLAN_CHECK(context.target != nullptr && context.backend != nullptr);
  StrategyContext ctx = context;
  if (ctx.latency == nullptr) ctx.latency = options.latency;
  if (ctx.latency == nullptr && StrategyNeedsLatency(options)) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy ", StrategyName(options.strategy),
                     ": needs a T_verify model (a context from MakeStrategyContext, or "
                     "StrategyOptions::latency)"));
  }
  switch (options.strategy) {
    case Strategy::kAr:
      return std::make_unique<ArStrategy>();
    case Strategy::kLinear:
    case Strategy::kFixed:
    case Strategy::kDynaTree:
      return DraftTreeStrategy::Create(options.strategy, options, ctx);
    case Strategy::kBestFirst:
      return GatedChainStrategy::Create<BestFirstStrategy>(Strategy::kBestFirst, options, ctx);
    case Strategy::kLookup:
      return std::make_unique<LookupStrategy>(
          options.ngram, ctx.target->config().vocab_size,
          std::min(options.lookup_budget, options.max_tree_nodes), ctx.backend);
    case Strategy::kMerged:
      return MergedStrategy::Create(options, ctx);
    case Strategy::kBatch:
      return GatedChainStrategy::Create<BatchStrategy>(Strategy::kBatch, options, ctx);
    case Strategy::kHeads:
    case Strategy::kCausal:
      return HeadsStrategy::Create(options, ctx);
    default:  // the what-if's strategies (planner/strategy.h): not run here
      break;
  }
  return planner::CheckStrategyIn(kRuntimeStrategies, "strategy", options.strategy);
}

bool StrategyNeedsLatency(const StrategyOptions& options) {
  switch (options.strategy) {
    case Strategy::kBestFirst:
    case Strategy::kBatch:
    case Strategy::kHeads:
    case Strategy::kCausal:
      return true;
    case Strategy::kDynaTree:
      return options.gate.enabled;
    case Strategy::kMerged:  // its heads tree is planned as kHeads is
      return options.merged_b == MergedB::kHeads;
    default:
      return false;
  }
}

absl::Status SeedDraftLevel(const StrategyOptions& options, const StrategyContext& ctx,
                            planner::SpeculationGate* gate) {
  if (!options.gate.enabled || options.gate_draft_level_s >= 0) return absl::OkStatus();
  double seconds = 0;
  if (ctx.draft_latency != nullptr) {
    seconds = ctx.draft_latency->VerifySeconds(1, 64);
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(seconds, MeasureSingleTokenSeconds(*ctx.draft));
  }
  gate->ObserveDraftLevel(seconds);
  return absl::OkStatus();
}

double ProbeSeconds(const costmodel::LatencyModel& verify,
                    const costmodel::LatencyModel* draft_latency, int64_t c, int64_t catch_up,
                    int depth, double level_s, double width) {
  double s = 0;
  if (catch_up > 0) {
    s += draft_latency != nullptr ? std::max(0.0, draft_latency->VerifySeconds(catch_up + 1, c) -
                                                      draft_latency->VerifySeconds(1, c))
                                  : static_cast<double>(catch_up) * level_s;
  }
  s += depth * level_s;
  const int64_t verified = 1 + static_cast<int64_t>(std::llround(width * depth));
  s += std::max(0.0, verify.VerifySeconds(verified, c) - verify.VerifySeconds(1, c));
  return s;
}

}  // namespace specplan::runtime
