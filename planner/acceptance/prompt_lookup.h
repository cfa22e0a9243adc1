// vLLM's n-gram drafter (prompt lookup), run over a request's tokens: at each decoding position,
// how many draft tokens it can propose. A per-step trace's acc_len == 1 for n-gram says only that
// no draft was accepted; whether the matcher found nothing (vLLM then drafts nothing and the step
// verifies one token) or proposed tokens that were rejected (the step verifies K + 1) follows
// from the tokens themselves, which SpecDecode-Bench's traces hold (prompt_token_ids,
// generated_token_ids).
//
// The rule is vLLM's (vllm/v1/spec_decode/ngram_proposer.py,
// _find_longest_matched_ngram_and_propose_tokens): over the context (prompt + the tokens generated
// so far), find the longest n in [min_n, max_n] whose last n tokens occur earlier in the context
// (an occurrence may overlap the suffix but is not the suffix itself), take the earliest such
// occurrence, and propose the tokens that follow it, at most K of them, never past the context's
// end. No occurrence of the last min_n tokens: no draft. vLLM's further cap at max_model_len is
// not applied (a trace's requests fit their model).
#ifndef SPECPLAN_PLANNER_ACCEPTANCE_PROMPT_LOOKUP_H_
#define SPECPLAN_PLANNER_ACCEPTANCE_PROMPT_LOOKUP_H_

#include <cstdint>
#include <vector>

namespace specplan::planner {

// vLLM's speculative_config.prompt_lookup_min / prompt_lookup_max (vllm/config SpeculativeConfig:
// both default to 5 when neither is given; one given sets the other).
struct PromptLookup {
  int min_n = 5;  // >= 1
  int max_n = 5;  // >= min_n
};
inline constexpr int kMaxPromptLookup = 64;  // the largest max_n accepted

// rooms[i], i = 0 .. generated.size(): the draft tokens the matcher can propose when the context is
// the prompt followed by generated[0, i) (0 = no match), capped at `cap`; the proposal drafting K
// is min(K, rooms[i]) tokens. Runs in O(context x (max_n - min_n + 1)) expected time.
std::vector<int32_t> PromptLookupRooms(const std::vector<int32_t>& prompt,
                                       const std::vector<int32_t>& generated,
                                       const PromptLookup& lookup, int32_t cap);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_ACCEPTANCE_PROMPT_LOOKUP_H_
