// Plain autoregressive decoding as a strategy: every step's tree is the root alone, so each target
// pass verifies one token and emits one (the bonus token).
#ifndef SPECPLAN_RUNTIME_STRATEGIES_AR_H_
#define SPECPLAN_RUNTIME_STRATEGIES_AR_H_

#include "runtime/strategies/draft_strategy.h"

namespace specplan::runtime {

class ArStrategy final : public DraftStrategy {
 public:
  const char* Name() const override { return StrategyName(Strategy::kAr); }
  absl::Status BuildTree(const DecodeState& state, planner::Tree* tree) override {
    tree->ResetRoot(state.committed.back());
    return absl::OkStatus();
  }
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_STRATEGIES_AR_H_
