// The user's acceptance as their engine reports it: per-position acceptance of a chain drafter
// (survival rates), read from one of five text formats engines and benchmarks emit.
//
//   vllm-prometheus  A scrape of vLLM's /metrics (Prometheus text exposition): the counters
//                    vllm:spec_decode_num_drafts_total, ..._num_draft_tokens_total,
//                    ..._num_accepted_tokens_total and ..._num_accepted_tokens_per_pos_total
//                    {position="i"}. Label sets other than position (engines, models) are summed
//                    per position. Several concatenated scrapes: each series keeps its last value,
//                    and a series whose value goes down is refused (counters only grow).
//                    per_position[i] = accepted at position i / drafts.
//   vllm-log         vLLM's periodic log line "SpecDecoding metrics: Mean acceptance length: m,
//                    ..., Accepted: a tokens, Drafted: d tokens, Per-position acceptance rate: r0,
//                    r1, ..." (any log prefix before it). Each line is one interval with
//                    d / k_max drafts; intervals are pooled weighted by their drafts (the mean
//                    acceptance length too). Intervals with 0 drafted tokens are skipped.
//   vllm-requests    JSONL, one finished request per line (a "data: " prefix is allowed), either
//                    vLLM's per-request object (--per-request-spec-decode-metrics, vLLM PR 48915)
//                    found at metrics.speculative_decoding, data.metrics.speculative_decoding or
//                    speculative_decoding: num_spec_tokens, num_spec_steps, num_draft_tokens,
//                    num_accepted_draft_tokens and acceptance_histogram[j] = steps that accepted
//                    exactly j drafts; or a counter form of our own, modelled on the Prometheus
//                    counters: num_drafts, num_draft_tokens, num_accepted_tokens_per_pos[k]
//                    (num_accepted_tokens optional). Requests are pooled by summing counts.
//   sglang-log       SGLang's scheduler decode log lines containing "accept len: m" (tokens per
//                    verification step, bonus included). The mean of the lines, each weighted
//                    equally. Such a log does not give the draft length or the per-position
//                    rates: the caller passes k_max (options.k_max), and per_position comes from a
//                    GEOMETRIC model per_position[i] = a^(i+1), with a in [0,1] chosen so that
//                    1 + sum_i per_position[i] equals the logged mean.
//   step-trace       SpecDecode-Bench per-step traces, JSONL, one request per line: {"id",
//                    "prompt_token_ids": [...], "acc_<drafter>": {"acc_len": [...]}, ...} or
//                    {"id", "prompt_tokens": N, "acc_len": [...]}. acc_len[i] (i >= 1) = tokens a
//                    step starting at output position i emits when drafting up to the recorded
//                    length (1 + leading drafts accepted); acc_len[0] is the prefill step. Each
//                    request is walked from position 1: a step at i with chains of k emits
//                    min(acc_len[i], k + 1) tokens and the next step starts that many positions
//                    on. k_max = the largest acc_len - 1 seen, or options.k_max when given (a line
//                    may state "k_max" too: then no acc_len may exceed k_max + 1).
//
// Errors are INVALID_ARGUMENT "<source>:<line>:<column>: <field> = <value>: <why>".
#ifndef SPECPLAN_PLANNER_ACCEPTANCE_ENGINE_ACCEPTANCE_H_
#define SPECPLAN_PLANNER_ACCEPTANCE_ENGINE_ACCEPTANCE_H_

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/acceptance/prompt_lookup.h"

namespace specplan::planner {

enum class AcceptanceFormat { kVllmPrometheus, kVllmLog, kVllmRequests, kSglangLog, kStepTrace };

// "vllm-prometheus", "vllm-log", "vllm-requests", "sglang-log", "step-trace".
const char* AcceptanceFormatName(AcceptanceFormat f);
// INVALID_ARGUMENT "format: unknown value 'x' (known: ...)" for other names.
absl::StatusOr<AcceptanceFormat> ParseAcceptanceFormat(const std::string& name);

// One request of a per-step trace: its prompt length and, for each decoding position i >= 1 of its
// output, how many tokens a step starting at i would emit when drafting up to `trace_k_max`
// (SpecDecode-Bench's acc_len[i]: 1 + leading draft tokens accepted, bonus included; acc_len[0] is
// the prefill step and is stored as given).
struct AcceptanceTraceRequest {
  std::string id;
  int64_t prompt_tokens = 0;
  std::vector<int32_t> acc_len;  // [output positions], each >= 1
  // [output positions] or empty: the draft tokens the drafter can propose at each position (an
  // n-gram matcher's room, planner/acceptance/prompt_lookup.h; 0 = no match, the step drafts
  // nothing). Empty: a drafter that always drafts the setting's K.
  std::vector<int32_t> draft_room;

  // Draft tokens a step at output position i proposes when the setting drafts k.
  int DraftAt(size_t i, int k) const {
    return draft_room.empty() || i >= draft_room.size() ? k : std::min(k, draft_room[i]);
  }
  // Tokens a step at output position i emits (bonus included) when the setting drafts k: 1 +
  // the leading drafts accepted, min(acc_len[i], DraftAt(i, k) + 1).
  int EmittedAt(size_t i, int k) const { return std::min(acc_len[i], DraftAt(i, k) + 1); }
};

struct EngineAcceptance {
  AcceptanceFormat format = AcceptanceFormat::kVllmPrometheus;
  std::string source;                 // file path or "<stdin>"
  std::vector<double> per_position;   // [k_max] P(draft token at position i (0-based) is accepted)
                                      // = survival rate, non-increasing, in [0,1]
  double mean_acceptance_length = 0;  // tokens per verification step, bonus included
                                      // (1 + sum of per_position) unless the source states it
  int k_max = 0;                      // draft length the source ran with (per_position.size())
  int64_t drafts = 0;                 // verification steps counted (0 when unknown)
  int64_t draft_tokens = 0;           // tokens drafted (0 when unknown)
  int64_t accepted_tokens = 0;        // draft tokens accepted (0 when unknown)
  std::vector<AcceptanceTraceRequest> requests;  // per-step traces only (format kStepTrace)
  // Added: lines read as requests (vllm-requests, step-trace) or intervals (vllm-log, sglang-log
  // lines used); 0 for a Prometheus scrape.
  int64_t records = 0;
  std::string drafter;  // step-trace: the acc_* key read ("acc_eagle"), "" for the plain form
  // step-trace read with EngineAcceptanceOptions::prompt_lookup: its settings, and the output
  // positions (of all requests) where the matcher finds no match; nullopt otherwise.
  std::optional<PromptLookup> prompt_lookup;
  int64_t positions = 0;            // output positions >= 1 of all requests (with prompt_lookup)
  int64_t unmatched_positions = 0;  // of those, positions with no match

  bool has_trace() const { return !requests.empty(); }
  // Expected tokens per step (bonus included) when drafting a chain of k (0 <= k <= k_max) under
  // independence between steps: 1 + sum_{i<k} per_position[i]. With a trace, the pooled walk of
  // every request capped at k (a step at position i emits min(acc_len[i], k + 1)), as
  // SpecDecode-Bench counts it. k outside [0, k_max] is a programmer error (SPECPLAN_CHECK).
  double TokensPerStep(int k) const;
};

// Added: what the text alone may not say.
struct EngineAcceptanceOptions {
  // step-trace: which drafter's acc_len to read: "eagle" or "acc_eagle" reads "acc_eagle". "" =
  // the first acc_* key of the first request (or the plain top-level acc_len).
  std::string drafter;
  // sglang-log: the draft length (required there). step-trace: the chain length per_position is
  // walked with (default: the largest acc_len - 1). Other formats: when > 0, must equal the number
  // of positions the source gives. 0 = not given.
  int k_max = 0;
  // step-trace: run vLLM's n-gram matcher with these settings over each line's prompt_token_ids
  // and generated_token_ids (both then required) and keep each position's room
  // (AcceptanceTraceRequest::draft_room). A line whose acc_len accepts more drafts than the
  // matcher can propose there is refused: the trace was recorded with other settings. Other
  // formats: refused (they hold no tokens).
  std::optional<PromptLookup> prompt_lookup;
};

// Parses `text`; format nullopt = detect from content (the error says what was tried). Errors are
// INVALID_ARGUMENT naming source:line:column and the field, e.g.
// "metrics.txt:12:1: vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"2\"} = 80
// exceeds position 1's 70: per-position acceptance must not rise with position".
absl::StatusOr<EngineAcceptance> ParseEngineAcceptance(
    const std::string& text, const std::string& source,
    std::optional<AcceptanceFormat> format = std::nullopt,
    const EngineAcceptanceOptions& options = {});
// Reads `path` ("-" reads stdin, source "<stdin>") and parses it. NOT_FOUND when it cannot be read.
absl::StatusOr<EngineAcceptance> LoadEngineAcceptance(
    const std::string& path, std::optional<AcceptanceFormat> format = std::nullopt,
    const EngineAcceptanceOptions& options = {});

// {"format", "source", "per_position", "mean_acceptance_length", "k_max", "drafts",
//  "draft_tokens", "accepted_tokens", "requests" (count of records read), "drafter" (step-trace),
//  "steps" (step-trace only: steps of the k_max walk)}.
nlohmann::json EngineAcceptanceToJson(const EngineAcceptance& a);

}  // namespace specplan::planner

#endif  // SPECPLAN_PLANNER_ACCEPTANCE_ENGINE_ACCEPTANCE_H_
