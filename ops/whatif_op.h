// Operation WhatIf: what a recorded decoding trace (whatif/trace.h) would have bought on a GPU,
// without running a model, in three forms that share their inputs (a trace and a cost):
//   WhatIf              the sweep of tree budgets and strategies (whatif/sweep.h)
//   WhatIfConcurrency   the replay with B requests in flight (whatif/concurrency.h)
//   WhatIfChains        chains of K over the user's own acceptance on the engine's whole step
//                       (whatif/chain_replay.h)
// Serves `specplan whatif` (its --concurrency and --acceptance forms too); the service's WhatIf
// RPC takes the sweep over a trace and a cost it holds (the CostView overload).
//
//   WhatIfRequest req;  req.cost.model = "qwen3-8b";  req.cost.gpu = "h100";
//   absl::StatusOr<WhatIfResult> r = ops::WhatIf(req);   // the bundled trace, resolved in-process
//   std::cout << ops::ToJson(*r).dump(2);
//
// A drafter architecture (CostRequest::drafter) prices its whole step at the trace's mean context
// and largest marginals gamma (whatif::DraftShapeOf, ops::PriceCycle): that step's draft time is
// the replay's drafter cost and its sampling and host work join T_aux.
#ifndef SPECPLAN_OPS_WHATIF_OP_H_
#define SPECPLAN_OPS_WHATIF_OP_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/step/host_time.h"
#include "ops/cost_request.h"
#include "ops/engine_limits.h"
#include "planner/acceptance/engine_acceptance.h"
#include "whatif/chain_replay.h"
#include "whatif/concurrency.h"
#include "whatif/schedule.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::ops {

// What a what-if run analysed and what priced it; every output names it: trace_path (the trace or
// acceptance file; the bundled trace by default), model, gpu, dtype, profile (a bundled profile's
// id, a profile file's path; "" = none), engine and engine_version (the profile's; "" = none
// known). The schedules' metadata names the same (whatif/schedule.h).
using WhatIfSource = whatif::ScheduleSource;

// The inputs every form shares.
struct WhatIfInputs {
  CostRequest cost;       // target, GPU, engine, profile, drafter, host terms, t_aux_ms
  std::string trace;      // JSONL path; "" = the bundled trace (whatif::DefaultTracePath())
  double t_draft_ms = 0;  // the marginals drafter's network time by hand, ms (>= 0); 0 = none
  // Called with (done, total) rows or batch sizes; may be empty.
  std::function<void(int, int)> progress;
};

// ---- the sweep ----------------------------------------------------------------------------------

struct WhatIfRequest : WhatIfInputs {
  std::vector<int> budgets = {1, 2, 4, 8, 16, 32, 64, 128};  // draft nodes, each in [1, 8191]
  std::vector<whatif::Strategy> strategies = whatif::AllStrategies();
  int n_max = 0;                 // controller / scan search end; 0 = the largest budget; [0, 8191]
  double policy_forward_ms = 0;  // drafter time per forward for dynatree / fixed / linear, ms
  planner::FixedTreeOptions fixed_tree = [] {
    planner::FixedTreeOptions f;  // fixed: depth 8, branch 3, tau 0.1 (the CLI's defaults)
    f.depth = 8;
    f.branch = 3;
    f.tau = 0.1;
    return f;
  }();
  bool per_step = false;   // keep every row's per-step results
  bool calibrate = false;  // controller and scan calibrate the surrogate online
};

struct WhatIfResult {
  whatif::WhatIfReport report;
  WhatIfSource source;
};

// The request alone (no trace read, no cost resolved): budgets, strategies, n_max, the by-hand
// times, the fixed tree's options, dtype and drafter names. Errors name the field and value
// ("budgets[0] = 0: must be in [1, 8191] ...", "t_draft_ms = -1: must be >= 0").
absl::Status Validate(const WhatIfRequest& req);
// The sweep's options from the request, before the drafter is priced.
whatif::WhatIfOptions SweepOptions(const WhatIfRequest& req);
// Over a trace and a cost the caller holds (the service's WhatIf): Validate, the drafter priced
// at the trace's shape, whatif::RunWhatIf. The report only: the caller names its own source.
absl::StatusOr<whatif::WhatIfReport> WhatIf(const WhatIfRequest& req, const whatif::Trace& trace,
                                            const CostView& cost);
// Over options a front end built and checked itself (the service's WhatIf, from its proto and its
// limits): the drafter priced at the trace's shape (options.drafter and t_aux_s set from the
// cost), whatif::RunWhatIf. WhatIf(req, trace, cost) is Validate, SweepOptions and this.
absl::StatusOr<whatif::WhatIfReport> WhatIfSweep(whatif::WhatIfOptions options,
                                                 const whatif::Trace& trace, const CostView& cost);
// In-process: loads req.trace, resolves req.cost, sweeps. Errors name the field ("trace = 'x':
// ...", "drafter = 'x': ...", "<trace path>: step 3: ...").
absl::StatusOr<WhatIfResult> WhatIf(const WhatIfRequest& req);
// The JSON form (`specplan whatif --json`): whatif::WhatIfReportToJson with the source's keys:
// trace.path, model, gpu, profile, engine, engine_version (null when "").
nlohmann::json ToJson(const WhatIfResult& result);

// ---- under concurrency --------------------------------------------------------------------------

struct WhatIfConcurrencyRequest : WhatIfInputs {
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};  // each in [1, 4096]
  bool recorded = false;  // replay the trace's recorded passes instead (batch_sizes ignored)
  int n_max = 128;        // draft nodes per request, [1, 8191]
  // The batched draft pass's growth (DrafterCost::batch_growth, >= 0). None: the default
  // (whatif::kDefaultDraftBatchGrowth) for a cost class or a by-hand t_draft_ms, else the step
  // model's growth from b = 1 to 16.
  std::optional<double> draft_batch_growth;
  bool batch_scan = false;
  bool best_fixed = false;
  bool best_chain = false;
  bool calibrate = false;
};

struct WhatIfConcurrencyResult {
  whatif::ConcurrencyReport report;
  WhatIfSource source;
};

// The request alone: batch sizes, n_max, the by-hand times and growth, dtype and drafter names.
absl::Status Validate(const WhatIfConcurrencyRequest& req);
// The replay's options from the request over a trace and a cost (the drafter priced at the trace's
// shape, the batch growth as above), for RunConcurrency and the schedules built on it.
whatif::ConcurrencyOptions ReplayOptions(const WhatIfConcurrencyRequest& req,
                                         const whatif::Trace& trace, const CostView& cost);
// Over a trace and a cost the caller holds: Validate, ReplayOptions, whatif::RunConcurrency.
absl::StatusOr<whatif::ConcurrencyReport> WhatIfConcurrency(const WhatIfConcurrencyRequest& req,
                                                            const whatif::Trace& trace,
                                                            const CostView& cost);
// In-process: loads req.trace, resolves req.cost, replays.
absl::StatusOr<WhatIfConcurrencyResult> WhatIfConcurrency(const WhatIfConcurrencyRequest& req);
// whatif::ConcurrencyReportToJson with the source's keys (as ToJson(WhatIfResult)).
nlohmann::json ToJson(const WhatIfConcurrencyResult& result);

// ---- chains over the user's acceptance ----------------------------------------------------------

struct WhatIfChainsRequest {
  CostRequest cost;  // its drafter must be an architecture: the step model prices the chains
  planner::EngineAcceptance acceptance;  // as loaded (ops/acceptance_op.h LoadAcceptance)
  whatif::ChainReplayOptions replay;     // batch sizes, chain lengths, batching, context, ...
  // Traces, copies: count each request's prefill (replay.prefill, priced by the step model and
  // the target's pass) under the engine's limits: `limits` given, else the engine's defaults for
  // the profile's engine (ops/engine_limits.h ResolveEngineLimits).
  bool prefill = false;
  EngineLimitRequest limits;  // with prefill only
};

struct WhatIfChainsResult {
  whatif::ChainReplayReport report;
  WhatIfSource source;          // trace_path: the acceptance's source
  std::string drafter;          // the request's drafter name
  std::string draft_priced_by;  // the step model's ("composed", "by hand", ...)
  costmodel::HostTime host;     // the host terms used
  planner::EngineAcceptance acceptance;
  bool prefill = false;  // the request's prefill counted (WhatIfChainsRequest::prefill)
};

// The request alone: the replay's batch sizes, context and max_requests, dtype and drafter names.
absl::Status Validate(const WhatIfChainsRequest& req);
// In-process: resolves req.cost and its step model, replays the chains (whatif::ReplayChains,
// whose errors name its fields: "chain_lengths: ...", "batch_sizes: ...", "context = ...").
absl::StatusOr<WhatIfChainsResult> WhatIfChains(const WhatIfChainsRequest& req);
// whatif::ChainReplayToJson with drafter, draft_priced_by, host, acceptance and the source's keys.
nlohmann::json ToJson(const WhatIfChainsResult& result);
// The step line and the chain table: "drafter <d> (draft priced by <p>); host: <provenance>\n"
// then whatif::FormatChainReplay.
std::string ChainsTable(const WhatIfChainsResult& result);

// ---- shared -------------------------------------------------------------------------------------

// The in-process steps the operations over a trace share (WhatIf*, Schedule):
// Loads in.trace (the bundled trace when "") and names it in *source; errors "trace <message>".
absl::StatusOr<whatif::Trace> LoadWhatIfTrace(const WhatIfInputs& in, WhatIfSource* source);
// Resolves in.cost (CostRequest::Resolve with in.t_draft_ms) and names it in *source.
absl::StatusOr<ResolvedCost> ResolveWhatIfCost(const WhatIfInputs& in, WhatIfSource* source);
// Names a resolved cost in *source: model, gpu, dtype, profile (a bundled profile's id, a profile
// file's path), engine and engine_version.
void NameCost(const CostRequest& cost, const costmodel::ResolvedLatencyModel& resolved,
              costmodel::DType dtype, WhatIfSource* source);
// The replay's drafter and T_aux over a trace: with a step model its whole step at the trace's
// mean context and largest marginals gamma (PriceCycle); a cost class as the view gives it.
void PriceTraceDrafter(const whatif::Trace& trace, const CostView& cost,
                       costmodel::DrafterCost* drafter, double* t_aux_s);
// A replay's error after the trace it read: "<trace_path>: <message>".
absl::Status InTrace(const absl::Status& status, const std::string& trace_path);

// The source's keys added to a report's JSON form: trace.path, model, gpu, profile, engine,
// engine_version (null when "").
void AddSourceJson(const WhatIfSource& source, nlohmann::json* j);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_WHATIF_OP_H_
