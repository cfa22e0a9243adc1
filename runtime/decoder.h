// The shared speculative decode loop over a LibTorch target, with counters.
//
// One iteration (DESIGN.md "Tree"): the committed sequence ends with the pending root token; the
// decoder's DraftStrategy (runtime/strategies/draft_strategy.h: ar, linear, fixed, dynatree,
// bestfirst, lookup, merged) builds a draft tree rooted at it, the target verifies all s = n + 1
// nodes in ONE forward (positions c + depth, ancestor mask), acceptance (planner::AcceptGreedy /
// planner::AcceptSampling) picks the path and the bonus token, the accepted path's K/V rows are
// gathered into place (or, with KvUpdate::kRebuild, the path is re-forwarded: dynatree.txt §3.5's
// rollback-and-rebuild baseline), and the strategy observes what was accepted. The loop has no
// per-strategy branches.
//
// Greedy mode emits exactly the target's greedy tokens for every strategy; sampling mode uses
// recursive rejection sampling with point-mass drafts (planner::DraftMode::kPointMass), which
// preserves the target's sampling distribution for any deterministically chosen candidates.
#ifndef SPECPLAN_RUNTIME_DECODER_H_
#define SPECPLAN_RUNTIME_DECODER_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/acceptance.h"
#include "planner/plan_backend.h"
#include "planner/policy.h"
#include "runtime/drafters.h"
#include "runtime/step_buffers.h"
#include "runtime/strategies/draft_strategy.h"
#include "runtime/strategies/strategy_options.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

// Counters accumulated over Generate calls (llama.cpp-style strategy state). Iterations, drafted
// and accepted tokens live in `acceptance` only.
struct DecodeCounters {
  int64_t prompts = 0;
  int64_t new_tokens = 0;       // emitted tokens (after truncation to max_new_tokens)
  int64_t target_forwards = 0;  // prefill + verification + rebuild passes
  int64_t verified_tokens = 0;  // sum of s over verification passes
  double prefill_s = 0;         // sum of time to first token
  double draft_s = 0;           // drafting + planning
  double verify_s = 0;          // target verification forwards
  double update_s = 0;          // acceptance + KV update + bookkeeping
  double total_s = 0;           // wall time of Generate calls
  // One step per verification pass after prefill: steps = iterations, drafted_tokens = sum of n,
  // accepted_tokens = accepted draft tokens (bonus excluded), per-depth acceptance.
  planner::AcceptanceStats acceptance;

  int64_t iterations() const { return acceptance.steps; }
  int64_t drafted() const { return acceptance.drafted_tokens; }
  int64_t accepted() const { return acceptance.accepted_tokens; }
  double tokens_per_iteration() const {  // committed tokens per verification (accepted + bonus)
    return acceptance.steps == 0 ? 0.0 : acceptance.MeanAcceptedLength() + 1.0;
  }
};

// One verification iteration of a Generate call (step boundaries, e.g. for trace recording).
struct IterationLog {
  int64_t c = 0;              // tokens in the target cache before the step (= prompt + emitted - 1)
  planner::TokenId root = 0;  // the pending root token verified first (= tokens[c - prompt size])
  int32_t accepted = 0;       // accepted draft tokens (bonus excluded); the step emits accepted + 1
  double draft_s = 0;         // drafting + planning seconds of the step
};

struct GenerationResult {
  std::vector<planner::TokenId> tokens;  // [max_new_tokens] generated tokens (prompt excluded)
  double ttft_s = 0;                     // prefill + first token
  double total_s = 0;
  int64_t iterations = 0;
  std::vector<IterationLog> steps;  // [iterations] in order
};

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
  const DrafterCounters* drafter_counters() const { return strategy_->drafter_counters(); }
  const planner::PolicyStats* policy_stats() const { return strategy_->policy_stats(); }
  const DraftStrategy& strategy() const { return *strategy_; }
  const StrategyOptions& options() const { return options_; }
  // Target KV-cache bytes (preallocated).
  int64_t cache_bytes() const;

 private:
  SpeculativeDecoder() = default;
  planner::TokenId SelectToken(const torch::Tensor& logits_row, std::mt19937_64& rng);

  const Transformer* target_ = nullptr;
  StrategyOptions options_;
  int64_t max_context_ = 0;
  KvCache cache_;
  std::unique_ptr<planner::InProcessPlanBackend> owned_backend_;  // when options_.plan_backend null
  std::unique_ptr<DraftStrategy> strategy_;
  planner::Tree tree_;
  // This step's verification inputs (tokens, positions, [s][s] mask block), on the target's device.
  StepBuffers step_;
  std::vector<planner::TokenId> path_;  // KvUpdate::kRebuild: the accepted path re-forwarded
  planner::GreedyAcceptWorkspace greedy_ws_;
  planner::SampleAcceptWorkspace sample_ws_;
  planner::AcceptResult accept_;
  std::vector<float> probs_;
  std::vector<int32_t> order_;
  DecodeCounters counters_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DECODER_H_
