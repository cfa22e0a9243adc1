// Operation WhatIfOnline: a stream of requests served online by a continuous-batching engine with
// its scheduler limits (whatif/online.h), priced on the engine's whole step, for plain decoding
// and chains of K draft tokens. Serves `specplan whatif --online`.
//
//   WhatIfOnlineRequest req;  req.cost.model = "llama3.1-8b";  req.cost.gpu = "h100";
//   req.acceptance = *ops::LoadAcceptance(...);          // a per-step trace, or rates
//   req.online.arrivals.rates = {1, 2, 4, 8};
//   absl::StatusOr<WhatIfOnlineResult> r = ops::WhatIfOnline(req);
//
// Requests: with a per-step trace (and not `independent`) request i is the trace's request
// i mod R: its prompt length, its output length (acc_len's length) and its acceptance walk;
// otherwise (rates, or `independent`) lengths come from the trace when it has one, else from
// prompt_tokens / output_tokens drawn uniformly in [lo, hi] (seeded), and each step's accepted
// tokens are drawn from the per-position rates.
// Limits: each one not given is the engine's default (whatif::DefaultEngineLimits) for the
// profile's engine and the GPU's memory; the KV cache holds kv_cache_tokens when given, else what
// the memory fraction leaves after the weights (whatif::KvCacheTokens). On SGLang, whose
// max_running_requests default is 48 only when it speculates, plain decoding's rows are replayed
// with the default it has without speculation.
#ifndef SPECPLAN_OPS_WHATIF_ONLINE_OP_H_
#define SPECPLAN_OPS_WHATIF_ONLINE_OP_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ops/cost_request.h"
#include "ops/engine_limits.h"
#include "ops/whatif_op.h"
#include "planner/acceptance/engine_acceptance.h"
#include "whatif/online.h"

namespace specplan::ops {

// Tokens drawn uniformly in [lo, hi] (lo == hi: fixed).
struct LengthRange {
  int64_t lo = 0, hi = 0;
};
// "N" or "LO:HI" (1 <= LO <= HI <= 2^24). Errors quote the text and say why.
absl::StatusOr<LengthRange> ParseLengthRange(const std::string& text);

struct WhatIfOnlineRequest {
  CostRequest cost;                      // its drafter must be an architecture
  planner::EngineAcceptance acceptance;  // as loaded (ops/acceptance_op.h LoadAcceptance)
  bool independent = false;              // draw from the rates even when a trace is given
  // Lengths when the acceptance holds no trace; required then (lo = 0: not given).
  LengthRange prompt_tokens, output_tokens;
  int64_t num_prompts = 0;  // requests per replay; 0 = the trace's requests (1000 for rates)
  uint64_t seed = 0;        // arrivals, lengths and acceptance draws
  // Settings and arrivals; its limits are replaced by the ones below.
  whatif::OnlineOptions online;
  // The engine's limits (ops/engine_limits.h); each not given = the engine's default.
  EngineLimitRequest limits;
  // A bound on the work, checked once the requests are built and before any replay: the output
  // tokens replayed (the requests' output tokens x settings x loads); more is RESOURCE_EXHAUSTED.
  // 0 = no bound (the CLI and Python); the gRPC service sets its --max-online-tokens.
  int64_t max_replayed_tokens = 0;
};

struct WhatIfOnlineResult {
  whatif::OnlineReport report;
  WhatIfSource source;           // trace_path: the acceptance's source
  std::string drafter;           // the request's drafter name
  std::string draft_priced_by;   // the step model's
  std::string scheduler_engine;  // whose scheduler and defaults: "vllm" or "sglang"
  std::string requests_from;     // "trace" or "rates"
  // Where the KV cache's size came from: "given", or "<fraction field> = F of <gpu> memory".
  std::string kv_from;
};

// The request alone: num_prompts, lengths, the limits given, dtype and drafter names. Errors name
// the field and value.
absl::Status Validate(const WhatIfOnlineRequest& req);
// The same without the cost's fields (for a cost resolved already).
absl::Status ValidateLoad(const WhatIfOnlineRequest& req);

// A cost resolved already (the Python module's specplan.Cost): the target's pass, the engine's
// whole step over it (with a drafter for K > 0), the specs the KV cache is sized from, and the
// profile's engine (whose scheduler and defaults apply). The pointers must outlive the call.
struct OnlineCost {
  const costmodel::LatencyModel* verify = nullptr;
  const costmodel::StepModel* step = nullptr;
  costmodel::ModelSpec model_spec;
  costmodel::GpuSpec gpu_spec;
  std::string engine;
};
// In-process: resolves the cost and its step model, builds the requests, replays each load and
// setting. Errors name the field ("acceptance: request 'x' has prompt_tokens = 0: ...",
// "rates[0] = 0: must be > 0 requests/s", "kv_cache_tokens = 100: request 3 needs ...").
absl::StatusOr<WhatIfOnlineResult> WhatIfOnline(const WhatIfOnlineRequest& req);
// The same on a resolved cost; req.cost is not read (source names the specs and the engine;
// drafter is the step model's).
absl::StatusOr<WhatIfOnlineResult> WhatIfOnline(const WhatIfOnlineRequest& req,
                                                const OnlineCost& cost);
nlohmann::json ToJson(const WhatIfOnlineResult& result);
// The source's lines and whatif::FormatOnlineTable.
std::string OnlineTable(const WhatIfOnlineResult& result);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_WHATIF_ONLINE_OP_H_
