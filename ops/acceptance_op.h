// Operation Acceptance: the acceptance an engine reports (a vLLM /metrics scrape or log, vLLM
// per-request metrics, an SGLang log, a SpecDecode-Bench step trace), read into per-position
// acceptance, the mean acceptance length and the tokens per step a chain of k gives
// (planner/acceptance/engine_acceptance.h). Serves `specplan acceptance`, and loads the
// acceptance that estimate, whatif --acceptance and schedule --acceptance replay.
//
//   AcceptanceRequest req;  req.path = "metrics.txt";
//   absl::StatusOr<AcceptanceResult> r = ops::Acceptance(req);
//   std::cout << ops::ToJson(*r).dump(2);
#ifndef SPECPLAN_OPS_ACCEPTANCE_OP_H_
#define SPECPLAN_OPS_ACCEPTANCE_OP_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/acceptance/engine_acceptance.h"

namespace specplan::ops {

inline constexpr int kMaxAcceptanceK = 4096;  // k_max

struct AcceptanceRequest {
  std::string path;     // the file; "-" reads stdin
  std::string format;   // vllm-prometheus, vllm-log, vllm-requests, sglang-log, step-trace; "" =
                        // detected from the content
  std::string drafter;  // step traces: which acc_* key ("eagle" -> acc_eagle); "" = the first
  int k_max = 0;        // the draft length the engine ran, [0, 4096]; 0 = from the file
  // Step traces of vLLM's n-gram drafter: its speculative_config.prompt_lookup_min / _max, to
  // run its matcher over the trace's tokens (planner/acceptance/prompt_lookup.h): a step where
  // it finds no match drafts nothing. 0 = not given; one given sets the other (as vLLM does);
  // neither = no matcher (every step drafts the setting's K).
  int prompt_lookup_min = 0;
  int prompt_lookup_max = 0;
};

struct AcceptanceResult {
  planner::EngineAcceptance acceptance;
  std::vector<double> tokens_per_step;  // [k_max + 1] tokens per step of a chain of k, index k
};

// The request alone: path given, format a known name ("format: unknown value 'x' (known: ...)"),
// k_max in [0, 4096], prompt_lookup_min and _max in [0, 64] with min <= max when both are given.
absl::Status Validate(const AcceptanceRequest& req);
// Validate, then the file read and parsed (errors name the file's line and column).
absl::StatusOr<planner::EngineAcceptance> LoadAcceptance(const AcceptanceRequest& req);
// The same on the file's text already read (the gRPC service's bytes); req.path is not read and
// `source` names the text in errors ("run.jsonl:3:1: ...").
absl::StatusOr<planner::EngineAcceptance> ParseAcceptance(const AcceptanceRequest& req,
                                                          const std::string& text,
                                                          const std::string& source);
// LoadAcceptance and the tokens per step for k = 0 .. k_max.
absl::StatusOr<AcceptanceResult> Acceptance(const AcceptanceRequest& req);

// The JSON form (`specplan acceptance --json`): planner::EngineAcceptanceToJson with
// tokens_per_step [k_max + 1].
nlohmann::json ToJson(const AcceptanceResult& result);
// The text form: format, source, drafter, k_max, drafts, requests, the per-position table, the mean
// acceptance length and, for a step trace, tokens per step for k = 1 .. min(k_max, 8)
// ('\n'-terminated).
std::string ToText(const AcceptanceResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_ACCEPTANCE_OP_H_
