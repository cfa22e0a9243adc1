// The shared speculative decode loop over a LibTorch target, with counters.
//
// One iteration (DESIGN.md "Tree"): the committed sequence ends with the pending root token; the
// decoder's DraftStrategy (runtime/strategies/draft_strategy.h: ar, linear, fixed, dynatree,
// bestfirst, lookup, merged) builds a draft tree rooted at it, the target verifies all s = n + 1
// nodes in ONE forward (positions c + depth, ancestor mask), acceptance (planner::AcceptGreedy /
// planner::AcceptSampling) picks the path and the bonus token, the accepted path's K/V rows are
// gathered into place (or, with KvUpdate::kRebuild, the path is re-forwarded: DynaTree
// (docs/references.md) §3.5's rollback-and-rebuild baseline), and the strategy observes what was
// accepted. The loop has no per-strategy branches.
//
// Greedy mode emits exactly the target's greedy tokens for every strategy; sampling mode uses
// recursive rejection sampling with point-mass drafts (planner::DraftMode::kPointMass), which
// preserves the target's sampling distribution for any deterministically chosen candidates.
#ifndef SPECPLAN_RUNTIME_DECODER_H_
#define SPECPLAN_RUNTIME_DECODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/acceptance/acceptance.h"
#include "planner/batch/plan_backend.h"
#include "planner/policies/policy.h"
#include "runtime/decode_sequence.h"
#include "runtime/drafters.h"
#include "runtime/strategies/draft_strategy.h"
#include "runtime/strategies/strategy_options.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

class SpeculativeDecoder {
 public:
  // `target` (and `draft`, required when StrategyNeedsDraft) are not owned and must outlive the
  // decoder; their vocabularies must match. `max_context` bounds prompt + new tokens.
  static absl::StatusOr<std::unique_ptr<SpeculativeDecoder>> Create(const Transformer* target,
                                                                    const Transformer* draft,
                                                                    const StrategyOptions& options,
                                                                    int64_t max_context);

  // Generates exactly max_new_tokens tokens after `prompt` (ids in [0, V), non-empty).
  absl::StatusOr<GenerationResult> Generate(const std::vector<planner::TokenId>& prompt,
                                            int max_new_tokens);

  const DecodeCounters& counters() const { return counters_; }
  // The strategy's own counters (null when it has no draft model / no planner policy).
  const DrafterCounters* drafter_counters() const {
    return sequence_->strategy().drafter_counters();
  }
  const planner::PolicyStats* policy_stats() const { return sequence_->strategy().policy_stats(); }
  const DraftStrategy& strategy() const { return sequence_->strategy(); }
  const StrategyOptions& options() const { return options_; }
  // Target KV-cache bytes (preallocated).
  int64_t cache_bytes() const;

 private:
  SpeculativeDecoder() = default;

  const Transformer* target_ = nullptr;
  StrategyOptions options_;
  int64_t max_context_ = 0;
  StrategyContextStorage storage_;  // the plan backend and latency models its context points to
  std::unique_ptr<DecodeSequence> sequence_;
  DecodeCounters counters_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DECODER_H_
