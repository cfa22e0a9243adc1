// One sequence being decoded, and the per-sequence half of the decode loop that the single-sequence
// decoder (decoder.h) and the batch decoder (batch_decoder.h) share: prefill, drafting through the
// sequence's own DraftStrategy, this step's verification inputs, acceptance on the sequence's
// logits rows, the KV-cache update (gather or rebuild) and the emitted tokens. The decoders own the
// target forwards: they pack the segments of one or many sequences into one Transformer::
// ForwardBatch pass and hand each sequence its rows.
//
// Each sequence has its own target KV cache (compacted independently), its own strategy state
// (e.g. a draft KV cache) and its own RNG, so in both greedy and sampling mode a sequence decoded
// in a batch emits what it emits decoded alone with the same seed and the same trees (the trees a
// batch planner picks may differ; greedy outputs still equal AR's).
#ifndef SPECPLAN_RUNTIME_DECODE_SEQUENCE_H_
#define SPECPLAN_RUNTIME_DECODE_SEQUENCE_H_

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "planner/acceptance/acceptance.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_outputs.h"
#include "runtime/step_buffers.h"
#include "runtime/strategies/draft_strategy.h"
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
  int64_t pass = -1;          // the batch decoder's verification pass (-1: decoded alone)
};

struct GenerationResult {
  std::vector<planner::TokenId> tokens;  // [max_new_tokens] generated tokens (prompt excluded)
  double ttft_s = 0;                     // prefill + first token
  double total_s = 0;
  int64_t iterations = 0;
  std::vector<IterationLog> steps;  // [iterations] in order
};

// One verification pass's outputs for one sequence: its s rows of the packed pass.
struct SequenceLogits {
  const planner::TokenId* argmax = nullptr;  // [s] greedy mode: the argmax of each row
  const float* logits = nullptr;             // [s][V] sampling mode: the rows on the host
  torch::Tensor hidden;  // [s][h] final-norm hidden rows, when the strategy NeedsTargetHidden()
};

class DecodeSequence {
 public:
  // `target` is not owned; `strategy` drafts for this sequence only. `cache` is the target cache,
  // of prompt + new tokens + one tree slots (its own, or a row of a batch's arena).
  DecodeSequence(const Transformer* target, std::unique_ptr<DraftStrategy> strategy,
                 const StrategyOptions& options, KvCache cache);

  // A new prompt (validated by the caller): resets the cache and the strategy, seeds the RNG with
  // `seed` (a lone Generate call uses options.sampling.seed) and clears the result.
  void Start(const std::vector<planner::TokenId>& prompt, int max_new_tokens, uint64_t seed);
  // The prefill segment: the whole prompt, causal, slots [0, prompt size).
  ForwardSegment PrefillSegment();
  // After the prefill pass: `last_row` [V] is the prompt's last logits row; picks the first token
  // (the pending root).
  // `hidden_row`: the last prompt token's final-norm hidden state (kept when the strategy needs
  // it).
  void FinishPrefill(const torch::Tensor& last_row, const torch::Tensor& hidden_row = {});

  // This step's tree from the strategy (at most options.max_tree_nodes draft nodes; checked).
  absl::Status Draft();
  // The tree a batch planner chose for this step instead (same checks); `draft_s` is this
  // sequence's share of the batch's drafting and planning time.
  absl::Status SetTree(const planner::Tree& tree, double draft_s);
  // The verification segment of this step's tree: positions c + depth, the ancestor block.
  ForwardSegment VerifySegment();
  // Acceptance on this sequence's rows, KV update, strategy Observe and the emitted tokens.
  // `counters` gets the step's acceptance, verified tokens and any rebuild forward; `pass` is
  // logged with the step (IterationLog::pass).
  absl::Status Accept(const SequenceLogits& rows, DecodeCounters* counters, int64_t pass = -1);

  bool done() const;
  int64_t c() const { return cache_.length(); }  // tokens in the target cache
  DecodeState state() const { return DecodeState{committed_, cache_.length(), hidden_}; }
  bool needs_hidden() const { return strategy_->NeedsTargetHidden(); }
  double draft_seconds() const { return draft_s_; }  // this step's drafting + planning
  const planner::Tree& tree() const { return tree_; }
  DraftStrategy& strategy() { return *strategy_; }
  const DraftStrategy& strategy() const { return *strategy_; }
  const KvCache& cache() const { return cache_; }
  // The result so far (tokens truncated to max_new_tokens once done()).
  GenerationResult& result() { return result_; }
  // The tokens the sequence has committed, prompt included.
  const std::vector<planner::TokenId>& committed() const { return committed_; }
  const planner::AcceptResult& last_accept() const { return accept_; }

 private:
  planner::TokenId SelectToken(const torch::Tensor& logits_row);
  absl::Status CheckTree() const;

  const Transformer* target_;
  StrategyOptions options_;
  std::unique_ptr<DraftStrategy> strategy_;
  KvCache cache_;
  StepBuffers step_;
  std::mt19937_64 rng_;
  std::vector<planner::TokenId> committed_;
  torch::Tensor hidden_;  // [h] the target's hidden row before the root (NeedsTargetHidden only)
  int max_new_tokens_ = 0;
  double draft_s_ = 0;  // this step's drafting + planning seconds
  GenerationResult result_;
  planner::Tree tree_;
  planner::TreeOutputOptions out_opt_;
  planner::TreeOutputs outs_;
  planner::GreedyAcceptWorkspace greedy_ws_;
  planner::SampleAcceptWorkspace sample_ws_;
  planner::AcceptResult accept_;
  std::vector<planner::TokenId> argmax_;
  std::vector<float> probs_;
  std::vector<int32_t> order_;
  std::vector<int64_t> src_;
  std::vector<planner::TokenId> path_;  // KvUpdate::kRebuild: the accepted path re-forwarded
};

// The checks both decoders' Create run: a draft model when the strategy needs one, with the
// target's vocabulary; max_context >= 2; max_tree_nodes in range; temperature > 0 when sampling.
absl::Status ValidateDecoderOptions(const Transformer& target, const Transformer* draft,
                                    const StrategyOptions& options, int64_t max_context);

// What MakeStrategyContext creates for a context and the decoder keeps alive with it.
struct StrategyContextStorage {
  std::unique_ptr<planner::InProcessPlanBackend> backend;  // when options.plan_backend is null
  std::unique_ptr<costmodel::LatencyModel> latency;        // T_verify measured on the target
  std::unique_ptr<costmodel::LatencyModel> draft_latency;  // the draft model's forward seconds
};

// The context both decoders create their sequences' strategies in, resolved once for every
// sequence: the target cache holds max_context + one tree (max_len), the draft model is passed
// only to strategies that need one, plans go to options.plan_backend or to an
// InProcessPlanBackend created into storage->backend, and a strategy that prices steps
// (StrategyNeedsLatency) gets options.latency or, without one, T_verify measured on the target
// now over s = 1 .. max_verify_tokens (MeasureVerifyLatencyUpTo) into storage->latency. When a
// gated strategy (bestfirst, dynatree, batch) runs its draft model on measured draft times, the
// draft model's forward seconds are measured here too, once for every sequence
// (StrategyContext::draft_latency).
absl::StatusOr<StrategyContext> MakeStrategyContext(const Transformer* target,
                                                    const Transformer* draft,
                                                    const StrategyOptions& options,
                                                    int64_t max_context, int64_t max_verify_tokens,
                                                    StrategyContextStorage* storage);

// A sequence with its own strategy of options.strategy, created in `ctx`, and `cache` as its
// target cache (ctx.max_len slots), or a new cache of its own when `cache` has none.
absl::StatusOr<std::unique_ptr<DecodeSequence>> NewDecodeSequence(const StrategyOptions& options,
                                                                  const StrategyContext& ctx,
                                                                  KvCache cache = KvCache());

// InvalidArgument naming the bad field: an empty prompt, an id outside [0, vocab), max_new_tokens
// < 1, or prompt + max_new_tokens over max_context.
absl::Status ValidatePrompt(const std::vector<planner::TokenId>& prompt, int64_t vocab,
                            int max_new_tokens, int64_t max_context);

// Prefills every sequence's prompt in ONE target pass (ForwardBatch) and picks each first token.
void PrefillTogether(const Transformer& target, absl::Span<DecodeSequence* const> sequences);

// Seconds one VerifyTogether call spent.
struct VerifyTimes {
  double verify_s = 0;  // the target pass and the read-back of its outputs
  double update_s = 0;  // acceptance, KV updates, strategy Observe
};

// Verifies every sequence's current tree in ONE target pass (ForwardBatch over the packed trees),
// then accepts on each sequence's rows. Counts one target forward plus each sequence's step;
// `pass` is logged with each sequence's step (IterationLog::pass).
absl::StatusOr<VerifyTimes> VerifyTogether(const Transformer& target,
                                           absl::Span<DecodeSequence* const> sequences, bool greedy,
                                           DecodeCounters* counters, int64_t pass = -1);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_DECODE_SEQUENCE_H_
