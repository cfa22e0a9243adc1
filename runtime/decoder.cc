#include "runtime/decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "planner/tree/tree_outputs.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/status_macros.h"

namespace specplan::runtime {
absl::StatusOr<std::unique_ptr<SpeculativeDecoder>> SpeculativeDecoder::Create(
    const Transformer* target, const Transformer* draft, const StrategyOptions& options,
    int64_t max_context) {
  SPECPLAN_CHECK(target != nullptr);
  SPECPLAN_RETURN_IF_ERROR(ValidateDecoderOptions(*target, draft, options, max_context));
  std::unique_ptr<SpeculativeDecoder> d(new SpeculativeDecoder());
  d->target_ = target;
  d->options_ = options;
  d->max_context_ = max_context;
  SPECPLAN_ASSIGN_OR_RETURN(const StrategyContext ctx,
                            MakeStrategyContext(target, draft, options, max_context,
                                                options.max_tree_nodes + 1, &d->storage_));
  SPECPLAN_ASSIGN_OR_RETURN(d->sequence_, NewDecodeSequence(options, ctx));
  return d;
}

int64_t SpeculativeDecoder::cache_bytes() const { return sequence_->cache().bytes(); }

absl::StatusOr<GenerationResult> SpeculativeDecoder::Generate(
    const std::vector<planner::TokenId>& prompt, int max_new_tokens) {
  SPECPLAN_RETURN_IF_ERROR(
      ValidatePrompt(prompt, target_->config().vocab_size, max_new_tokens, max_context_));
  c10::InferenceMode guard;
  DecodeSequence& q = *sequence_;
  DecodeSequence* const one[] = {&q};
  const double t_start = NowSeconds();
  q.Start(prompt, max_new_tokens, options_.sampling.seed);
  // Prefill: the whole prompt; the first token becomes the pending root.
  PrefillTogether(*target_, one);
  q.result().ttft_s = NowSeconds() - t_start;
  counters_.prefill_s += q.result().ttft_s;
  counters_.target_forwards += 1;
  while (!q.done()) {
    SPECPLAN_RETURN_IF_ERROR(q.Draft());
    counters_.draft_s += q.draft_seconds();
    // Verify the whole tree in one target pass, accept, update the cache.
    SPECPLAN_ASSIGN_OR_RETURN(VerifyTimes t,
                              VerifyTogether(*target_, one, options_.sampling.greedy, &counters_));
    counters_.verify_s += t.verify_s;
    counters_.update_s += t.update_s;
  }
  GenerationResult result = std::move(q.result());
  result.total_s = NowSeconds() - t_start;
  counters_.total_s += result.total_s;
  counters_.prompts += 1;
  counters_.new_tokens += max_new_tokens;
  return result;
}

}  // namespace specplan::runtime
