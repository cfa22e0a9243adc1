// The batch decode loop: B sequences verified together, one target pass per step, with bounded
// continuous batching (a waiting prompt joins as soon as a sequence finishes).
//
// One step over the sequences in flight:
//   1. newcomers are prefilled together in one pass (Transformer::ForwardBatch, causal segments);
//   2. every sequence drafts: its own strategy builds its tree (ar, linear, fixed, dynatree,
//      bestfirst, lookup, merged: each request's controller blind to the batch), or, for strategy
//      `batch`, every sequence drafts its lattice and ONE BatchStepPlanner sizes all the trees
//      (runtime/strategies/batch.h), where n_i = 0 leaves sequence i a plain decoding step;
//   3. ONE target pass verifies all trees packed as a ragged batch: no padding, per-sequence
//      ancestor masks, absolute positions c_i + depth and each sequence's own KV cache
//      (decode_sequence.h VerifyTogether);
//   4. each sequence accepts on its own rows and compacts its own KV cache; finished sequences
//      leave and free their slot.
// Each sequence keeps its own RNG, prompt i seeded with options.sampling.seed + i, so greedy
// outputs equal AR's, sampling keeps the target distribution, and with a per-request strategy
// prompt i emits exactly what SpeculativeDecoder emits for it alone with that seed.
#ifndef SPECPLAN_RUNTIME_BATCH_DECODER_H_
#define SPECPLAN_RUNTIME_BATCH_DECODER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/latency_model.h"
#include "planner/batch/batch_plan.h"
#include "planner/batch/plan_backend.h"
#include "runtime/decode_sequence.h"
#include "runtime/strategies/batch.h"
#include "runtime/strategies/strategy_options.h"
#include "runtime/transformer.h"

namespace specplan::runtime {

// Batch-wide counters of Run calls, beside the per-request-step ones in `decode` (whose
// acceptance.steps counts request-steps: one per sequence per verification pass).
struct BatchCounters {
  DecodeCounters decode;
  int64_t passes = 0;           // verification passes (batch steps)
  int64_t undrafted_steps = 0;  // request-steps whose tree had no draft node
  // Σ over passes of the sequences verified (= decode.acceptance.steps).
  int64_t request_steps() const { return decode.acceptance.steps; }
  // Σ draft nodes over request-steps (= decode.acceptance.drafted_tokens).
  int64_t draft_nodes() const { return decode.acceptance.drafted_tokens; }
  double mean_batch() const {
    return passes == 0 ? 0.0 : static_cast<double>(request_steps()) / static_cast<double>(passes);
  }
  double mean_tree_size() const {  // mean draft nodes per request-step
    return request_steps() == 0
               ? 0.0
               : static_cast<double>(draft_nodes()) / static_cast<double>(request_steps());
  }
  double undrafted_fraction() const {
    return request_steps() == 0
               ? 0.0
               : static_cast<double>(undrafted_steps) / static_cast<double>(request_steps());
  }
};

// One verification pass: which prompts it verified, with their contexts and tree sizes.
struct BatchStepLog {
  std::vector<int> prompts;  // prompt index of each sequence verified, in pass order
  std::vector<int64_t> c;    // its tokens in the target cache before the pass
  std::vector<int> n;        // its draft nodes this pass
};

class BatchDecoder {
 public:
  // `target` (and `draft`, when StrategyNeedsDraft) are not owned and must outlive the decoder.
  // Up to `max_batch` sequences are in flight; `max_context` bounds prompt + new tokens. Every
  // slot's strategy is made in one context (MakeStrategyContext): with options.latency null, the
  // strategies that price steps share one T_verify model measured on the target now, over
  // s = 1 .. max_batch * (max_tree_nodes + 1).
  static absl::StatusOr<std::unique_ptr<BatchDecoder>> Create(const Transformer* target,
                                                              const Transformer* draft,
                                                              const StrategyOptions& options,
                                                              int max_batch, int64_t max_context);

  // Decodes max_new_tokens after each prompt, at most max_batch in flight, prompts joining in
  // order as slots free up. Results are in prompt order; ttft_s and total_s of a result count from
  // the moment its prompt joined the batch. `progress(done, total)` runs after each finished
  // prompt; `on_step` after each verification pass.
  absl::StatusOr<std::vector<GenerationResult>> Run(
      const std::vector<std::vector<planner::TokenId>>& prompts, int max_new_tokens,
      const std::function<void(int, int)>& progress = {},
      const std::function<void(const BatchStepLog&)>& on_step = {});

  const BatchCounters& counters() const { return counters_; }
  const StrategyOptions& options() const { return options_; }
  int max_batch() const { return static_cast<int>(slots_.size()); }
  // The first slot's strategy (its name and policy; every slot runs the same one).
  const DraftStrategy& strategy() const { return slots_[0]->strategy(); }
  // Every slot's draft-model counters summed (nullopt when the strategy has no draft model).
  std::optional<DrafterCounters> drafter_counters() const;
  // Every slot's planner-policy counters summed (nullopt when the strategy has no policy).
  std::optional<planner::PolicyStats> policy_stats() const;
  // Target KV-cache bytes over all slots (preallocated).
  int64_t cache_bytes() const;

 private:
  BatchDecoder() = default;
  absl::Status DraftAll(const std::vector<DecodeSequence*>& active);

  const Transformer* target_ = nullptr;
  StrategyOptions options_;
  int64_t max_context_ = 0;
  StrategyContextStorage storage_;  // the plan backend and latency models the slots' context uses
  const costmodel::LatencyModel* latency_ = nullptr;        // StrategyContext::latency
  const costmodel::LatencyModel* draft_latency_ = nullptr;  // StrategyContext::draft_latency
  std::vector<std::unique_ptr<DecodeSequence>> slots_;
  std::unique_ptr<BatchStepPlanner> batch_planner_;  // strategy kBatch
  // Strategy kBatch with the gate on: one speculation gate for the whole batch (every member's
  // Observe feeds it; batch.h).
  std::optional<planner::SpeculationGate> batch_gate_;
  std::vector<int64_t> contexts_;                   // scratch: the active sequences' contexts
  planner::Tree root_only_;                         // scratch: an undrafted step's tree
  costmodel::BatchShape probe_shape_, root_shape_;  // scratch: a probe's pass and a plain pass
  planner::BatchPlan plan_;
  BatchCounters counters_;
};

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_BATCH_DECODER_H_
